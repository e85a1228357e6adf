"""bench/prompts.py: prefix, evaluated, new and beyond tokens on hand-made lists; the scripted
20-turn conversation (two enables, a disable, an expiry); the real-model TTFT run on Gemma."""
import re
import zlib

import msgspec
import pytest

import protocol as p
from bench.conversation import CONVERSATION, EXPIRY_PAUSE_S, RecordedRequest, record_conversation
from bench.runtime import scratch_config
from bench.prompts import (
    TARGET_BEYOND_NEW, ModelText, PromptReport, RequestCost, beyond_new, common_prefix_len,
    evaluated_tokens, format_report, measure_prompts, message_ends, message_tokens, new_message_indexes, prefix_shares,
    request_costs, summarize_shares, summarize_ttft,
)
from core.config import load_config
from llm.adapt import render_gemma_prompt


@pytest.fixture
def config():
    return load_config(None, env={})


def words(text: str) -> list[int]:
    """A stand-in tokenizer: one stable id per word, space run or mark (a prefix of the text
    tokenizes to a prefix of its tokens, as with a real one)."""
    return [zlib.crc32(piece.encode()) for piece in re.findall(r"\s+|\w+|[^\w\s]", text)]


STAND_IN = ModelText(render=render_gemma_prompt, tokenize=words, model="stand-in")


def msg(role: str, content: str, name: str = "") -> p.ChatMessage:
    return p.ChatMessage(role=role, content=content, name=name)


def request(turn: int, step: int, *messages: p.ChatMessage, reply: str = "") -> RecordedRequest:
    return RecordedRequest(turn=turn, step=step, messages=list(messages), tools=[], reply=reply)


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


def test_evaluated_tokens_are_what_follows_the_reused_prefix_and_at_least_the_last_token():
    assert evaluated_tokens(10, 0) == 10  # cold
    assert evaluated_tokens(10, 4) == 6
    assert evaluated_tokens(10, 10) == 1  # the same prompt again: llama-cpp-python re-evaluates the last token
    assert evaluated_tokens(0, 0) == 0


def test_new_messages_are_those_the_previous_request_lacked_counted_as_a_multiset():
    static, state, said = msg("system", "S"), msg("system", "Active toolsets: media"), msg("user", "hi")
    assert new_message_indexes(None, [static, said]) == [0, 1]  # the first request: all new
    # the state only moved (before the turn -> after it) and the user's words stayed: nothing new
    assert new_message_indexes([static, state, said], [static, said, state]) == []
    # a changed state part is new; the answer and the next words are new
    now = [static, said, msg("assistant", "hello"), msg("system", "Active toolsets: media, timers"), msg("user", "hi")]
    assert new_message_indexes([static, state, said], now) == [2, 3, 4]  # "hi" again: new the second time
    # a tool result is told apart by its tool's name
    assert new_message_indexes([msg("tool", "ok", "media_play")], [msg("tool", "ok", "timers_set")]) == [0]


def test_message_tokens_are_their_spans_of_the_rendered_prompt():
    messages = [msg("system", "a b c"), msg("user", "d e"), msg("assistant", "f")]
    prompt = "[sys] a b c [end] [user] d e [end] [asst] f [end] [asst]"
    asked = []

    def tokenize(text):  # a token a word; counts what it was asked
        asked.append(text)
        return text.split()

    assert message_ends(prompt, messages) == [len("[sys] a b c"), len("[sys] a b c [end] [user] d e"),
                                              len("[sys] a b c [end] [user] d e [end] [asst] f")]
    assert message_tokens(prompt, messages, [0], tokenize) == 4  # from the start of the prompt
    assert message_tokens(prompt, messages, [1], tokenize) == 4  # the markers before it are its own
    assert message_tokens(prompt, messages, [2], tokenize) == 5  # the last one runs to the end
    assert message_tokens(prompt, messages, [0, 1, 2], tokenize) == len(prompt.split())
    assert message_tokens(prompt, messages, [], tokenize) == 0
    asked.clear()
    message_tokens(prompt, messages, [1, 2], tokenize)
    assert len(asked) == 3  # each cut tokenized once
    # contents are found in order, so a repeated one is told apart
    assert message_ends("<u> x <a> x", [msg("user", "x"), msg("assistant", "x ")]) == [5, 11]
    with pytest.raises(ValueError, match="message 1 .assistant. is not in the rendered prompt"):
        message_ends("<u> x", [msg("user", "x"), msg("assistant", "y")])


def test_beyond_new_is_evaluated_minus_new_never_negative():
    assert beyond_new(120, 20) == 100
    assert beyond_new(20, 20) == 0
    assert beyond_new(5, 9) == 0  # the new messages were partly in the reused prefix


def render(messages) -> str:
    return " ".join(f"<{m.role}> {m.content}" for m in messages) + " <gen>"


def test_request_costs_on_hand_made_requests():
    static, state, said = msg("system", "S1 S2 S3"), msg("system", "T"), msg("user", "q")
    call, result = msg("assistant", "call"), msg("tool", "r r", "read_skill")
    requests = [
        request(1, 1, static, state, said, reply="TOOL_CALL: read_skill|media"),
        request(1, 2, static, state, said, call, result),
        request(2, 1, static, said, call, result, state, msg("user", "z")),  # the state moved past turn 1
    ]
    rows = request_costs(requests, [render(r.messages) for r in requests], str.split)
    assert [(r.prompt_tokens, r.prefix_tokens, r.evaluated_tokens) for r in rows] == [(9, 0, 9), (14, 8, 6), (16, 4, 12)]
    assert [(r.new_messages, r.new_tokens) for r in rows] == [(3, 9), (2, 6), (1, 3)]
    assert [r.beyond_new for r in rows] == [0, 0, 9]  # turn 2: turn 1 and the state evaluated again
    assert rows[0].reply == "TOOL_CALL: read_skill|media" and rows[0].share == 0.0
    # more new than evaluated (the new messages' words partly in the reused prefix): clamped at 0
    split = [request(1, 1, static, msg("user", "a b")), request(1, 2, static, msg("user", "a"), msg("user", "b"))]
    clamped = request_costs(split, [render(r.messages) for r in split], str.split)[1]
    assert (clamped.evaluated_tokens, clamped.new_tokens, clamped.beyond_new) == (3, 5, 0)
    with pytest.raises(ValueError):
        request_costs(requests, [render(requests[0].messages)], str.split)


def _row(turn, step, prompt, evaluated, new, ttft=None, llama=None, reply=""):
    return RequestCost(turn=turn, step=step, prompt_tokens=prompt, prefix_tokens=prompt - evaluated,
                       share=(prompt - evaluated) / prompt, evaluated_tokens=evaluated, new_messages=1,
                       new_tokens=new, beyond_new=beyond_new(evaluated, new), reply=reply, ttft_ms=ttft,
                       llama_evaluated=llama)


def test_ttft_summary_names_the_slowest_and_counts_agreement():
    rows = [_row(1, 1, 500, 500, 500, 900.0, 500), _row(2, 1, 600, 150, 50, 300.0, 150),
            _row(2, 2, 700, 100, 100, 200.0, 101)]
    t = summarize_ttft(rows, cold_last_ms=1500.0)
    assert (t.min_ms, t.p50_ms, t.max_ms, t.max_at) == (200.0, 300.0, 900.0, "turn 1 step 1")
    assert (t.cold_last_ms, t.llama_agrees) == (1500.0, 2)
    with pytest.raises(ValueError, match="no request was timed"):
        summarize_ttft([_row(1, 1, 5, 5, 5)], 0.0)


def test_format_report_shows_the_table_the_maximum_and_the_target():
    rows = [_row(1, 1, 485, 485, 485, 4000.0, 485, "Sure."), _row(2, 1, 900, 450, 20, 2100.0, 450,
                                                                   "TOOL_CALL: media_info|brother-2-2000")]
    report = PromptReport(
        profile="local", model="q.gguf", state1_tokens=455, state3_tokens=516, turns=2, requests=rows,
        mean_share=0.5, min_share=0.5, min_at="turn 2 step 1", max_evaluated=485, max_evaluated_at="turn 1 step 1",
        max_beyond_new=430, max_beyond_at="turn 2 step 1", over_target=1, within_target=False,
        ttft=summarize_ttft(rows, 6000.0))
    text = format_report(report)
    assert "Profile local (q.gguf)" in text and "state 1 (nothing active): 455" in text
    table = [line.split() for line in text.splitlines() if line.startswith("     2    1")]
    assert table == [["2", "1", "900", "450", "20", "430", "2100", "TOOL_CALL:", "media_info|brother-2-2000"]]
    assert "max beyond_new: 430 tokens at turn 2 step 1: over (1 of 2 requests above it) the target of 400" in text
    assert "min 2100 ms, median 3050 ms, max 4000 ms at turn 1 step 1; the last request cold: 6000 ms" in text
    assert "agrees on 2 of 2 requests" in text
    decoded = msgspec.json.decode(msgspec.json.encode(report.to_dict()))
    assert decoded["requests"][1]["beyond_new"] == 430 and decoded["requests"][1]["ttft_ms"] == 2100.0
    assert decoded["target_beyond_new"] == TARGET_BEYOND_NEW and decoded["within_target"] is False
    report.within_target, report.ttft = True, None
    assert "within the target of 400" in format_report(report) and "time to first token" not in format_report(report)


async def test_bad_turn_count_and_profile_are_clear_errors(config):
    with pytest.raises(ValueError, match="turns must be between 1 and 20"):
        await measure_prompts(config, turns=0, ttft=False, progress=lambda _: None, text=STAND_IN)
    with pytest.raises(ValueError, match="not llamacpp"):
        await measure_prompts(config, profile="scripted", ttft=False, progress=lambda _: None, text=STAND_IN)
    with pytest.raises(ValueError, match="no profile 'nope'"):
        await measure_prompts(config, profile="nope", ttft=False, progress=lambda _: None, text=STAND_IN)


# --- the scripted conversation ---------------------------------------------------------------
async def test_conversation_plays_media_round_trip_and_follow_ups(config, tmp_path):
    requests = await record_conversation(scratch_config(config, tmp_path), CONVERSATION[:4])
    steps = {}
    for recorded in requests:
        steps[recorded.turn] = recorded.step
    assert steps == {1: 1, 2: 2, 3: 3, 4: 2}  # plain; time; read_skill (media on)/search/answer; info
    media_turn = [r for r in requests if r.turn == 3]
    assert [r.reply.split("|")[0] for r in media_turn[:2]] == ["TOOL_CALL: read_skill", "TOOL_CALL: media_search"]
    assert "media_search" not in media_turn[0].tools and "media_search" in media_turn[1].tools
    assert media_turn[0].arg_choices["read_skill"]  # what a grammar would admit, recorded for the TTFT run
    history = "\n".join(m.content for m in requests[-1].messages)
    assert "brother-2-2000" in history and "runtime: 127 min" in history  # found, then its details
    assert "14 March, 21:00 (2025, MSK)" in history or "14 марта, 21:00 (2025, MSK)" in history  # 18:00 UTC, then 30 s


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
            # turned on by its enable, or by reading its skill (session.enable_on_skill_read)
            assert before.reply in (f"TOOL_CALL: enable_toolset|{name}", f"TOOL_CALL: read_skill|{name}")
            enables.append((name, after.turn))
        for name in sorted(gone):
            (disables if before.reply == f"TOOL_CALL: disable_toolset|{name}" else expiries).append((name, after.turn))
    assert enables == [("media", 3), ("timers", 7)]
    assert disables == [("media", 15)]
    assert expiries == [("timers", 17)]
    assert CONVERSATION[16].pause_s == EXPIRY_PAUSE_S > config.session.toolset_ttl_s
    assert any("timers_set|in 1 hour; call mom" in r.reply for r in requests)


async def test_twenty_turn_report_is_coherent_and_deterministic(config):
    lines = []
    report = await measure_prompts(config, ttft=False, progress=lines.append, text=STAND_IN)
    assert report.ttft is None and lines and report.profile == "local" and report.model == "stand-in"
    assert sorted({r.turn for r in report.requests}) == list(range(1, 21))
    assert report.state3_tokens > report.state1_tokens > 100
    first = report.requests[0]
    assert (first.prefix_tokens, first.evaluated_tokens, first.new_tokens, first.beyond_new) == (
        0, first.prompt_tokens, first.prompt_tokens, 0)
    for row in report.requests[1:]:
        assert 1 <= row.evaluated_tokens <= row.prompt_tokens and row.new_messages >= 1
        assert row.beyond_new == max(0, row.evaluated_tokens - row.new_tokens)
        assert row.reply and row.ttft_ms is None
    assert report.max_beyond_new == max(r.beyond_new for r in report.requests)
    assert report.within_target == (report.max_beyond_new <= TARGET_BEYOND_NEW)
    assert report.over_target == sum(r.beyond_new > TARGET_BEYOND_NEW for r in report.requests)
    again = await measure_prompts(config, ttft=False, progress=lambda _: None, text=STAND_IN)
    assert again == report  # deterministic


@pytest.mark.gemma
async def test_ttft_runs_every_request_in_order_and_llama_agrees_on_evaluated_tokens(config):
    report = await measure_prompts(config, profile="gemma", turns=2, progress=lambda _: None)
    assert report.ttft is not None and len(report.requests) == 3
    assert all(r.ttft_ms is not None and r.ttft_ms > 0 for r in report.requests)
    # our prompt-vs-prompt arithmetic is what the real llama.cpp instance reports it evaluated
    assert [r.llama_evaluated for r in report.requests] == [r.evaluated_tokens for r in report.requests]
    assert report.ttft.llama_agrees == 3 and report.ttft.cold_last_ms > 0
