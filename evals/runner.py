"""`run.py eval`: play the scenarios through the real session loop on a real model and score them.

Each scenario gets a fresh `Conversation` (the same loop the SessionActor runs) with in-process
ports: the real media catalog (SQLite FTS5), the real skills repository (built-in skills plus the
scenario's own), timers inside the loop on a clock the eval drives, and the model of the chosen
profile. No sockets: the eval measures the model and the texts it reads, not the transport.
A turn with `restart_at` crashes the runtime there: every task of the session is cancelled and
the session is read back from what the journal would hold (its entries, the state the last
TurnDone saved) and continued by core.resume, as the SessionActor does after a restart; with
`restart_at = "toolsets"` only the toolset executor dies, with the turn's first toolset call, and
the session goes on as SessionActor.invoke does: the call made again (core.toolsets.repeatable) or
answered as lost; `"toolsets-lost"` answers it as lost whatever the tool (what a tool the runtime
may not repeat gets).

Modes: `progressive` is Porfiry as it runs (toolsets enabled on demand, S7); `flat` turns every
toolset on before every turn, so the model sees every tool from the first request, as in a
runtime without toolsets (the seed's thesis, measured on the same scenarios). Issue 53 splits
progressive in two: `toolsets` (no budget, every tool of a toolset shown once on) and `discovery`
(the budget, discover_tools, big toolsets shown in part: what `progressive` runs by default).
"""
from __future__ import annotations

import dataclasses
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import NamedTuple

import anyio
import anyio.abc
import msgspec

import protocol as p
from core import user_texts
from core.inprocess import InProcessPorts
from core.budget import default_catalog
from core.config import McpServerConfig
from core.intent import claimed_action, covers, executed_kind
from core.loading import intent_files
from core.local_intents import LocalIntents
from core.clock import ManualClock
from core.config import Config
from core.conversation import Conversation, SessionSettings
from core.observe import Observer
from core.resume import resume
from core.skills import SkillRepository
from core.timers import Timer
from core.toolsets import LOST_REASON, ToolsetRegistry, lost_text, repeatable
from core.trajectory import Recorded, Trajectory
from core.world import MemoryWorld
from protocol.results import Playing
from protocol.tools import RAN_KINDS
from evals.scenarios import PlayedTurn, Scenario, judge_turn
from llm.base import Backend

EVAL_START = 1_773_500_400.0  # 2026-03-14 18:00 Moscow: the clock every scenario starts at
TURN_TIMEOUT_S = 600.0  # a loaded 2-core machine takes minutes for a turn of several steps
GAVE_UP = (*user_texts.variants("gave_up"), *(v.split("{")[0] for v in user_texts.variants("model_unavailable")))
INVALID_MARKERS = ("does not exist", "rguments invalid", "tool error", "has NOT been")


class RequestStats(msgspec.Struct, kw_only=True):
    scenario: str
    model_ms: float
    ttft_ms: float
    prompt_tokens: int
    evaluated_tokens: int  # prompt tokens the model computed (not reused from its prefix cache)


class ScenarioResult(msgspec.Struct, kw_only=True):
    id: str
    lang: str
    passed: bool
    steps: int
    calls: list[str]
    why: str = ""
    unrequested_side_effects: list[str] = []  # changing calls that ran though the turn asked for none of them
    actions_claimed_not_done: int = 0  # final displays that report an action no call of the turn made
    turn_ms: list[float] = []  # per turn: user text in -> final display out
    first_feedback_ms: list[float] = []  # per turn: user text in -> the first display with text (issue 54)


class Percentiles(msgspec.Struct, kw_only=True):
    p50: float
    p95: float


class EvalReport(msgspec.Struct, kw_only=True):
    profile: str
    mode: str
    scenarios: int
    passed: int
    success_rate: float
    mean_steps: float
    invalid_calls: int
    model_ms: Percentiles
    ttft_ms: Percentiles
    prompt_tokens_evaluated: list[int]
    max_prompt_tokens_evaluated: int
    per_scenario: list[ScenarioResult]
    unrequested_side_effects: int = 0
    actions_claimed_not_done: int = 0
    turn_ms: Percentiles = msgspec.field(default_factory=lambda: Percentiles(p50=0.0, p95=0.0))
    first_feedback_ms: Percentiles = msgspec.field(default_factory=lambda: Percentiles(p50=0.0, p95=0.0))
    scenario_set: str = ""
    # per request to the model: the prompt's size, and the part of it evaluated (not reused from its prefix cache)
    prompt_tokens: Percentiles = msgspec.field(default_factory=lambda: Percentiles(p50=0.0, p95=0.0))
    max_prompt_tokens: int = 0
    evaluated_tokens: Percentiles = msgspec.field(default_factory=lambda: Percentiles(p50=0.0, p95=0.0))


class _CallsSeen(Observer):
    """Every call the session makes, whoever decided it (the model or a reflex, core.reflex),
    into the ports' list the judge reads: visible calls as they start, invisible ones (S7) too."""

    def __init__(self, ports: "EvalPorts"):
        super().__init__()
        self.ports = ports

    def tool_started(self, conv, turn_id: str, call_id: str, tool: str, args: str) -> None:
        self.ports.calls.append((tool, args.strip()))
        # a turn busy with a call is busy: a `while_busy` line is said now if no model step came first
        hook, self.ports.on_first_piece = self.ports.on_first_piece, None
        if hook is not None:
            hook()

    def tool_finished(self, conv, turn_id: str, call_id: str, tool: str, args: str, outcome: str, result: str) -> None:
        if outcome == "invisible":
            self.ports.calls.append((tool, args.strip()))


class EvalPorts(InProcessPorts):
    """InProcessPorts that also time every request and record the call each reply made."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.scenario = ""
        self.calls: list[tuple[str, str]] = []
        self.stats: list[RequestStats] = []
        self.on_first_piece: Callable[[], None] | None = None
        self.trace: Callable[[dict], None] | None = None  # told every request and reply (--trace)
        self.crash = _Crash()
        self.lost_at: int | None = None  # len(calls) when a call died with the toolset executor
        self.registry = ToolsetRegistry(default_catalog())
        self.mcp: dict = {}  # toolset name -> toolsets.mcp.server.McpServer (run_eval starts them)
        self.final_at: float | None = None  # perf_counter of the last final display
        self.first_at: float | None = None  # perf_counter of the turn's first display with text

    @asynccontextmanager
    async def generate(self, session: str, messages: list[p.ChatMessage], tools: list[str], max_tokens: int,
                       arg_choices: dict[str, list[str]] | None = None) -> AsyncIterator[AsyncIterator[str]]:
        started = time.perf_counter()
        first: list[float] = []
        generation = self.backend.stream(messages, tools=tools, max_tokens=max_tokens, arg_choices=arg_choices)

        async def pieces() -> AsyncIterator[str]:
            async for piece in generation:
                if not first:
                    first.append(time.perf_counter())
                    hook, self.on_first_piece = self.on_first_piece, None
                    if hook is not None:
                        hook()
                    self.crash.reply_started()
                yield piece

        stream = pieces()
        try:
            async with generation:
                yield stream
        finally:
            await stream.aclose()
            ended = time.perf_counter()
            self.stats.append(RequestStats(
                scenario=self.scenario, model_ms=(ended - started) * 1000,
                ttft_ms=((first[0] if first else ended) - started) * 1000,
                prompt_tokens=generation.prompt_tokens,
                evaluated_tokens=generation.prompt_tokens - generation.reused_tokens,
            ))
            if self.trace is not None:
                self.trace({"scenario": self.scenario, "reply": generation.text,
                                   "messages": [msgspec.to_builtins(m) for m in messages]})

    async def invoke(self, session: str, call: p.ToolInvoke) -> p.ToolOutcome:
        """Run the call; a play is judged by what it played (the model may name the title)."""
        call_id, tool = call.call_id, call.tool
        if self.crash.executor_dies():
            if self.crash.kind == "toolsets-lost" or not repeatable(self.registry.spec(tool)):  # else made again, as SessionActor.invoke does
                self.lost_at = len(self.calls)  # the turn is judged from the call after this one
                return p.ToolOutcome(call_id=call_id, ok=False, text=lost_text(tool))
        self.crash.tool_started()
        server = self.mcp.get(self.registry.toolset_of(tool) or "")
        if server is not None:
            done = await server.call(tool, call.args, session)
            outcome = p.ToolOutcome(call_id=call_id, ok=done.ok, text=done.text, data=done.data)
        else:
            outcome = await super().invoke(session, call)
        self.crash.tool_finished()
        played = outcome.data.media_id if outcome.ok and isinstance(outcome.data, Playing) else ""
        recorded = next((i for i in range(len(self.calls) - 1, -1, -1) if self.calls[i][0] == tool), None)
        if played and recorded is not None and played not in self.calls[recorded][1]:
            self.calls[recorded] = (tool, f"{self.calls[recorded][1]} (played {played})")
        return outcome


    def send(self, session: str, body: p.Msg) -> None:
        if isinstance(body, p.Display) and body.final:
            self.final_at = time.perf_counter()
        if isinstance(body, p.Display) and body.text and self.first_at is None:
            self.first_at = time.perf_counter()
        super().send(session, body)




def _write_skills(directory: Path, skills: dict[str, str]) -> None:
    for name, text in skills.items():
        folder = directory / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(text, encoding="utf-8")


class _Crash:
    """The runtime dying mid-turn (a turn's `restart_at`): armed for one turn, fired from the
    ports at that point by cancelling everything the runtime's life runs."""

    def __init__(self) -> None:
        self.at = ""
        self.fired = anyio.Event()
        self._life: _Life | None = None
        self._tool_done = False
        self.executor_died = False
        self.kind = ""  # what the last executor_dies() fired: "toolsets" or "toolsets-lost"

    def arm(self, at: str, life: "_Life") -> None:
        self.at, self._life, self._tool_done, self.fired = at, life, False, anyio.Event()
        self.executor_died, self.kind = False, ""

    def executor_dies(self) -> bool:
        """`restart_at = "toolsets"`: this call is lost with the toolset executor (only it restarts)."""
        if self.at not in ("toolsets", "toolsets-lost"):
            return False
        self.kind, self.at, self.executor_died = self.at, "", True
        return True

    def tool_started(self) -> None:
        if self.at == "tool":
            self._fire()

    def tool_finished(self) -> None:
        self._tool_done = True

    def reply_started(self) -> None:
        if self.at == "answer" and self._tool_done:
            self._fire()

    def _fire(self) -> None:
        self.at = ""
        self.fired.set()
        assert self._life is not None
        self._life.scope.cancel()


class _Life:
    """One life of the runtime in a scenario: the task group its sessions' tasks run in."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.over = anyio.Event()
        self.tasks: anyio.abc.TaskGroup | None = None

    async def run(self, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        try:
            with self.scope:
                async with anyio.create_task_group() as tasks:
                    self.tasks = tasks
                    task_status.started()
                    await anyio.sleep_forever()
        finally:
            self.over.set()


class _Saved(NamedTuple):
    """What the journal holds of a session besides its history, as the last TurnDone saved it."""

    seen: list[str]
    timers: tuple[list[Timer], int]
    skills: tuple[str | None, list[str], dict[str, str]]

    @classmethod
    def of(cls, conversation: Conversation) -> "_Saved":
        timers, next_number = conversation.timers.snapshot()
        return cls(list(conversation.seen), (list(timers), next_number), conversation.tracker.state())


@functools.lru_cache(maxsize=4)
def _local_intents(files: tuple[Path, ...]) -> LocalIntents:
    """The sentences the config's runtime loads (as actors/session.py does: the toolsets' and an
    MCP server's custom ones), loaded once per eval, not once per scenario."""
    return LocalIntents.load(list(files))


def _restarted(sid: str, settings: SessionSettings, entries: list[Recorded], saved: _Saved,
               open_events: list[p.Event], now: float) -> Conversation:
    """The session as the SessionActor reads it back after a crash (`_build`, `_continue`):
    the history from its entries, continued by core.resume; toolsets off (S6)."""
    conversation = Conversation(sid, settings)
    conversation.trajectory = Trajectory.restore(list(entries), entries.append)
    conversation.seen.update(dict.fromkeys(saved.seen))
    conversation.timers.restore(*saved.timers)
    conversation.tracker.restore(*saved.skills)
    conversation.resume_at(resume(conversation.trajectory, entries, open_events, now))
    return conversation


async def _wait_idle(conversation: Conversation, crashed: anyio.Event | None = None) -> None:
    with anyio.fail_after(TURN_TIMEOUT_S):
        await anyio.sleep(0)
        while (conversation.running or conversation.queue) and not (crashed and crashed.is_set()):
            await anyio.sleep(0.02)


class TurnEffects(NamedTuple):
    """What one turn did to the world, from the history it added (core.intent's kinds)."""

    unrequested: list[str]  # changing calls that ran, of tools the turn did not expect
    claimed_not_done: bool  # the final display reports an action no call of the turn made


def turn_effects(registry: ToolsetRegistry, trajectory: Trajectory, start: int, expected: list[str],
                 final: str) -> TurnEffects:
    """Judge the calls the turn's history (`trajectory` from `start`) holds: a changing call the
    runtime ran (not refused, not failed: its outcome's kind) of a tool the turn did not expect is
    unrequested; a final display that claims an action (core.intent.claimed_action) with no such
    call to back it claims what was not done."""
    wanted = {call.partition("|")[0] for call in expected}
    acted: set[str] = set()
    unrequested = []
    added = trajectory.messages()[start:]
    for index, message in enumerate(added):
        if index == 0 or trajectory.kind_at(start + index) not in RAN_KINDS:
            continue
        raw = added[index - 1].content.rpartition("|")[2] if "TOOL_CALL" in added[index - 1].content else ""
        kind = executed_kind(registry.spec(message.name or ""), raw)
        if kind is None:
            continue
        acted.add(kind)
        if message.name not in wanted:
            unrequested.append(f"{message.name}|{raw}")
    claimed = claimed_action(final)
    return TurnEffects(unrequested, claimed is not None and not covers(claimed, acted))


async def play_scenario(scenario: Scenario, *, backend: Backend, provider, config: Config, mode: str,
                        workdir: Path, trace: Callable[[dict], None] | None = None,
                        mcp: dict | None = None) -> tuple[ScenarioResult, int, list[RequestStats]]:
    """Play one scenario: its result, how many tool results said a call was invalid, its requests.
    `mcp`: MCP servers (toolset name -> a running McpServer) the scenario may use."""
    ports = _scenario_ports(scenario, backend=backend, provider=provider, config=config, workdir=workdir,
                            trace=trace, mcp=mcp)
    play = _Playing(scenario=scenario, ports=ports, registry=ports.registry, clock=ManualClock(EVAL_START),
                    config=config, mode=mode)
    async with anyio.create_task_group() as outer:
        play.outer, play.life = outer, _Life()
        await outer.start(play.life.run)
        play.conversation = Conversation(play.sid, play.settings())
        play.conversation.trajectory.sink = play.entries.append
        for number, turn in enumerate(scenario.turns, start=1):
            if not await _play_turn(play, number, turn):
                break
        outer.cancel_scope.cancel()
    return _scenario_result(play)


def _scenario_ports(scenario: Scenario, *, backend: Backend, provider, config: Config, workdir: Path,
                    trace: Callable[[dict], None] | None, mcp: dict | None) -> EvalPorts:
    """The ports a scenario plays on: its own skills folder, the MCP servers it may use."""
    user_dir = workdir / scenario.id
    user_dir.mkdir(parents=True, exist_ok=True)
    _write_skills(user_dir, scenario.skills)
    repo = SkillRepository(config.builtin_skill_dirs(), user_dir)
    ports = EvalPorts(repo, provider, backend)
    ports.scenario = scenario.id
    ports.trace = trace
    if mcp:
        ports.mcp = dict(mcp)
        ports.registry = ToolsetRegistry([*default_catalog(), *(server.spec() for server in mcp.values() if server.spec())])
    return ports


@dataclasses.dataclass
class _Playing:
    """One scenario being played: its conversation, the life of the runtime it runs in (a
    scripted restart ends one and starts the next), and what the judges found so far."""
    scenario: Scenario
    ports: EvalPorts
    registry: ToolsetRegistry
    clock: ManualClock
    config: Config
    mode: str
    outer: anyio.abc.TaskGroup | None = None
    life: _Life | None = None
    conversation: Conversation | None = None
    entries: list[Recorded] = dataclasses.field(default_factory=list)  # the history as the journal would hold it
    unrequested: list[str] = dataclasses.field(default_factory=list)
    claimed_not_done: int = 0
    turn_ms: list[float] = dataclasses.field(default_factory=list)
    first_feedback_ms: list[float] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)
    steps: int = 0
    world: MemoryWorld | None = None  # made with the config's limits at the first settings()

    @property
    def sid(self) -> str:
        return f"eval-{self.scenario.id}"

    def settings(self) -> SessionSettings:
        assert self.life is not None and self.life.tasks is not None
        settings = SessionSettings(registry=self.registry, ports=self.ports, spawn=self.life.tasks.start_soon,
                                   config=self.config.session, clock=self.clock, observer=_CallsSeen(self.ports),
                                   local_intents=_local_intents(tuple(intent_files(self.config))))
        if self.world is None:
            self.world = MemoryWorld(max_watches=self.config.channels.max_watches, max_notes=self.config.notify.max_kept)
        settings.world = self.world  # channels and notes, kept through a scripted restart
        return settings

    def flatten(self) -> None:
        """In `flat` mode every toolset is on, always."""
        if self.mode == "flat":
            for toolset in self.registry.toolset_names():
                self.conversation.activity.enable(toolset)


async def _play_turn(play: _Playing, number: int, turn) -> bool:
    """One scripted turn, said, waited for (through a restart if it has one) and judged; False
    when it hung (the scenario stops there)."""
    ports, clock = play.ports, play.clock
    clock.advance(turn.advance_s)
    shown_before, calls_before, steps_before = len(ports.shown), len(ports.calls), len(ports.stats)
    history_before = len(play.conversation.trajectory.messages())
    ports.final_at = ports.first_at = None
    said_at = time.perf_counter()
    saved = _Saved.of(play.conversation)
    play.flatten()
    play.conversation.fire_due_timers(clock())
    submitted: list[p.Event] = []
    if turn.say:
        if turn.while_busy:
            ports.on_first_piece = lambda text=turn.while_busy: play.conversation.submit(_event(text, clock()))
        submitted.append(_event(turn.say, clock()))
        play.conversation.submit(submitted[-1])
    ports.crash.arm(turn.restart_at, play.life)
    ports.lost_at = None
    try:
        await _wait_idle(play.conversation, ports.crash.fired)
    except TimeoutError:  # a scenario that hangs (or a machine too loaded) fails alone
        play.problems.append(f"turn {number}: no answer within {TURN_TIMEOUT_S:.0f} s")
        return False
    calls_before = await _through_restart(play, number, turn, saved, submitted, calls_before, steps_before)
    ports.on_first_piece = None
    _judge_played(play, number, turn, shown_before, calls_before, steps_before, history_before)
    if turn.say and ports.final_at is not None:
        play.turn_ms.append(round((ports.final_at - said_at) * 1000, 1))
    if turn.say and ports.first_at is not None:
        play.first_feedback_ms.append(round((ports.first_at - said_at) * 1000, 1))
    return True


async def _through_restart(play: _Playing, number: int, turn, saved: _Saved, submitted: list[p.Event],
                           calls_before: int, steps_at_start: int) -> int:
    """After a scripted crash: the runtime's next life, the conversation read back and its turn
    finished. Where the judged calls begin (after the restart, or after the lost call)."""
    ports = play.ports
    if ports.crash.fired.is_set():
        await play.life.over.wait()
        calls_before = len(ports.calls)  # judged: what the model does after the restart
        play.life = _Life()
        await play.outer.start(play.life.run)
        play.conversation = _restarted(play.sid, play.settings(), play.entries, saved, submitted, play.clock())
        play.flatten()
        await _wait_idle(play.conversation)
    elif ports.crash.executor_died:
        if ports.lost_at is not None:
            calls_before = ports.lost_at  # judged: what the model does after the lost call
    elif turn.restart_at == "answer" and len(ports.stats) == steps_at_start:
        pass  # a reflex answered (core.reflex): no model answer to crash in; judged as the turn went
    elif turn.restart_at:
        play.problems.append(f"turn {number}: the turn never reached its restart point ({turn.restart_at})")
    return calls_before


def _judge_played(play: _Playing, number: int, turn, shown_before: int, calls_before: int, steps_before: int,
                  history_before: int) -> None:
    """What the turn showed and called, judged against the scenario; side effects counted."""
    ports = play.ports
    shown = ports.shown[shown_before:]
    displays = [m.text for m in shown if isinstance(m, p.Display)]
    finals = [m.text for m in shown if isinstance(m, p.Display) and m.final]
    final = finals[-1] if finals else (displays[-1] if displays else "")
    played = PlayedTurn(calls=ports.calls[calls_before:], displays=displays, final=final,
                        steps=len(ports.stats) - steps_before,
                        gave_up=any(final.startswith(prefix) for prefix in GAVE_UP))
    play.problems += [f"turn {number}: {problem}" for problem in judge_turn(turn, played)]
    play.steps += played.steps
    effects = turn_effects(play.registry, play.conversation.trajectory, history_before, turn.calls, final)
    play.unrequested += effects.unrequested
    play.claimed_not_done += effects.claimed_not_done
    play.problems += [f"turn {number}: side effect nobody asked for: {call}" for call in effects.unrequested]
    if effects.claimed_not_done:
        play.problems.append(f"turn {number}: final display {final[:60]!r} claims an action no call made")


def _scenario_result(play: _Playing) -> tuple[ScenarioResult, int, list[RequestStats]]:
    invalid = sum(
        1 for message in play.conversation.trajectory.messages()
        if message.role == "tool" and any(marker in message.content for marker in INVALID_MARKERS)
        and LOST_REASON not in message.content  # the call the scenario itself lost: not the model's fault
    )
    ports, problems = play.ports, play.problems
    result = ScenarioResult(id=play.scenario.id, lang=play.scenario.lang, passed=not problems, steps=play.steps,
                            calls=[f"{name}|{args}" for name, args in ports.calls], why="; ".join(problems),
                            unrequested_side_effects=play.unrequested, actions_claimed_not_done=play.claimed_not_done,
                            turn_ms=play.turn_ms, first_feedback_ms=play.first_feedback_ms)
    return result, invalid, ports.stats


def _event(text: str, now: float) -> p.Event:
    return p.Event(event_id=p.new_id(), kind="user_text", source="user", channel="speech", content=text, ts=now)


def _percentiles(values: list[float]) -> Percentiles:
    if not values:
        return Percentiles(p50=0.0, p95=0.0)
    ordered = sorted(values)
    return Percentiles(p50=round(statistics.median(ordered), 1),
                       p95=round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1))


MCP_START_S = 30.0  # how long the eval waits for its MCP servers to list their tools
WORLDCLOCK_SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_worldclock_server.py"
# its custom sentences, as a user writes them for a server of theirs (mcp.servers.NAME.intents)
WORLDCLOCK_INTENTS = WORLDCLOCK_SERVER.with_name("mcp_worldclock_intents.yaml")
HUB_SERVER = WORLDCLOCK_SERVER.with_name("mcp_hub_server.py")


MODES = ("progressive", "flat", "toolsets", "discovery")
UNBOUNDED_TOOLS = 10_000  # session.max_active_tools that shows every tool of any toolset


def mode_config(config: Config, mode: str) -> Config:
    """The session settings of a mode (issue 53): `flat` and `toolsets` without the budget and
    with every tool of a toolset shown (toolsets as before discovery); `discovery` and
    `progressive` as configured (by default: the budget, discover_tools, big toolsets in part)."""
    if mode not in ("flat", "toolsets"):
        return config
    session = msgspec.structs.replace(config.session, index_budget_tokens=0, max_active_tools=UNBOUNDED_TOOLS)
    return msgspec.structs.replace(config, session=session)


def with_hub(config: Config) -> Config:
    """The config of `--set discovery`: the 120-tool MCP server `hub` (tests/mcp_hub_server.py)
    and the 16 Agent-Skills-sized skills of evals/discovery/skills as built-in skills."""
    server = McpServerConfig(command=[sys.executable, str(HUB_SERVER)], timeout_s=MCP_START_S)
    config = msgspec.structs.replace(config, mcp=msgspec.structs.replace(
        config.mcp, servers={**config.mcp.servers, "hub": server}))
    skills = str(Path(__file__).resolve().parent / "discovery" / "skills")
    return msgspec.structs.replace(config, skills=msgspec.structs.replace(config.skills, builtin_dir=skills))


def with_worldclock(config: Config) -> Config:
    """The config with the world clock MCP server (tests/mcp_worldclock_server.py, stdio) as the
    toolset `worldclock`, on the eval's clock, with its custom sentences, unless the config names
    one already."""
    if "worldclock" in config.mcp.servers:
        return config
    server = McpServerConfig(command=[sys.executable, str(WORLDCLOCK_SERVER)],
                             env={"WORLDCLOCK_NOW": str(int(EVAL_START))}, timeout_s=MCP_START_S,
                             intents=str(WORLDCLOCK_INTENTS))
    return msgspec.structs.replace(config, mcp=msgspec.structs.replace(
        config.mcp, servers={**config.mcp.servers, "worldclock": server}))


@asynccontextmanager
async def mcp_servers(config: Config) -> AsyncIterator[dict]:
    """The config's MCP servers running (toolset name -> McpServer), each with its tools listed;
    one that does not list them within MCP_START_S is a RuntimeError naming it."""
    from toolsets.mcp.server import McpServer

    servers = {name: McpServer(name, cfg, config.mcp, config.path, lambda: None)
               for name, cfg in config.mcp.servers.items() if cfg.enabled}
    async with anyio.create_task_group() as tasks:
        for server in servers.values():
            tasks.start_soon(server.run)
        with anyio.move_on_after(MCP_START_S):
            while any(server.spec() is None for server in servers.values()):
                await anyio.sleep(0.05)
        missing = [f"{name} ({server.error or server.state})" for name, server in servers.items() if server.spec() is None]
        if missing:
            tasks.cancel_scope.cancel()
            raise RuntimeError(f"MCP server(s) did not start: {', '.join(missing)}")
        try:
            yield servers
        finally:
            tasks.cancel_scope.cancel()


async def run_eval(config: Config, scenarios: list[Scenario], *, backend: Backend, profile: str, mode: str,
                   trace: Callable[[dict], None] | None = None, scenario_set: str = "",
                   progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> EvalReport:
    from toolsets.media.executor import default_provider

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    config = mode_config(config, mode)
    results: list[ScenarioResult] = []
    stats: list[RequestStats] = []
    invalid_calls = 0
    with tempfile.TemporaryDirectory(prefix="porfiry-eval-") as scratch:
        workdir = Path(scratch)
        config = config.with_section("media", db_path=str(workdir / "media.sqlite3"))
        provider = default_provider(config)
        await anyio.to_thread.run_sync(provider.ensure_ready)
        started = time.perf_counter()
        async with mcp_servers(config) as mcp:
            for index, scenario in enumerate(scenarios, start=1):
                result, invalid, requests = await play_scenario(
                    scenario, backend=backend, provider=provider, config=config, mode=mode, workdir=workdir,
                    trace=trace, mcp=mcp)
                results.append(result)
                stats += requests
                invalid_calls += invalid
                passed = sum(r.passed for r in results)
                progress(f"[{index}/{len(scenarios)}] {'PASS' if result.passed else 'FAIL'} {scenario.id} "
                         f"({result.steps} steps, turn_ms {result.turn_ms}, side effects {len(result.unrequested_side_effects)}, "
                         f"claimed {result.actions_claimed_not_done}) - {passed}/{index} passed, "
                         f"{time.perf_counter() - started:.0f} s"
                         + ("" if result.passed else f"\n      {result.why}"))
    passed = sum(r.passed for r in results)
    evaluated = [s.evaluated_tokens for s in stats]
    return EvalReport(
        profile=profile, mode=mode, scenarios=len(results), passed=passed,
        success_rate=round(passed / len(results), 3) if results else 0.0,
        mean_steps=round(sum(r.steps for r in results) / len(results), 2) if results else 0.0,
        invalid_calls=invalid_calls,
        model_ms=_percentiles([s.model_ms for s in stats]), ttft_ms=_percentiles([s.ttft_ms for s in stats]),
        prompt_tokens_evaluated=evaluated, max_prompt_tokens_evaluated=max(evaluated, default=0),
        per_scenario=results,
        unrequested_side_effects=sum(len(r.unrequested_side_effects) for r in results),
        actions_claimed_not_done=sum(r.actions_claimed_not_done for r in results),
        turn_ms=_percentiles([ms for r in results for ms in r.turn_ms]),
        first_feedback_ms=_percentiles([ms for r in results for ms in r.first_feedback_ms]), scenario_set=scenario_set,
        prompt_tokens=_percentiles([s.prompt_tokens for s in stats]), max_prompt_tokens=max((s.prompt_tokens for s in stats), default=0),
        evaluated_tokens=_percentiles(evaluated),
    )


def format_report(report: EvalReport) -> str:
    lines = [f"{'scenario':34} {'lang':4} {'result':6} {'steps':>5}  calls"]
    for result in report.per_scenario:
        lines.append(f"{result.id:34} {result.lang:4} {'pass' if result.passed else 'FAIL':6} {result.steps:>5}  "
                     + ", ".join(result.calls)[:90])
    lines.append("")
    lines.append(f"{'set ' + report.scenario_set + ', ' if report.scenario_set else ''}"
                 f"profile {report.profile}, mode {report.mode}: {report.passed}/{report.scenarios} passed "
                 f"({report.success_rate:.0%}), {report.mean_steps} steps per scenario, "
                 f"{report.invalid_calls} invalid calls")
    lines.append(f"model time per step p50 {report.model_ms.p50:.0f} ms, p95 {report.model_ms.p95:.0f} ms; "
                 f"first token p50 {report.ttft_ms.p50:.0f} ms, p95 {report.ttft_ms.p95:.0f} ms; "
                 f"prompt tokens evaluated per request: max {report.max_prompt_tokens_evaluated}")
    lines.append(f"prompt tokens per request p50 {report.prompt_tokens.p50:.0f}, max {report.max_prompt_tokens}; "
                 f"evaluated (not reused from the prefix cache) p50 {report.evaluated_tokens.p50:.0f}, "
                 f"p95 {report.evaluated_tokens.p95:.0f}")
    lines.append(f"turn (user text -> final display) p50 {report.turn_ms.p50:.0f} ms, p95 {report.turn_ms.p95:.0f} ms; "
                 f"unrequested side effects {report.unrequested_side_effects}; "
                 f"actions claimed not done {report.actions_claimed_not_done}")
    lines.append(f"first feedback (user text -> first display) p50 {report.first_feedback_ms.p50:.0f} ms, "
                 f"p95 {report.first_feedback_ms.p95:.0f} ms (target: p95 <= 1000 ms)")
    return "\n".join(lines)
