"""Issue 50: a toolset beyond the built-in ones is the model's, and the guards serve it as they
serve the built-in ones - through the real session loop, real MCP servers over stdio
(tests/mcp_scripts_server.py, tests/mcp_travel_server.py) and a scripted capable model.

Seed 003's experiment 4-5 (4), in the seed's words: three long-running scripts start at once; the
first one's result wakes the session; the others' progress is read by task id; the one under 50 %
is cancelled on the user's standing instruction; and no true answer is called false."""
from __future__ import annotations

import os
import re
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec

import protocol as p
from core.config import McpConfig, McpServerConfig
from core.user_texts import variants
from harness import inproc_system, make_config, session_knows, until
from llm.scripted import ScriptedBackend

HERE = Path(__file__).resolve().parent
SEED_REQUEST = ("запусти для меня одновременно эти три скрипта: a, b и c, и когда какой-то из них завершится первым, "
                "посмотри прогресс остальных, и если он ещё не превысил 50%, отмени его")
SCRIPTS = ("a", "b", "c")


def finals(shown) -> list[str]:
    return [m.text for m in shown if isinstance(m, p.Display) and m.final]


def _state(messages) -> str:
    return "\n".join(m.content for m in messages if m.role == "system")


def _started(convo) -> dict[str, str]:
    """script -> task id, from each scripts_run call and the placeholder that answered it."""
    started = {}
    for call, result in zip(convo, convo[1:]):
        found = re.search(r"TOOL_CALL: scripts_run\|(?:script=)?(\w+)", call.content) if call.role == "assistant" else None
        task = re.search(r"as task (\w+)", result.content) if result.role == "tool" else None
        if found and task:
            started[found.group(1)] = task.group(1)
    return started


def _events(convo) -> list[int]:
    """Where the user's words, a late result, progress or a channel message start a turn (the
    runtime's notices start none)."""
    return [i for i, m in enumerate(convo) if m.role == "user" and any(
        mark in m.content for mark in ("[User said]", "late result of task", "[Channel message", "[Progress"))]


def capable_model(messages: list[p.ChatMessage]) -> str:
    """What a capable model does with the seed's request: starts the three scripts, and when the
    first ends reads the others' progress by task id and cancels the one under 50 %."""
    convo = [m for m in messages if m.role != "system"]
    events = _events(convo)
    turn = convo[events[-1]:]
    last_event = convo[events[-1]].content
    started = _started(convo)
    if last_event.startswith("[Progress"):  # said while a turn ran: the scripts it started, told of
        return "Скрипты, что я запустил, работают: " + last_event.split("] ", 1)[1].splitlines()[0]
    if "[User said]" in last_event:
        if "scripts_run" not in _state(messages):
            return "TOOL_CALL: enable_toolset|scripts"
        waiting = [s for s in SCRIPTS if s not in started]
        if waiting:
            return f"TOOL_CALL: scripts_run|{waiting[0]}"
        return "Запустил три скрипта: a, b и c. Скажу, когда какой-нибудь завершится."
    finished = re.findall(r"late result of task (\w+)", "\n".join(m.content for m in convo))
    if len(finished) > 1:
        return "Скрипт b тоже завершился. Итог: a и b готовы, c отменён на 33%."
    if "tasks_status" not in _state(messages):
        return "TOOL_CALL: enable_toolset|tasks"
    said = "\n".join(m.content for m in turn)
    others = [(script, task) for script, task in started.items() if task not in finished]
    for script, task in others:
        if f"tasks_status|{task}" not in said:
            return f"TOOL_CALL: tasks_status|{task}"
    for script, task in others:
        percent = re.search(rf"{task}: .*Latest progress: (\d+)%", said)
        if percent and int(percent.group(1)) < 50 and f"tasks_cancel|{task}" not in said:
            return f"TOOL_CALL: tasks_cancel|{task}"
    return "Скрипт a завершился первым. b выполнен на 66% и работает дальше, c был на 33% — его я отменил."


@asynccontextmanager
async def system_with(tmp_path, servers: dict[str, McpServerConfig], reply_fn):
    config = make_config(tmp_path)
    config = msgspec.structs.replace(config, mcp=McpConfig(servers=servers, restart_backoff_s=0.1, check_interval_s=5))
    backend = ScriptedBackend(reply_fn=reply_fn)
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        for name in servers:
            await session_knows(system, name)
        system.backend = backend
        yield system


def _set(folder: Path, name: str, text: str) -> None:
    """A file the scripts server reads, written whole (it polls)."""
    (folder / f"{name}.tmp").write_text(text)
    os.replace(folder / f"{name}.tmp", folder / name)


async def test_seed_003_three_scripts_the_first_result_wakes_and_the_slow_one_is_cancelled(tmp_path):
    folder = tmp_path / "scripts"
    folder.mkdir()
    server = McpServerConfig(command=[sys.executable, str(HERE / "mcp_scripts_server.py")],
                             env={"SCRIPTS_DIR": str(folder)}, timeout_s=60.0, long_running=["scripts_run"])
    async with system_with(tmp_path, {"scripts": server}, capable_model) as system:
        glasses, session = system.actors["glasses"], system.actors["session"]
        started = finals(await system.turn("s", SEED_REQUEST, timeout=30))
        assert started == ["Запустил три скрипта: a, b и c. Скажу, когда какой-нибудь завершится."], \
            "the fast path answered, or a true answer was called false"
        await until(lambda: all((folder / f"{s}.started").exists() for s in SCRIPTS))
        history = "\n".join(m["content"] for m in await system.history("s"))
        tasks = dict(re.findall(r"TOOL_CALL: scripts_run\|(\w+)\n?.*?as task (\w+)", history, re.S))
        assert sorted(tasks) == list(SCRIPTS), history
        # the scripts move on (3 %, 2 %, 1 % a second: a at 100 % when b is at 66 %, c at 33 %)
        for script, percent in (("b", 66), ("c", 33)):
            _set(folder, f"{script}.progress", str(percent))
            await until(lambda t=tasks[script], pc=percent: session.world.latest.get(t, "").startswith(f"{pc}%"))
        _set(folder, "a.done", "done")  # the first result wakes the idle session
        await until(lambda: any("его я отменил" in f for f in finals(glasses.shown["s"])), timeout=30)
        _set(folder, "b.done", "done")
        await until(lambda: any("Итог" in f for f in finals(glasses.shown["s"])), timeout=30)
        history = await system.history("s")
        shown = finals(glasses.shown["s"])
    texts = [m["content"] for m in history]
    calls = [t.split("TOOL_CALL: ", 1)[1] for t in texts if "TOOL_CALL: " in t]
    assert f"tasks_status|{tasks['b']}" in calls and f"tasks_status|{tasks['c']}" in calls
    assert f"tasks_cancel|{tasks['c']}" in calls and f"tasks_cancel|{tasks['b']}" not in calls
    cancel = texts.index(next(t for t in texts if t.endswith(f"tasks_cancel|{tasks['c']}")))
    assert texts[cancel + 1].startswith(f"Task {tasks['c']} (scripts_run) cancelled"), texts[cancel + 1]
    assert not any("not executed" in t for t in texts), "a guard refused what the user asked for"
    assert not any(not_done in f for not_done in variants("not_done") for f in shown), shown
    assert any("script b: analysis finished" in t for t in texts)
    assert not any("script c: analysis finished" in t for t in texts), "the cancelled script ran to its end"


async def test_an_event_turn_may_not_do_what_its_request_never_asked(tmp_path):
    """The standing request is the only one: a late result's turn whose request asked to start
    scripts cannot cancel one (the guard judges by those words, not by none)."""
    folder = tmp_path / "scripts"
    folder.mkdir()
    server = McpServerConfig(command=[sys.executable, str(HERE / "mcp_scripts_server.py")],
                             env={"SCRIPTS_DIR": str(folder)}, timeout_s=60.0, long_running=["scripts_run"])
    async with system_with(tmp_path, {"scripts": server}, capable_model) as system:
        glasses = system.actors["glasses"]
        session = system.actors["session"]
        await system.turn("s", "запусти для меня скрипты a, b и c", timeout=30)
        await until(lambda: all((folder / f"{s}.started").exists() for s in SCRIPTS))
        history = "\n".join(m["content"] for m in await system.history("s"))
        tasks = dict(re.findall(r"TOOL_CALL: scripts_run\|(\w+)\n?.*?as task (\w+)", history, re.S))
        _set(folder, "c.progress", "10")
        await until(lambda: session.world.latest.get(tasks["c"], "").startswith("10%"))
        _set(folder, "a.done", "done")
        await until(lambda: any("завершился первым" in f for f in finals(glasses.shown["s"])), timeout=30)
        texts = [m["content"] for m in await system.history("s")]
        for script in ("b", "c"):
            _set(folder, f"{script}.done", "done")
    refused = [t for t in texts if t.startswith("not executed (not_requested): tasks_cancel")]
    assert refused, "\n".join(texts)


TRAVEL = [("find a cheap flight to Paris", "flights|Paris"), ("найди билет на самолёт до Парижа", "flights|Париж"),
          ("play it safe and find me flights to Rome", "flights|Rome"), ("what's the weather like in Paris?", "weather|Paris")]


def travel_model(messages: list[p.ChatMessage]) -> str:
    """A capable model: turns the travel toolset on, calls the tool the words name, tells the result."""
    convo = [m for m in messages if m.role != "system"]
    events = _events(convo)
    turn = convo[events[-1]:]
    results = [m.content for m in turn if m.role == "tool"]
    if results:
        return "Вот что нашлось: " + results[-1]
    if "travel_flights" not in _state(messages):
        return "TOOL_CALL: enable_toolset|travel"
    said = turn[0].content
    city = "Париж" if "Париж" in said else "Rome" if "Rome" in said else "Paris"
    return f"TOOL_CALL: travel_{'weather' if 'weather' in said else 'flights'}|{city}"


async def test_a_new_toolsets_requests_reach_the_model_and_a_title_still_plays_at_once(tmp_path):
    server = McpServerConfig(command=[sys.executable, str(HERE / "mcp_travel_server.py")], timeout_s=30.0)
    async with system_with(tmp_path, {"travel": server}, travel_model) as system:
        answers = {}
        for said, _call in TRAVEL:
            shown = await system.turn("s", said, timeout=30)
            answers[said] = (finals(shown)[-1], [m.model_calls for m in shown if isinstance(m, p.TurnDone)][-1])
        history = await system.history("s")
        played = await system.turn("s", "включи Матрицу", timeout=30)
    calls = [m["content"].split("TOOL_CALL: ", 1)[1] for m in history if "TOOL_CALL: " in m["content"]]
    for said, call in TRAVEL:
        answer, model_calls = answers[said]
        assert model_calls >= 1 and answer.startswith("Вот что нашлось: "), (said, answer)
        assert f"travel_{call}" in calls, (said, calls)
    assert not any(call.startswith("media_") for call in calls), "a search the user never asked for"
    assert finals(played)[-1].startswith("Включаю") and "Матрица" in finals(played)[-1]
    assert [m.model_calls for m in played if isinstance(m, p.TurnDone)][-1] == 0, "a title the catalog has: the fast path"


async def test_words_the_frame_finds_no_command_in_are_not_small_talk_when_a_server_could_serve_them(tmp_path):
    """"prepare a sales report": no built-in command, and a remark by its words; with a toolset
    beyond the built-in ones the model is offered tools for it and never told it is small talk."""
    def model(messages):
        if "ONE command from this list" in messages[0].content:
            return "-"  # the frame: none of its commands
        if "is small talk" in messages[-1].content:
            return "Хорошо."
        convo = [m for m in messages if m.role != "system"]
        return "Готово." if convo[-1].role == "tool" or "travel_flights" in _state(messages) else \
            "TOOL_CALL: enable_toolset|travel"

    server = McpServerConfig(command=[sys.executable, str(HERE / "mcp_travel_server.py")], timeout_s=30.0)
    config = msgspec.structs.replace(make_config(tmp_path, frame=True),
                                     mcp=McpConfig(servers={"travel": server}, check_interval_s=5))
    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        await session_knows(system, "travel")
        shown = await system.turn("s", "prepare a sales report for the Paris trip", timeout=30)
    assert finals(shown)[-1] == "Готово."
    assert not any("is small talk" in m.content for call in backend.calls for m in call), "told it was small talk"


WATCH_REQUEST = "как только Аня напишет, напомни мне через 10 минут ей перезвонить"


def watching_model(messages: list[p.ChatMessage]) -> str:
    """Sets the watch the user asks for; when it matches, sets the reminder the same words asked for."""
    convo = [m for m in messages if m.role != "system"]
    events = _events(convo)
    turn, event = convo[events[-1]:], convo[events[-1]].content
    results = [m.content for m in turn if m.role == "tool"]
    if "[User said]" in event:
        if "channels_watch" not in _state(messages):
            return "TOOL_CALL: enable_toolset|channels"
        return "Хорошо, скажу, когда Аня напишет." if results else "TOOL_CALL: channels_watch|any; Аня"
    if "timers_set" not in _state(messages):
        return "TOOL_CALL: enable_toolset|timers"
    return ("Аня написала. " + results[-1]) if results else "TOOL_CALL: timers_set|in 10 minutes; перезвонить Ане"


async def test_a_watchs_message_may_carry_out_what_the_words_that_set_the_watch_asked(tmp_path):
    backend = ScriptedBackend(reply_fn=watching_model)
    async with inproc_system(tmp_path, backend=backend, reflexes=False) as system:
        await system.turn("s", WATCH_REQUEST, timeout=30)
        shown = await system.turn("s", "Аня: я дома", kind="channel", timeout=30)  # the watch matches
        texts = [m["content"] for m in await system.history("s")]
        timers = system.actors["session"].sessions["s"].timers.pending()
    assert any("matches your watch w1" in t for t in texts), texts
    assert not any(t.startswith("not executed") for t in texts), texts
    assert [t.text for t in timers] == ["перезвонить Ане"]
    assert finals(shown)[-1].startswith("Аня написала. Timer ")


async def test_a_server_the_fast_path_itself_serves_leaves_its_answers_as_they_were(tmp_path):
    """A world clock the fast path asks a city's time of is one of its own toolsets: a title the
    catalog lacks is still said plainly, with no model call; add a travel server and it is the model's."""
    clock = McpServerConfig(command=[sys.executable, str(HERE / "mcp_worldclock_server.py")], timeout_s=30.0)
    async with system_with(tmp_path, {"worldclock": clock}, travel_model) as system:
        shown = await system.turn("s", "включи фильм Синий бегемот в космосе", timeout=30)
    assert finals(shown)[-1].startswith("В каталоге не нашлось")
    assert [m.model_calls for m in shown if isinstance(m, p.TurnDone)][-1] == 0
    travel = McpServerConfig(command=[sys.executable, str(HERE / "mcp_travel_server.py")], timeout_s=30.0)
    async with system_with(tmp_path / "2", {"worldclock": clock, "travel": travel}, travel_model) as system:
        shown = await system.turn("s", "включи фильм Синий бегемот в космосе", timeout=30)
    assert not finals(shown)[-1].startswith("В каталоге не нашлось")
    assert [m.model_calls for m in shown if isinstance(m, p.TurnDone)][-1] >= 1


async def test_an_mcp_servers_custom_sentences_call_its_tool_without_the_model_choosing_it(tmp_path):
    """`mcp.servers.NAME.intents`: a user's sentences for a server's tools (Home Assistant's
    custom_sentences). Asked in them, the session makes the server's call itself; the model only
    words its result. Words outside them ("make it my home city": what "it" is, the model knows)
    stay the model's, and so does a city the server does not know, told as the server says."""
    clock = McpServerConfig(command=[sys.executable, str(HERE / "mcp_worldclock_server.py")], timeout_s=30.0,
                            intents=str(HERE / "mcp_worldclock_intents.yaml"))

    def wording(messages):  # the model's step after the call: it words the result it reads
        last = messages[-1].content
        return f"Готово: {last.split('home city set: ')[-1]}" if "home city set" in last else "The model's answer."
    async with system_with(tmp_path, {"worldclock": clock}, wording) as system:
        shown = await system.turn("s", "я туда на месяц улетаю, сделай Дубай домашним городом в часах", timeout=30)
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
        assert calls == ["TOOL_CALL: worldclock_set_home|Дубай"]
        assert "Asia/Dubai" in finals(shown)[-1]
        shown = await system.turn("s", "make it my home city", timeout=30)
        assert finals(shown)[-1] == "The model's answer."  # "it": no city of the user's words nor asked about, the model's
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
        assert calls == ["TOOL_CALL: worldclock_set_home|Дубай"]
        # h37, h39: "его" after the time of a place was asked is that place (`refers: {city: place}`)
        await system.turn("s", "сколько сейчас времени в берлине", timeout=30)
        await system.turn("s", "я туда на полгода по работе переезжаю, сделай его домашним городом", timeout=30)
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
        assert calls[-1] == "TOOL_CALL: worldclock_set_home|берлин", calls
        await system.turn("s", "вот Дубай и сделай домашним, я там до лета работаю", timeout=30)  # h41
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
        assert calls[-1] == "TOOL_CALL: worldclock_set_home|Дубай", calls
        # h43: one clause of a sentence among more clauses than are read apart; "так что давай" is no part of the city
        await system.turn("s", "всё, контракт подписал, я теперь в Дубае минимум на полгода. так что давай Лондон сделаем "
                               "домашним городом, а то ты мне всё по Москве считаешь", timeout=30)
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
        assert calls[-1] == "TOOL_CALL: worldclock_set_home|Лондон", calls


async def test_a_servers_sentences_naming_a_rule_or_list_as_a_toolset_does_leave_the_toolsets_own(tmp_path):
    """The world clock's sentences name a rule `<clock>` and a list `{city}`; hassil's names are
    one namespace per language, and its `<clock>` replaced the timers' (a time of day): with the
    server configured, "разбуди меня завтра в полседьмого" and "remind me every night at nine"
    went to the model (every eval since the world clock joined them). A file's names are its own."""
    clock = McpServerConfig(command=[sys.executable, str(HERE / "mcp_worldclock_server.py")], timeout_s=30.0,
                            intents=str(HERE / "mcp_worldclock_intents.yaml"))
    async with system_with(tmp_path, {"worldclock": clock}, lambda messages: "The model's answer.") as system:
        for said in ("разбуди меня завтра в полседьмого", "remind me every night at nine to take my meds"):
            shown = await system.turn("s", said, timeout=30)
            assert [m.model_calls for m in shown if isinstance(m, p.TurnDone)][-1] == 0, finals(shown)
            assert "06:30" in finals(shown)[-1] or "21:00" in finals(shown)[-1], finals(shown)
        await system.turn("s", "сделай Дубай домашним городом в часах", timeout=30)  # the server's own sentence still
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
        assert calls[-1] == "TOOL_CALL: worldclock_set_home|Дубай"


def test_an_mcp_servers_sentences_file_that_is_missing_is_a_clear_config_error(tmp_path):
    import pytest

    from core.config import load_config

    (tmp_path / "porfiry.toml").write_text('[mcp.servers.clock]\ncommand = ["true"]\nintents = "/nonexistent/clock.yaml"\n')
    with pytest.raises(Exception, match=r"mcp\.servers\.clock\.intents: no such file: /nonexistent/clock\.yaml"):
        load_config(str(tmp_path / "porfiry.toml"))


async def test_a_servers_change_put_off_by_the_user_is_not_made(tmp_path):
    """h46's trap: "… I'll want Dubai as the home city. not now though, I'm still here till the
    twentieth": the model set it. A change no lexicon knows is put off by "not now" as any other."""
    clock = McpServerConfig(command=[sys.executable, str(HERE / "mcp_worldclock_server.py")], timeout_s=30.0)

    def setter(messages):
        return "OK." if messages[-1].role == "tool" else "TOOL_CALL: worldclock_set_home|Dubai"
    async with system_with(tmp_path, {"worldclock": clock}, setter) as system:
        await system.turn("s", "when I fly out to the trade fair next month I'll want Dubai as the home city. "
                               "not now though, I'm still here till the twentieth", timeout=30)
        results = [m["content"] for m in await system.history("s") if m.get("name") == "worldclock_set_home"]
        assert results and all(r.startswith("not executed (not_requested)") for r in results), results
