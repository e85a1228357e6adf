"""Monitors (E10, seed 003's `monitor_shell`, for this product): the model starts, by name, a
check the operator allowed in the config (`[monitors.NAME]`: a command as argv, or a URL), with
a condition; the runtime runs it every `interval_s` and raises one event when the condition
holds. The model never gives a command: a name not in the allow-list is refused.

Conditions (a monitor's NAME; CONDITION):
  contains WORDS     the output (or the page) contains WORDS, case ignored; bare WORDS mean the same
  exit N / exit!=N   the command exited with (or without) code N; `exit` alone: with any code
  status N / status!=N  the URL answered HTTP status N (or another)
One run is bounded by `timeout_s` (the process is killed), its output kept up to
`monitors.max_output_chars`; a session holds at most `monitors.max_per_session` monitors, the
runtime `monitors.max_total`. A run is a process group of its own, killed whole when it ends.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from typing import Literal

import anyio
import msgspec

from core import lifeline
from core.fence import fence_untrusted
from protocol import Event

MONITOR_KIND = "monitor"
RUNNING, FIRED, STOPPED = "running", "fired", "stopped"

_CONDITION = re.compile(r"^(exit|exits|exit code|code|status|http status|http)\s*(!=|=|==|:)?\s*(-?\d+)?$")


@dataclass(frozen=True, slots=True)
class Condition:
    kind: Literal["contains", "exit", "status"]
    value: str = ""  # the words; the code ("" for any exit)
    negate: bool = False

    def describe(self) -> str:
        if self.kind == "contains":
            return f"output contains {self.value!r}"
        if self.kind == "exit":
            return "the command exits" + (f" with {'a code other than' if self.negate else 'code'} {self.value}" if self.value else "")
        return f"HTTP status {'is not' if self.negate else 'is'} {self.value}"


@dataclass(frozen=True, slots=True)
class Probe:
    """One run's outcome: exit code or HTTP status (None: it timed out or could not start)."""

    code: int | None
    output: str
    kind: Literal["exit", "status"]


class ConditionError(ValueError):
    pass


def parse_condition(text: str) -> Condition:
    said = " ".join((text or "").split())
    if not said:
        raise ConditionError("the condition is empty: say e.g. 'contains done', 'exit 0' or 'status 200'")
    match = _CONDITION.fullmatch(said.casefold())
    if match:
        word, op, number = match.groups()
        kind = "status" if word.startswith(("status", "http")) else "exit"
        if kind == "status" and number is None:
            raise ConditionError(f"{said!r}: say which status, e.g. 'status 200'")
        return Condition(kind, number or "", op == "!=")
    words = re.sub(r"^(contains|has|содержит|output contains)\s+", "", said, flags=re.IGNORECASE).strip("'\" ")
    if not words:
        raise ConditionError(f"{said!r}: say which words the output should contain")
    return Condition("contains", words)


def holds(condition: Condition, probe: Probe) -> bool:
    if condition.kind == "contains":
        return condition.value.casefold() in probe.output.casefold()
    if probe.code is None or probe.kind != condition.kind:
        return False
    if not condition.value:
        return True
    return (probe.code == int(condition.value)) != condition.negate


class MonitorRow(msgspec.Struct, array_like=True):
    """A monitor as the journal keeps it (it survives a restart)."""

    monitor_id: str
    name: str
    condition: str
    state: str = RUNNING
    started: float = 0.0
    checks: int = 0
    last_output: str = ""
    fired_at: float = 0.0


def fired_event(row: MonitorRow, session: str, now: float) -> Event:
    """The one event a monitor raises; its id is stable, so a restart never raises it twice."""
    return Event(event_id=f"monitor-{session}-{row.monitor_id}-{int(row.started)}", kind=MONITOR_KIND,
                 source=f"monitor {row.name}", channel="monitor", content=row.last_output or "(no output)",
                 context=f"monitor {row.monitor_id} ({row.name}): {parse_condition(row.condition).describe()}", ts=now,
                 data={"monitor_id": row.monitor_id, "name": row.name})


def tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


async def run_command(argv: list[str], timeout_s: float, max_chars: int) -> Probe:
    """Run the allowed command once (argv, no shell), killed at `timeout_s`. It runs as a process
    group of its own, and the whole group is killed when the run ends (done, timed out or the
    monitor stopped): what it left in the background (`sh -c "sleep 600 & ..."`) goes with it.
    A guard (core/lifeline.py) kills the group too if this process dies, SIGKILL included."""
    if not argv or shutil.which(argv[0]) is None:
        return Probe(None, f"could not start {argv[0] if argv else '(nothing)'}: not found or not executable", "exit")
    command, env, fds = lifeline.guarded(argv)
    try:
        process = await anyio.open_process(command, stdin=None, stderr=-2, env=env, pass_fds=fds,  # stderr joins stdout
                                           start_new_session=True)
    except OSError as exc:
        return Probe(None, f"could not start {argv[0]}: {exc}", "exit")
    lifeline.track_group(process.pid)
    output = bytearray()
    try:
        async with process:
            with anyio.move_on_after(timeout_s) as scope:
                assert process.stdout is not None
                async for chunk in process.stdout:
                    output += chunk
                    del output[:-4 * max_chars]
                await process.wait()
            if scope.cancelled_caught:
                lifeline.kill_group(process.pid)
                with anyio.CancelScope(shield=True):
                    await process.wait()
                text = tail(output.decode(errors="replace"), max_chars)
                return Probe(None, f"{text}\n(timed out after {timeout_s:g} s; killed)".strip(), "exit")
    finally:  # a group outlives its leader while one of its processes runs; the pgid is not reused till then
        lifeline.kill_group(process.pid)
        lifeline.untrack_group(process.pid)
    return Probe(process.returncode, tail(output.decode(errors="replace"), max_chars), "exit")


async def fetch_url(url: str, timeout_s: float, max_chars: int) -> Probe:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=False) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        return Probe(None, f"request failed: {type(exc).__name__}: {exc}", "status")
    return Probe(response.status_code, tail(response.text, max_chars), "status")


class MonitorTable:
    """One session's monitors (ids "m1", "m2" …)."""

    __slots__ = ("rows", "next_number")

    def __init__(self, rows: list[MonitorRow] | None = None, next_number: int = 1):
        self.rows = list(rows or [])
        self.next_number = next_number

    def running(self) -> list[MonitorRow]:
        return [r for r in self.rows if r.state == RUNNING]

    def get(self, monitor_id: str) -> MonitorRow | None:
        wanted = monitor_id.strip().casefold()
        return next((r for r in self.rows if r.monitor_id == wanted), None)

    def start(self, name: str, condition: str, allowed: dict, limit: int, now: float, *,
              runtime_running: int = 0, runtime_limit: int = 0) -> tuple[MonitorRow | None, str]:
        """(the new row, or None and why not) - forgiving texts for the model. `runtime_running`
        of `runtime_limit` (0: none) are the monitors of every session of this runtime."""
        name = name.strip().casefold()
        if name not in allowed:
            known = ", ".join(sorted(allowed)) or "none are configured"
            return None, f"Monitor not started: {name or '(no name)'} is not an allowed monitor (allowed: {known}). Commands come only from the operator's config."
        try:
            parsed = parse_condition(condition)
        except ConditionError as exc:
            return None, f"Monitor not started: {exc}"
        if len(self.running()) >= limit:
            return None, f"Monitor not started: {limit} monitors already run in this session; stop one first (cancel it by its id)."
        if runtime_limit and runtime_running >= runtime_limit:
            return None, (f"Monitor not started: the runtime already runs {runtime_limit} monitors, its limit "
                          "(monitors.max_total); stop one first (cancel it by its id) or try later.")
        row = MonitorRow(f"m{self.next_number}", name, condition.strip(), RUNNING, now)
        self.next_number += 1
        self.rows.append(row)
        self.rows = [r for r in self.rows if r.state == RUNNING or r is row][-max(limit * 4, 8):]  # finished ones fade
        return row, f"Monitor {row.monitor_id} started: {name}, until {parsed.describe()}. You will get one event then."

    def describe(self, row: MonitorRow) -> str:
        last = f"; last output: {fence_untrusted(row.last_output[:200])}" if row.last_output else ""
        return f"{row.monitor_id}: monitor {row.name} ({row.condition}) {row.state}, {row.checks} check(s){last}"
