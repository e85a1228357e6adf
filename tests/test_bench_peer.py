"""`run.py bench --mix`, `--peer langgraph` and `--floor`: the turn mix a run plays, the same turns
through LangGraph's ReAct agent, and the cost floor."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.floor import measure_floor
from bench.load import MIX, LoadOptions, parse_mix, plan_sessions
from bench.peer import PeerUnavailable, check_peer, run_peer
from bench.runtime import scratch_config
from core.config import Config, load_config

REPO = Path(__file__).resolve().parent.parent
ACTOR_PROCESSES = {"skills", "toolsets", "media", "llm", "session", "glasses"}


def test_a_mix_names_kinds_and_weights_and_says_what_is_wrong():
    assert parse_mix("media=1") == {"media": 1.0}
    assert parse_mix(" plain=2, media=0.5 ") == {"plain": 2.0, "media": 0.5}
    assert parse_mix("interrupt") == {"interrupt": 1.0}
    for text, complaint in (("movies=1", "unknown turn kind 'movies'"), ("media=x", "must be a number"),
                            ("media=0", "positive"), ("media=-1", "positive"), ("media=1,media=2", "given twice"),
                            ("", "at least one"), ("media=nan", "positive")):
        with pytest.raises(ValueError, match=complaint):
            parse_mix(text)


def test_a_mix_of_one_kind_plays_only_that_kind():
    options = LoadOptions(sessions=30, turns=4, think_ms=0, mix=tuple(parse_mix("media=1").items()))
    assert {turn.kind for plan in plan_sessions(options) for turn in plan.turns} == {"media"}
    assert {turn.kind for plan in plan_sessions(LoadOptions(sessions=30, turns=4)) for turn in plan.turns} == set(MIX)


def test_the_peer_refuses_what_it_cannot_play():
    with pytest.raises(PeerUnavailable, match="no equivalent of interrupt"):
        check_peer("langgraph", LoadOptions(mix=(("media", 1.0), ("interrupt", 1.0))))
    with pytest.raises(PeerUnavailable, match="unknown peer 'crewai'"):
        check_peer("crewai", LoadOptions(mix=(("media", 1.0),)))


def test_langgraph_plays_the_same_media_turns_with_the_same_model_calls(tmp_path):
    """A first media turn is read_skill -> enable_toolset -> media_search -> answer (4 model
    calls), a later one skips the enable (3), exactly as Porfiry's scripted model plays them."""
    config = scratch_config(Config(), tmp_path)
    options = LoadOptions(sessions=3, turns=2, think_ms=0, mix=(("media", 1.0), ("plain", 1.0)), seed=3)
    kinds = [[turn.kind for turn in plan.turns] for plan in plan_sessions(options)]
    report = run_peer("langgraph", config, options)
    assert report.errors == {}
    assert report.turns == 6 and report.turns_per_s > 0 and report.cpu_ms_per_turn > 0
    expected = 0
    for session in kinds:
        media_seen = False
        for kind in session:
            expected += 1 if kind == "plain" else (3 if media_seen else 4)
            media_seen |= kind == "media"
    assert report.model_calls == expected


def test_bench_with_a_peer_prints_both_throughputs_and_their_ratio(tmp_path):
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, "run.py", "bench", "--mix", "media=1", "--peer", "langgraph", "--sessions", "10", "--turns", "2",
         "--think-ms", "0", "--sessions-per-phone", "5", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    assert figures["lost"] == 0 and figures["errors"] == {}, figures["error_examples"]
    assert figures["mix"] == {"media": 1.0} and set(figures["overhead_ms_by_kind"]) == {"media"}
    peer = figures["peer"]
    assert peer["name"] == "langgraph" and peer["turns"] == 20 and peer["errors"] == {}
    assert peer["ratio"] == pytest.approx(figures["turns_per_s"] / peer["turns_per_s"], rel=0.02)
    assert set(figures["cpu_ms_per_turn"]) >= ACTOR_PROCESSES and figures["cpu_ms_per_turn_total"] > 0
    assert "Porfiry / langgraph:" in done.stdout
    assert peer["floor_turns_per_s"] > 0 and "the floor on this machine (bench --floor)" in done.stdout


def test_bench_refuses_a_bad_mix_before_starting_anything():
    done = subprocess.run([sys.executable, "run.py", "bench", "--mix", "films=1"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "unknown turn kind 'films'" in done.stderr


def test_the_floor_measures_codec_and_zeromq_within_one_process_and_between_two():
    cpus = os.sched_getaffinity(0)
    report = measure_floor(count=300, codec_seconds=0.01)
    assert os.sched_getaffinity(0) == cpus  # the pinned round trip gave this process its CPUs back
    assert [row.message for row in report.codec] == ["Generate", "LLMChunk", "ToolInvoke", "ToolOutcome", "Display"]
    assert all(row.bytes > 0 and row.encode_us > 0 and row.decode_us > 0 for row in report.codec)
    generate = report.codec[0]
    assert generate.bytes > max(row.bytes for row in report.codec[1:])  # a whole prompt
    inproc, ipc, *pinned = report.zmq
    assert "inproc" in inproc.transport and "ipc" in ipc.transport
    assert inproc.round_trip_us > 0 and ipc.round_trip_us > 0
    assert report.hop_us > ipc.round_trip_us / 2
    if len(os.sched_getaffinity(0)) > 1:  # the same round trip with no wake-up crossing CPUs
        assert [row.transport for row in pinned] == ["ipc://, both on one CPU"] and pinned[0].round_trip_us > 0
    assert report.logic == [] and report.media_turn is None  # the turn's work needs a config


def test_the_floor_of_a_turn_is_its_own_work_and_the_media_turn_adds_its_hops():
    report = measure_floor(count=300, codec_seconds=0.01, config=load_config(env={}))
    plain, media, substitution = report.logic
    assert [row.kind for row in report.logic] == ["plain", "media", "substitution"]
    # the turns the load bench plays (each was checked against what the glasses must show)
    assert (plain.model_calls_per_turn, plain.tool_calls_per_turn) == (1, 0)
    assert media.model_calls_per_turn >= 3 and media.tool_calls_per_turn == 1  # read_skill (turns media on), search, answer
    assert substitution.model_calls_per_turn >= 2 and substitution.tool_calls_per_turn == 1
    assert 0 < plain.cpu_ms_per_turn < media.cpu_ms_per_turn
    floor = report.media_turn
    assert floor.cpu_ms == pytest.approx(media.cpu_ms_per_turn + floor.messages * report.hop_cpu_us / 1000, abs=1e-3)
    assert floor.wall_ms == pytest.approx(media.cpu_ms_per_turn + floor.messages * report.hop_us / 1000, abs=1e-3)
    assert floor.turns_per_s == pytest.approx(len(os.sched_getaffinity(0)) * 1000 / floor.cpu_ms, rel=1e-3)



def test_a_floor_whose_turns_fail_says_so_plainly(tmp_path):
    (tmp_path / "tiny.toml").write_text('[llm.profiles.scripted]\nkind = "scripted"\ncontext_tokens = 50\n')
    done = subprocess.run([sys.executable, "run.py", "--config", str(tmp_path / "tiny.toml"), "bench", "--floor"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "porfiry: bench --floor: a turn of the floor failed: LLMError: prompt of" in done.stderr
