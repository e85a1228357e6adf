"""`python run.py bench`: the load benchmark, and `--prompts` for prompt budgets and caching."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

import anyio
import msgspec

from core.config import Config


def register(subparsers, load_config: Callable[[argparse.Namespace], Config]) -> None:
    bench = subparsers.add_parser(
        "bench", help="load benchmark through the phone endpoint (process mode, scripted model)",
        description="Start Porfiry in process mode with the scripted model, drive N phone sessions x M turns "
                    "through the real phone endpoint and print the runtime's own cost. --prompts instead "
                    "measures, per request of a scripted 20-turn conversation, the prompt tokens the local "
                    "model evaluates beyond the new messages and its time to first token.")
    bench.add_argument("--sessions", type=int, default=100, help="concurrent phone sessions (default 100)")
    bench.add_argument("--turns", type=int, default=5, help="turns per session (default 5)")
    bench.add_argument("--latency-ms", type=float, default=0.0, help="scripted model delay before each reply (default 0)")
    bench.add_argument("--think-ms", type=float, default=1000.0,
                       help="mean pause before each turn, 0.5x-1.5x uniform (default 1000); 0 = back to back, a saturation run")
    bench.add_argument("--sessions-per-phone", type=int, default=1,
                       help="sessions sharing one phone connection (default 1: a phone per user)")
    bench.add_argument("--seed", type=int, default=1, help="seed of the turn mix and pauses (default 1)")
    bench.add_argument("--nice", type=int, default=10,
                       help="CPU niceness of the load generator once the runtime runs (default 10; real phones "
                            "are other machines: here they take the CPU the runtime leaves; 0 = same priority)")
    bench.add_argument("--chaos", type=float, default=0.0, metavar="SECONDS",
                       help="SIGKILL a random actor process every SECONDS during the load (default 0: never); "
                            "reports chaos_kills, sessions_recovered, history_intact")
    bench.add_argument("--chaos-only", metavar="ACTOR,...", default="",
                       help="with --chaos: kill only the processes that host these actors (e.g. toolsets)")
    bench.add_argument("--mix", metavar="KIND=W,...",
                       help="turn kinds and their weights, e.g. media=1 (one kind alone) or plain=2,media=1; "
                            "kinds: plain, media, substitution, interrupt (default: plain=0.4,media=0.3,"
                            "substitution=0.15,interrupt=0.15)")
    bench.add_argument("--groups", metavar="A,B;C,D",
                       help="run these actors together in one OS process each (topology.groups), e.g. "
                            "'glasses,session,llm' or 'skills,toolsets,llm,media,session,glasses' (all in one); "
                            "default: the config's groups (none: a process per actor)")
    bench.add_argument("--peer", metavar="NAME",
                       help="also play the same turns through a peer framework in this process and print both "
                            "throughputs and their ratio: langgraph (LangGraph's ReAct agent; "
                            "pip install -e '.[peer]')")
    bench.add_argument("--floor", action="store_true",
                       help="the cost floor instead of the load run: ZeroMQ round trips between two processes "
                            "(also both on one CPU) and within one, msgspec encode/decode of typical messages, per hop; "
                            "a turn's own work without any hop, and the media turn's floor")
    bench.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    bench.add_argument("--log-level", default="INFO",
                       help="the runtime's log level during the run (default INFO, as `serve` runs; a line per event)")
    bench.add_argument("--prompts", action="store_true",
                       help="prompt tokens evaluated per request and time to first token on the real model, "
                            "instead of the load run")
    bench.add_argument("--prompts-profile", default="local", metavar="PROFILE",
                       help="with --prompts: the llamacpp profile whose template, tokens and model are measured "
                            "(default local; gemma works too)")
    bench.add_argument("--prompt-turns", type=int, default=20, help="with --prompts: turns of the scripted conversation")
    bench.add_argument("--no-ttft", action="store_true",
                       help="with --prompts: skip the real-model time-to-first-token run (tokens only: a few seconds)")
    bench.add_argument("--nodes", type=int, default=0,
                       help="a local cluster of N nodes on PostgreSQL behind HAProxy (cluster/bench.py; docs/several-nodes.md)")
    bench.add_argument("--chaos-nodes", type=float, default=0.0, metavar="SECONDS",
                       help="with --nodes: SIGKILL a random node every SECONDS and start it again")
    bench.add_argument("--freeze-nodes", action="store_true",
                       help="with --chaos-nodes: every other time SIGSTOP the node past its lease and SIGCONT it instead")
    bench.set_defaults(func=lambda args: cmd_bench(args, load_config))


def cmd_bench(args: argparse.Namespace, load_config: Callable[[argparse.Namespace], Config]) -> int:
    config = load_config(args)
    if args.prompts:
        return _prompts(args, config)
    if args.floor:
        return _floor(args, config)
    if args.nodes or args.chaos_nodes:
        from cluster.bench import cmd_bench_nodes

        if args.nodes < 1 or args.chaos_nodes < 0 or (args.freeze_nodes and not args.chaos_nodes):
            sys.exit("porfiry: --chaos-nodes needs --nodes N (N >= 1), and cannot be negative; --freeze-nodes needs --chaos-nodes")
        return cmd_bench_nodes(config, nodes=args.nodes, sessions=args.sessions, turns=args.turns, think_ms=args.think_ms,
                               per_phone=max(args.sessions_per_phone, 10), chaos_s=args.chaos_nodes, seed=args.seed,
                               freeze=args.freeze_nodes)
    config, options, only = _load_args(args, config)
    from phone.client import PhoneError

    peer = _peer_first(args, config, options) if args.peer else None
    try:
        report = anyio.run(lambda: run_load_bench(config, options, args.log_level, nice=args.nice, chaos_s=args.chaos,
                                                  chaos_only=only), backend="trio")
    except (RuntimeError, PhoneError) as exc:
        sys.exit(f"porfiry: bench: {exc}")
    except KeyboardInterrupt:
        sys.exit("porfiry: bench interrupted; the runtime it started is stopped")
    return _print_report(args, report, peer)


def _load_args(args: argparse.Namespace, config: Config):
    """The load run's options from the command line (with the config, `--groups` applied, and the
    actors `--chaos-only` names); a clear exit on a bad one."""
    from bench.load import MIX, LoadOptions, parse_mix

    if args.sessions < 1 or args.turns < 1 or args.sessions_per_phone < 1:
        sys.exit("porfiry: --sessions, --turns and --sessions-per-phone must be at least 1")
    if args.latency_ms < 0 or args.think_ms < 0 or args.chaos < 0:
        sys.exit("porfiry: --latency-ms, --think-ms and --chaos cannot be negative")
    from actors.topology import ACTORS

    only = frozenset(name.strip() for name in args.chaos_only.split(",") if name.strip())
    if only - set(ACTORS):
        sys.exit(f"porfiry: --chaos-only: no actor {', '.join(sorted(only - set(ACTORS)))} (actors: {', '.join(ACTORS)})")
    if only and not args.chaos:
        sys.exit("porfiry: --chaos-only needs --chaos SECONDS")
    try:
        mix = parse_mix(args.mix) if args.mix else MIX
        if args.groups is not None:
            config = _with_groups(config, args.groups)
    except ValueError as exc:
        sys.exit(f"porfiry: {exc}")
    options = LoadOptions(sessions=args.sessions, turns=args.turns, latency_ms=args.latency_ms,
                          think_ms=args.think_ms, sessions_per_phone=args.sessions_per_phone, seed=args.seed,
                          mix=tuple(mix.items()))
    return config, options, only


def _peer_first(args: argparse.Namespace, config: Config, options):
    """The same turns through the `--peer` agent, in this process, before the runtime starts."""
    from bench.peer import PeerUnavailable, check_peer, run_peer
    from bench.runtime import scratch_workdir

    try:
        check_peer(args.peer, options)
        # first, while this process has its normal priority and nothing else of ours runs
        _stderr_progress(f"the same turns through the {args.peer} peer (in this process)")
        with scratch_workdir() as workdir:
            peer = run_peer(args.peer, _scratch(config, workdir), options, progress=_stderr_progress)
        if {name for name, _ in options.mix} == {"media"}:  # the target's turn: say where the floor puts the ratio's limit
            peer = msgspec.structs.replace(peer, floor_turns_per_s=_media_floor_turns_per_s(config))
    except PeerUnavailable as exc:
        sys.exit(f"porfiry: bench --peer: {exc}")
    return peer


def _print_report(args: argparse.Namespace, report, peer) -> int:
    """The report (with the peer's ratio and the targets judged), printed and written to `--json`;
    the exit status: 1 when a turn was lost or failed."""
    from bench.report import format_report, judge_targets

    if peer is not None:
        peer = msgspec.structs.replace(peer, ratio=round(report.turns_per_s / max(peer.turns_per_s, 1e-9), 2))
        report = msgspec.structs.replace(report, peer=peer)
    report = msgspec.structs.replace(report, targets=judge_targets(report))
    print(format_report(report))
    if args.json:
        Path(args.json).write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
        print(f"figures written to {args.json}")
    return 1 if report.lost or report.errors else 0


async def run_load_bench(config: Config, options, log_level: str = "INFO",
                         progress: Callable[[str], None] | None = None, nice: int = 0, chaos_s: float = 0.0,
                         chaos_only: frozenset[str] = frozenset()):
    """Start the runtime, warm it up, take the memory baseline, run the load, measure, stop.
    `nice`: lower this process's CPU priority once the runtime runs (its processes keep theirs).
    `chaos_s`: SIGKILL a random actor process this often during the load (`chaos_only`: one that
    hosts one of these actors)."""
    import protocol as p
    from bench.load import LoadDriver, LoadOptions, phone_count, warmup_plan
    from bench.report import build_report, machine_figures
    from bench.runtime import BenchRuntime, read_cpu_s, read_machine_cpu_s, read_rss_kb

    say = progress or _stderr_progress
    with BenchRuntime(config, latency_ms=options.latency_ms, log_level=log_level, chaos=chaos_s > 0) as runtime:
        say(f"starting the runtime (process mode, scripted model; log {runtime.log_path})")
        status = await runtime.wait_ready()
        if nice > 0:
            os.nice(nice)
        pids = _processes(status)
        pids["supervisor"] = runtime.pid
        endpoint = runtime.config.phone.endpoint
        warmup = await LoadDriver(endpoint, LoadOptions(latency_ms=options.latency_ms, session_prefix="warmup")).run(plans=warmup_plan())
        if warmup.lost or warmup.errors.total():
            raise RuntimeError(f"the warm-up session failed: {dict(warmup.errors.counts)} {warmup.errors.examples}")
        baseline = {name: read_rss_kb(pid)[0] for name, pid in pids.items()}
        held, held_kb = await _hold_sessions(endpoint, options, pids)
        cpu_before = {name: read_cpu_s(pid) for name, pid in pids.items()}
        say(f"warmed up; {options.sessions} sessions x {options.turns} turns starting")
        driver = LoadDriver(endpoint, options)
        kills: dict[str, int] = {}
        machine_before, bench_before = read_machine_cpu_s(), read_cpu_s(os.getpid())
        window_start = time.monotonic_ns()
        async with anyio.create_task_group() as chaos:
            if chaos_s > 0:
                chaos.start_soon(_chaos, runtime, chaos_s, options.seed, kills, say, chaos_only)
            result = await driver.run(progress=lambda r: say(_progress_line(r, options)))
            chaos.cancel_scope.cancel()
        window_end = time.monotonic_ns()
        machine_after, bench_after = read_machine_cpu_s(), read_cpu_s(os.getpid())
        cpu_used = {name: read_cpu_s(pid) - cpu_before[name] for name, pid in pids.items()}
        # a killed process takes its CPU time with it: under chaos only the steal is known
        machine = machine_figures(machine_before, machine_after, (window_end - window_start) / 1e9,
                                  ours_s=None if chaos_s > 0 else sum(cpu_used.values()) + bench_after - bench_before)
        recovered, intact = (await _check_histories(runtime, result.said)) if chaos_s > 0 else (0, 1.0)
        runtime.keep = bool(result.lost or result.errors.total())  # its log tells what went wrong
        idle, peak, restarts = await _settled_figures(runtime, pids, cpu_used)
        if runtime.keep:
            say(f"the runtime's config and log are kept in {runtime.workdir}")
        phones = phone_count(options.sessions, options)
        report = build_report(options, result, phones=phones, log_level=log_level, nice=nice, peak_kb=peak, idle_kb=idle,
                              baseline_kb=baseline, restarts=restarts, cpu_s=cpu_used, machine=machine,
                              held_kb=held_kb, held_sessions=held)
        admission = await runtime.ask("session", p.AdmissionStatsRequest())
        if isinstance(admission, p.AdmissionStats):
            report.admission_waited, report.admission_lowest_limit = admission.waited, admission.lowest_limit
        return msgspec.structs.replace(report, chaos_s=chaos_s, chaos_kills=kills, sessions_recovered=recovered,
                                       history_intact=intact)


async def _hold_sessions(endpoint: str, options, pids: dict[str, int]) -> tuple[int, dict[str, int]]:
    """Play a tenth of the load's sessions (back to back, their own phones) before the load: the
    RSS once they are idle is the base of the marginal memory per idle session, past what the
    first sessions cost once (allocator arenas, caches filled to their bound, connections' buffers
    reused). Returns (sessions held, each process's RSS in KiB)."""
    import dataclasses

    from bench.load import LoadDriver
    from bench.runtime import read_rss_kb

    held = max(1, options.sessions // 10)
    driver = LoadDriver(endpoint, dataclasses.replace(options, sessions=held, think_ms=0, session_prefix="held"))
    result = await driver.run()
    if result.lost or result.errors.total():
        raise RuntimeError(f"the sessions held before the load failed: {dict(result.errors.counts)} {result.errors.examples}")
    await anyio.sleep(0.5)  # as before reading the idle figures: the last messages settle
    return held, {name: read_rss_kb(pid)[0] for name, pid in pids.items()}


async def _settled_figures(runtime, pids: dict[str, int], cpu_used: dict[str, float]):
    """Each process's memory now and at its peak once the load settled, and the actors' restarts;
    a restarted process's figures are gone (zero memory, its CPU time dropped from `cpu_used`)."""
    from bench.runtime import read_rss_kb

    await anyio.sleep(0.5)  # let the last messages settle before reading memory
    rss = {name: read_rss_kb(pid) for name, pid in pids.items()}
    idle = {name: current for name, (current, _) in rss.items()}
    peak = {name: highest for name, (_, highest) in rss.items()}
    final = await runtime.status()
    restarts = {row.name: row.restarts for row in final.actors}
    for name, pid in _processes(final).items():
        if pid != pids.get(name):
            idle[name] = peak[name] = 0  # restarted: the old process's figures are gone
            cpu_used.pop(name, None)
    return idle, peak, restarts


async def _chaos(runtime, every_s: float, seed: int, kills: dict[str, int], say: Callable[[str], None],
                 only: frozenset[str] = frozenset()) -> None:
    """Every `every_s`: SIGKILL one actor process picked at random (any kind; a group as one;
    with `only`, one hosting one of those actors)."""
    import random
    import signal

    rng = random.Random(seed)
    while True:
        await anyio.sleep(every_s)
        try:
            processes = _processes(await runtime.status())
        except Exception as exc:  # noqa: BLE001 - the supervisor is busy restarting: try next time
            say(f"chaos: no status ({type(exc).__name__}); no kill this time")
            continue
        names = sorted(name for name in processes if not only or only & set(name.split("+")))
        if not names:
            say(f"chaos: no process hosts {', '.join(sorted(only))}; no kill this time")
            continue
        name = rng.choice(names)
        try:
            os.kill(processes[name], signal.SIGKILL)
        except ProcessLookupError:
            continue
        kills[name] = kills.get(name, 0) + 1
        say(f"chaos: SIGKILLed {name} (pid {processes[name]})")


async def _check_histories(runtime, said: dict[str, list[str]]) -> tuple[int, float]:
    """(sessions that came back from the journal, share of sessions whose history - what their
    next request carries - holds every text the phone got acked, in order)."""
    import protocol as p
    from actors.base import Endpoint

    await runtime.wait_ready()
    recovered = intact = 0
    client = Endpoint(runtime.config, name="bench-check")
    async with client.running():
        for session, texts in said.items():
            info = await client.ask("session", p.SessionInfoRequest(), session=session, timeout=10.0)
            history = "\n".join(m["content"] for m in getattr(info, "history", []) if m["role"] == "user")
            # back from the journal: read back into memory, or (after the last kill) read from it now
            recovered += bool(getattr(info, "restored", False) or (getattr(info, "exists", False) and not getattr(info, "resident", True)))
            position = 0
            for text in texts:
                position = history.find(text, position)
                if position < 0:
                    break
                position += len(text)
            intact += position >= 0
    return recovered, round(intact / max(1, len(said)), 4)


def _with_groups(config: Config, text: str) -> Config:
    """--groups 'a,b;c,d' as topology.groups; ValueError says what is wrong."""
    from actors.topology import process_groups

    groups = [[name.strip() for name in group.split(",") if name.strip()] for group in text.split(";")]
    topology = msgspec.structs.replace(config.topology, groups=[group for group in groups if group])
    process_groups(topology)
    return msgspec.structs.replace(config, topology=topology)


def _scratch(config: Config, workdir: Path) -> Config:
    from bench.runtime import scratch_config

    return scratch_config(config, workdir)


def _media_floor_turns_per_s(config: Config) -> float:
    """`bench --floor`'s most media turns/s, measured briefly (a few seconds) beside a peer run."""
    from bench.floor import measure_floor

    _stderr_progress("the floor of a media turn on this machine (bench --floor, briefly)")
    try:
        return measure_floor(count=3000, codec_seconds=0.05, config=config).media_turn.turns_per_s
    except RuntimeError as exc:  # a turn of the floor's own went wrong: the load would too
        sys.exit(f"porfiry: bench --floor: {exc}")


def _floor(args: argparse.Namespace, config: Config) -> int:
    from bench.floor import format_floor, measure_floor

    try:
        report = measure_floor(progress=_stderr_progress, config=config)
    except RuntimeError as exc:  # a turn of its own went wrong (e.g. a broken media catalog)
        sys.exit(f"porfiry: bench --floor: {exc}")
    print(format_floor(report))
    if args.json:
        Path(args.json).write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
        print(f"figures written to {args.json}")
    return 0


def _processes(status) -> dict[str, int]:
    """OS process -> pid, named by its actors ("glasses+session" for a process group)."""
    members: dict[int, list[str]] = {}
    for row in status.actors:
        members.setdefault(row.pid, []).append(row.name)
    return {"+".join(names): pid for pid, names in members.items()}


def _progress_line(result, options) -> str:
    rate = result.events_done / result.duration_s
    return (f"[{result.duration_s:6.1f} s] turns {result.turns_done}/{options.sessions * options.turns}  "
            f"{rate:7.1f} events/s  lost {result.lost}  errors {result.errors.total()}")


def _stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _prompts(args: argparse.Namespace, config: Config) -> int:
    from bench.prompts import format_report, measure_prompts
    from llm.packaged_models import ModelMissing

    try:
        report = anyio.run(lambda: measure_prompts(config, profile=args.prompts_profile, turns=args.prompt_turns,
                                                   ttft=not args.no_ttft, progress=_stderr_progress), backend="trio")
    except (ValueError, ModelMissing) as exc:
        sys.exit(f"porfiry: bench --prompts: {exc}")
    except ModuleNotFoundError as exc:
        if exc.name != "llama_cpp":
            raise
        sys.exit("porfiry: bench --prompts: llama-cpp-python is not installed: pip install -e '.[local]'")
    print(format_report(report))
    if args.json:
        Path(args.json).write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
        print(f"figures written to {args.json}")
    return 0
