"""`run.py bench --profile-turn`: where a turn's time goes, per process (hop) and per component.

The load benchmark runs as usual (process mode, scripted model) while every actor process runs
cProfile over the load only (not its start-up or the warm-up; `actors/host.py` starts it on
SIGUSR1 and writes it on SIGUSR2). Each process's profile is then cut by where the code lives:

    transport   transport/zmqio.py and pyzmq: the sockets, the pump
    codec       protocol/ and msgspec: envelopes, encode, decode
    actor       actors/base.py, actors/channel.py: mailbox, dispatch, tell/ask, reply slots
    event loop  trio, anyio: scheduling, cancel scopes, memory streams
    logging     the logging package
    logic       everything else of ours: the actor's own module, core/, llm/, media/, storage/
    stdlib      the rest (Python's library, builtins)

and divided by the turns played, so each figure reads "ms of this process's CPU per turn". The
messages a process received per turn (its `Codec.decode` calls) are its hops; its time over them
is what one hop into it costs. It counts each process's CPU time (its main thread's), not wall time. cProfile slows Python
down (3-5x with a CPU-time clock), so read shares, not
absolute figures; the load benchmark's `runtime CPU per turn` is the unprofiled figure.
"""
from __future__ import annotations

import pstats
import tempfile
from pathlib import Path
from typing import Callable

import anyio
import msgspec

from core.config import REPO_ROOT, Config

COMPONENTS = ("transport", "codec", "actor", "event loop", "logging", "logic", "stdlib")


class FunctionCost(msgspec.Struct, kw_only=True):
    function: str
    component: str
    calls_per_turn: float
    ms_per_turn: float  # own time (tottime)


class ProcessProfile(msgspec.Struct, kw_only=True):
    name: str
    ms_per_turn: float  # profiled CPU of its main thread per turn
    messages_in_per_turn: float  # Codec.decode calls: hops into this process
    messages_out_per_turn: float  # Codec.encode calls
    us_per_message_in: float  # ms_per_turn / messages_in_per_turn
    components_ms_per_turn: dict[str, float]
    top: list[FunctionCost]


class ProfileReport(msgspec.Struct, kw_only=True):
    mix: dict[str, float]
    sessions: int
    turns: int  # turns completed
    model_calls_per_turn: float
    unprofiled_cpu_ms_per_turn: dict[str, float]  # from /proc, profiler overhead included
    processes: list[ProcessProfile]
    components_ms_per_turn: dict[str, float]  # all processes together
    lost: int


def component(filename: str, function: str) -> str:
    """Which part of the system a profiled function belongs to (see the module docstring)."""
    path = filename.replace("\\", "/")
    if path == "~":  # a builtin: told by its name
        if "zmq" in function:
            return "transport"
        if "msgspec" in function:
            return "codec"
        return "stdlib"
    root = str(REPO_ROOT).replace("\\", "/") + "/"
    if path.startswith(root) and "/site-packages/" not in path:
        local = path[len(root):]
        if local == "transport/zmqio.py":
            return "transport"
        if local.startswith("protocol/"):
            return "codec"
        if local in ("actors/base.py", "actors/channel.py"):
            return "actor"
        if local == "core/logs.py":
            return "logging"
        return "logic"
    if "/zmq/" in path:
        return "transport"
    if "/msgspec/" in path:
        return "codec"
    if "/trio/" in path or "/anyio/" in path or "/outcome/" in path or "/sniffio/" in path:
        return "event loop"
    if "/logging/" in path:
        return "logging"
    return "stdlib"


def _label(filename: str, line: int, function: str) -> str:
    root = str(REPO_ROOT) + "/"
    if filename == "~":
        return function
    local = filename.startswith(root) and "/site-packages/" not in filename
    where = filename[len(root):] if local else "/".join(Path(filename).parts[-2:])
    return f"{where}:{line} {function}"


def read_profile(path: Path, name: str, turns: int, top: int = 8) -> ProcessProfile:
    stats = pstats.Stats(str(path)).stats  # (file, line, function) -> (cc, nc, tottime, cumtime, callers)
    per_turn = 1000 / max(1, turns)
    components = dict.fromkeys(COMPONENTS, 0.0)
    rows = []
    decoded = encoded = 0
    for (filename, line, function), (_cc, calls, tottime, _cum, _callers) in stats.items():
        part = component(filename, function)
        components[part] += tottime
        rows.append((tottime, calls, filename, line, function, part))
        if filename.endswith("protocol/codec.py") and function == "decode":
            decoded += calls
        if filename.endswith("protocol/codec.py") and function == "encode":
            encoded += calls
    total = sum(components.values())
    rows.sort(reverse=True)
    ms = total * per_turn
    messages_in = decoded / max(1, turns)
    return ProcessProfile(
        name=name, ms_per_turn=round(ms, 3), messages_in_per_turn=round(messages_in, 2),
        messages_out_per_turn=round(encoded / max(1, turns), 2),
        us_per_message_in=round(ms * 1000 / messages_in, 1) if messages_in else 0.0,
        components_ms_per_turn={k: round(v * per_turn, 3) for k, v in components.items()},
        top=[FunctionCost(function=_label(f, line, fn), component=part, calls_per_turn=round(calls / max(1, turns), 2),
                          ms_per_turn=round(t * per_turn, 4)) for t, calls, f, line, fn, part in rows[:top]],
    )


def profile_turns(config: Config, options, *, log_level: str = "INFO", nice: int = 10,
                  progress: Callable[[str], None] | None = None) -> ProfileReport:
    from bench.cli import run_load_bench

    with tempfile.TemporaryDirectory(prefix="porfiry-profile-") as scratch:
        directory = Path(scratch)
        report = anyio.run(lambda: run_load_bench(config, options, log_level, progress=progress, nice=nice,
                                                  profile_dir=directory), backend="trio")
        turns = report.turns_completed
        processes = [read_profile(path, path.stem, turns) for path in sorted(directory.glob("*.prof"))]
    if not processes:
        raise RuntimeError("no actor process wrote a profile")
    order = {name: index for index, name in enumerate(report.cpu_ms_per_turn)}
    processes.sort(key=lambda process: order.get(process.name, len(order)))
    together = {part: round(sum(p.components_ms_per_turn[part] for p in processes), 3) for part in COMPONENTS}
    return ProfileReport(mix=report.mix, sessions=report.sessions, turns=turns,
                         model_calls_per_turn=round(report.model_calls / max(1, turns), 2),
                         unprofiled_cpu_ms_per_turn=report.cpu_ms_per_turn, processes=processes,
                         components_ms_per_turn=together, lost=report.lost)


def format_profile(report: ProfileReport) -> str:
    mix = ", ".join(f"{kind}={weight:g}" for kind, weight in report.mix.items())
    lines = [
        f"Profile of one turn ({mix}): {report.turns} turns of {report.sessions} sessions, "
        f"{report.model_calls_per_turn:g} model calls per turn, every actor process under cProfile (main thread, CPU time)",
        "ms of CPU per turn, by process and component (profiled: 3-5x the real cost; read the shares):",
        f"  {'process':10} {'total':>7} {'in/turn':>7} {'µs/in':>6} " + " ".join(f"{c:>10}" for c in COMPONENTS),
    ]
    for process in report.processes:
        lines.append(f"  {process.name:10} {process.ms_per_turn:7.2f} {process.messages_in_per_turn:7.1f} "
                     f"{process.us_per_message_in:6.0f} " + " ".join(f"{process.components_ms_per_turn[c]:10.2f}" for c in COMPONENTS))
    total = sum(p.ms_per_turn for p in report.processes)
    hops = sum(p.messages_in_per_turn for p in report.processes)
    lines.append(f"  {'all':10} {total:7.2f} {hops:7.1f} {total * 1000 / max(hops, 1e-9):6.0f} "
                 + " ".join(f"{report.components_ms_per_turn[c]:10.2f}" for c in COMPONENTS))
    lines.append("  (in/turn: messages each process received per turn, i.e. the turn's hops into it; "
                 "µs/in: its profiled CPU per message received)")
    lines.append("unprofiled runtime CPU per turn, ms (same run, from /proc, profiler overhead included): "
                 + ", ".join(f"{name} {ms:.2f}" for name, ms in report.unprofiled_cpu_ms_per_turn.items()))
    for process in report.processes:
        lines.append(f"{process.name}: the costliest functions (own time, ms per turn; calls per turn)")
        for row in process.top:
            lines.append(f"    {row.ms_per_turn:7.3f}  {row.calls_per_turn:7.1f}  {row.component:10}  {row.function[:100]}")
    if report.lost:
        lines.append(f"events lost: {report.lost}")
    return "\n".join(lines)
