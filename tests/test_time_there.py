"""Another place's clock time asked on the user's clock ("what's 9 pm London time for me?",
"сколько будет у меня, когда в Лондоне девять вечера?"): the next moment the place's clock reads
it, said on the user's clock, without the model. Before, the Russian form was answered with
London's time now (a wrong answer), the English ones went to the model (h61 held out: it listed
the watches)."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

import protocol as p
from harness import inproc_system
from llm.scripted import ScriptedBackend

MOSCOW = ZoneInfo("Europe/Moscow")
# Saturday 14 March 2026, 18:00 in Moscow (15:00 in London, 00:00 on Sunday in Tokyo): the blind blocks' clock
CLOCK_START = datetime(2026, 3, 14, 18, 0, tzinfo=MOSCOW).timestamp()


async def _answers(tmp_path, said: list[str]) -> tuple[list[str], list]:
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    shown = []
    async with inproc_system(tmp_path, backend=backend, clock=lambda: CLOCK_START, timezone="Europe/Moscow") as system:
        for index, words in enumerate(said):
            turn = await system.turn(f"s{index}", words)
            shown.append([m.text for m in turn if isinstance(m, p.Display) and m.final][-1])
    return shown, backend.calls


async def test_a_places_clock_time_is_said_on_the_users_clock_without_the_model(tmp_path):
    shown, model_calls = await _answers(tmp_path, [
        "what's 9 pm London time for me?",
        "сколько будет у меня, когда в Лондоне девять вечера?",
        "when it's 8 am in Tokyo, what time is it here?",
        "девять вечера по Лондону это сколько у нас",
        # no half of the day said: the next time the place's dial shows it (London is at 15:00: 21:00)
        "the London couple wants a call at nine o'clock their time, what's that for me here?",
        "сестра в Нью-Йорке просит позвонить в девять утра по их времени, это сколько будет у нас?",
        # a day said: the next such day there (h63: Monday 09:00 in Tokyo is Monday 03:00 in Moscow)
        "соавтор из Токио зовёт созвониться в понедельник в девять утра по их времени. это у меня во сколько выходит?",
        "my Tokyo co-author wants a call on Monday at nine a.m. their time, what's that for me?",
    ])
    assert shown == [
        "When it's 21:00 in London, it's 00:00 on Sunday for you.",
        "Лондон: 21:00 — у вас в это время 00:00, воскресенье.",
        "When it's 08:00 in Tokyo, it's 02:00 on Sunday for you.",
        "Лондон: 21:00 — у вас в это время 00:00, воскресенье.",
        "When it's 21:00 in London, it's 00:00 on Sunday for you.",
        "Нью-Йорк: 09:00 — у вас в это время 16:00, воскресенье.",
        "Токио: 09:00 — у вас в это время 03:00, понедельник.",
        "When it's 09:00 in Tokyo, it's 03:00 on Monday for you.",
    ]
    assert not model_calls


@pytest.mark.parametrize("said", [
    "some friends want a call at nine their time, what's that for me?",  # whose time: no place named
    "my sister in Tokyo and my brother in London both want a call at nine their time, what's that for me?",  # two
])
async def test_their_time_with_no_one_place_named_is_the_models(tmp_path, said):
    shown, model_calls = await _answers(tmp_path, [said])
    assert shown == ["The model's answer."] and model_calls


async def _timers_set(tmp_path, sessions: list[list[str]]) -> tuple[list[list[str]], list]:
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    made = []
    async with inproc_system(tmp_path, backend=backend, clock=lambda: CLOCK_START, timezone="Europe/Moscow") as system:
        for index, said in enumerate(sessions):
            for words in said:
                await system.turn(f"r{index}", words)
            made.append([m["content"] for m in await system.history(f"r{index}")
                         if m["role"] == "assistant" and m["content"].startswith("TOOL_CALL: timers_set")])
    return made, backend.calls


async def test_a_reminder_at_another_places_clock_time_is_set_on_the_users_clock(tmp_path):
    # h84, h85 held out: "when he has ten am" was set for 10:00 Moscow time by the model, or went to it;
    # a place the same words name, else the one asked about before (Chicago is on CDT: UTC-5)
    made, model_calls = await _timers_set(tmp_path, [
        ["сын в Чикаго в выходные до обеда дрыхнет. напомни мне завтра позвонить ему, когда у него будет десять утра"],
        ["а в Дубае сейчас сколько?", "напомни мне позвонить Лене, когда у неё будет девять вечера"],
        ["remind me to call my son in Chicago when it's ten am there"],
        ["what time is it in Tokyo", "remind me to call Kenji at 9 am their time"],
    ])
    assert made == [
        ["TOOL_CALL: timers_set|2026-03-15T18:00; позвонить ему"],
        ["TOOL_CALL: timers_set|2026-03-14T20:00; позвонить Лене"],
        ["TOOL_CALL: timers_set|2026-03-15T18:00; call my son in Chicago"],
        ["TOOL_CALL: timers_set|2026-03-15T03:00; call Kenji"],
    ]
    assert not model_calls


async def test_a_reminder_at_their_time_with_no_place_known_is_not_set_on_the_users_clock(tmp_path):
    made, _ = await _timers_set(tmp_path, [["remind me to call Kenji when it's 9 am there"],
                                           ["напомни мне позвонить ему, когда у него будет десять утра"]])
    assert made == [[], []]  # the model's: whose clock is not known (the scripted one sets nothing)
