"""`run.py bench`: the load generator's own logic, and a small load run through the real system
(process mode, real phone endpoint) that must lose nothing and end every turn correctly."""
import json
import math
import subprocess
import sys
from pathlib import Path

import msgspec

from bench.load import MIX, LoadOptions, check_answer, plan_sessions
from bench.report import LoadReport, format_report, judge_targets, machine_figures
from bench.runtime import read_machine_cpu_s
from bench.stats import percentile, summarize
from llm.chunks import ChunkCoalescer

REPO = Path(__file__).resolve().parent.parent


def test_percentiles_are_nearest_rank_values_that_happened():
    samples = list(range(1, 101))
    assert percentile(samples, 50) == 50
    assert percentile(samples, 99) == 99
    assert percentile(samples, 100) == 100
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))
    figures = summarize([3.0, 1.0, 2.0])
    assert (figures.p50, figures.max, figures.count) == (2.0, 3.0, 3)


def test_plans_are_reproducible_and_cover_the_mix():
    options = LoadOptions(sessions=40, turns=5, think_ms=2000, seed=7)
    first, again = plan_sessions(options), plan_sessions(options)
    assert [[(t.kind, t.text, t.think_s) for t in s.turns] for s in first] == \
           [[(t.kind, t.text, t.think_s) for t in s.turns] for s in again]
    kinds = {t.kind for s in first for t in s.turns}
    assert kinds == set(MIX)
    assert all(1.0 <= t.think_s <= 3.0 for s in first for t in s.turns)
    assert all(0 <= s.start_after_s <= 2.0 for s in first)
    other_seed = plan_sessions(LoadOptions(sessions=40, turns=5, think_ms=2000, seed=8))
    assert [t.text for s in other_seed for t in s.turns] != [t.text for s in first for t in s.turns]


def test_answers_are_checked_against_what_each_kind_must_show():
    assert check_answer("plain", ["Sure. Here is a short answer to: why"]) == ""
    assert check_answer("media", ["Here is what I found: matrix-1999 — Матрица"]) == ""
    assert "nothing found" in check_answer("media", ["Here is what I found: nothing found for “x”"])
    # a failed or backgrounded call is not an answer, though the stand-in model words it as one
    assert check_answer("media", ["Here is what I found: tool error: tool media_search failed: no answer"]) != ""
    assert check_answer("media", ["Here is what I found: tool media_search is still running, now in the background"]) != ""
    assert check_answer("substitution", ["Sure. Here is a short answer to: search x"]) != ""
    assert check_answer("interrupt", ["Once upon a time", "OK, stopped."]) == ""
    assert check_answer("interrupt", ["OK, stopped.", "Once upon a time"]) != ""
    assert check_answer("plain", []) != ""


def test_machine_figures_say_what_the_cpus_did_beside_the_runtime_and_its_phones():
    """Two CPUs for 10 s: 20 CPU-seconds. Busy 9 s of which the runtime and the bench used 6,
    1 s stolen: 5 % of the CPUs' time went to other guests, 0.3 cores to other processes."""
    figures = machine_figures((100.0, 4.0), (109.0, 5.0), 10.0, ours_s=6.0, cpus=2)
    assert (figures.cpus, figures.steal_pct, figures.others_cores) == (2, 5.0, 0.3)
    # the bench's own accounting may exceed the machine's by a tick or two: never negative
    assert machine_figures((100.0, 0.0), (105.0, 0.0), 10.0, ours_s=5.2, cpus=2).others_cores == 0.0
    assert machine_figures((0.0, 0.0), (0.0, 0.0), 10.0, ours_s=1.0) is None  # no /proc/stat
    # under chaos a killed process took its CPU time along: only the steal is known
    assert machine_figures((100.0, 4.0), (109.0, 5.0), 10.0, ours_s=None, cpus=2).others_cores == -1.0
    busy, stolen = read_machine_cpu_s()
    later_busy, later_stolen = read_machine_cpu_s()
    assert 0 < busy <= later_busy and stolen <= later_stolen  # counters since boot: they only grow


def _report(**figures) -> LoadReport:
    times = {"p50": 1.0, "p95": 2.0, "p99": 3.0, "max": 4.0, "count": 10}
    base = dict(sessions=100, turns=3, turns_completed=300, latency_ms=0.0, think_ms=1000.0, phones=5, log_level="INFO",
                nice=10, duration_s=10.0, events=400, events_per_s=40.0, overhead_ms=times, overhead_ms_by_kind={},
                overhead_per_model_call_ms=times, first_display_ms=times, model_calls=600, lost=0, errors={},
                error_examples={}, resends=0, busy=0, rss_mb={}, rss_idle_mb={}, bytes_per_idle_session=20_000.0, restarts={})
    return msgspec.convert({**base, **figures}, LoadReport)


def test_a_run_of_a_targets_shape_says_whether_it_met_it():
    assert judge_targets(_report()) == []  # 100 sessions: no target has that shape
    at_1000 = judge_targets(_report(sessions=1000, think_ms=10000.0, overhead_ms={"p50": 4.0, "p95": 9.0, "p99": 33.3, "max": 50.0, "count": 2500}))
    assert [(t.measured, t.met) for t in at_1000] == [("p99 33.3 ms", False)]
    assert judge_targets(_report(sessions=1000, think_ms=10000.0, overhead_ms={"p50": 2.0, "p95": 3.0, "p99": 4.9, "max": 6.0, "count": 2500}))[0].met
    at_10k = judge_targets(_report(sessions=10000, bytes_per_idle_session=14_000.0))
    assert [(t.measured, t.met) for t in at_10k] == [("0 lost, 13.7 KB", True)]
    assert not judge_targets(_report(sessions=10000, lost=3))[0].met
    assert judge_targets(_report(sessions=10000, chaos_s=20.0)) == []  # kills are not the target's run
    peer = {"name": "langgraph", "version": "1.2", "turns": 900, "duration_s": 12.0, "turns_per_s": 75.0, "model_calls": 3000,
            "cpu_ms_per_turn": 13.0, "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0, "max": 4.0, "count": 900}, "errors": {}, "ratio": 4.3}
    media = _report(mix={"media": 1.0}, peer=peer)
    media = msgspec.structs.replace(media, targets=judge_targets(media))
    assert [(t.measured, t.met) for t in media.targets] == [("4.30x", False)]
    assert "media turn vs langgraph: >= 20x its turns per second: 4.30x, NOT met" in format_report(media)
    assert judge_targets(_report(mix={"media": 0.5, "plain": 0.5}, peer=peer)) == []  # not the media turn alone
    # with the floor measured beside it, the target says where the floor puts its limit
    floored = _report(mix={"media": 1.0}, peer={**peer, "floor_turns_per_s": 600.0})
    floored = msgspec.structs.replace(floored, targets=judge_targets(floored))
    assert [(t.measured, t.met) for t in floored.targets] == [("4.30x (the floor allows at most 8.0x here)", False)]
    assert "the floor on this machine (bench --floor): at most 600 media turns/s, 8.0x langgraph" in format_report(floored)


def test_coalescer_sends_the_first_piece_at_once_and_the_rest_at_most_once_per_interval():
    now = [0.0]
    chunks = ChunkCoalescer(0.03, clock=lambda: now[0])
    assert chunks.add("Hello") == "Hello"
    now[0] = 0.01
    assert chunks.add(" there") == ""
    assert chunks.add(",") == ""
    now[0] = 0.05
    assert chunks.add(" friend") == " there, friend"
    now[0] = 0.06
    assert chunks.add(".") == ""
    assert chunks.flush() == "."
    assert chunks.flush() == ""


def test_fifty_sessions_three_turns_lose_nothing_and_end_every_turn_correctly(tmp_path):
    """The whole path: `run.py bench` starts the runtime (a process per actor), 50 sessions on
    3 phone connections play the mix (media round trips, substitutions, interrupts) at once."""
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "run.py", "bench", "--sessions", "50", "--turns", "3", "--think-ms", "40",
         "--sessions-per-phone", "20", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    assert figures["lost"] == 0 and figures["errors"] == {}, figures["error_examples"]
    assert (figures["sessions"], figures["turns"], figures["turns_completed"]) == (50, 3, 150)
    assert figures["events"] >= 50 + 150  # a start per session, a text per turn, "stop" per interrupt
    assert figures["restarts"] == {name: 0 for name in ("skills", "toolsets", "media", "llm", "session", "glasses")}
    interrupts = 150 - figures["overhead_ms"]["count"]
    assert set(figures["overhead_ms_by_kind"]) | ({"interrupt"} if interrupts else set()) <= set(MIX)
    for key in ("overhead_ms", "first_display_ms"):
        assert set(figures[key]) >= {"p50", "p95", "p99"}
        assert 0 < figures[key]["p50"] <= figures[key]["p99"]
    assert figures["events_per_s"] > 0
    assert set(figures["rss_mb"]) >= {"skills", "toolsets", "media", "llm", "session", "glasses"}
    assert all(mb > 5 for mb in figures["rss_mb"].values())
    assert "bytes_per_idle_session" in figures
    assert figures["admission_lowest_limit"] >= 8  # the session actor answered how its turn admission stood
    assert "events lost              0" in done.stdout
    machine = figures["machine"]  # a Linux machine: /proc/stat says what else its CPUs did
    assert machine["cpus"] >= 1 and 0 <= machine["steal_pct"] <= 100 and machine["others_cores"] >= 0
    assert "stolen by the hypervisor" in done.stdout


async def test_chaos_only_kills_the_processes_that_host_the_named_actors():
    import anyio

    import protocol as p
    from bench.cli import _chaos

    # processes that would live a minute (the sleep is theirs): chaos must kill exactly these
    children = {name: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                for name in ("glasses", "llm", "toolsets")}

    class Runtime:  # what BenchRuntime.status() answers: the actors and their processes
        async def status(self):
            return p.SystemStatus(mode="process", actors=[
                p.ActorStatus(name="glasses", alive=True, pid=children["glasses"].pid),
                p.ActorStatus(name="llm", alive=True, pid=children["llm"].pid),
                p.ActorStatus(name="toolsets", alive=True, pid=children["toolsets"].pid)])

    kills: dict[str, int] = {}
    try:
        with anyio.move_on_after(0.5):
            await _chaos(Runtime(), 0.05, 1, kills, lambda line: None, frozenset({"toolsets"}))
        children["toolsets"].wait(timeout=5)
        assert set(kills) == {"toolsets"} and kills["toolsets"] >= 1
        assert children["glasses"].poll() is None and children["llm"].poll() is None
    finally:
        for child in children.values():
            child.kill()
            child.wait()
