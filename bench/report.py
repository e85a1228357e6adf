"""What `run.py bench` prints and writes with --json: one Struct, so every run compares key by key."""
from __future__ import annotations

import math
import os

import msgspec

from bench.load import LoadOptions, LoadResult
from bench.peer import PeerReport
from bench.stats import Percentiles, summarize


class LoadReport(msgspec.Struct, kw_only=True):
    sessions: int
    turns: int  # per session, as asked (--turns)
    turns_completed: int
    latency_ms: float
    think_ms: float
    phones: int
    log_level: str
    nice: int  # the load generator's niceness (the runtime's processes run at 0)
    duration_s: float
    events: int
    events_per_s: float
    overhead_ms: Percentiles  # runtime time per turn: phone-side wall time minus the model's
    overhead_ms_by_kind: dict[str, Percentiles]
    overhead_per_model_call_ms: Percentiles  # a turn's runtime time divided by its model calls
    first_display_ms: Percentiles  # event -> first text on the glasses, model time subtracted
    model_calls: int
    lost: int
    errors: dict[str, int]
    error_examples: dict[str, list[str]]
    resends: int  # events the phones had to resend (ack late or lost)
    busy: int  # Busy answers (a session's queue was full)
    rss_mb: dict[str, float]  # peak RSS of each actor process (and the supervisor); a group: "a+b"
    rss_idle_mb: dict[str, float]  # RSS after the load, every session idle
    bytes_per_idle_session: float  # RSS growth over the one-session baseline / sessions (fixed costs included)
    restarts: dict[str, int]  # actor restarts during the run (should be all 0)
    mix: dict[str, float] = {}  # turn kinds played and their weights (--mix)
    turns_per_s: float = 0.0  # turns completed / duration
    cpu_ms_per_turn: dict[str, float] = {}  # each runtime process's CPU time during the load / turns
    cpu_ms_per_turn_total: float = 0.0  # all of the runtime's processes together
    peer: PeerReport | None = None  # --peer: the same turns through a peer framework
    chaos_s: float = 0.0  # --chaos: a random actor process SIGKILLed this often (0: none)
    chaos_kills: dict[str, int] = {}  # processes killed, by name
    sessions_recovered: int = 0  # sessions that came back from the journal after a kill (into memory, or read from it at the end)
    history_intact: float = 1.0  # share of sessions whose history holds every turn the phone got acked, in order
    machine: MachineLoad | None = None  # what else the machine's CPUs did during the load (None: unknown)
    admission_waited: int = 0  # turns that waited to start (turn admission, core/admission.py), warm-up included
    admission_lowest_limit: int = 0  # the lowest the admission limit was (its max_turns: never cut)
    # RSS growth over a baseline already holding `marginal_base_sessions` idle sessions / the load's
    # sessions: what one more idle session costs, without the first sessions' fixed costs
    bytes_per_idle_session_marginal: float = 0.0
    marginal_base_sessions: int = 0
    rss_growth_kb: dict[str, int] = {}  # each process's RSS growth over the marginal baseline
    targets: list[Target] = []  # the cost targets this run measures (`judge_targets`), met or not


class Target(msgspec.Struct, kw_only=True):
    """One of the runtime's cost targets (issue 18), judged on a run of that target's shape."""

    name: str
    goal: str
    measured: str
    met: bool


def judge_targets(report: "LoadReport") -> list[Target]:
    """The targets this run measures: the media turn against the peer (`--mix media=1 --peer`),
    runtime time per turn at 1,000 sessions (`--sessions 1000 --think-ms 10000`, zero model
    latency), 10,000 sessions (`--sessions 10000`); none under `--chaos`."""
    if report.chaos_s or report.latency_ms:
        return []
    targets = []
    peer = report.peer
    if peer is not None and set(report.mix) == {"media"}:
        measured = f"{peer.ratio:.2f}x"
        if peer.floor_turns_per_s:  # where the floor puts the limit (issue 18 asks for it when 20x is beyond it)
            measured += f" (the floor allows at most {peer.floor_ratio:.1f}x here)"
        targets.append(Target(name=f"media turn vs {peer.name}", goal=">= 20x its turns per second",
                              measured=measured, met=peer.ratio >= 20))
    if report.sessions == 1000 and report.think_ms == 10000 and report.overhead_ms.count:
        p99 = report.overhead_ms.p99
        targets.append(Target(name="runtime time per turn at 1,000 sessions", goal="p99 < 5 ms",
                              measured=f"p99 {p99:.1f} ms", met=p99 < 5))
    if report.sessions >= 10000:
        kb = report.bytes_per_idle_session / 1024
        targets.append(Target(name=f"{report.sessions:,} sessions", goal="0 lost, < 50 KB per idle session",
                              measured=f"{report.lost} lost, {kb:.1f} KB", met=report.lost == 0 and kb < 50))
    return targets


class MachineLoad(msgspec.Struct, kw_only=True):
    """The CPUs' time during the load beside the runtime and its phones: a run disturbed by other
    work or by the hypervisor says so next to its figures (on a shared VM they vary ±20 %)."""

    cpus: int
    steal_pct: float  # of all CPUs' time, taken by the hypervisor for other guests
    others_cores: float  # cores used by processes that are neither the runtime nor this bench; -1: unknown (chaos)


def machine_figures(before: tuple[float, float], after: tuple[float, float], wall_s: float, *, ours_s: float | None,
                    cpus: int | None = None) -> MachineLoad | None:
    """`before`/`after`: the machine's (busy, stolen) CPU seconds (bench.runtime.read_machine_cpu_s);
    `ours_s`: the CPU seconds the runtime's processes and the bench used meanwhile (None: unknown)."""
    cpus = cpus or os.cpu_count() or 1
    if wall_s <= 0 or after == (0.0, 0.0):
        return None
    busy, stolen = after[0] - before[0], after[1] - before[1]
    return MachineLoad(cpus=cpus, steal_pct=round(100 * stolen / (wall_s * cpus), 2),
                       others_cores=-1.0 if ours_s is None else round(max(0.0, busy - ours_s) / wall_s, 3))


def _ms(samples: list[float]) -> Percentiles:
    figures = summarize(s * 1000 for s in samples)
    return msgspec.structs.replace(figures, **{k: round(getattr(figures, k), 3) for k in ("p50", "p95", "p99", "max")})


def build_report(options: LoadOptions, result: LoadResult, *, phones: int, log_level: str, nice: int, peak_kb: dict[str, int],
                 idle_kb: dict[str, int], baseline_kb: dict[str, int], restarts: dict[str, int],
                 cpu_s: dict[str, float] | None = None, machine: MachineLoad | None = None,
                 held_kb: dict[str, int] | None = None, held_sessions: int = 0) -> LoadReport:
    """`baseline_kb`: RSS after the one warm-up session; `held_kb`: after `held_sessions` more
    sessions went idle (None: not measured), the base of the marginal figure."""
    grown_kb = sum(idle_kb.values()) - sum(baseline_kb.get(name, 0) for name in idle_kb)
    held = held_kb if held_kb is not None else baseline_kb
    growth = {name: kb - held.get(name, 0) for name, kb in idle_kb.items()}
    turns = max(1, result.turns_done)
    cpu_s = cpu_s or {}
    return LoadReport(
        sessions=options.sessions, turns=options.turns, turns_completed=result.turns_done,
        latency_ms=options.latency_ms, think_ms=options.think_ms, phones=phones, log_level=log_level, nice=nice,
        duration_s=round(result.duration_s, 3), events=result.events_sent,
        events_per_s=round(result.events_done / result.duration_s, 1),
        overhead_ms=_ms([s for samples in result.overhead_s.values() for s in samples]),
        overhead_ms_by_kind={kind: _ms(samples) for kind, samples in sorted(result.overhead_s.items())},
        overhead_per_model_call_ms=_ms(result.per_call_s),
        first_display_ms=_ms(result.first_display_s),
        model_calls=result.model_calls, lost=result.lost,
        errors=dict(result.errors.counts), error_examples=result.errors.examples,
        resends=result.resends, busy=result.busy,
        rss_mb={name: round(kb / 1024, 1) for name, kb in peak_kb.items()},
        rss_idle_mb={name: round(kb / 1024, 1) for name, kb in idle_kb.items()},
        bytes_per_idle_session=round(max(0, grown_kb) * 1024 / max(1, options.sessions + held_sessions)),
        bytes_per_idle_session_marginal=round(max(0, sum(growth.values())) * 1024 / max(1, options.sessions)),
        marginal_base_sessions=held_sessions, rss_growth_kb=growth,
        restarts=restarts,
        mix=dict(options.mix), turns_per_s=round(result.turns_done / result.duration_s, 1),
        cpu_ms_per_turn={name: round(seconds * 1000 / turns, 3) for name, seconds in cpu_s.items()},
        cpu_ms_per_turn_total=round(sum(cpu_s.values()) * 1000 / turns, 3),
        machine=machine,
    )


def _row(label: str, figures: Percentiles) -> str:
    if not figures.count:
        return f"  {label:24} (no samples)"
    return (f"  {label:24} p50 {figures.p50:8.2f}   p95 {figures.p95:8.2f}   p99 {figures.p99:8.2f}   "
            f"max {figures.max:8.2f}   n={figures.count}")


def _machine_line(machine: MachineLoad) -> str:
    others = ("other processes' use unknown (killed processes took theirs)" if machine.others_cores < 0
              else f"{machine.others_cores:.2f} cores used by other processes")
    return f"  the machine meanwhile    {machine.steal_pct:.1f} % of its {machine.cpus} CPUs' time stolen by the hypervisor, {others}"


def _memory_lines(report: LoadReport) -> list[str]:
    lines = ["memory, MB (peak RSS; RSS with every session idle):"]
    for name, peak in report.rss_mb.items():
        lines.append(f"  {name:12} {peak:8.1f}   {report.rss_idle_mb.get(name, math.nan):8.1f}")
    lines.append(f"memory per idle session   {report.bytes_per_idle_session_marginal / 1024:.1f} KB marginal "
                 f"(all processes' RSS growth over a baseline holding {report.marginal_base_sessions} idle sessions "
                 f"/ the {report.sessions} sessions added: "
                 + ", ".join(f"{name} {kb / 1024:+.1f}" for name, kb in report.rss_growth_kb.items()) + " MB)")
    lines.append(f"                          {report.bytes_per_idle_session / 1024:.1f} KB over the one-session "
                 f"baseline (growth / all {report.sessions + report.marginal_base_sessions} sessions, "
                 f"fixed costs included)")
    return lines


def format_report(report: LoadReport) -> str:
    lines = [
        f"Porfiry load benchmark: {report.sessions} sessions x {report.turns} turns over {report.phones} phone "
        f"connection(s); scripted model {report.latency_ms:g} ms per call, think {report.think_ms:g} ms, "
        f"log level {report.log_level}, load generator at nice {report.nice}",
        f"  duration                 {report.duration_s:.1f} s; {report.turns_completed} turns, {report.events} events, "
        f"{report.model_calls} model calls",
        f"  mix                      " + ", ".join(f"{kind}={weight:g}" for kind, weight in report.mix.items()),
        f"  events per second        {report.events_per_s:.1f}",
        f"  turns per second         {report.turns_per_s:.1f}",
        f"  runtime CPU per turn     {report.cpu_ms_per_turn_total:.2f} ms ("
        + ", ".join(f"{name} {ms:.2f}" for name, ms in report.cpu_ms_per_turn.items()) + ")",
        *([_machine_line(report.machine)] if report.machine else []),
        "runtime time per turn, ms (model time subtracted; measured on the phone side):",
        _row("all turns", report.overhead_ms),
        *(_row(kind, figures) for kind, figures in report.overhead_ms_by_kind.items()),
        _row("per model call", report.overhead_per_model_call_ms),
        _row("event -> first display", report.first_display_ms),
        f"events lost              {report.lost}",
        "errors                   " + (", ".join(f"{k}: {v}" for k, v in sorted(report.errors.items())) or "none"),
    ]
    for kind, examples in sorted(report.error_examples.items()):
        lines += [f"    {kind}: {example}" for example in examples]
    lines.append(f"phone resends {report.resends}, busy answers {report.busy}, actor restarts "
                 f"{sum(report.restarts.values())}")
    if report.admission_waited:
        lines.append(f"turn admission: {report.admission_waited} turns waited to start, the limit down to "
                     f"{report.admission_lowest_limit} at its lowest")
    if report.chaos_s:
        lines.append(f"chaos: a random actor process SIGKILLed every {report.chaos_s:g} s; kills "
                     + (", ".join(f"{k}: {v}" for k, v in sorted(report.chaos_kills.items())) or "none")
                     + f"; sessions recovered {report.sessions_recovered}; history intact {report.history_intact:.3f}")
    lines += _memory_lines(report)
    peer = report.peer
    if peer is not None:
        lines += [
            f"peer: {peer.name} {peer.version} (in the bench's process, same turns, scripted model, no network):",
            f"  turns per second         {peer.turns_per_s:.1f}   ({peer.turns} turns in {peer.duration_s:.1f} s, "
            f"{peer.model_calls} model calls)",
            f"  CPU per turn             {peer.cpu_ms_per_turn:.2f} ms",
            _row("wall time per turn", peer.latency_ms),
            "  errors                   " + (", ".join(f"{k}: {v}" for k, v in sorted(peer.errors.items())) or "none"),
            f"Porfiry / {peer.name}: {peer.ratio:.2f}x the turns per second "
            f"({report.turns_per_s:.1f} vs {peer.turns_per_s:.1f}); CPU per turn {report.cpu_ms_per_turn_total:.2f} "
            f"vs {peer.cpu_ms_per_turn:.2f} ms",
        ]
        if peer.floor_turns_per_s:
            lines.append(f"the floor on this machine (bench --floor): at most {peer.floor_turns_per_s:,.0f} media turns/s, "
                         f"{peer.floor_ratio:.1f}x {peer.name}")
    if report.targets:
        lines.append("targets this run measures (issue 18; README, Benchmarks):")
        lines += [f"  {t.name}: {t.goal}: {t.measured}, {'met' if t.met else 'NOT met'}" for t in report.targets]
    return "\n".join(lines)
