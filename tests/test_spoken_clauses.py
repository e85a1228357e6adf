"""Speech written down with no punctuation (a recogniser's text): a plain request among remarks is
still the fast path's, found where an order opens (issue 50, the held-out h29: "всё глаза
слипаются выключай кино досмотрю уже завтра" searched the catalog for "завтра"); never a request
said to someone called by name, nor a clock question whose place is in the other words. Through
the real session loop, with a model that would do the wrong thing if asked."""
from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest

import protocol as p
from harness import inproc_system
from llm.scripted import ScriptedBackend


def _calls(history) -> list[str]:
    return [m["content"].removeprefix("TOOL_CALL: ") for m in history
            if m["role"] == "assistant" and m["content"].startswith("TOOL_CALL: ")]


def _searcher(messages):
    last = [m for m in messages if m.role != "system"][-1]
    return "Вот что нашлось." if last.role == "tool" else "TOOL_CALL: media_search|завтра"


@pytest.mark.parametrize("said", [
    "всё глаза слипаются выключай кино досмотрю уже завтра",
    "ok she's out cold you can stop the movie",
])
async def test_a_stop_among_remarks_with_no_punctuation_stops_what_plays(tmp_path, said):
    backend = ScriptedBackend(reply_fn=_searcher)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "включи Матрицу")
        await system.turn("s", said)
        calls = _calls(await system.history("s"))
    assert calls[-1] == "media_play|matrix-1999; action=stop", calls
    assert not backend.calls


@pytest.mark.parametrize("said", [
    "маш выключи там телик в комнате а то орёт на весь дом",  # said to Masha, no comma written
    "он сказал выключай кино",
])
async def test_a_stop_said_to_someone_else_or_told_is_not_the_fast_paths(tmp_path, said):
    backend = ScriptedBackend(reply_fn=lambda messages: "Хорошо.")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "включи Матрицу")
        await system.turn("s", said)
        calls = _calls(await system.history("s"))
    assert not any("action=stop" in call for call in calls), calls
    assert backend.calls  # the model read it


async def test_a_clock_question_whose_place_is_in_the_other_words_is_not_the_local_time(tmp_path):
    backend = ScriptedBackend(reply_fn=lambda messages: "Не знаю такого города.")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "а в урюпинске щас сколько времени")  # a place no table knows: the model's
        assert backend.calls
        calls = len(backend.calls)
        shown = await system.turn("s", "а во владике щас сколько времени")  # a city by its colloquial name
    assert len(backend.calls) == calls
    answer = [m.text for m in shown if isinstance(m, p.Display) and m.final][-1]
    hour = dt.datetime.now(zoneinfo.ZoneInfo("Asia/Vladivostok")).strftime("%H:")
    assert answer.startswith(f"Во Владике сейчас {hour}"), answer  # Vladivostok's clock, not the user's


async def test_a_watch_dropped_among_remarks_is_dropped_without_the_model(tmp_path):
    backend = ScriptedBackend(reply_fn=lambda messages: "TOOL_CALL: media_search|never mind")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "keep an eye on my email for anything from the bank")
        await system.turn("s", "actually nah never mind, drop that watch, they already called me")
        calls = _calls(await system.history("s"))
    assert calls[0].startswith("channels_watch|mail") and calls[-1].startswith("channels_unwatch|"), calls
    assert not backend.calls
