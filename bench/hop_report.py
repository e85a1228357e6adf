"""The hop trace's report (`bench/hops.py` computes it): its types, as the bench's JSON
carries them under `hops`, and the tables `run.py bench --trace-hops` prints."""
from __future__ import annotations

import msgspec

BURST_NS = 100_000_000  # slow turns that start this close together share a cause (a stall, a burst of load)


class HopRow(msgspec.Struct, kw_only=True):
    sender: str
    receiver: str
    type: str
    count: int
    p50_us: float
    p99_us: float
    max_us: float
    bytes_p50: int


class DwellRow(msgspec.Struct, kw_only=True):
    actor: str
    cause: str  # the body type received ("*": all of this actor's dwells)
    type: str  # the body type sent
    count: int
    p50_us: float
    p99_us: float
    max_us: float


class Figures(msgspec.Struct, kw_only=True):
    count: int
    p50: float
    p95: float
    p99: float
    max: float


class Segment(msgspec.Struct, kw_only=True):
    label: str
    ms: float
    part: str = ""  # "transit between processes", "transit in a process", "dwell ACTOR", "phone legs", "untraced"


class PartRow(msgspec.Struct, kw_only=True):
    part: str
    median_ms: float  # the median over all turns of the time a turn's critical path spent here
    slow_ms: float  # the mean over the slow turns


class TailLabel(msgspec.Struct, kw_only=True):
    label: str
    excess_ms: float  # mean over the slow turns of (their time here - the median turn's of their kind)
    slow_ms: float  # mean time here in the slow turns
    median_ms: float  # mean over the slow turns of the median time here of their kind
    share: float  # of all the slow turns' excess


class SlowTurn(msgspec.Struct, kw_only=True):
    session: str
    kind: str
    total_ms: float
    median_ms: float  # the median total of its kind
    top: list[Segment]
    gc_ms: float  # collections in any process during the turn
    journal_ms: float  # journal transactions running (the session's worker thread) during the turn
    in_flight: int  # other turns under way meanwhile


class ContextRow(msgspec.Struct, kw_only=True):
    metric: str
    median: float  # over all turns
    slow_mean: float  # over the slowest 1 %


class TurnsReport(msgspec.Struct, kw_only=True):
    edge_ms: dict[str, Figures]  # by kind and "all": bridge got the event -> bridge sent the last Ack/TurnDone
    edge_done_ms: Figures  # all: -> the TurnDone
    edge_ack_ms: Figures  # all: -> the Ack
    phone_ms: Figures | None  # all: the phone's encode of the event -> its decode of the last Ack/TurnDone
    path_ms: Figures  # all: the critical path (phone legs included when recorded)
    median_path: dict[str, list[Segment]]  # by kind: the median time of each segment label
    parts: list[PartRow]  # the critical path by part: transit, dwell per actor, phone legs
    ack_last: int  # turns whose Ack left after their TurnDone: the journal's commit set the pace
    slowest: int  # the slow turns below: the slowest 1 % (at least one)
    tail: list[TailLabel]
    slow_turns: list[SlowTurn]
    slow_with_gc: int  # slow turns during which some process collected for 1 ms or more
    slow_bursts: int  # groups of slow turns that started within BURST_NS of each other: few means shared causes
    context: list[ContextRow]  # what else went on during the median turn and the slow ones


class JournalFigures(msgspec.Struct, kw_only=True):
    batches: int
    ops_p50: float
    waited: int  # batches someone waited for (accept_event, a read)
    handoff_us: Figures  # queued -> the worker thread runs it
    sql_us: Figures  # the transaction in the thread
    back_us: Figures  # thread done -> the loop resumes the writer
    total_us: Figures


class GcFigures(msgspec.Struct, kw_only=True):
    process: str
    count: int
    by_generation: dict[str, int]
    total_ms: float
    p99_ms: float
    max_ms: float


class SchedRow(msgspec.Struct, kw_only=True):
    """One process's thread group during the load, from /proc/PID/task/*/schedstat."""

    process: str
    threads: str  # main (the event loop), zmq (ZeroMQ I/O threads), worker (the journal's SQLite)
    cpu_ms_per_turn: float
    wait_ms_per_turn: float  # runnable, waiting for a CPU
    runs_per_turn: float  # times it got a CPU (wake-ups and preemptions)
    wait_us_per_run: float


class HopReport(msgspec.Struct, kw_only=True):
    records: int
    dropped: int
    processes: list[str]
    turns: int
    hops: list[HopRow]
    dwell: list[DwellRow]
    edge: TurnsReport | None
    journal: JournalFigures | None
    gc: list[GcFigures]
    unmatched_tx: int  # sent to nobody traced (outside the runtime, or lost)
    untraced_rx: int  # received from nobody traced (the CLI, the supervisor, untraced phones)
    sched: list[SchedRow] = []  # CPU and run-queue waits per process and thread group (the bench adds them)
    cpu_pressure: float = -1.0  # share of the load's time some runnable task waited for a CPU (PSI); -1: unknown


def _row(label: str, f: Figures | None, unit: str = "ms") -> str:
    if f is None or not f.count:
        return f"  {label:44} (no samples)"
    return f"  {label:44} p50 {f.p50:8.2f}  p95 {f.p95:8.2f}  p99 {f.p99:8.2f}  max {f.max:8.2f} {unit}  n={f.count}"


def format_hops(report: HopReport, phone_side=None, phone_by_kind=None, min_count: int = 1) -> str:
    """The tables; `phone_side`/`phone_by_kind`: the bench's own phone-side Percentiles, to print next to the edge."""
    lines = [f"Hop trace: {report.records} records from {', '.join(report.processes)}"
             + (f" ({report.dropped} dropped: the limit)" if report.dropped else "")
             + f"; {report.turns} turns; {report.unmatched_tx} sent outside the traced processes, "
               f"{report.untraced_rx} received from outside"]
    lines.append("transit per hop kind, µs (tx in one actor -> rx of the same envelope in another):")
    lines.append(f"  {'sender -> receiver':28} {'body':22} {'count':>7} {'p50':>8} {'p99':>8} {'max':>9} {'bytes':>6}")
    for row in report.hops:
        if row.count >= min_count:
            lines.append(f"  {row.sender + ' -> ' + row.receiver:28} {row.type[:22]:22} {row.count:7d} {row.p50_us:8.1f} "
                         f"{row.p99_us:8.1f} {row.max_us:9.1f} {row.bytes_p50:6d}")
    lines.append("dwell per actor, µs (the rx that caused a tx -> that tx, same actor; '*': all of its dwells):")
    lines.append(f"  {'actor':10} {'received -> sent':40} {'count':>7} {'p50':>8} {'p99':>8} {'max':>9}")
    for row in report.dwell:
        if row.count >= min_count:
            what = "*" if row.cause == "*" else f"{row.cause} -> {row.type}"
            lines.append(f"  {row.actor:10} {what[:40]:40} {row.count:7d} {row.p50_us:8.1f} {row.p99_us:8.1f} {row.max_us:9.1f}")
    edge = report.edge
    if edge is not None:
        lines.append("turn time, ms (model time subtracted):")
        if phone_side is not None:
            lines.append(_row("phone side (the bench's figure), all", phone_side))
        if edge.phone_ms is not None:
            lines.append(_row("phone codec: encode event -> decode last", edge.phone_ms))
        lines.append(_row("edge: bridge got event -> sent last", edge.edge_ms.get("all")))
        lines.append(_row("edge: bridge got event -> sent TurnDone", edge.edge_done_ms))
        lines.append(_row("edge: bridge got event -> sent Ack", edge.edge_ack_ms))
        lines.append(_row("critical path (phone legs when traced)", edge.path_ms))
        for kind, figures in edge.edge_ms.items():
            if kind != "all":
                lines.append(_row(f"edge, {kind}", figures))
                if phone_by_kind and kind in phone_by_kind:
                    lines.append(_row(f"phone side, {kind}", phone_by_kind[kind]))
        lines.append(f"  (the Ack left after the TurnDone, i.e. the journal's commit set the pace, in {edge.ack_last} "
                     f"of {edge.path_ms.count} turns)")
        lines.append("the median turn's critical path, ms per segment, by kind:")
        for kind, segments in edge.median_path.items():
            lines.append(f"  {kind}: " + ", ".join(f"{s.label} {s.ms:.2f}" for s in segments[:12]))
        lines.append("the critical path by part, ms: the median over all turns, the mean over the slowest 1 %:")
        for row in edge.parts:
            lines.append(f"  {row.part:36} {row.median_ms:8.2f} {row.slow_ms:8.2f}")
        lines.append(f"the slowest {edge.slowest} turn(s) (1 %), in {edge.slow_bursts} burst(s) (started within "
                     f"{BURST_NS // 1_000_000} ms of each other); {edge.slow_with_gc} of them overlap a collection of ≥ 1 ms; "
                     f"what else went on, the median turn vs the mean slow turn:")
        for row in edge.context:
            lines.append(f"  {row.metric:52} {row.median:8.2f} {row.slow_mean:8.2f}")
        lines.append("  where their extra time went, vs the median turn of their kind (mean ms per slow turn):")
        lines.append(f"  {'segment':52} {'extra':>8} {'slow':>8} {'median':>8} {'share':>6}")
        for row in edge.tail:
            lines.append(f"  {row.label[:52]:52} {row.excess_ms:8.2f} {row.slow_ms:8.2f} {row.median_ms:8.2f} {row.share * 100:5.0f}%")
        for turn in edge.slow_turns:
            lines.append(f"  {turn.session} {turn.kind}: {turn.total_ms:.2f} ms (median {turn.median_ms:.2f}, gc {turn.gc_ms:.2f}, "
                         f"journal {turn.journal_ms:.2f}, {turn.in_flight} turns in flight): "
                         + ", ".join(f"{s.label} {s.ms:.2f}" for s in turn.top))
    journal = report.journal
    if journal is not None:
        lines.append(f"journal: {journal.batches} batches, {journal.ops_p50:g} operations each at the median, "
                     f"{journal.waited} waited for; µs:")
        lines.append(_row("queued -> worker thread runs it", journal.handoff_us, "µs"))
        lines.append(_row("the transaction (SQL, commit)", journal.sql_us, "µs"))
        lines.append(_row("thread done -> the loop resumes", journal.back_us, "µs"))
        lines.append(_row("all", journal.total_us, "µs"))
    if report.sched:
        pressure = f"; some task waited for a CPU {report.cpu_pressure * 100:.0f} % of the time (PSI)" if report.cpu_pressure >= 0 else ""
        lines.append(f"CPU scheduling during the load (schedstat, every process of the machine shares its CPUs{pressure}):")
        lines.append(f"  {'process':36} {'threads':7} {'CPU ms/turn':>11} {'wait ms/turn':>12} {'runs/turn':>9} {'wait µs/run':>11}")
        for row in report.sched:
            lines.append(f"  {row.process:36} {row.threads:7} {row.cpu_ms_per_turn:11.2f} {row.wait_ms_per_turn:12.2f} "
                         f"{row.runs_per_turn:9.1f} {row.wait_us_per_run:11.1f}")
    if report.gc:
        lines.append("garbage collections during the load:")
        for row in report.gc:
            lines.append(f"  {row.process:36} {row.count:6d} (by generation {row.by_generation})  total {row.total_ms:.1f} ms"
                         f"  p99 {row.p99_ms:.2f}  max {row.max_ms:.2f} ms")
    return "\n".join(lines)
