"""Issue 33's runtime guarantees through the real actors (inproc ZeroMQ) with a scripted model:
no side effect the user did not ask for, no action claimed that no call made, no id the
conversation never showed, tool output a small model can copy."""
import datetime as dt
import re
import zoneinfo

import pytest

import protocol as p
from harness import ToolsSeen, inproc_system
from llm.scripted import ScriptedBackend


_AT_18_MSK = dt.datetime(2026, 3, 14, 18, 0, tzinfo=zoneinfo.ZoneInfo("Europe/Moscow")).timestamp()  # a Saturday


def finals(shown):
    return [m.text for m in shown if isinstance(m, p.Display) and m.final]


def tool_results(history):
    return [m for m in history if m["role"] == "tool"]


def _copycat(messages):
    """The small model of the issue: a thank-you sets the worked example's timer; after any
    result it answers "done"; it claims a timer it never set when asked for one."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool":
        return "Готово: " + last.content.splitlines()[-1]
    if last.content.startswith("[System notice]"):
        return "Таймер установлен на 1 минуту." if "stubborn" in str(messages) else "Хорошо, ничего не делаю."
    words = last.content.split("] ", 1)[-1]
    if words.startswith("call "):
        return "TOOL_CALL: " + words[len("call "):]
    if "таймер" in words or "stubborn" in words:
        return "Таймер установлен на 1 минуту."
    return "TOOL_CALL: timers_set|in 5 minutes; позвонить"


async def test_a_thank_you_sets_no_timer_and_the_model_is_told_why(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_copycat)) as system:
        await system.turn("s", "спасибо, ты молодец! а что нового в мире?")  # a question: tools are offered
        results = tool_results(await system.history("s"))
        assert [r["name"] for r in results] == ["timers_set"]
        assert results[0]["content"].startswith("not executed (not_requested)")
        timers = await system.turn("s", "call timers_list")
        assert "No timers" in finals(timers)[-1] or "no timers" in finals(timers)[-1].lower()


async def test_a_change_or_the_clock_nobody_asked_for_is_not_even_offered_to_the_model(tmp_path):
    # what the grammar does not offer, a constrained model cannot try: no refused step, no side effect
    def model(messages):
        words = [m for m in messages if m.role != "system"][-1].content.split("] ", 1)[-1]
        return "TOOL_CALL: " + words[len("call "):] if words.startswith("call ") else "Всё хорошо, спасибо!"

    backend = ToolsSeen(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "call enable_toolset|timers")
        await system.turn("s", "привет! как у тебя дела, что нового?")  # a question: not plain small talk
        chit_chat = backend.offered[-1]
        assert chit_chat, "a question is offered tools"
        assert not {"timers_set", "timers_cancel", "show_text", "get_current_time"} & set(chit_chat), chit_chat
        await system.turn("s", "поставь, пожалуйста, таймер, чтобы не забыть про чай")
        assert "timers_set" in backend.offered[-1]
        await system.turn("s", "сколько дней осталось до нового года?")  # no reflex: the model, with the clock
        assert "get_current_time" in backend.offered[-1] and "timers_set" not in backend.offered[-1]


async def test_the_clock_read_after_a_greeting_is_refused_on_an_unconstrained_model(tmp_path):
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        return "Добрый вечер! У меня всё отлично." if last.role == "tool" else "TOOL_CALL: get_current_time"

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model)) as system:
        shown = await system.turn("s", "Добрый вечер! Как поживаешь?")
        results = tool_results(await system.history("s"))
        assert [r["content"][:30] for r in results] == ["not executed (not_requested): "]
        assert finals(shown)[-1] == "Добрый вечер! У меня всё отлично."


@pytest.mark.parametrize("said, call", [
    ("поставь будильник на семь... а, нет, стоп, забудь, завтра ж воскресенье, отосплюсь нормально",
     "timers_set|07:00; будильник"),
    ("put 'happy birthday Sam' up on the glasses... oh wait, no, he's already gone home, never mind",
     "show_text|Happy Birthday Sam"),
    # h34: "не надо ничего" with its object still takes the request back
    ("поставь будильник на шесть... а, хотя нет, завтра ж воскресенье, не надо ничего", "timers_set|in 6 minutes; будильник"),
    ("set an alarm for six... actually it's Sunday tomorrow, I don't need one", "timers_set|06:00; alarm"),
])
async def test_a_request_taken_back_in_the_same_breath_is_not_carried_out(tmp_path, said, call):
    """The local model carried out what the user had just taken back (a held-out block's traps):
    the guard reads the retraction, and nothing is set or shown."""
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "tool":
            return "ok: " + last.content
        if "[User said] call " in last.content:
            return "TOOL_CALL: " + last.content.split("[User said] call ", 1)[1]
        return f"TOOL_CALL: {call}" if "System notice" not in last.content else "Хорошо."

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), reflexes=False) as system:
        shown = await system.turn("s", said)
        results = tool_results(await system.history("s"))
        assert results and all(r["content"].startswith("not executed (not_requested)") for r in results), results
        assert not any(isinstance(m, p.Display) and not m.final and "Happy" in m.text for m in shown)
        timers = await system.turn("s", "call timers_list")
        assert "no timers" in finals(timers)[-1].lower(), finals(timers)


async def test_a_call_written_as_the_tools_name_runs_and_never_reaches_the_glasses_as_text(tmp_path):
    """A held-out block: the local model answered "TIMERS_SET: in 23:00; забрать торт …", and the
    glasses showed the line. The name of an offered tool opening a line is a call: it runs through
    the guards like any other (here: 23 is a number nobody said), and the line is never shown."""
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "tool" and "not executed" in last.content:
            return "TIMERS_SET: 21:00; забрать торт в кондитерской"
        if last.role == "tool":
            return "Напомню в 21:00 забрать торт."
        return "TIMERS_SET: in 23:00; забрать торт в кондитерской"

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), reflexes=False) as system:
        shown = await system.turn("s", "напомни сегодня в девять вечера торт забрать в кондитерской")
        results = [r["content"] for r in tool_results(await system.history("s")) if r.get("name") == "timers_set"]
        assert results[0].startswith("not executed (ungrounded_text)") and "21:00" in results[-1], results
        assert not any("TIMERS_SET" in m.text for m in shown if isinstance(m, p.Display) and m.final), finals(shown)


async def test_a_timer_asked_for_is_set(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_copycat)) as system:
        await system.turn("s", "call timers_set|in 2 minutes; проверить чай — поставь таймер через 2 минуты")
        results = tool_results(await system.history("s"))
        assert "not executed" not in results[0]["content"]
        assert "проверить чай" in results[0]["content"] or "2 min" in results[0]["content"] or "Timer" in results[0]["content"]


async def test_a_timer_at_a_time_the_user_never_said_is_refused_and_the_one_said_is_set(tmp_path):
    def counter(messages):  # the local model's: "в полвосьмого" set as "in 1 hour", then the time said
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "user":
            return "TOOL_CALL: timers_set|in 1 hour; позвонить маме"
        if "not executed" in last.content and "timers_set" in last.content:
            return "TOOL_CALL: timers_set|19:30; позвонить маме"
        return "Готово."
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=counter), reflexes=False) as system:
        await system.turn("s", "напомни в полвосьмого вечера позвонить маме")
        results = [r["content"] for r in tool_results(await system.history("s")) if r.get("name") == "timers_set"]
        assert results[0].startswith("not executed (ungrounded_text)") and "19:30" in results[-1]
        assert len(results) == 2  # one timer, at the time said


def _timer_then_retried(first: str, retried: str):
    """A model that sets a timer with `first`, and once refused, with `retried`; then says done."""
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "user":
            return f"TOOL_CALL: timers_set|{first}"
        if last.content.startswith("not executed") and "timers_set" in last.content:
            return f"TOOL_CALL: timers_set|{retried}"
        return "Done."
    return ScriptedBackend(reply_fn=model)


async def test_a_timer_for_part_of_the_length_said_is_refused_and_the_whole_length_is_set(tmp_path):
    # h23: "полтора часа" set as "in 1 hour" (its "1" is in "полтора")
    backend, moment = _timer_then_retried("in 1 hour; тесто", "in 90 minutes; тесто"), 1_773_500_400.0
    async with inproc_system(tmp_path, backend=backend, reflexes=False, clock=lambda: moment) as system:
        await system.turn("s", "тесто поставила подходить, в рецепте сказано полтора часа. засеки, пожалуйста")
        results = [r["content"] for r in tool_results(await system.history("s")) if r.get("name") == "timers_set"]
        assert results[0].startswith("not executed (ungrounded_text)") and "1 h 30 min" in results[0]
        pending = system.actors["session"].sessions["s"].timers.pending()
        assert [round(timer.due - moment) for timer in pending] == [5400], pending


@pytest.mark.parametrize("said, seconds, wrong, right, spoken", [
    ("поставь таймер на два с половиной часа, пирог проверить", 9000, "in 2 hours; пирог", "in 150 minutes; пирог", "2 h 30 min"),
    # h34: "an hour and a quarter" set a timer of one hour whose text was "and a quarter to move it …"
    ("remind me in an hour and a quarter to move the laundry to the dryer", 4500, "in 1 hour; laundry",
     "in 75 minutes; laundry", "1 h 15 min"),
    ("поставь таймер на час с четвертью, пирог проверить", 4500, "in 1 hour; пирог", "in 75 minutes; пирог", "1 h 15 min"),
    # h37: "an hour and forty five minutes" was read "1 hour 40 minutes five minutes": the model's 1 h 40 min passed
    ("parked on a two hour meter. remind me in an hour and forty five minutes to go move the car", 6300,
     "in 1 hour 40 minutes; move the car", "in 105 minutes; move the car", "1 h 45 min"),
])
async def test_a_count_and_a_part_is_the_whole_length_both_on_the_fast_path_and_from_the_model(
        tmp_path, said, seconds, wrong, right, spoken):
    # "на два с половиной часа": the fast path read "часа" alone as the length (an hour, the count
    # its text), and the guard could not read the length, so a model's "in 2 hours" passed as well
    moment = 1_773_500_400.0
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=lambda _messages: "Хорошо."), clock=lambda: moment) as system:
        await system.turn("s", said)
        pending = system.actors["session"].sessions["s"].timers.pending()
        assert [round(t.due - moment) for t in pending] == [seconds]
        assert "quarter" not in pending[0].text and "четверт" not in pending[0].text, pending
    backend = _timer_then_retried(wrong, right)
    async with inproc_system(tmp_path / "model", backend=backend, reflexes=False, clock=lambda: moment) as system:
        await system.turn("s", said)
        results = [r["content"] for r in tool_results(await system.history("s")) if r.get("name") == "timers_set"]
        assert results[0].startswith("not executed (ungrounded_text)") and spoken in results[0]
        assert [round(t.due - moment) for t in system.actors["session"].sessions["s"].timers.pending()] == [seconds]


async def test_a_time_of_day_set_as_a_length_from_now_is_refused_and_the_time_said_is_set(tmp_path):
    # h41: "завтра в семь утра напомни рассаду полить" set "in 7 hours" (01:00), the number the user's
    backend, moment = _timer_then_retried("in 7 hours; рассаду полить", "tomorrow 07:00; рассаду полить"), 1_773_500_400.0
    async with inproc_system(tmp_path, backend=backend, reflexes=False, clock=lambda: moment, timezone="Europe/Moscow") as system:
        await system.turn("s", "весь день на даче грядки копал, спина отваливается. завтра в семь утра напомни рассаду полить")
        results = [r["content"] for r in tool_results(await system.history("s")) if r.get("name") == "timers_set"]
        assert results[0].startswith("not executed (ungrounded_text)") and "7:00" in results[0], results
        pending = system.actors["session"].sessions["s"].timers.pending()
        assert [round(t.due - moment) for t in pending] == [13 * 3600], pending  # 07:00 tomorrow, from 18:00


async def test_a_clock_time_in_the_other_half_of_the_day_from_the_one_said_is_refused(tmp_path):
    # h23: "at seven thirty tonight" set for 07:30 (tomorrow morning); the clock reads 15:00 UTC
    backend, moment = _timer_then_retried("7:30; call mum", "19:30; call mum"), 1_773_500_400.0
    async with inproc_system(tmp_path, backend=backend, reflexes=False, clock=lambda: moment, timezone="UTC") as system:
        await system.turn("s", "yeah, no, not calling him then. just remind me to call mum at seven thirty tonight instead")
        results = [r["content"] for r in tool_results(await system.history("s")) if r.get("name") == "timers_set"]
        assert results[0].startswith("not executed (ungrounded_text)") and "19:30" in results[0]
        assert [round(t.due - moment) for t in system.actors["session"].sessions["s"].timers.pending()] == [4.5 * 3600]


async def test_a_number_in_the_catalogs_own_words_is_no_number_the_user_said(tmp_path):
    def reader(messages):  # the toolset's skill numbers its steps ("1. …"): "in 1 hour" got through on its "1"
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "user":
            return "TOOL_CALL: read_skill|timers"
        if last.content.startswith("not executed") and "timers_set" in last.content:
            return "TOOL_CALL: timers_set|19:45; позвонить бабушке"
        return "TOOL_CALL: timers_set|in 1 hour; позвонить бабушке" if last.name == "read_skill" else "Готово."
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=reader), reflexes=False) as system:
        await system.turn("s", "напомни без четверти восемь бабушке позвонить, у неё сегодня юбилей")
        history = await system.history("s")
        assert "1" in [r["content"] for r in tool_results(history) if r.get("name") == "read_skill"][0]
        results = [r["content"] for r in tool_results(history) if r.get("name") == "timers_set"]
        assert results[0].startswith("not executed (ungrounded_text)") and "19:45" in results[-1]


async def test_a_timer_claimed_but_never_set_is_asked_again_then_said_plainly(tmp_path):
    backend = ScriptedBackend(reply_fn=_copycat)
    async with inproc_system(tmp_path, backend=backend) as system:
        shown = await system.turn("s", "stubborn: поставь таймер на 1 минуту, чтобы проверить чай")
        answer = finals(shown)[-1]
        assert "установлен" not in answer
        assert "не сделал" in answer
        notices = [m.content for m in backend.calls[-1] if m.content.startswith("[System notice] Your last reply said")]
        assert notices, "the model was asked once more with a notice"


async def test_a_watch_said_ended_that_no_call_ended_is_asked_again_then_said_plainly(tmp_path):
    # h67: "убирай эту слежку" answered "OK, I'll stop watching." with no call: the watch went on
    backend = ScriptedBackend(reply_fn=lambda messages: "OK, I'll stop watching.")
    async with inproc_system(tmp_path, backend=backend, reflexes=False, frame=False) as system:
        answer = finals(await system.turn("s", "всё, хватит, она сама позвонила. не нужно больше ничего"))[-1]
        assert "stop watching" not in answer and "не сделал" in answer
        assert [m for m in backend.calls[-1] if m.content.startswith("[System notice] Your last reply said")]


async def test_a_claim_asked_again_that_drops_the_claim_is_shown(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_copycat)) as system:
        shown = await system.turn("s", "хочу таймер на минуту")  # no plain request for a reflex: the model's turn
        assert finals(shown)[-1] == "Хорошо, ничего не делаю."


def _id_maker(messages):
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool" or last.content.startswith("[System notice]"):
        return "Вот: " + last.content.splitlines()[-1].split("TOOL_CALL")[0]
    words = last.content.split("] ", 1)[-1]
    return "TOOL_CALL: " + words[len("call "):]


async def test_an_id_no_result_showed_is_refused_and_one_shown_runs(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_id_maker)) as system:
        await system.turn("s", "call media_info|matrix-matrix-matrix-matrix")
        await system.turn("s", "call media_search|матрица")
        await system.turn("s", "call media_info|matrix-1999")
        await system.turn("s", "call media_info|2023-04-15T12:30:00")  # the local model's, after a details question
        results = tool_results(await system.history("s"))
        assert results[0]["content"].startswith("not executed (unseen_id)")
        assert "matrix-1999" in results[1]["content"]
        assert "Вачовски" in results[2]["content"] or "Wachowski" in results[2]["content"]
        assert results[3]["content"].startswith("not executed (unseen_id)")


async def test_a_placeholder_copied_from_the_instructions_is_refused(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_id_maker)) as system:
        await system.turn("s", "call media_search|[title as the user said it]")  # the local model's, on a joke
        await system.turn("s", "call media_search|<название>")
        results = tool_results(await system.history("s"))
        assert [r["content"].startswith("not executed (ungrounded_text)") for r in results] == [True, True]


async def test_a_search_for_words_nobody_said_is_refused_and_one_for_the_users_words_runs(tmp_path):
    def searcher(messages):
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "user" and "Сталкер" in last.content:
            return "TOOL_CALL: media_search|Сталкер"
        if last.role == "user":  # the local model's, on "what can you do": the instructions' placeholder
            return "TOOL_CALL: media_search|название (the title the user said it)"
        return "Готово."
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=searcher), reflexes=False) as system:
        await system.turn("s", "покажи мне что-нибудь интересное из кино")
        await system.turn("s", "а теперь поищи Сталкер")
        results = tool_results(await system.history("s"))
        searches = [r["content"] for r in results if r.get("name") == "media_search"]
        assert searches[0].startswith("not executed (ungrounded_text)")
        assert "stalker-1979" in searches[-1]


async def test_stop_then_a_correction_does_not_play_again(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_id_maker)) as system:
        await system.turn("s", "call media_search|матрица")
        await system.turn("s", "call media_play|matrix-1999 — Стоп! Я неправильно сказал")
        results = tool_results(await system.history("s"))  # words taken back: small talk, nothing offered or run
        assert not any(r["name"] == "media_play" and not r["content"].startswith("not executed") for r in results)


async def test_the_clock_answers_in_the_users_words_without_an_iso_stamp(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_id_maker)) as system:
        await system.turn("s", "call get_current_time — скажи, пожалуйста, который сейчас час на часах?")
        await system.turn("s", "call get_current_time — what time is it?")
        ru, en = (r["content"] for r in tool_results(await system.history("s")))
        assert not re.search(r"\d{4}-\d{2}-\d{2}T", ru + en)
        assert re.search(r"(понедельник|вторник|среда|четверг|пятница|суббота|воскресенье), \d+ [а-я]+, \d\d:\d\d", ru), ru
        assert re.search(r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \d+ [A-Z][a-z]+, \d\d:\d\d", en), en


async def test_a_first_line_shows_what_is_searched_before_the_answer(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_id_maker)) as system:
        shown = await system.turn("s", "call media_search|Матрица — найди, пожалуйста, этот фильм в каталоге")
        lines = [(m.text, m.final) for m in shown if isinstance(m, p.Display)]
        assert lines[0][0].startswith("ищу «Матрица") and lines[0][1] is False  # shown while the search runs
        assert lines[-1][1] is True and lines[-1][0] != lines[0][0]  # then the answer replaces it


async def test_small_talk_is_offered_no_tool_and_a_question_is(tmp_path):
    backend = ToolsSeen(reply_fn=lambda messages: "Пожалуйста!")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "спасибо, ты молодец")
        await system.turn("s", "привет, какая погода завтра?")
    assert backend.offered[0] == []
    assert "read_skill" in backend.offered[1]  # a question may need a toolset...
    assert "get_current_time" not in backend.offered[1]  # ...but the weather is not the clock


async def test_small_talk_answered_with_a_call_by_an_unconstrained_model_is_asked_for_text(tmp_path):
    def model(messages):
        if messages[-1].content.startswith("[System notice] The user's last message is small talk"):
            return "Рад помочь!"
        return "TOOLCALL: say_thanks"

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model)) as system:
        shown = await system.turn("s", "спасибо большое, ты очень помог")
        assert finals(shown)[-1] == "Рад помочь!"
        assert tool_results(await system.history("s")) == []


def _watcher(messages):
    """A model tempted by the world toolsets' catalog lines: any request sets a watch."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool" or last.content.startswith("[System notice]"):
        return "Хорошо."
    return "TOOL_CALL: channels_watch|any; кино"


async def test_a_watch_or_a_task_cancel_nobody_asked_for_is_not_made(tmp_path):
    """channels_watch and monitors_start wake the session later, tasks_cancel stops work: each runs
    only when the user's words ask for it ("скажи, когда…", "tell me when…", "отмени…")."""
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_watcher)) as system:
        await system.turn("s", "что бы мне посмотреть сегодня вечером")
        refused = tool_results(await system.history("s"))[-1]
        assert refused["name"] == "channels_watch" and refused["content"].startswith("not executed (not_requested)")
        await system.turn("s", "скажи, когда напишет Анна")
        made = tool_results(await system.history("s"))[-1]
        assert made["name"] == "channels_watch" and not made["content"].startswith("not executed")


def _canceller(messages):
    """A model that reads "не надо" as a cancel wherever it is said."""
    last = [m for m in messages if m.role != "system"][-1]
    words = last.content.split("] ", 1)[-1]
    if words.startswith("call "):
        return "TOOL_CALL: " + words[len("call "):]
    if last.role == "tool" or last.content.startswith("[System notice]"):
        return "Хорошо."
    return "TOOL_CALL: timers_cancel|all"


async def test_nothing_more_needed_closes_the_talk_and_cancels_no_timer(tmp_path):
    """"Всё, больше ничего не надо" after a thank-you: the model cancelled every timer (the
    discovery traps, dtrap-ru-05); "nothing more is needed" asks for no cancel, "не надо" alone does."""
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_canceller)) as system:
        await system.turn("s", "call timers_set|in 30 minutes; созвон")
        await system.turn("s", "О, спасибо, что про созвон напомнил, я бы точно забыл. Всё, больше ничего не надо.")
        refused = tool_results(await system.history("s"))[-1]
        assert refused["name"] == "timers_cancel" and refused["content"].startswith("not executed (not_requested)")
        await system.turn("s", "про созвон уже не надо напоминать")
        made = tool_results(await system.history("s"))[-1]
        assert made["name"] == "timers_cancel" and not made["content"].startswith("not executed"), made


def _setter(messages):
    """A model that sets the timer a message names, whatever else it says."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool" or last.content.startswith("[System notice]"):
        return "Хорошо."
    return "TOOL_CALL: timers_set|in 40 minutes; курица"


@pytest.mark.parametrize("said, made", [
    ("мне потом надо будет таймер минут на сорок на курицу, но пока не ставь, я её ещё даже не замариновала", False),
    ("I'll need a timer for the chicken later, forty minutes, but don't set it yet", False),
    ("мне потом надо будет таймер на пельмени поставить, но вода ещё даже не закипела, так что пока ничего не ставь", False),
    ("поставь таймер на сорок минут на курицу, не забудь", True),  # "не забудь" takes nothing back
    ("set a timer for forty minutes for the chicken, not now, in an hour", True),  # a correction, not a put-off
])
async def test_a_request_put_off_sets_nothing_until_it_is_asked_again(tmp_path, said, made):
    """h32: "…но пока не ставь" set the timer the sentence had named."""
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_setter)) as system:
        await system.turn("s", said)
        result = tool_results(await system.history("s"))[-1]
        assert result["name"] == "timers_set"
        assert result["content"].startswith("not executed (not_requested)") != made, result


def _misspeller(messages):
    """The local model answering "привет" when offered no tool: a call line the parser does not take."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.content.startswith("[System notice]"):
        return "Привет! Чем помочь?"
    return "TOOOL_CALL: say_hello"


async def test_a_call_line_the_parser_does_not_take_is_not_shown_as_the_answer(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_misspeller)) as system:
        shown = await system.turn("s", "привет")
        assert finals(shown)[-1] == "Привет! Чем помочь?"
        assert not any("CALL" in text for text in finals(shown))


async def test_a_call_line_said_again_after_the_notice_is_still_not_shown(tmp_path):
    """The local model on a greeting trap: "TOOOL_CALL: read_skill|greetings", and the same after
    the notice. The glasses get a plain line asking to rephrase, never the call line."""
    backend = ScriptedBackend(reply_fn=lambda messages: "TOOOL_CALL: read_skill|greetings")
    async with inproc_system(tmp_path, backend=backend) as system:
        shown = await system.turn("s", "привет, как спалось?")
        assert finals(shown)[-1] == "Не понял просьбу. Скажите, пожалуйста, иначе."
        assert not any("CALL" in m.text for m in shown if isinstance(m, p.Display)) and len(backend.calls) == 2


async def test_the_worlds_toolsets_are_offered_only_to_words_about_what_they_do(tmp_path):
    """"Start my morning workout" made the local model turn `tasks` on and list background jobs."""
    backend = ToolsSeen(reply_fn=lambda messages: "Let's go!")
    async with inproc_system(tmp_path, backend=backend, reflexes=False) as system:  # what the model is offered
        await system.turn("s", "start my morning workout, please")
        offered = backend.choices[-1]
        assert "media" in offered["enable_toolset"] and "timers" in offered["enable_toolset"]
        assert not {"tasks", "monitors", "channels", "notify"} & set(offered["enable_toolset"] + offered["read_skill"])
        await system.turn("s", "скажи, когда напишет Анна")
        assert "channels" in backend.choices[-1]["enable_toolset"]


async def test_a_request_someone_else_made_of_the_user_sets_no_timer(tmp_path):
    # the hidden traps' story: "my friend keeps telling me to set reminders …" set one for a day
    model = ScriptedBackend(reply_fn=lambda messages: "TOOL_CALL: timers_set|in 1 day; check reminders"
                            if [m for m in messages if m.role != "system"][-1].role == "user" else "Ha, fair enough.")
    async with inproc_system(tmp_path, backend=model) as system:
        await system.turn("s", "my friend keeps telling me to set reminders for everything but honestly I never check them lol")
        results = tool_results(await system.history("s"))
        assert [r["name"] for r in results if r["name"] == "timers_set"] == ["timers_set"]
        assert all(r["content"].startswith("not executed") for r in results if r["name"] == "timers_set")


async def test_a_note_copied_after_a_title_is_not_searched_for(tmp_path):
    # the model copied the skill's "(once: …)" note into its search: the title alone is searched
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "user":
            return "TOOL_CALL: media_search|Сталкер (once: the media_* tools then appear under Active toolsets)"
        return "Нашёл."
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), reflexes=False) as system:
        await system.turn("s", "call enable_toolset|media")
        await system.turn("s", "поищи фильм сталкер, пожалуйста")
        found = [r["content"] for r in tool_results(await system.history("s")) if r["name"] == "media_search"]
        assert found and found[-1].startswith("stalker-1979")


async def test_a_tool_name_said_as_the_answer_is_never_shown(tmp_path):
    # the h9 run showed "channels_list" on the glasses: a call without its marker
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=lambda messages: "channels_list"),
                             reflexes=False) as system:
        shown = finals(await system.turn("s", "what are you up to these days?"))
        assert shown and "channels_list" not in shown[-1]


async def test_a_note_about_tools_said_as_the_answer_is_never_shown(tmp_path):
    # the h13 run showed "No tool needed." on the glasses, to "is it too early to ring my mate in london"
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=lambda messages: "No tool needed."),
                             reflexes=False) as system:
        shown = finals(await system.turn("s", "is it too late to text my aunt in Lisbon, you reckon"))
        assert shown and "No tool needed" not in shown[-1]


@pytest.mark.parametrize("marker", ["NO_TOOL_CALL", "NO TOOL", "NO TOOL_CALL", "NO", "not executed"])  # h39, h41, h56: "NO TOOL", "NO", "NO TOOL_CALL" reached the glasses; h63: "not executed"
async def test_a_marker_of_the_models_own_making_is_never_shown(tmp_path, marker):
    # h30: the embedded model answered "NO_TOOL_CALL" to "не, таймер не надо, я сам … послежу", and it was shown
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=lambda messages: marker),
                             reflexes=False) as system:
        shown = await system.turn("s", "не, таймер не надо, я сам у плиты стою, за котлетами послежу")
        assert not [m for m in shown if isinstance(m, p.Display) and marker in m.text]
        assert finals(shown)[-1].startswith("Не понял")  # asked again, still a marker: the runtime's own line


async def test_a_question_about_how_the_assistant_cancels_or_shows_changes_nothing(tmp_path):
    # the eleventh blind block's traps: "а ты таймеры как отменяешь …?" cancelled timer 1; "when you put
    # text on the glasses does it stay?" showed the question; "… keeps telling me I should set a timer …" set one
    calls = {"а ты напоминания как удаляешь — по одному или сразу все?": "TOOL_CALL: timers_cancel|1",
             "quick question, does the text on the glasses disappear by itself?": "TOOL_CALL: show_text|quick question",
             "my husband keeps telling me I should set an alarm for the gym, nah": "TOOL_CALL: timers_set|in 1 day; gym"}
    async with inproc_system(tmp_path, backend=_calling_per_words(calls), frame=False) as system:
        for said in calls:
            await system.turn("s", said)
        results = [r for r in tool_results(await system.history("s")) if r["name"] in ("timers_cancel", "show_text", "timers_set")]
        assert sorted(r["name"] for r in results) == ["show_text", "timers_cancel", "timers_set"]  # each tried once
        assert all(r["content"].startswith("not executed") for r in results)


async def test_a_reminder_the_user_will_time_later_is_not_set_now(tmp_path):
    # the twelfth blind block's trap: "tomorrow I'll need a reminder …, but I'll tell you the time in the
    # morning" set a timer for a day
    said = "on friday I'll need a reminder for the vet, but I'll tell you the time later"

    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        return "TOOL_CALL: timers_set|in 1 day; vet" if last.role == "user" else "Хорошо, жду."
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), frame=False) as system:
        await system.turn("s", said)
        results = [r for r in tool_results(await system.history("s")) if r["name"] == "timers_set"]
        assert results and all(r["content"].startswith("not executed") for r in results)


def _calling_per_words(calls: dict[str, str]) -> ScriptedBackend:
    """A small model that makes, for each of the user's words in `calls`, the call given there."""
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        said = last.content.removeprefix("[User said]").strip()
        return calls.get(said, "Понятно.") if last.role == "user" else "Понятно."
    return ScriptedBackend(reply_fn=model)


def _calling_on_user_turns(call: str, answer: str) -> ScriptedBackend:
    """A small model at its worst on a trap: `call` on every user turn, `answer` after a result."""
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        return call if last.role == "user" else answer
    return ScriptedBackend(reply_fn=model)


async def _results_of(system, tool: str) -> list[dict]:
    return [r for r in tool_results(await system.history("s")) if r["name"] == tool]


async def test_the_user_telling_of_their_own_timers_sets_none(tmp_path):
    # the fourteenth blind block's trap: "if I set a timer for every single thing …" called timers_set
    model = _calling_on_user_turns("TOOL_CALL: timers_set|in 1 day; every single thing", "Ha, probably!")
    async with inproc_system(tmp_path, backend=model, frame=False) as system:
        await system.turn("s", "поставь таймер на 1 минуту")  # a reflex's: the timers toolset is on
        await system.turn("s", "if I set a timer for every single thing in my day I'd go crazy, right?")
        await system.turn("s", "я сам поставлю таймер, когда надо будет")
        await system.turn("s", "would it be weird if I used a timer for my kids' bedtime? asking for a friend")  # h15's trap
        await system.turn("s", "если я попрошу тебя поставить таймер на 5 минут, он на очках появится?")  # h16's, of a play
        await system.turn("s", "а вот если я тебя попрошу разбудить меня в пять утра, ты правда разбудишь?")  # h20's: set one
        results = (await _results_of(system, "timers_set"))[1:]
        assert len(results) == 5 and all(r["content"].startswith("not executed (not_requested)") for r in results)


async def test_a_timer_set_or_a_film_started_is_said_when_the_models_answer_does_not(tmp_path):
    # the fourteenth blind block: the model followed a recipe, set the timer and answered "Порridge готово."
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        said = last.content.removeprefix("[User said]").strip()
        if last.role == "user":
            return ("TOOL_CALL: timers_set|in 7 минут; на кашу" if "таймер" in said else "TOOL_CALL: media_search|Матрица")
        if last.role == "tool" and ("NOT been executed" in last.content or last.name == "media_search"):
            return "TOOL_CALL: timers_set|in 7 минут; на кашу" if last.name == "timers_set" else "TOOL_CALL: media_play|matrix-1999"
        return "Порridge готово." if last.name == "timers_set" else "Готово!"
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), reflexes=False, frame=False) as system:
        answer = finals(await system.turn("s", "поставь таймер на 7 минут на кашу"))[-1]
        assert answer.startswith("Порridge готово. Таймер поставлен на 7 минут, сработает в ") and answer.endswith(": на кашу.")
        assert finals(await system.turn("s", "включи Матрицу"))[-1] == "Готово! Включаю «Матрица»."


async def test_a_stop_said_of_the_film_cancels_no_timer_and_remind_me_who_sets_none(tmp_path):
    # the sixteenth blind block: "ugh, stop it, they're fighting over the remote again" cancelled every
    # timer; "напомни, кто снял Кин-дза-дзу?" was offered a timer (its number unsaid: refused)
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        said = last.content.removeprefix("[User said]").strip()
        if last.role != "user":
            return "Хорошо."
        return "TOOL_CALL: timers_cancel|all" if said.startswith("ugh") else "TOOL_CALL: timers_set|in 10 минут; Кин-дза-дза"
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), frame=False) as system:
        await system.turn("s", "поставь таймер на 10 минут")
        await system.turn("s", "ugh, make it quiet, they're fighting over the remote again")
        await system.turn("s", "напомни, а кто там в 10 минут всё снял в Кин-дза-дзе")
        results = [r for r in tool_results(await system.history("s")) if r["name"] in ("timers_cancel", "timers_set")][1:]
        assert [r["name"] for r in results] == ["timers_cancel", "timers_set"]
        assert all(r["content"].startswith("not executed (not_requested)") for r in results)
        director = finals(await system.turn("s", "напомни, кто снял Кин-дза-дзу? вечно из головы вылетает"))[-1]
        assert "Данелия" in director


@pytest.mark.parametrize(("toolset", "call", "said", "why"), [
    # the seventeenth blind block's trap: "… or only when I ask you to watch for something?" set a watch
    ("channels", "TOOL_CALL: channels_watch|telegram; Telegram",
     "can you actually see my texts all the time, or only when I ask you to watch for something?", "(not_requested)"),
    # the eighteenth blind block: "one for 12 minutes for the pasta …" was set with every=1 day
    ("timers", "TOOL_CALL: timers_set|in 12 minutes; pasta; every=1 day",
     "set a timer for the pasta, 12 minutes, and tell me when the sauce is ready", "did not ask for a repeating timer"),
    # h37's trap: what the assistant can do, asked with a condition inside ("чтоб если начальник напишет"), set a watch
    ("channels", "TOOL_CALL: channels_watch|telegram; начальник напишет",
     "слушай, а ты в принципе умеешь за телегой следить, чтоб если начальник напишет, ты меня будил?", "(not_requested)"),
    ("channels", "TOOL_CALL: channels_watch|telegram; начальник напишет",
     "можно будет потом следить за телегой, когда начальник напишет. я пока не прошу, просто интересно", "(not_requested)"),
    # h38's traps: "…, or is it only telegram and whatsapp?" set a watch on Slack; a question about subtitles was
    # put on the glasses as the model's English words
    ("channels", "TOOL_CALL: channels_watch|slack", "can you keep an eye on my slack too, or is it only telegram and whatsapp?",
     "(not_requested)"),
    ("media", "TOOL_CALL: show_text|Can you show subtitles on the glasses when you watch a movie?",
     "слушай, а ты можешь прям на очки субтитры выводить, когда я кино смотрю?", "(ungrounded_text)"),
    # h43: the flight's length told, then "start Shogun": the model set a timer "in 12 hours"
    ("timers", "TOOL_CALL: timers_set|in 12 hours; Tokyo, no wifi",
     "twelve hours to Tokyo, no wifi, great. might as well get in the mood, start Shogun for me", "(not_requested)"),
    # h57's traps: a request to a grandson by his endearing name, a son's own reminder told, a text on the glasses
    # said not to be shown: the model set the timers and showed the text
    ("timers", "TOOL_CALL: timers_set|in 20 minutes; нажми там на духовке",
     "Серёженька, внучек, нажми там на духовке таймер минут на двадцать, у бабушки руки все в тесте", "(not_requested)"),
    ("timers", "TOOL_CALL: timers_set|in 1 hour; don't forget Mothering Sunday this year",
     "my son rang from London last night, said he's set himself a reminder so he won't forget Mothering Sunday this year. "
     "bless him, he forgot it last year", "(not_requested)"),
    ("media", "TOOL_CALL: show_text|I'm pricking out the seedlings and I need to see what I'm doing.",
     "don't put anything up on my glasses for now, I'm pricking out the seedlings and I need to see what I'm doing",
     "(not_requested)"),
    # h65's trap: "don't you start reminding me about the dentist …" set a reminder in an hour
    ("timers", "TOOL_CALL: timers_set|in 1 hour; I'll ring them when I'm good and ready",
     "and don't you start reminding me about the dentist either, I know, I know, I've put it off twice already and I'll "
     "ring them when I'm good and ready", "(not_requested)"),
    # h66's trap: "babe, can you set the oven timer for twenty?" was set
    ("timers", "TOOL_CALL: timers_set|in 20 minutes; oven", "babe, can you set the oven timer for twenty? my hands are all "
     "covered in dough", "(not_requested)"),
    # h51's trap: "can you put stuff on the glasses screen …? just wondering" showed the user's words on it
    ("media", "TOOL_CALL: show_text|I'll try it tomorrow when I'm more human",
     "can you put stuff on the glasses screen, like a little feed log? just wondering, I'll try it tomorrow when I'm more human",
     "(not_requested)"),
    # h84's traps: a sister's message quoted with a title quoted inside it played the film; a hypothetical's
    # "reminders" set one "in 1 hour" (no time said: the model's own)
    ("media", "TOOL_CALL: media_play|Бриллиантовая рука", "сестра пишет: «включи мне „Бриллиантовую руку“, я соскучилась» — "
     "вот смешная, как будто я у неё пульт от телевизора в Дубае", "(not_requested)"),
    ("timers", "TOOL_CALL: timers_set|in 1 hour; remind me to go to the shop",
     "If I ever open a real shop, I'll need reminders for absolutely everything, honestly.", "said no time for it"),
])
async def test_a_watch_told_of_or_a_repeat_nobody_asked_for_is_not_made(tmp_path, toolset, call, said, why):
    async with inproc_system(tmp_path, backend=_calling_on_user_turns(call, "OK."), frame=False, reflexes=False) as system:
        await system.turn("s", f"call enable_toolset|{toolset}")
        await system.turn("s", said)
        results = await _results_of(system, call.removeprefix("TOOL_CALL: ").split("|")[0])
        assert results and all(r["content"].startswith("not executed") for r in results) and why in results[-1]["content"]


async def test_a_watch_on_every_message_of_every_app_is_not_set(tmp_path):
    # h84: "keep an eye on my website, tell me when it's back up" (a monitor was meant): the model's watch on any
    # channel with nothing to wait for would have woken the user for every message of every app
    backend = _calling_on_user_turns("TOOL_CALL: channels_watch|any", "OK.")
    async with inproc_system(tmp_path, backend=backend, frame=False, reflexes=False) as system:
        await system.turn("s", "call enable_toolset|channels")
        await system.turn("s", "My website's down and that's where half my orders come from. Keep an eye on it and "
                               "tell me when it's back up.")
        results = [r["content"] for r in await _results_of(system, "channels_watch")]
        assert results and "not watched: no app and nothing to wait for" in results[-1], results
        assert not any("set:" in r for r in results)


@pytest.mark.parametrize("said", [
    # h49's trap: the fast path set a WhatsApp watch for a question whether it can set one
    "out of curiosity, could you buzz me if someone texts me on WhatsApp while I'm cooking? or is that not a thing you do",
    "дай знать, если мама напишет в вотсапе, или ты так не умеешь?",
    "чисто из интереса, ты сможешь дёрнуть меня, если мама напишет в вотсапе?",
])
async def test_a_question_whether_the_assistant_can_watch_sets_no_watch(tmp_path, said):
    backend = _calling_on_user_turns("TOOL_CALL: channels_watch|whatsapp; someone texts", "Yes, I can do that.")
    async with inproc_system(tmp_path, backend=backend, frame=False) as system:
        await system.turn("s", "call enable_toolset|channels")
        await system.turn("s", said)
        assert backend.calls, "the question is the model's to answer"
        results = await _results_of(system, "channels_watch")
        assert results and all(r["content"].startswith("not executed (not_requested)") for r in results)


async def test_a_question_about_how_the_assistant_knows_changes_nothing(tmp_path):
    # the eighteenth blind block's traps: "а ты вообще как понимаешь, что мне надо напоминание поставить?"
    # tried a timer; "how do you even know what's playing on my phone?" was offered a play
    calls = {"а ты вообще как понимаешь, что мне надо напоминание поставить? просто интересно": "TOOL_CALL: timers_set|in 5 minutes; напоминание",
             "how do you even know what's playing on my phone? is it like bluetooth or something": "TOOL_CALL: media_play|shrek-2001"}
    async with inproc_system(tmp_path, backend=_calling_per_words(calls), frame=False) as system:
        await system.turn("s", "найди Шрек")  # a reflex's search: the id is one the conversation showed
        for said in calls:
            await system.turn("s", said)
        results = [r for r in tool_results(await system.history("s")) if r["name"] in ("timers_set", "media_play")]
        assert len(results) == 2 and all(r["content"].startswith("not executed (not_requested)") for r in results)


async def test_words_said_to_someone_else_or_quoted_change_nothing(tmp_path):
    # the twenty-third blind block's traps: a request to a person in the room, and one quoted from a chat,
    # were carried out (the fast path played «Морозко» and set Jake's oven timer; the model set Igor's)
    calls = {"Маш, включи детям «Морозко» на ноутбуке, а я пока посуду домою, ладно?": "TOOL_CALL: media_play|jack-frost-1964",
             "Jake, can you set the oven timer for twenty minutes? I'm running out to grab the kids":
                 "TOOL_CALL: timers_set|in 20 minutes; oven",
             "представляешь, Игорь мне в чате пишет: «напомни мне в пять позвонить бухгалтеру». я ему что, секретарь?":
                 "TOOL_CALL: timers_set|17:00; позвонить бухгалтеру",
             # h24: a familiar name, and a verb of anything ("включи голову") with a length: the fast path set a timer
             "серёга, включи голову, куда ты столько цемента замешал, он же за час встанет":
                 "TOOL_CALL: timers_set|in 1 hour; цемент",
             # h25: a name the list lacked ("даня"), the fast path set the oven timer
             "даня, поставь таймер на духовке на сорок минут, я в душ": "TOOL_CALL: timers_set|in 40 minutes; духовка",
             # h30: what is asked for is the listener's own (the fast path set a 06:00 alarm "your phone ? …")
             "babe, can you set an alarm on your phone for six? I always sleep right through mine":
                 "TOOL_CALL: timers_set|06:00; alarm",
             "поставь себе будильник на семь, а то опять проспишь": "TOOL_CALL: timers_set|07:00; будильник",
             # h31: a request in quotes after a colon, the brother's ("такой:" told no verb of telling)
             "брат сейчас по телефону такой: «напомни мне в восемь про матч». смешной, думает я ему секретарша":
                 "TOOL_CALL: timers_set|in 8 minutes; про матч",
             # h31: a name called first with no comma (a recogniser's text), then an order
             "лен поставь чайник а? и напомни диме что он мне ещё с зимы сотку должен":
                 "TOOL_CALL: timers_set|in 10 minutes; чайник",
             # h40: speech told with "goes, quote," in single quotes (the model set the boss's reminder)
             "in the meeting my boss goes, quote, 'someone set a reminder for everyone for Monday at nine', and then "
             "looks straight at me. like I'm his secretary": "TOOL_CALL: timers_set|in 1 hour; the meeting",
             # h60: a name no list holds, capitalised and called first (the model set the pasta timer)
             "Jamie, can you set a timer for the pasta? I'm stuck on the phone with your mum":
                 "TOOL_CALL: timers_set|in 10 minutes; pasta"}
    async with inproc_system(tmp_path, backend=_calling_per_words(calls)) as system:
        await system.turn("s", "найди Морозко")  # a reflex's search: the id is one the conversation showed
        for said in calls:
            await system.turn("s", said)
        results = [r for r in tool_results(await system.history("s")) if r["name"] in ("timers_set", "media_play")]
        assert len(results) == 11 and all(r["content"].startswith("not executed (not_requested)") for r in results), results
        assert not system.actors["session"].sessions["s"].timers.pending()


async def test_a_model_turning_a_toolset_on_and_off_is_stopped_and_answers(tmp_path):
    # the nineteenth blind block's traps: the local model turned media on and off until the turn gave up
    def model(messages):
        last = messages[-1]
        if "turned on and off enough" in last.content:
            return "Нет, сам я кино не выключаю: только когда вы скажете."
        active = "Active toolsets: media" in messages[0].content or any("Active toolsets: media" in m.content for m in messages)
        return "TOOL_CALL: disable_toolset|media" if active else "TOOL_CALL: enable_toolset|media"
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), frame=False, reflexes=False) as system:
        answer = finals(await system.turn("s", "а ты умеешь сам кино выключать, если я засну? или только когда я скажу?"))[-1]
        assert answer.startswith("Нет, сам я кино не выключаю")


async def test_a_change_the_users_words_say_nothing_of_is_refused_and_one_they_name_runs(tmp_path):
    """A real MCP server's tool that changes something and that no lexicon knows
    (worldclock_set_home): the model calling it for a route (as the embedded model did with every
    schema shown) is refused; the user asking for it is served."""
    import sys
    from pathlib import Path

    import msgspec

    from core.config import McpConfig, McpServerConfig
    from harness import make_config, session_knows

    server = McpServerConfig(command=[sys.executable, str(Path(__file__).parent / "mcp_worldclock_server.py")],
                             env={"WORLDCLOCK_NOW": "1773500400"}, timeout_s=10.0)
    config = msgspec.structs.replace(make_config(tmp_path, reflexes=False),
                                     mcp=McpConfig(servers={"worldclock": server}))

    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "tool" and "NOT been executed yet" not in last.content:
            return "Done."
        return "TOOL_CALL: worldclock_set_home|London"

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), config=config) as system:
        await session_knows(system, "worldclock")
        await system.turn("s", "plan a route from the airport to London Bridge", timeout=30)
        results = [m["content"] for m in await system.history("s") if m["role"] == "tool"]
        assert not any("home city set" in r for r in results) and any("not executed" in r for r in results), results
        # h28: a meeting at "two pm their time" after the time in New York, and the model set the home city
        await system.turn("s", "cool, my call with them is two pm their time. remind me fifteen minutes before",
                          timeout=30)
        results = [m["content"] for m in await system.history("s") if m["role"] == "tool"]
        assert not any("home city set" in r for r in results), results
        # h35: a hypothetical that names the change ("if I ever move …, I'd have to switch the home city")
        await system.turn("s", "if we ever move to Lisbon I'd have to change the home city on this thing. not this year though",
                          timeout=30)
        results = [m["content"] for m in await system.history("s") if m["role"] == "tool"]
        assert not any("home city set" in r for r in results), results
        # h80: "set" alone is the tool's verb, not its object: a reminder "for then" set the home city to Tokyo
        await system.turn("s", "set a reminder for then to call my daughter", timeout=30)
        results = [m["content"] for m in await system.history("s") if m["role"] == "tool"]
        assert not any("home city set" in r for r in results), results
        await system.turn("s", "set my home city to London", timeout=30)
        results = [m["content"] for m in await system.history("s") if m["role"] == "tool"]
        assert any("home city set: London" in r for r in results), results


async def test_wanting_to_watch_a_film_sets_no_watch_on_messages(tmp_path):
    """The embedded model read "I want to watch something with Tom Hanks" as a watch on Telegram."""
    def model(messages):
        last = [m for m in messages if m.role != "system"][-1]
        return "Done." if last.role == "tool" else "TOOL_CALL: channels_watch|telegram; Tom Hanks"

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), reflexes=False) as system:
        await system.turn("s", "I want to watch something with Tom Hanks")
        await system.turn("s2", "tell me when Tom Hanks writes on telegram")
        watches = {sid: [m["content"] for m in await system.history(sid) if m["role"] == "tool"] for sid in ("s", "s2")}
    assert all("not executed" in r for r in watches["s"]), watches["s"]
    assert any("not executed" not in r for r in watches["s2"]), watches["s2"]


async def test_the_clock_takes_no_place_but_one_it_knows(tmp_path):
    """The grammar admits `get_current_time` alone or with a place the built-in clock knows: the
    embedded model wrote "get_current_time|+7" for "a week from now"."""
    backend = ToolsSeen(reply_fn=lambda messages: "Сейчас утро.")
    async with inproc_system(tmp_path, backend=backend, reflexes=False) as system:
        await system.turn("s", "какое число будет через неделю?")
    allowed = backend.choices[-1]["get_current_time"]
    assert "" in allowed and "токио" in allowed and "new york" in allowed and "+7" not in allowed


def _converting(wrong: str, right: str, opener: str):
    """A scripted model that converts `wrong` first, `right` once the guards refuse it, and says
    the result after `opener`."""
    def reply(messages):
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "tool":
            return (f"TOOL_CALL: units_convert|{right}" if last.content.startswith("not executed")
                    else opener + last.content.rsplit("= ", 1)[-1])
        return f"TOOL_CALL: units_convert|{wrong}"
    return reply


# the local model of h34: asked "а пятьдесят пять?" after 65 inches, it converted 50
_miscounter = _converting("50; in; cm", "55; in; cm", "Получается ")


async def test_an_amount_the_user_did_not_say_is_refused_and_the_one_said_is_converted(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_miscounter)) as system:
        await system.turn("s", "call enable_toolset|units")
        first = finals(await system.turn("s", "шестьдесят пять дюймов это сколько в сантиметрах?"))[-1]
        assert "165" in first, first
        # "а если …": no amount alone, so no repeat of the conversion by the session (core.reflex_steps._amount_again)
        shown = finals(await system.turn("s", "а если пятьдесят пять?"))[-1]
        results = [r for r in tool_results(await system.history("s")) if r["name"] == "units_convert"]
        assert results[-2]["content"].startswith("not executed (unsaid_number)") and "said 55" in results[-2]["content"], results
        assert "139.7" in shown and "127" not in shown, shown


def _sign_dropper(messages):
    """The local model of h38: asked the kelvins of "minus forty" it converted 40."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool":
        return ("TOOL_CALL: units_convert|-40; C; K" if last.content.startswith("not executed")
                else "That is " + last.content.rsplit("= ", 1)[-1])
    return "TOOL_CALL: units_convert|-40; C; F" if "forty" in last.content else "TOOL_CALL: units_convert|40; C; K"


async def test_an_amount_said_below_zero_is_never_converted_above_it(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_sign_dropper)) as system:
        assert "-4 F" in finals(await system.turn("s", "what's minus twenty celsius in fahrenheit"))[-1]
        await system.turn("s", "and minus forty?")
        shown = finals(await system.turn("s", "and how much is that in kelvin"))[-1]
        results = [r for r in tool_results(await system.history("s")) if r["name"] == "units_convert"]
        assert results[-2]["content"].startswith("not executed (unsaid_number)") and "minus 40" in results[-2]["content"]
        assert "233.1" in shown and "313" not in shown, shown


# the local model of h43: asked the miles per hour of "one thirty" after 240 km, it converted 240
_old_amount_taker = _converting("240; km/h; mph", "130; km/h; mph", "That is ")


async def test_an_amount_said_now_is_never_replaced_by_one_said_before(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_old_amount_taker)) as system:
        assert "149.1" in finals(await system.turn("s", "sign says Paris two hundred forty kilometers, how many miles is that"))[-1]
        shown = finals(await system.turn("s", "and the limit's one thirty, what's that in miles per hour"))[-1]
        results = [r for r in tool_results(await system.history("s")) if r["name"] == "units_convert"]
        assert results[-2]["content"].startswith("not executed (unsaid_number)") and "130" in results[-2]["content"]
        assert "80.7" in shown and "149" not in shown, shown
    # hundreds said as two numbers before a unit are read without the model
    async with inproc_system(tmp_path / "paired", backend=ScriptedBackend(reply_fn=_old_amount_taker)) as system:
        assert "356" in finals(await system.turn("s", "one eighty celsius in fahrenheit?"))[-1]
        assert "102.1" in finals(await system.turn("s", "two twenty-five pounds on the bar, what's that in kilos?"))[-1]


async def test_a_question_whether_the_assistant_can_send_to_the_phone_sends_nothing(tmp_path):
    """A request's opening words are left off a toolset's sentence only when they say nothing:
    "can you …?" may ask what the assistant can do (h33 and h35's traps)."""
    backend = ScriptedBackend(reply_fn=lambda _messages: "Да, могу.")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "wait, can you actually push stuff to my phone? like notifications? just curious, don't send anything")
        assert not [r for r in tool_results(await system.history("s")) if r["name"] == "notify_user"]


@pytest.mark.parametrize(("said", "answer", "shown", "not_shown"), [
    # h45/h46: the model converted in its head, with no call: "80 кило … 35.27 фунтов", "полтора фунта … 0.4 кг"
    ("я вешу восемьдесят кило, а в америке всё в фунтах, прикинь сколько это", "80 кило — это примерно 35.27 фунтов.",
     "176.37 фунтов", "35.27"),
    ("в рецепте полтора фунта мяса, мне сколько брать", "Полтора фунта — это 0.4 кг.", "0.7 кг", "0.4 кг"),
    # a figure rounded as people round it, and two amounts set side by side, are left as the model said them
    ("the bag limit, what's 23 kg", "23 kg is about 50.7 pounds.", "50.7 pounds", "51"),
    ("does my bag fit", "The limit is 50 lb and yours is 21 kg, so it fits.", "yours is 21 kg", "22.7"),
])
async def test_a_conversion_the_model_states_wrong_is_put_right(tmp_path, said, answer, shown, not_shown):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=lambda messages: answer), frame=False,
                             reflexes=False) as system:
        final = finals(await system.turn("s", said))[-1]
        assert shown in final and not_shown not in final, final
        assert (await system.history("s"))[-1]["content"] == final  # the model reads back what the user was told


@pytest.mark.parametrize(("said", "kind"), [
    # h52/h53's traps: a request said to someone by name with "!", and one in someone's quoted words, were carried out
    ("Люба! поставь чайник, я минут через десять приду, только руки от солидола отмою!", "timers_set"),
    ("Ben keeps shouting 'play Toy Story, play Toy Story!' No, buddy, it's way past bedtime, lights out.", "media_play"),
    # h58's trap: a colleague called by a short familiar name, asked to play his own playlist
    ("Серёг, врубай свой плейлист на колонке, шеф сегодня добрый", "media_play"),
    ("put on your playlist, the kitchen's too quiet", "media_play"),
])
async def test_a_request_to_someone_else_or_in_quoted_words_is_not_carried_out(tmp_path, said, kind):
    call = {"timers_set": "TOOL_CALL: timers_set|in 10 минут; чайник", "media_play": "TOOL_CALL: media_play|toy-story-1995"}[kind]
    async with inproc_system(tmp_path, backend=_calling_on_user_turns(call, "OK."), frame=False) as system:
        await system.turn("s", "найди История игрушек")  # the id is one the conversation showed
        await system.turn("s", said)
        results = await _results_of(system, kind)
        assert results and all(r["content"].startswith("not executed (not_requested)") for r in results)


@pytest.mark.parametrize(("said", "due"), [
    # h53: "такси на пять утра … поставь напоминалку на полпятого" was set for 16:30 the next day; h50: "remind me
    # Tuesday at quarter past three" for tomorrow with "tuesday" in its text
    ("такси в аэропорт заказали на завтра на пять утра, господи, кто это придумал. поставь напоминалку на полпятого, "
     "чтоб успеть чемоданы вниз стащить", (2026, 3, 15, 4, 30)),
    ("wife's on nights next week so the school run's on me. remind me Tuesday at quarter past three to pick Lily up from school",
     (2026, 3, 17, 15, 15)),
])
async def test_a_reminder_is_set_for_the_time_and_day_the_words_mean(tmp_path, said, due):
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend, clock=lambda: _AT_18_MSK, timezone="Europe/Moscow") as system:
        await system.turn("s", said)
        timers = system.actors["session"].sessions["s"].timers.pending()
        at = dt.datetime(*due, tzinfo=zoneinfo.ZoneInfo("Europe/Moscow")).timestamp()
        assert [t.due for t in timers] == [at] and not backend.calls


@pytest.mark.parametrize("said", [
    # h54: "шесть футов два дюйма" was converted as 6 ft (the 2 in read as "what is measured"); "how long is it tho"
    # after a remark naming no title the catalog has as written was answered for the film "It"
    "шесть футов два дюйма это скок в сантиметрах",
    "my history teacher says we get extra credit for watching oppenheimer lol. how long is it tho, i have a life",
    # h23: the fast path sent "код домофона …: сто сорок семь, вызов" without the 228 after the comma
    "я сейчас очки сниму, скинь мне на телефон код домофона у Лёши: сто сорок семь, вызов, 228",
])
async def test_part_of_what_was_said_is_never_answered_as_the_whole(tmp_path, said):
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend) as system:
        final = finals(await system.turn("s", said))[-1]
        calls = [r["content"] for r in tool_results(await system.history("s"))]
        assert final == "The model's answer." and not calls or "228" in final, (final, calls)


@pytest.mark.parametrize("said", [
    # a text dictated in quotes that itself holds an order is the user's own request to send or show it
    "скинь мне на телефон «напомни маме про лекарство»",
    "выведи на очки «поставь чайник»",
])
async def test_a_quoted_text_the_user_asks_to_send_or_show_is_sent(tmp_path, said):
    tool = "notify_user" if "телефон" in said else "show_text"
    backend = _calling_on_user_turns(f"TOOL_CALL: {tool}|{said.split('«')[1].rstrip('»')}", "Готово.")
    async with inproc_system(tmp_path, backend=backend, frame=False, reflexes=False) as system:
        await system.turn("s", "call enable_toolset|notify")
        await system.turn("s", said)
        results = await _results_of(system, tool)
        assert results and not results[-1]["content"].startswith("not executed"), results


@pytest.mark.parametrize("said", [
    # h59: a journey's length told before a question about a film set a 7-hour timer named after the rest
    "Seven hours to Glasgow and the bus Wi-Fi is actually working for once. How long is Dune: Part Two?",
    "ten minutes to the meeting, ugh",
    "7 hours to Glasgow",
])
async def test_a_time_left_told_sets_no_timer(tmp_path, said):
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", said)
        assert system.actors["session"].sessions["s"].timers.pending() == []


async def test_a_word_in_capitals_or_a_template_with_blanks_is_asked_again_once(tmp_path):
    # h61: the embedded model's whole answer was "КОНЕЦ" to a question about background tasks, and
    # "КОНСТРУКТУРА: [Имя] [Предложение]" to a watch on the mail; both reached the glasses
    replies = iter(["КОНЕЦ", "Сейчас в фоне ничего не идёт.", "КОНСТРУКТУРА: [Имя] [Предложение]", "Хорошо, скажу, когда придёт."])
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=lambda messages: next(replies)),
                             reflexes=False) as system:
        assert finals(await system.turn("s", "слушай, а у тебя там ничего не крутится?"))[-1] == "Сейчас в фоне ничего не идёт."
        assert finals(await system.turn("s", "ну и славно, спасибо"))[-1] == "Хорошо, скажу, когда придёт."


async def test_a_bug_in_the_fast_paths_reading_leaves_the_turn_to_the_model(tmp_path, monkeypatch):
    # h63: "pause, pause, my supervisor's calling" raised a ValueError in the reading of remarks, and
    # the session's loop died with the turn; a bug there now costs the fast path, not the answer
    import core.reflex_steps

    def broken(*args, **kwargs):
        raise ValueError("a reading's bug")

    monkeypatch.setattr(core.reflex_steps, "request_among_remarks", broken)
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend) as system:
        assert finals(await system.turn("s", "ugh, long day. what time is it anyway, I lost track"))[-1] == "The model's answer."
        assert finals(await system.turn("s", "thanks, that's all for now"))[-1] == "The model's answer."  # the session lives on


async def test_a_long_turn_after_a_conversion_is_not_read_for_a_value_put_right(tmp_path):
    # the values a second thought names are read on short words only (a reading of 2,000 words took 4.5 s)
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "how many kilos is 120 pounds")
        long = "not pounds, ounces. " + " ".join(["and not pounds but ounces"] * 60)
        assert finals(await system.turn("s", long, timeout=10))[-1] == "The model's answer."
