"""`run.py bench --trace-hops`: the records (core/hoptrace.py) and what bench/hops.py joins from
them, on synthetic records (no sockets), and one short real run."""
import json
import subprocess
import sys
from pathlib import Path

import protocol as p
from bench.hop_report import format_hops
from bench.hops import Aux, Index, Rec, analyze, analyze_dir, critical_path, find_turns, sched_rows
from core.hoptrace import Recorder, TracingCodec, tracing_codec_class

REPO = Path(__file__).resolve().parent.parent
US = 1000  # ns


class Trace:
    """Synthetic records, built the way the runtime makes them: envelope ids unique, replies
    with corr, times in µs."""

    def __init__(self, process_of=None):
        self.records: list[Rec] = []
        self.count = 0
        self.process_of = process_of or (lambda actor: actor)

    def send(self, t_us, actor, kind, session, *, to=None, at_us=None, corr="", ref="", env_id=None):
        self.count += 1
        env_id = env_id or f"e{self.count}"
        self.records.append(Rec(int(t_us * US), actor, "tx", kind, env_id, corr, session, 100, ref, actor, self.process_of(actor)))
        if to is not None:
            self.records.append(Rec(int(at_us * US), to, "rx", kind, env_id, corr, session, 100, ref, actor, self.process_of(to)))
        return env_id

    def turn(self, t0, session, event, *, llm_us=100.0, journal_us=500.0, hop_us=200.0):
        """A plain turn: phone -> glasses -> session -> llm -> session -> glasses -> phone, and the
        accept (journal) -> EventAccepted -> Ack beside it. Returns the end of its TurnDone at the phone."""
        h = hop_us
        text = self.send(t0, "phone", "UserText", session, to="glasses", at_us=t0 + 100, ref=event)
        deliver = self.send(t0 + 150, "glasses", "DeliverEvent", session, to="session", at_us=t0 + 150 + h, ref=event)
        s = t0 + 150 + h
        generate = self.send(s + 100, "session", "Generate", session, to="llm", at_us=s + 100 + h)
        done_at = s + 100 + h + llm_us
        self.send(done_at, "llm", "LLMDone", session, to="session", at_us=done_at + h, corr=generate)
        back = done_at + h
        self.send(back + 100, "session", "TurnDone", session, to="glasses", at_us=back + 100 + h, ref=event)
        g = back + 100 + h
        self.send(g + 30, "glasses", "TurnDone", session, to="phone", at_us=g + 30 + 150, ref=event)
        accepted = s + journal_us
        self.send(accepted, "session", "EventAccepted", session, to="glasses", at_us=accepted + h, corr=deliver, ref=event)
        self.send(accepted + h + 50, "glasses", "Ack", session, to="phone", at_us=accepted + h + 50 + 150, corr=text, ref=event)
        return max(g + 30 + 150, accepted + h + 50 + 150)


def test_transit_dwell_and_the_edge_of_one_turn():
    trace = Trace()
    trace.turn(0, "s1", "ev1", llm_us=100, journal_us=500, hop_us=200)
    index = Index(trace.records)
    report = analyze(trace.records)
    hops = {(row.sender, row.receiver, row.type): row for row in report.hops}
    assert hops[("glasses", "session", "DeliverEvent")].p50_us == 200.0
    assert hops[("phone", "glasses", "UserText")].p50_us == 100.0
    assert report.unmatched_tx == 0 and report.untraced_rx == 0
    dwell = {(row.actor, row.cause, row.type): row for row in report.dwell}
    assert dwell[("session", "DeliverEvent", "EventAccepted")].p50_us == 500.0  # the journal's commit
    assert dwell[("llm", "Generate", "LLMDone")].p50_us == 100.0
    assert dwell[("glasses", "EventAccepted", "Ack")].p50_us == 50.0  # not from the UserText it answers
    assert dwell[("glasses", "TurnDone", "TurnDone")].p50_us == 30.0  # forwarded
    assert ("phone", "Ack", "UserText") not in dwell  # the phone's "dwell" is the user thinking
    # the edge: the bridge got the text at 100 µs; its TurnDone left at 1280, its Ack at 1100
    [turn] = find_turns(index)
    assert (turn.session, turn.kind, turn.model_calls) == ("s1", "text", 1)
    assert (turn.done.t, turn.ack.t, turn.end.t) == (1280 * US, 1100 * US, 1280 * US)
    edge = report.edge
    assert edge.edge_ms["all"].p50 == 1.18 and edge.edge_done_ms.p50 == 1.18 and edge.edge_ack_ms.p50 == 1.0
    assert edge.phone_ms.p50 == 1.43  # the phone's encode at 0 -> its decode of the TurnDone at 1430
    path = critical_path(index, turn)
    assert abs(sum(s.ms for s in path) - 1.43) < 1e-9  # the segments add up
    assert [s.label for s in path] == [
        "phone -> glasses UserText", "glasses: UserText -> DeliverEvent", "glasses -> session DeliverEvent",
        "session: DeliverEvent -> Generate", "session -> llm Generate", "llm: Generate -> LLMDone",
        "llm -> session LLMDone", "session: LLMDone -> TurnDone", "session -> glasses TurnDone",
        "glasses: TurnDone -> TurnDone", "glasses -> phone TurnDone"]
    assert {s.part for s in path} == {"phone legs", "transit between processes", "dwell glasses", "dwell session", "dwell llm"}
    assert edge.ack_last == 0
    text = format_hops(report)
    assert "glasses -> session" in text and "DeliverEvent -> EventAccepted" in text and "slowest 1 turn" in text


def test_a_slow_commit_sets_the_pace_and_the_path_goes_through_the_journal():
    trace = Trace()
    trace.turn(0, "s1", "ev1", journal_us=5000)
    index = Index(trace.records)
    [turn] = find_turns(index)
    assert turn.end is turn.ack
    labels = [s.label for s in critical_path(index, turn)]
    assert "session: DeliverEvent -> EventAccepted" in labels and "glasses: EventAccepted -> Ack" in labels
    assert analyze(trace.records).edge.ack_last == 1


def test_the_slowest_turns_say_where_their_extra_time_went():
    trace = Trace()
    kinds = {}
    for n in range(300):
        slow = n % 100 == 7  # 3 of 300: 1 %
        trace.turn(n * 10_000, f"s{n}", f"ev{n}", llm_us=6000 if slow else 100, journal_us=500)
        kinds[f"s{n}"] = ["plain"]
    gc = [Aux("gc", 7 * 10_000 * US, 0, 0, 7 * 10_000 * US + 2000 * US, 2, 10, "llm")]
    psi = [Aux("psi", t * 5000 * US, 0, 0, t * 5000 * US, 1000 * t, 0, "phone") for t in range(700)]  # 20 % all along
    # the hypervisor stole 3 ms per CPU right after s107's turn began, and never else
    steal = [Aux("steal", t * 5000 * US, 0, 0, t * 5000 * US, 0 if t * 5000 <= 1_070_000 else 3000, 0, "phone")
             for t in range(700)]
    report = analyze(trace.records, gc + psi + steal, kinds=kinds)
    edge = report.edge
    assert edge.slowest == 3 and edge.path_ms.count == 300
    top = edge.tail[0]
    assert top.label == "llm: Generate -> LLMDone"
    assert round(top.excess_ms, 3) == 5.9 and top.share == 1.0
    assert {turn.session for turn in edge.slow_turns} == {"s7", "s107", "s207"}
    assert edge.slow_with_gc == 1  # s7's turn overlaps the 2 ms collection
    assert edge.slow_bursts == 3  # a second apart: each alone
    context = {row.metric: row for row in edge.context}
    assert context["turns in flight meanwhile"].median == 0 and context["turns in flight meanwhile"].slow_mean == 0
    assert round(context["CPU pressure around the turn (PSI some), %"].median, 6) == 20.0
    assert context["collections in any process, ms"].slow_mean == round(2 / 3, 3)
    stolen = context["CPU time stolen by the hypervisor around it, %"]
    assert stolen.median == 0 and stolen.slow_mean > 5  # one slow turn of three had its CPUs taken
    assert context["transit, the receiver quiet"].median == 0.8
    assert context["transit, the receiver busy with other sessions"].slow_mean == 0.0
    parts = {row.part: row for row in edge.parts}
    assert edge.parts[0].part == "transit between processes" and parts["transit between processes"].median_ms == 0.8
    assert (parts["dwell llm"].median_ms, parts["dwell llm"].slow_ms) == (0.1, 6.0)
    assert edge.edge_ms["plain"].count == 300 and edge.edge_ms["all"].count == 300


def test_interrupts_and_opening_turns_are_kept_apart_as_the_phone_side_does():
    trace = Trace()
    trace.send(0, "phone", "SessionStart", "s1", to="glasses", at_us=50, ref="start1")
    trace.send(60, "glasses", "TurnDone", "s1", to="phone", at_us=90, ref="start1")
    trace.send(70, "glasses", "Ack", "s1", to="phone", at_us=95, ref="start1")
    trace.turn(1000, "s1", "ev1")
    trace.send(1300, "phone", "UserInterrupt", "s1", to="glasses", at_us=1350, ref="ev2")
    trace.send(2500, "glasses", "Ack", "s1", to="phone", at_us=2600, ref="ev2")
    trace.send(2700, "glasses", "TurnDone", "s1", to="phone", at_us=2800, ref="ev2")
    turns = find_turns(Index(trace.records), {"s1": ["interrupt"]})
    assert [(turn.kind, turn.end.t // US) for turn in turns] == [("start", 70), ("interrupt", 2700)]
    edge = analyze(trace.records, kinds={"s1": ["interrupt"]}).edge
    assert set(edge.edge_ms) == {"interrupt"} and edge.path_ms.count == 0


def test_forwarded_messages_pair_in_order():
    trace = Trace()
    d1 = trace.send(0, "session", "Display", "s1", to="glasses", at_us=100)
    d2 = trace.send(10, "session", "Display", "s1", to="glasses", at_us=150)
    trace.send(400, "glasses", "Display", "s1")
    trace.send(420, "glasses", "Display", "s1")
    index = Index(trace.records)
    first, second = [r for r in index.records if r.actor == "glasses" and r.dir == "tx"]
    assert index.cause(first).id == d1 and index.cause(second).id == d2
    [row] = [row for row in analyze(trace.records).dwell if row.cause == "Display"]
    assert (row.count, row.p50_us, row.max_us) == (2, 270.0, 300.0)


def test_a_process_group_hops_in_its_process():
    group = {"glasses": "glasses+session", "session": "glasses+session"}
    trace = Trace(lambda actor: group.get(actor, actor))
    trace.turn(0, "s1", "ev1")
    index = Index(trace.records)
    parts = {s.label: s.part for s in critical_path(index, find_turns(index)[0])}
    assert parts["glasses -> session DeliverEvent"] == "transit in a process"
    assert parts["session -> llm Generate"] == "transit between processes"


def test_the_tracing_codec_records_what_it_encodes_and_decodes(tmp_path):
    recorder = Recorder("glasses+session", max_records=3)
    codec = TracingCodec(actor="session", recorder=recorder)
    event = p.Event(event_id="ev1", kind="user_text", source="user", channel="speech", content="hi", ts=1.0)
    data = codec.encode(p.Envelope(body=p.DeliverEvent(event=event), sender="glasses", session="s1", id="x1"))
    envelope = codec.decode(data)
    assert envelope.body.event.event_id == "ev1"
    other = tracing_codec_class(recorder, "glasses")(1 << 20)
    other.encode(p.Envelope(body=p.TurnDone(turn_id="t1", event_ids=["ev1", "ev2"], model_calls=1), session="s1", corr="c9"))
    other.encode(p.Envelope(body=p.Ack(event_id="ev3")))  # over the limit: counted, not kept
    recorder.aux("journal", 1, 2, 3, 4, 5, 1)
    recorder.dump(str(tmp_path))
    records = analyze_dir(tmp_path)
    assert records.records == 3 and records.dropped == 1 and records.processes == ["glasses+session"]
    from bench.hops import load_dir

    rows, aux, dropped, _ = load_dir(tmp_path)
    tx, rx, done = rows
    assert (tx.actor, tx.dir, tx.type, tx.id, tx.session, tx.ref, tx.sender, tx.size) == \
           ("session", "tx", "DeliverEvent", "x1", "s1", "ev1", "glasses", len(data))
    assert rx.dir == "rx" and rx.t >= tx.t and rx.id == "x1"
    assert (done.actor, done.type, done.ref, done.corr) == ("glasses", "TurnDone", "ev1 ev2", "c9")
    assert aux == [Aux("journal", 1, 2, 3, 4, 5, 1, "glasses+session")] and dropped == 1
    recorder.clear()
    assert recorder.count == 0 and recorder.dropped == 0


def test_scheduler_figures_per_turn():
    before = {"session": {"main": (1_000_000, 0, 10), "zmq": (0, 0, 0)}}
    after = {"session": {"main": (5_000_000, 2_000_000, 30), "zmq": (1_000_000, 1_000_000, 20)}}
    rows = {row.threads: row for row in sched_rows(before, after, turns=2)}
    assert (rows["main"].cpu_ms_per_turn, rows["main"].wait_ms_per_turn, rows["main"].runs_per_turn,
            rows["main"].wait_us_per_run) == (2.0, 1.0, 10.0, 100.0)
    assert rows["zmq"].wait_us_per_run == 50.0


def test_a_short_traced_bench_run_joins_every_process(tmp_path):
    """The real thing, small: every actor process and the phones write their records, the bench
    joins them; every turn is found at the edge, and every hop of it was received."""
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "run.py", "bench", "--trace-hops", str(tmp_path / "hops"), "--sessions", "12", "--turns", "2",
         "--think-ms", "100", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    hops = figures["hops"]
    assert set(hops["processes"]) == {"skills", "toolsets", "llm", "session", "glasses", "phone"}
    assert hops["turns"] == 24 and hops["dropped"] == 0 and hops["unmatched_tx"] == 0
    assert hops["edge"]["edge_ms"]["all"]["count"] == figures["overhead_ms"]["count"]
    links = {(row["sender"], row["receiver"]) for row in hops["hops"]}
    assert {("phone", "glasses"), ("glasses", "session"), ("session", "llm"), ("llm", "session"),
            ("session", "glasses"), ("glasses", "phone")} <= links
    assert hops["journal"]["batches"] > 0 and {row["process"] for row in hops["sched"]} >= {"session", "phone (this bench)"}
    assert "transit per hop kind" in done.stdout and "the slowest" in done.stdout
    again = subprocess.run([sys.executable, "-m", "bench.hops", str(tmp_path / "hops")], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 0 and "transit per hop kind" in again.stdout, again.stderr


def test_overlapping_turns_count_as_in_flight_and_keep_each_other_busy():
    trace = Trace()
    trace.turn(0, "a", "ev-a")
    trace.turn(333, "b", "ev-b")  # under way while the first one is
    trace.turn(50_000, "c", "ev-c")  # alone
    edge = analyze(trace.records).edge
    per_turn = {turn.session: turn for turn in edge.slow_turns}
    context = {row.metric: row for row in edge.context}
    assert context["turns in flight meanwhile"].median == 1  # a and b: 1 each, c: 0
    assert edge.slowest == 1 and set(per_turn) == {"a"}  # a tie: the first
    # a's LLMDone reached the session while it sent b's Generate: 0.2 ms of a's transit was behind other work
    assert context["transit, the receiver busy with other sessions"].slow_mean == 0.2
    assert context["transit, the receiver quiet"].slow_mean == 0.6
