"""The scripted backend: the default rule set plays the media round trip; latency is simulated."""
import anyio

from llm.scripted import DEFAULT_RULES, Rule, ScriptedBackend, split_into_tokens
import protocol as p
from protocol import ChatMessage


def msg(role, content, name=""):
    return ChatMessage(role=role, content=content, name=name)


async def reply(backend, history, max_tokens=64):
    return await backend.stream(history, tools=[], max_tokens=max_tokens).collect()


async def test_default_rules_play_question_read_skill_enable_search_answer():
    backend = ScriptedBackend()
    history = [msg("system", "You are Porfiry."), msg("user", "Find me a film about space")]
    assert await reply(backend, history) == "TOOL_CALL: read_skill|media"
    history += [msg("assistant", "TOOL_CALL: read_skill|media"), msg("tool", "Media skill...", name="read_skill")]
    assert await reply(backend, history) == "TOOL_CALL: enable_toolset|media"
    history += [msg("tool", "Toolset media activated.", name="enable_toolset")]
    assert await reply(backend, history) == "TOOL_CALL: media_search|Find me a film about space"
    history += [msg("assistant", "TOOL_CALL: media_search|..."), msg("tool", "\n1. Interstellar (2014)\n2. Gravity", name="media_search")]
    assert await reply(backend, history) == "Here is what I found: 1. Interstellar (2014)"


async def test_default_rules_answer_plain_questions_without_tools():
    text = await reply(ScriptedBackend(), [msg("user", "What is the capital of France?")])
    assert "TOOL_CALL" not in text and "capital of France" in text


async def test_custom_rules_and_callables():
    backend = ScriptedBackend([Rule(r"\bping\b", "pong"), Rule(r"", lambda history: f"{len(history)} messages")])
    assert await reply(backend, [msg("user", "ping")]) == "pong"
    assert await reply(backend, [msg("user", "hello"), msg("assistant", "hi"), msg("user", "x")]) == "3 messages"
    assert await reply(ScriptedBackend(reply_fn=lambda history: "fixed"), [msg("user", "x")]) == "fixed"


async def test_latency_is_simulated_per_token_through_the_injected_sleep():
    sleeps = []

    async def record(seconds):
        sleeps.append(seconds)

    backend = ScriptedBackend([Rule("", "one two three")], first_token_delay_s=0.3, token_delay_s=0.05, sleep=record)
    generation = backend.stream([msg("user", "go")], tools=[], max_tokens=64)
    assert [piece async for piece in generation] == ["one ", "two ", "three"]
    assert sleeps == [0.3, 0.05, 0.05]
    assert (generation.finish_reason, generation.completion_tokens) == ("stop", 3)


async def test_max_tokens_truncates_and_reports_length():
    generation = ScriptedBackend([Rule("", "a b c d")]).stream([msg("user", "go")], tools=[], max_tokens=2)
    assert await generation.collect() == "a b "
    assert generation.finish_reason == "length"


async def test_real_delays_and_cancellation_mid_stream():
    backend = ScriptedBackend([Rule("", "slow words keep coming here")], token_delay_s=0.2)
    received = []
    with anyio.move_on_after(0.3):
        async with backend.stream([msg("user", "go")], tools=[], max_tokens=64) as generation:
            async for piece in generation:
                received.append(piece)
    assert received == ["slow ", "words "]


def test_tokens_keep_all_text():
    text = "  TOOL_CALL: media_search|jazz  films\n"
    assert "".join(split_into_tokens(text)) == text


def test_a_stop_is_acknowledged_alone_or_batched_with_what_it_interrupts():
    from core.batching import format_batch, format_event

    backend = ScriptedBackend()
    story = p.Event(event_id="a", kind="user_text", source="user", channel="speech", content="tell me a long story", ts=0.0)
    stop = p.Event(event_id="b", kind="user_interrupt", source="user", channel="button", content="stop", ts=0.0)
    for text in (format_event(stop), format_batch([story, stop])):
        assert backend.reply_for([ChatMessage(role="user", content=text)]) == "OK, stopped."
    assert backend.reply_for([ChatMessage(role="user", content=format_event(story))]).startswith("Once upon a time")


async def test_after_a_restart_notice_the_cut_turn_is_continued_and_a_cut_call_repeated():
    """The bench's chaos runs judge answers after crashes: the stand-in must continue a cut turn
    as the notice asks (it answered the notice itself with a plain reply before)."""
    from core.resume import RESTART_NOTICE
    from core.trajectory import CUT_BY_RESTART

    backend = ScriptedBackend()
    notice = msg("user", f"[System notice] {RESTART_NOTICE}")
    said = [msg("system", "You are Porfiry."), msg("user", "[User said] search inception")]
    assert await reply(backend, said + [notice]) == "TOOL_CALL: media_search|inception"
    cut = said + [msg("assistant", "TOOL_CALL: media_search|inception"),
                  msg("tool", CUT_BY_RESTART.format(tool="media_search"), name="media_search"), notice]
    assert await reply(backend, cut) == "TOOL_CALL: media_search|inception"


async def test_a_batch_is_answered_by_its_latest_event():
    """After a crash a replayed "stop" or the restart notice can share a batch with the user's
    next request: a good model answers the request; a stop after what it interrupts still stops."""
    from core.resume import RESTART_NOTICE
    from core.batching import format_batch

    def event(kind, content):
        return p.Event(event_id=p.new_id(), kind=kind, source="user", channel="speech", content=content)

    backend = ScriptedBackend()
    stop_then_film = format_batch([event("user_interrupt", "stop"), event("user_text", "parasite film")])
    history = [msg("system", "You are Porfiry."), msg("user", stop_then_film)]
    assert await reply(backend, history) == "TOOL_CALL: read_skill|media"
    history += [msg("assistant", "TOOL_CALL: read_skill|media"), msg("tool", "Media skill...", name="read_skill")]
    history += [msg("tool", "Toolset media activated.", name="enable_toolset")]
    assert await reply(backend, history) == "TOOL_CALL: media_search|parasite film"
    story_then_stop = format_batch([event("user_text", "tell me a long story"), event("user_interrupt", "stop")])
    assert await reply(backend, [msg("user", story_then_stop)]) == "OK, stopped."
    # a turn cut by a crash, continued in one batch with the next request (a habit call: S8)
    restart_then_search = format_batch([event("system", RESTART_NOTICE), event("user_text", "search the godfather")])
    assert await reply(backend, [msg("user", restart_then_search)]) == "TOOL_CALL: media_search|the godfather"
