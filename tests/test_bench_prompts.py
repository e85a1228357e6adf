"""bench/prompts.py: prefix shares on token lists, the scripted 20-turn conversation, Gemma TTFT."""
import re

import msgspec
import pytest

from bench.conversation import CONVERSATION, EXPIRY_PAUSE_S, RecordedRequest, record_conversation
from bench.runtime import scratch_config
from bench.prompts import (
    TTFT, PromptReport, RequestPrefix, common_prefix_len, format_report, measure_prompts, prefix_shares,
    summarize_shares,
)
from core.config import load_config


@pytest.fixture
def config():
    return load_config(None, env={})


# --- pure arithmetic -------------------------------------------------------------------------
def test_common_prefix_len_counts_leading_equal_tokens_only():
    assert common_prefix_len([1, 2, 3, 4], [1, 2, 9, 4]) == 2
    assert common_prefix_len([1, 2], [1, 2, 3]) == 2
    assert common_prefix_len([], [1]) == 0
    assert common_prefix_len([5, 1], [1, 5]) == 0


def test_prefix_shares_compare_each_request_with_the_previous_one():
    rows = prefix_shares([(1, 1, [1, 2, 3]), (1, 2, [1, 2, 3, 4]), (2, 1, [1, 9, 9, 9, 9])])
    assert [(r.turn, r.step, r.prompt_tokens, r.prefix_tokens) for r in rows] == [
        (1, 1, 3, 0), (1, 2, 4, 3), (2, 1, 5, 1)]
    assert [r.share for r in rows] == [0.0, 0.75, 0.2]  # the first request is cold


def test_summary_ignores_the_cold_first_request_and_names_the_minimum():
    rows = prefix_shares([(1, 1, [1, 2]), (1, 2, [1, 2, 3, 4]), (2, 1, [1, 2, 3, 4, 5, 6, 7, 8]),
                          (3, 1, [7, 7, 7, 7])])
    mean, lowest, where = summarize_shares(rows)
    assert (lowest, where) == (0.0, "turn 3 step 1")
    assert mean == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert summarize_shares(rows[:1]) == (0.0, 0.0, "-")


def test_format_report_shows_budgets_table_and_ttft():
    report = PromptReport(
        state1_tokens=243, state3_tokens=270, turns=2, mean_share=0.8, min_share=0.8, min_at="turn 2 step 1",
        requests=[RequestPrefix(turn=1, step=1, prompt_tokens=300, prefix_tokens=0, share=0.0),
                  RequestPrefix(turn=2, step=1, prompt_tokens=375, prefix_tokens=300, share=0.8)],
        ttft=TTFT(turn=2, step=1, prompt_tokens=375, reused_tokens=300, reused_ms=100.0, cold_ms=700.0, repeats=3),
    )
    text = format_report(report)
    assert "state 1 (nothing active): 243" in text and "state 3 (media active):   270" in text
    assert "cold" in text.splitlines()[6]  # the first table row
    assert "80.0%" in text and "minimum 80.0% at turn 2 step 1" in text
    assert "100 ms" in text and "700 ms (7.0x)" in text
    decoded = msgspec.json.decode(msgspec.json.encode(report.to_dict()))
    assert decoded["ttft"]["cold_ms"] == 700.0 and decoded["requests"][1]["share"] == 0.8


async def test_bad_turn_count_is_a_clear_error(config):
    with pytest.raises(ValueError, match="turns must be between 1 and 20"):
        await measure_prompts(config, turns=0, ttft=False, progress=lambda _: None)


# --- the scripted conversation ---------------------------------------------------------------
async def test_conversation_plays_media_round_trip_and_follow_ups(config, tmp_path):
    requests = await record_conversation(scratch_config(config, tmp_path), CONVERSATION[:4])
    steps = {}
    for recorded in requests:
        steps[recorded.turn] = recorded.step
    assert steps == {1: 1, 2: 2, 3: 4, 4: 2}  # plain; time; read_skill/enable/search/answer; info
    media_turn = [r for r in requests if r.turn == 3]
    assert [r.reply.split("|")[0] for r in media_turn[:3]] == [
        "TOOL_CALL: read_skill", "TOOL_CALL: enable_toolset", "TOOL_CALL: media_search"]
    assert "media_search" not in media_turn[0].tools and "media_search" in media_turn[2].tools
    assert media_turn[0].arg_choices["read_skill"]  # what a grammar would admit, recorded for the TTFT run
    history = "\n".join(m.content for m in requests[-1].messages)
    assert "brother-2-2000" in history and "runtime: 127 min" in history  # found, then its details
    assert "2025-03-14T21:00:30+03:00" in history  # the clock: 18:00 UTC, then 30 s between turns


def _active(recorded: RecordedRequest) -> set[str]:
    """The toolsets the request's state part shows ("Active toolsets: …" in a later system message)."""
    state = "\n".join(m.content for m in recorded.messages[1:] if m.role == "system")
    found = re.search(r"^Active toolsets: (.*)$", state, re.MULTILINE)
    return {name.strip() for name in found.group(1).split(",")} if found else set()


async def test_the_twenty_turns_hold_two_enables_a_disable_and_an_expiry(config, tmp_path):
    requests = await record_conversation(scratch_config(config, tmp_path), CONVERSATION)
    assert sorted({r.turn for r in requests}) == list(range(1, 21))
    enables, disables, expiries = [], [], []
    for before, after in zip(requests, requests[1:]):
        gone = _active(before) - _active(after)
        for name in sorted(_active(after) - _active(before)):
            assert before.reply == f"TOOL_CALL: enable_toolset|{name}"
            enables.append((name, after.turn))
        for name in sorted(gone):
            (disables if before.reply == f"TOOL_CALL: disable_toolset|{name}" else expiries).append((name, after.turn))
    assert enables == [("media", 3), ("timers", 7)]
    assert disables == [("media", 15)]
    assert expiries == [("timers", 17)]
    assert CONVERSATION[16].pause_s == EXPIRY_PAUSE_S > config.session.toolset_ttl_s
    assert any("timers_set|in 1 hour; call mom" in r.reply for r in requests)


async def test_twenty_turn_report_is_coherent(config):
    lines = []
    report = await measure_prompts(config, ttft=False, progress=lines.append)
    assert report.ttft is None and lines
    assert sorted({r.turn for r in report.requests}) == list(range(1, 21))
    assert report.state3_tokens > report.state1_tokens > 100
    first = report.requests[0]
    assert (first.prefix_tokens, first.share) == (0, 0.0)
    assert all(0.0 <= r.share <= 1.0 and r.prefix_tokens <= r.prompt_tokens for r in report.requests)
    # the history only grows: each turn's first prompt is longer than the one before, until the
    # disable (turn 15) and the expiry (turn 17) shorten the state part
    firsts = [r.prompt_tokens for r in report.requests if r.step == 1]
    assert all(b > a for a, b in zip(firsts[:15], firsts[1:15]))
    later_steps = [r for r in report.requests if r.step > 1]
    assert max(r.share for r in later_steps) > 0.9
    # The skills index and the active toolsets come after the history (core/prompt.py): an
    # enable changes the end of the prompt, so no request loses most of its prefix.
    assert report.min_share > 0.5
    assert 0.8 < report.mean_share < 1.0
    again = await measure_prompts(config, ttft=False, progress=lambda _: None)
    assert again == report  # deterministic


@pytest.mark.gemma
async def test_ttft_with_reused_prefix_beats_cold(config):
    report = await measure_prompts(config, turns=3, ttft=True, progress=lambda _: None)
    ttft = report.ttft
    assert ttft is not None and (ttft.turn, ttft.step) == (3, 4)
    assert ttft.prompt_tokens == report.requests[-1].prompt_tokens > ttft.reused_tokens > 0
    assert 0 < ttft.reused_ms < ttft.cold_ms
