"""`run.py bench --trace-hops`: where the wall time of a turn goes, hop by hop, from the records
every actor process (and the bench's phones) wrote (`core/hoptrace.py`). Pure logic: records in,
figures out (their types and tables: `bench/hop_report.py`); no sockets.

A record: (t_ns, actor, "tx"|"rx", body type, envelope id, corr, session, bytes, ref, sender) on
CLOCK_MONOTONIC, one clock for every process. From them:

- transit, per hop kind (sender actor -> receiver actor, body type): a tx in one actor to the rx
  of the same envelope id in another. It holds the ZeroMQ send, the receiving process's wake-up
  (or its being busy with something else: the pump runs when the loop gets to it) and the hand-off
  to the decode;
- dwell, per actor: from the rx that caused a tx to that tx, in the same actor. The cause of a
  reply (a tx with `corr`) is the request it answers, or a later reply the actor received for the
  same event (`ref`: the bridge's Ack follows the session's EventAccepted); the cause of any other
  tx is the actor's latest earlier rx of the same type not forwarded yet (the bridge forwards
  Display and TurnDone), else its latest earlier rx of that session. It holds the mailbox, the
  handler, and whatever the handler waited for inside the process (the journal's commit);
- turns at the runtime's edge: the bridge received the turn's phone event -> the bridge sent the
  last of what the phone waits for (the Ack of each event and the TurnDone covering it), with the
  scripted model's time subtracted; when the phone's records are there too, the same from the
  phone's encode to its decode (the load generator's wake-ups included, its tasks' not);
- each turn's critical path: from that last message back, alternately its dwell and its transit,
  to the phone event (and the phone legs, when recorded); the segments add up to the turn's time.
  For the slowest 1 % of turns, each segment's time is compared with the median turn of the same
  kind: where the extra time went; and what else went on meanwhile, against the median turn: turns
  in flight, CPU pressure (the bench's PSI samples), collections, journal transactions, and how much
  of the path's transit and dwell passed while that process handled other sessions' messages
  (queueing behind the runtime's own load) or nothing it recorded (waiting for a CPU, a stall);
- the journal's batches (hand-off to the worker thread, the SQL, the way back to the loop) and the
  garbage collector's pauses, from the `aux` records; the bench adds each process's CPU and
  run-queue waits during the load (schedstat, `sched_rows`).
"""
from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import msgspec

from bench.hop_report import (BURST_NS, ContextRow, DwellRow, Figures, GcFigures, HopReport, HopRow, JournalFigures, PartRow,
                               SchedRow, Segment, SlowTurn, TailLabel, TurnsReport, format_hops)
from bench.stats import percentile

EDGE = "glasses"
PHONE = "phone"
PHONE_EVENTS = frozenset({"UserText", "UserInterrupt", "SessionStart", "SessionEnd", "ButtonPress", "PlaybackStatus"})
HORIZON_NS = 5_000_000_000  # a cause further back than this is no cause (a timer, the next turn)
EXCLUDED_KINDS = ("start", "interrupt")  # as the phone-side figure: an interrupt's length is the user's


class Rec(NamedTuple):
    t: int
    actor: str
    dir: str
    type: str
    id: str
    corr: str
    session: str
    size: int
    ref: str
    sender: str
    process: str = ""


class Aux(NamedTuple):
    what: str
    t0: int
    t1: int
    t2: int
    t3: int
    a: int
    b: int
    process: str = ""


# ---- the CPU each process used (schedstat, read by the bench) ---------------------------------
def sched_rows(before: dict[str, dict[str, tuple[int, int, int]]], after: dict[str, dict[str, tuple[int, int, int]]],
               turns: int) -> list[SchedRow]:
    """`before`/`after`: process -> thread group -> (ns on a CPU, ns waiting, runs), as
    bench.runtime.read_schedstat reads them."""
    rows = []
    per_turn = 1 / max(1, turns)
    for process, groups in after.items():
        for threads, (run, wait, runs) in sorted(groups.items()):
            run0, wait0, runs0 = before.get(process, {}).get(threads, (0, 0, 0))
            run, wait, runs = max(0, run - run0), max(0, wait - wait0), max(0, runs - runs0)
            if not runs:
                continue
            rows.append(SchedRow(process=process, threads=threads, cpu_ms_per_turn=round(run / 1e6 * per_turn, 3),
                                 wait_ms_per_turn=round(wait / 1e6 * per_turn, 3), runs_per_turn=round(runs * per_turn, 1),
                                 wait_us_per_run=round(wait / runs / 1000, 1)))
    return rows


# ---- reading ----------------------------------------------------------------------------------
def load_dir(directory: Path) -> tuple[list[Rec], list[Aux], int, list[str]]:
    """Every DIRECTORY/*.hops: (records, aux records, records dropped, process names)."""
    records: list[Rec] = []
    aux: list[Aux] = []
    dropped = 0
    processes = []
    for path in sorted(Path(directory).glob("*.hops")):
        data = msgspec.msgpack.decode(path.read_bytes())
        process = data["process"]
        processes.append(process)
        records += [Rec(*row, process) for row in data["records"]]
        aux += [Aux(*row, process) for row in data["aux"]]
        dropped += data.get("dropped", 0)
    return records, aux, dropped, processes


# ---- joining ----------------------------------------------------------------------------------
def _figures(samples: Iterable[float], digits: int = 3) -> Figures:
    ordered = sorted(samples)
    if not ordered:
        return Figures(count=0, p50=math.nan, p95=math.nan, p99=math.nan, max=math.nan)
    return Figures(count=len(ordered), **{k: round(v, digits) for k, v in (
        ("p50", percentile(ordered, 50)), ("p95", percentile(ordered, 95)), ("p99", percentile(ordered, 99)),
        ("max", ordered[-1]))})


class Index:
    """The records, sorted by time and indexed for the joins."""

    def __init__(self, records: Iterable[Rec]):
        self.records = sorted(records, key=lambda r: r.t)
        self.tx_by_id: dict[str, list[Rec]] = defaultdict(list)
        self.rx_by_id: dict[str, list[Rec]] = defaultdict(list)
        self.rx_by_actor_id: dict[tuple[str, str], list[Rec]] = defaultdict(list)
        self.rx_by_actor_session: dict[tuple[str, str], list[Rec]] = defaultdict(list)
        self.rx_by_actor_session_type: dict[tuple[str, str, str], list[Rec]] = defaultdict(list)
        self.tx_by_actor_session_type: dict[tuple[str, str, str], list[Rec]] = defaultdict(list)
        self.replies_by_actor_ref: dict[tuple[str, str], list[Rec]] = defaultdict(list)
        self.by_session: dict[str, list[Rec]] = defaultdict(list)
        self.by_process: dict[str, list[Rec]] = defaultdict(list)
        for r in self.records:
            self.by_process[r.process].append(r)
            if r.dir == "tx":
                self.tx_by_id[r.id].append(r)
                self.tx_by_actor_session_type[(r.actor, r.session, r.type)].append(r)
            else:
                self.rx_by_id[r.id].append(r)
                self.rx_by_actor_id[(r.actor, r.id)].append(r)
                self.rx_by_actor_session[(r.actor, r.session)].append(r)
                self.rx_by_actor_session_type[(r.actor, r.session, r.type)].append(r)
                if r.corr and r.ref:
                    self.replies_by_actor_ref[(r.actor, r.ref)].append(r)
            if r.session:
                self.by_session[r.session].append(r)
        self._times: dict[int, tuple[list[Rec], list[int]]] = {}  # id(rows) -> (rows, their times)

    def _latest(self, rows: list[Rec] | None, t: int, after: int = -1) -> Rec | None:
        """The latest of `rows` (one of the index's own lists) at or before `t`, and after
        `after`; else None."""
        if not rows:
            return None
        cached = self._times.get(id(rows))
        if cached is None or cached[0] is not rows:
            cached = self._times[id(rows)] = (rows, [r.t for r in rows])
        i = bisect.bisect_right(cached[1], t) - 1
        if i < 0 or rows[i].t <= after:
            return None
        return rows[i]

    def _position(self, rows: list[Rec], row: Rec) -> int:
        self._latest(rows, row.t)  # caches the times
        times = self._times[id(rows)][1]
        i = bisect.bisect_left(times, row.t)
        while rows[i] is not row:
            i += 1
        return i

    def others_between(self, process: str, session: str, begin: int, end: int) -> bool:
        """Did `process` encode or decode a message of another session strictly between the two instants?"""
        rows = self.by_process.get(process)
        if not rows:
            return False
        self._latest(rows, begin)  # caches the times
        times = self._times[id(rows)][1]
        i = bisect.bisect_right(times, begin)
        while i < len(rows) and rows[i].t < end:
            if rows[i].session != session:
                return True
            i += 1
        return False

    def sent(self, rx: Rec) -> Rec | None:
        """The tx of the envelope `rx` received: the latest one with its id at or before it."""
        return self._latest(self.tx_by_id.get(rx.id), rx.t)

    def cause(self, tx: Rec) -> Rec | None:
        """The rx in the same actor that `tx` answers or follows (see the module docstring)."""
        floor = tx.t - HORIZON_NS
        if tx.corr:
            request = self._latest(self.rx_by_actor_id.get((tx.actor, tx.corr)), tx.t, floor)
            if request is not None:
                if tx.ref:
                    later = self._latest(self.replies_by_actor_ref.get((tx.actor, tx.ref)), tx.t, request.t)
                    if later is not None:
                        return later
                return request
        if not tx.session:
            return None
        received = self.rx_by_actor_session_type.get((tx.actor, tx.session, tx.type))
        if received:  # forwarded (the bridge passes Display and TurnDone on): the n-th sent is the n-th received
            sent = self.tx_by_actor_session_type[(tx.actor, tx.session, tx.type)]
            n = self._position(sent, tx)
            if n < len(received) and floor <= received[n].t <= tx.t:
                return received[n]
        return self._latest(self.rx_by_actor_session.get((tx.actor, tx.session)), tx.t, floor)


def hop_table(index: Index) -> tuple[list[HopRow], int, int]:
    """(the transit rows, txs nobody traced received, rxs nobody traced sent)."""
    transit: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    sizes: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    matched: set[int] = set()
    untraced = 0
    for r in index.records:
        if r.dir != "rx":
            continue
        tx = index.sent(r)
        if tx is None:
            untraced += 1
            continue
        matched.add(id(tx))
        key = (tx.actor, r.actor, r.type)
        transit[key].append(r.t - tx.t)
        sizes[key].append(r.size)
    unmatched = sum(1 for rows in index.tx_by_id.values() for tx in rows if id(tx) not in matched)
    rows = []
    for (sender, receiver, kind), samples in transit.items():
        samples.sort()
        rows.append(HopRow(sender=sender, receiver=receiver, type=kind, count=len(samples),
                           p50_us=round(percentile(samples, 50) / 1000, 1), p99_us=round(percentile(samples, 99) / 1000, 1),
                           max_us=round(samples[-1] / 1000, 1), bytes_p50=int(statistics.median_low(sizes[(sender, receiver, kind)]))))
    rows.sort(key=lambda row: (row.sender, row.receiver, -row.count))
    return rows, unmatched, untraced


def dwell_table(index: Index) -> list[DwellRow]:
    """Per actor and (cause type -> sent type); each actor's "*" row holds all its dwells."""
    dwell: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for r in index.records:
        if r.dir != "tx" or r.actor == PHONE:  # the phone's "dwell" is the user's think time
            continue
        cause = index.cause(r)
        if cause is None:
            continue
        dwell[(r.actor, cause.type, r.type)].append(r.t - cause.t)
        dwell[(r.actor, "*", "*")].append(r.t - cause.t)
    rows = []
    for (actor, cause, kind), samples in dwell.items():
        samples.sort()
        rows.append(DwellRow(actor=actor, cause=cause, type=kind, count=len(samples),
                             p50_us=round(percentile(samples, 50) / 1000, 1), p99_us=round(percentile(samples, 99) / 1000, 1),
                             max_us=round(samples[-1] / 1000, 1)))
    rows.sort(key=lambda row: (row.actor, row.cause != "*", -row.count))
    return rows


class Turn(NamedTuple):
    session: str
    kind: str
    start: Rec  # the bridge's rx of the turn's first phone event
    end: Rec | None  # the bridge's tx of the last Ack/TurnDone the phone waited for (None: never sent)
    done: Rec | None  # the last TurnDone covering the turn's events
    ack: Rec | None  # the last Ack of them
    model_calls: int  # Generate requests during the turn


def find_turns(index: Index, kinds: dict[str, Sequence[str]] | None = None, *, edge: str = EDGE,
               window: tuple[int, int] | None = None) -> list[Turn]:
    """Each session's turns as the bridge saw them: a UserText (or a SessionStart) and the phone
    events after it up to the next one (an interrupt's "stop"). `kinds`: session -> the kind of
    each of its text turns, in order (the bench's plan); else "text", or "interrupt" when a
    UserInterrupt is among its events."""
    turns = []
    for session, rows in index.by_session.items():
        events: list[list[Rec]] = []
        seen: set[str] = set()
        for r in rows:
            if r.dir == "rx" and r.actor == edge and r.type in PHONE_EVENTS and r.ref not in seen:
                seen.add(r.ref)
                if r.type in ("UserText", "SessionStart") or not events:
                    events.append([r])
                else:
                    events[-1].append(r)
        planned = list((kinds or {}).get(session, ()))
        texts = 0
        for group in events:
            first = group[0]
            if window is not None and not window[0] <= first.t <= window[1]:
                texts += first.type == "UserText"
                continue
            if first.type == "SessionStart":
                kind = "start"
            else:
                kind = planned[texts] if texts < len(planned) else (
                    "interrupt" if any(r.type == "UserInterrupt" for r in group) else "text")
                texts += 1
            ids = {r.ref for r in group}
            done = ack = None
            covered: set[str] = set()
            acked: set[str] = set()
            for r in rows:
                if r.t < first.t or r.dir != "tx" or r.actor != edge:
                    continue
                if r.type == "TurnDone" and covered < ids:
                    hit = ids.intersection(r.ref.split())
                    if hit - covered:
                        covered |= hit
                        done = r
                elif r.type == "Ack" and r.ref in ids and r.ref not in acked:
                    acked.add(r.ref)
                    ack = r
                if covered >= ids and acked >= ids:
                    break
            complete = covered >= ids and acked >= ids
            end = max((done, ack), key=lambda r: r.t) if complete else None
            calls = sum(1 for r in rows if r.dir == "tx" and r.type == "Generate"
                        and first.t <= r.t <= (end.t if end else first.t + HORIZON_NS))
            turns.append(Turn(session, kind, first, end, done if complete else None, ack if complete else None, calls))
    turns.sort(key=lambda turn: turn.start.t)
    return turns


class Step(NamedTuple):
    """One segment of a critical path, with what `turns_report` needs to say whether the process
    it ends in handled other sessions meanwhile."""

    label: str
    ns: int
    part: str
    t0: int
    t1: int
    process: str  # where the segment ends: the receiver of a transit, the actor of a dwell


def critical_steps(index: Index, turn: Turn) -> list[Step]:
    assert turn.end is not None
    steps: list[Step] = []
    tail = next((r for r in index.rx_by_id.get(turn.end.id, ()) if r.actor == PHONE), None)
    if tail is not None:
        steps.append(Step(f"{turn.end.actor} -> {PHONE} {turn.end.type}", tail.t - turn.end.t, "phone legs",
                          turn.end.t, tail.t, tail.process))
    current, start = turn.end, turn.start
    for _ in range(1000):
        cause = index.cause(current)
        if cause is None or cause.t < start.t:
            steps.append(Step(f"{current.actor}: (untraced) -> {current.type}", current.t - start.t, "untraced",
                              start.t, current.t, current.process))
            break
        steps.append(Step(f"{current.actor}: {cause.type} -> {current.type}", current.t - cause.t,
                          f"dwell {current.actor}", cause.t, current.t, current.process))
        if cause is start or cause.t == start.t:
            break
        sent = index.sent(cause)
        if sent is None or sent.t < start.t:
            steps.append(Step(f"(untraced) -> {cause.actor} {cause.type}", cause.t - start.t, "untraced",
                              start.t, cause.t, cause.process))
            break
        where = "transit in a process" if sent.process and sent.process == cause.process else "transit between processes"
        steps.append(Step(f"{sent.actor} -> {cause.actor} {cause.type}", cause.t - sent.t, where, sent.t, cause.t, cause.process))
        current = sent
    head = index.sent(start)
    if head is not None and head.actor == PHONE:
        steps.append(Step(f"{PHONE} -> {start.actor} {start.type}", start.t - head.t, "phone legs", head.t, start.t, start.process))
    steps.reverse()
    return steps


def critical_path(index: Index, turn: Turn) -> list[Segment]:
    """From the turn's last message back to its phone event: dwell, transit, dwell, ...; the
    phone's legs at both ends when its records are there. Times in ms; they add up."""
    return [Segment(label=step.label, ms=step.ns / 1e6, part=step.part) for step in critical_steps(index, turn)]


def _summed(segments: list[Segment], by: str = "label") -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for segment in segments:
        totals[getattr(segment, by)] += segment.ms
    return totals


def _overlap_ms(spans: list[tuple[int, int]], begin: int, end: int, least_ns: int = 0) -> float:
    return sum(min(b, end) - max(a, begin) for a, b in spans if b - a >= least_ns and a < end and b > begin) / 1e6


class _Pressure:
    """CPU pressure (PSI `some`), or CPU time stolen by the hypervisor (`steal`, per CPU), between
    two instants, from the bench's samples of its running total in µs."""

    def __init__(self, aux: list[Aux], what: str = "psi"):
        samples = sorted((a.t0, a.a) for a in aux if a.what == what)
        self.t = [t for t, _ in samples]
        self.us = [us for _, us in samples]

    def _at(self, t: int) -> float:
        i = bisect.bisect_right(self.t, t)
        if i == 0 or i == len(self.t):
            return math.nan
        (t0, t1), (u0, u1) = self.t[i - 1:i + 1], self.us[i - 1:i + 1]
        return u0 + (u1 - u0) * (t - t0) / max(1, t1 - t0)

    def share(self, begin: int, end: int) -> float:
        """The share of [begin, end] during which some runnable task waited for a CPU; the sample
        interval around a short span (NaN without samples around it)."""
        if len(self.t) < 2:
            return math.nan
        i = max(0, bisect.bisect_right(self.t, begin) - 1)
        j = min(len(self.t) - 1, bisect.bisect_left(self.t, end))
        begin, end = min(begin, self.t[i]), max(end, self.t[j])
        return (self._at(end) - self._at(begin)) * 1000 / max(1, end - begin) if j > i else math.nan


def turns_report(index: Index, turns: list[Turn], aux: list[Aux], *, latency_ms: float = 0.0,
                 slow_share: float = 0.01, top_labels: int = 10, slow_listed: int = 8) -> TurnsReport | None:
    measured = [turn for turn in turns if turn.end is not None and turn.kind != "start"]
    if not measured:
        return None
    model_ns = lambda turn: turn.model_calls * latency_ms * 1e6  # noqa: E731
    counted = [turn for turn in measured if turn.kind not in EXCLUDED_KINDS]
    edge: dict[str, list[float]] = defaultdict(list)
    for turn in measured:
        ms = (turn.end.t - turn.start.t - model_ns(turn)) / 1e6
        edge[turn.kind].append(ms)
        if turn.kind not in EXCLUDED_KINDS:
            edge["all"].append(ms)
    if not counted:  # only turns the phone-side figure leaves out too
        nothing = _figures(())
        return TurnsReport(edge_ms={kind: _figures(samples) for kind, samples in sorted(edge.items())}, edge_done_ms=nothing,
                           edge_ack_ms=nothing, phone_ms=None, path_ms=nothing, median_path={}, parts=[], ack_last=0,
                           slowest=0, tail=[], slow_turns=[], slow_with_gc=0, slow_bursts=0, context=[])
    phone = []
    for turn in counted:
        head = index.sent(turn.start)
        tail = next((r for r in index.rx_by_id.get(turn.end.id, ()) if r.actor == PHONE), None)
        if head is not None and head.actor == PHONE and tail is not None:
            phone.append((tail.t - head.t - model_ns(turn)) / 1e6)
    steps = {id(turn): critical_steps(index, turn) for turn in counted}
    paths = {key: [Segment(label=s.label, ms=s.ns / 1e6, part=s.part) for s in found] for key, found in steps.items()}
    totals = {key: sum(s.ms for s in segments) for key, segments in paths.items()}
    by_kind: dict[str, list[Turn]] = defaultdict(list)
    for turn in counted:
        by_kind[turn.kind].append(turn)
    medians: dict[str, dict[str, float]] = {}
    median_total: dict[str, float] = {}
    for kind, group in by_kind.items():
        sums = [_summed(paths[id(turn)]) for turn in group]
        labels = {label for s in sums for label in s}
        medians[kind] = {label: statistics.median(s.get(label, 0.0) for s in sums) for label in labels}
        median_total[kind] = statistics.median(totals[id(turn)] for turn in group)
    ranked = sorted(counted, key=lambda turn: totals[id(turn)], reverse=True)
    slow = ranked[:max(1, math.ceil(len(ranked) * slow_share))]
    excess: dict[str, float] = defaultdict(float)
    spent: dict[str, float] = defaultdict(float)
    usual: dict[str, float] = defaultdict(float)
    for turn in slow:
        mine, median = _summed(paths[id(turn)]), medians[turn.kind]
        for label in set(mine) | set(median):
            excess[label] += mine.get(label, 0.0) - median.get(label, 0.0)
            spent[label] += mine.get(label, 0.0)
            usual[label] += median.get(label, 0.0)
    all_excess = sum(value for value in excess.values() if value > 0) or 1.0
    tail = [TailLabel(label=label, excess_ms=round(value / len(slow), 3), slow_ms=round(spent[label] / len(slow), 3),
                      median_ms=round(usual[label] / len(slow), 3), share=round(max(value, 0.0) / all_excess, 3))
            for label, value in sorted(excess.items(), key=lambda item: -item[1])[:top_labels]]

    # what else went on during a turn: collections, commits, CPU pressure, other sessions' work
    gcs = [(a.t0, a.t3) for a in aux if a.what == "gc"]
    transactions = [(a.t1, a.t2) for a in aux if a.what == "journal" and a.t1]
    pressure, stolen = _Pressure(aux), _Pressure(aux, "steal")
    spans = sorted(((index.sent(turn.start) or turn.start).t, turn.end.t) for turn in measured)
    starts, ends = [begin for begin, _ in spans], sorted(end for _, end in spans)

    def window(turn: Turn) -> tuple[int, int]:
        return (index.sent(turn.start) or turn.start).t, turn.end.t

    def in_flight(turn: Turn) -> int:
        begin, end = window(turn)  # turns that started before its end and ended after its start, itself not
        return bisect.bisect_left(starts, end) - bisect.bisect_left(ends, begin) - 1

    def split(turn: Turn) -> dict[str, float]:
        """Its critical path's transit and dwell, by whether the process handled other sessions' messages meanwhile."""
        out = {"transit, the receiver busy with other sessions": 0.0, "transit, the receiver quiet": 0.0,
               "dwell, the process busy with other sessions": 0.0, "dwell, the process quiet": 0.0}
        for step in steps[id(turn)]:
            if step.part.startswith("transit"):
                kind = "transit, the receiver"
            elif step.part.startswith("dwell"):
                kind = "dwell, the process"
            else:
                continue
            busy = index.others_between(step.process, turn.session, step.t0, step.t1)
            out[f"{kind} {'busy with other sessions' if busy else 'quiet'}"] += step.ns / 1e6
        return out

    def context_of(turn: Turn) -> dict[str, float]:
        begin, end = window(turn)
        return {"turns in flight meanwhile": in_flight(turn),
                "CPU pressure around the turn (PSI some), %": pressure.share(begin, end) * 100,
                "CPU time stolen by the hypervisor around it, %": stolen.share(begin, end) * 100,
                "collections in any process, ms": _overlap_ms(gcs, begin, end),
                "journal transactions running, ms": _overlap_ms(transactions, begin, end), **split(turn)}

    contexts = {id(turn): context_of(turn) for turn in counted}
    context = []
    for metric in contexts[id(counted[0])]:
        values = [contexts[id(turn)][metric] for turn in counted if not math.isnan(contexts[id(turn)][metric])]
        slow_values = [contexts[id(turn)][metric] for turn in slow if not math.isnan(contexts[id(turn)][metric])]
        if values:
            context.append(ContextRow(metric=metric, median=round(statistics.median(values), 3),
                                      slow_mean=round(statistics.fmean(slow_values), 3) if slow_values else math.nan))
    slow_turns = [SlowTurn(session=turn.session, kind=turn.kind, total_ms=round(totals[id(turn)], 3),
                           median_ms=round(median_total[turn.kind], 3),
                           top=[Segment(label=label, ms=round(ms, 3)) for label, ms in
                                sorted(_summed(paths[id(turn)]).items(), key=lambda item: -item[1])[:4]],
                           gc_ms=round(_overlap_ms(gcs, *window(turn)), 3),
                           journal_ms=round(_overlap_ms(transactions, *window(turn)), 3),
                           in_flight=in_flight(turn))
                  for turn in slow[:slow_listed]]
    parts = {key: _summed(segments, "part") for key, segments in paths.items()}
    names = sorted({part for p in parts.values() for part in p},
                   key=lambda part: -statistics.median(p.get(part, 0.0) for p in parts.values()))
    part_rows = [PartRow(part=part, median_ms=round(statistics.median(p.get(part, 0.0) for p in parts.values()), 3),
                         slow_ms=round(sum(parts[id(turn)].get(part, 0.0) for turn in slow) / len(slow), 3))
                 for part in names]
    median_path = {kind: [Segment(label=label, ms=round(ms, 3)) for label, ms in
                          sorted(values.items(), key=lambda item: -item[1]) if ms > 0]
                   for kind, values in sorted(medians.items())}
    return TurnsReport(
        edge_ms={kind: _figures(samples) for kind, samples in sorted(edge.items(), key=lambda item: item[0] != "all")},
        edge_done_ms=_figures((turn.done.t - turn.start.t - model_ns(turn)) / 1e6 for turn in counted),
        edge_ack_ms=_figures((turn.ack.t - turn.start.t) / 1e6 for turn in counted),
        phone_ms=_figures(phone) if phone else None,
        path_ms=_figures(totals.values()),
        median_path=median_path, parts=part_rows, ack_last=sum(1 for turn in counted if turn.ack.t > turn.done.t),
        slowest=len(slow), tail=tail, slow_turns=slow_turns,
        slow_with_gc=sum(1 for turn in slow if _overlap_ms(gcs, *window(turn), 1_000_000) > 0), context=context,
        slow_bursts=_bursts(sorted(turn.start.t for turn in slow)),
    )


def _bursts(times: list[int]) -> int:
    return sum(1 for i, t in enumerate(times) if i == 0 or t - times[i - 1] > BURST_NS)


def journal_figures(aux: list[Aux]) -> JournalFigures | None:
    batches = [a for a in aux if a.what == "journal" and a.t1]
    if not batches:
        return None
    us = lambda values: _figures((v / 1000 for v in values), 1)  # noqa: E731
    return JournalFigures(
        batches=len(batches), ops_p50=statistics.median(a.a for a in batches), waited=sum(1 for a in batches if a.b),
        handoff_us=us(a.t1 - a.t0 for a in batches), sql_us=us(a.t2 - a.t1 for a in batches),
        back_us=us(a.t3 - a.t2 for a in batches), total_us=us(a.t3 - a.t0 for a in batches))


def gc_figures(aux: list[Aux]) -> list[GcFigures]:
    by_process: dict[str, list[Aux]] = defaultdict(list)
    for a in aux:
        if a.what == "gc":
            by_process[a.process].append(a)
    rows = []
    for process, pauses in sorted(by_process.items()):
        ms = sorted((a.t3 - a.t0) / 1e6 for a in pauses)
        generations: dict[str, int] = defaultdict(int)
        for a in pauses:
            generations[str(a.a)] += 1
        rows.append(GcFigures(process=process, count=len(pauses), by_generation=dict(sorted(generations.items())),
                              total_ms=round(sum(ms), 3), p99_ms=round(percentile(ms, 99), 3), max_ms=round(ms[-1], 3)))
    return rows


def analyze(records: list[Rec], aux: list[Aux] = (), *, kinds: dict[str, Sequence[str]] | None = None,
            window: tuple[int, int] | None = None, latency_ms: float = 0.0, dropped: int = 0,
            processes: Sequence[str] = (), edge: str = EDGE) -> HopReport:
    """Everything above from the records (and aux records) of one run. `window`: (start, end) in
    monotonic ns; records and turns outside it are left out (the warm-up)."""
    if window is not None:
        records = [r for r in records if window[0] <= r.t <= window[1]]
        aux = [a for a in aux if window[0] <= a.t0 <= window[1]]
    index = Index(records)
    hops, unmatched, untraced = hop_table(index)
    turns = find_turns(index, kinds, edge=edge)
    return HopReport(
        records=len(index.records), dropped=dropped, processes=list(processes) or sorted({r.process for r in records}),
        turns=sum(1 for turn in turns if turn.kind != "start"), hops=hops, dwell=dwell_table(index),
        edge=turns_report(index, turns, list(aux), latency_ms=latency_ms), journal=journal_figures(list(aux)),
        gc=gc_figures(list(aux)), unmatched_tx=unmatched, untraced_rx=untraced)


class LoadMeta(msgspec.Struct, kw_only=True):
    """What the bench knows of its load, kept next to the records as load.json."""

    window: tuple[int, int] | None = None
    latency_ms: float = 0.0
    kinds: dict[str, list[str]] = {}


def analyze_dir(directory: Path, meta: LoadMeta | None = None) -> HopReport:
    """The records of DIRECTORY, with its load.json unless `meta` is given."""
    directory = Path(directory)
    if meta is None:
        path = directory / "load.json"
        meta = msgspec.json.decode(path.read_bytes(), type=LoadMeta) if path.exists() else LoadMeta()
    records, aux, dropped, processes = load_dir(directory)
    return analyze(records, aux, kinds=meta.kinds, window=meta.window, latency_ms=meta.latency_ms, dropped=dropped,
                   processes=processes)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m bench.hops DIR [--json PATH]`: the tables again from the records a
    `run.py bench --trace-hops DIR` kept."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.hops", description=main.__doc__)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    report = analyze_dir(args.directory)
    print(format_hops(report))
    if args.json:
        Path(args.json).write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
