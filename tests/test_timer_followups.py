"""Follow-ups about timers already set, through the real session loop (issue 50; the kinds of
turn the held-out blocks h22-h25 failed most): which of several timers a cancel or a move means
(by its place in the order they were set, by its words, by a person the sentence before names,
never one the words keep), a new time said after a no, a request among remarks that only the
reflex reads, and the toolset's sentences for a reminder at a clock time and "what is set"."""
from __future__ import annotations

import calendar

import pytest

import protocol as p
from harness import inproc_system
from llm.scripted import ScriptedBackend

AT_18 = calendar.timegm((2026, 3, 14, 15, 0, 0))  # 18:00 in Moscow, a Saturday


def _liar(messages):
    """A small model at its worst: it claims a timer and cancels them all. Turns the session
    carries out itself never reach it."""
    return "Готово! TOOL_CALL: timers_cancel|all"


def _asks(messages):
    return "Which one?"


async def _play(tmp_path, turns: list[str], reply_fn=_liar):
    """Plays `turns` in one session at 18:00 Moscow time: (the last final display, the timers
    left as (HH:MM, text), soonest first, whether the model was asked)."""
    backend = ScriptedBackend(reply_fn=reply_fn)
    async with inproc_system(tmp_path, backend=backend, clock=lambda: AT_18, timezone="Europe/Moscow") as system:
        for said in turns:
            shown = [m.text for m in await system.turn("s", said) if isinstance(m, p.Display) and m.final]
        pending = system.actors["session"].sessions["s"].timers.pending()
    left = [(f"{18 + int(t.due - AT_18) // 3600:02d}:{int(t.due - AT_18) % 3600 // 60:02d}", t.text) for t in pending]
    return shown[-1], left, bool(backend.calls)


async def test_the_second_reminder_is_the_second_set_and_the_one_the_words_keep_stays(tmp_path):
    # h22: "убери второе напоминание, про маму оставь" with only mum's reminder set cancelled mum's
    shown, left, asked = await _play(tmp_path, [
        "напомни завтра в семь утра маме позвонить, у неё день рождения",
        "и ещё сегодня в девять вечера — торт забрать в кондитерской",
        "а, не, торт Лена заберёт. убери второе напоминание, про маму оставь"])
    assert [text for _at, text in left] == ["маме позвонить у неё день рождения"] and not asked, shown
    assert "торт" in shown


async def test_a_place_past_the_timers_set_or_a_kept_one_is_the_models_to_ask(tmp_path):
    shown, left, asked = await _play(tmp_path, [
        "напомни завтра в семь утра маме позвонить",
        "убери второе напоминание, про маму оставь"], reply_fn=_asks)
    assert len(left) == 1 and asked and shown == "Which one?"
    shown, left, asked = await _play(tmp_path / "kept", [
        "поставь таймер на 10 минут, макароны", "и ещё один на 20 минут, курица",
        "убери первый таймер, макароны оставь"], reply_fn=_asks)
    assert len(left) == 2 and asked, left  # the first is the pasta, which the words keep


@pytest.mark.parametrize("turns, left", [
    # h25: a new time after a no, no verb before it
    (["напомни в семь забрать лёву с плавания", "ой нет, не в семь, в полвосьмого, у них сегодня тренировка дольше"],
     [("19:30", "забрать лёву с плавания")]),
    # h25: the new length said again digit by digit
    (["set a timer for fifteen minutes", "no no, fifty. five oh. it's a big roast"], [("18:50", "timer")]),
    # h25: one of two, by its words, to a bare hour of a reminder set for a clock time
    (["set a reminder for eight thirty tonight to water nadia's orchids", "and one at nine to text jeremy about sunday's hike",
      "push the orchid one to ten"], [("21:00", "text jeremy about sunday's hike"), ("22:00", "water nadia's orchids")]),
])
async def test_a_timer_put_right_is_moved_without_the_model(tmp_path, turns, left):
    shown, timers, asked = await _play(tmp_path, turns)
    assert timers == left and not asked, (shown, timers)
    assert "timer." not in shown  # a timer set with no text says none when it is moved


@pytest.mark.parametrize("turns, left", [
    # h25: the person the sentence before names
    (["засеки сорок минут, грунтовка на стене сохнет", "и ещё один на пятнадцать минут, перезвонить вике из бухгалтерии",
      "а, вика сама написала. убери тот, что про неё"], [("18:40", "грунтовка на стене сохнет")]),
    # h25: a change of mind before the request, a remark after it
    (["засеки сорок минут, грунтовка", "и ещё один на пятнадцать минут, вика",
      "хотя знаешь, убери вообще все таймеры, сам послежу"], []),
])
async def test_a_cancel_among_remarks_takes_the_timers_its_words_mean(tmp_path, turns, left):
    shown, timers, asked = await _play(tmp_path, turns)
    assert timers == left and not asked, (shown, timers)


@pytest.mark.parametrize("turns, shown_has", [
    (["поставь напоминание на семь вечера забрать куртку из химчистки", "так, и что у меня сейчас стоит?"],
     "19:00 — забрать куртку из химчистки"),
    (["set a reminder for eight thirty tonight to water the plants", "and one at nine to text jeremy"], "21:00"),
])
async def test_a_reminder_at_a_clock_time_and_what_is_set_are_the_toolsets_sentences(tmp_path, turns, shown_has):
    shown, _timers, asked = await _play(tmp_path, turns)
    assert shown_has in shown and not asked, shown


@pytest.mark.parametrize("said", [
    "sorry, quick one, what's the time right now? my phone's dead and I'm on the bus",
    "а какой сегодня день недели, я после смен совсем потерялся",
])
async def test_a_request_only_the_reflex_reads_among_remarks_is_answered_without_the_model(tmp_path, said):
    shown, _timers, asked = await _play(tmp_path, [said])
    assert not asked and ("18:00" in shown or "суббот" in shown.casefold()), shown


@pytest.mark.parametrize("said", [
    # two timers asked in clauses: one set alone would be a wrong action
    "ok so, one timer for 25 minutes for the laundry and, um, another for an hour for the roast",
    # the title to play is in the remark; "it" is not the last one shown
    "my son wants the second Back to the Future, the one with the hoverboard. can you put it on?",
    # what to show is in the remark
    "can you pop the gate code up on my glasses? it's 4471",
])
async def test_among_remarks_a_request_whose_object_may_be_in_them_is_the_models(tmp_path, said):
    _shown, timers, asked = await _play(tmp_path, [said], reply_fn=_asks)
    assert asked and not timers


@pytest.mark.parametrize("said", ["поставь его на паузу на минутку", "поставь пока на паузу",
                                  "о, в дверь звонят, это наверно сосед за дрелью пришёл. поставь пока на паузу",
                                  "cool. pause it a sec, pizza's here"])
async def test_a_pause_for_a_moment_pauses_what_plays_and_sets_no_timer(tmp_path, said):
    # h25: "поставь пока на паузу" searched the catalog for "пока на паузу"; "… на минутку" set a 1-minute timer
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "включи Шрека")
        await system.turn("s", said)
        calls = [m["content"] for m in await system.history("s") if m["content"].startswith("TOOL_CALL: ")]
        assert not system.actors["session"].sessions["s"].timers.pending() and not backend.calls, calls
    assert calls[-1] == "TOOL_CALL: media_play|shrek-2001; action=pause", calls


async def test_a_reminder_that_must_not_be_forgotten_is_no_negation(tmp_path):
    # h23: "…, нельзя забыть" read as a negation: the reminder went to the model, set for 1 hour
    shown, left, asked = await _play(tmp_path, [
        "напомни мне без четверти восемь бабушке позвонить, у неё сегодня юбилей, нельзя забыть"])
    assert [at for at, _text in left] == ["19:45"] and not asked, shown
    _shown, left, asked = await _play(tmp_path / "no", ["нельзя ставить таймер на 10 минут, я на совещании"], reply_fn=_asks)
    assert not left and asked


async def test_a_question_about_it_among_remarks_reads_the_title_shown(tmp_path):
    # h23: "cool. is it long? I've only got about two hours before bed" went to the model
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "play Shrek")
        shown = [m.text for m in await system.turn("s", "cool. is it long? I've only got about two hours before bed")
                 if isinstance(m, p.Display) and m.final][-1]
    assert ("90" in shown or "1 h 30" in shown) and not backend.calls, shown


@pytest.mark.parametrize("turns, left", [
    # h26: a unit written short was read as 15 minutes with "1h" for its text
    (["timer 1h 15 min"], [("19:15", "timer")]),
    (["таймер на 1ч 15 мин"], [("19:15", "таймер")]),
    (["set a timer for 1h30m"], [("19:30", "timer")]),
    # h26: two timers or reminders in one breath, each with its own time and purpose
    (["поставь два таймера: на десять минут духовку глянуть и на полчаса бельё вытащить"],
     [("18:10", "духовку глянуть"), ("18:30", "белье вытащить")]),
    (["remind me at 9 pm to call grandma, and at 10 to take the trash out"],
     [("21:00", "call grandma"), ("22:00", "take the trash out")]),
    (["напомни в семь позвонить маме и в восемь забрать сына"], [("19:00", "позвонить маме"), ("20:00", "забрать сына")]),
    # h26: one more said with its length before "one"; one of two moved by its words, to "an hour"
    (["set a timer for the laundry, 45 minutes", "and a 20 minute one for the bread",
      "actually make the laundry one an hour, it's on the long cycle"], [("18:20", "the bread"), ("19:00", "laundry")]),
    # h26: a daily reminder put right keeps its repeat and its half of the day
    (["напоминай мне каждый день в восемь утра пить таблетки", "хотя не, давай в полдевятого, в восемь я ещё дрыхну"],
     [("32:30", "пить таблетки")]),
    # h26: the one a word of its text names, said first; all of them after the list
    (["поставь таймер на 10 минут, духовку глянуть", "и ещё один на 30 минут, бельё", "духовку убери, я её уже выключил"],
     [("18:30", "бельё")]),
    (["remind me at 9 pm to call grandma", "what have I got set right now?", "ugh plans changed, cancel all of them"], []),
])
async def test_h26_timer_forms_are_carried_out_without_the_model(tmp_path, turns, left):
    shown, timers, asked = await _play(tmp_path, turns)
    assert timers == left and not asked, (shown, timers)


async def test_cancel_all_of_them_with_no_timers_talked_about_is_the_models(tmp_path):
    _shown, _timers, asked = await _play(tmp_path, ["cancel all of them"], reply_fn=_asks)
    assert asked


@pytest.mark.parametrize("said, film", [("врубай гараж рязанова", "garage-1979"), ("play jaws by spielberg", "jaws-1975")])
async def test_a_title_said_with_its_director_plays_it(tmp_path, said, film):
    # h26: "врубай гараж рязанова" found «Гараж» and was answered "not in the catalog" (the director's name is no title word)
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", said)
        calls = [m["content"] for m in await system.history("s") if m["content"].startswith("TOOL_CALL: ")]
    assert calls[-1] == f"TOOL_CALL: media_play|{film}" and not backend.calls, calls


@pytest.mark.parametrize("turns, left", [
    # h23: the length in the sentence before a bare "засеки" / "give me a shout when it's done"
    (["тесто поставила подходить, в рецепте сказано полтора часа. засеки, пожалуйста"], [("19:30", "тесто поставила подходить")]),
    (["the recipe says 20 minutes. set a timer"], [("18:20", "timer")]),
])
async def test_a_bare_timer_request_takes_the_one_length_said_before_it(tmp_path, turns, left):
    shown, timers, asked = await _play(tmp_path, turns)
    assert timers == left and not asked, (shown, timers)


async def test_a_bare_timer_request_with_no_length_or_two_before_it_is_the_models(tmp_path):
    for n, said in enumerate(["засеки, пожалуйста", "the pasta takes 10 minutes and the sauce 20 minutes. set a timer"]):
        _shown, timers, asked = await _play(tmp_path / str(n), [said], reply_fn=_asks)
        assert asked and not timers, said


async def test_a_length_put_with_its_verb_after_it_among_remarks_sets_the_timer(tmp_path):
    # h22: "… давай на полтора часа поставим, а то я щас за сериал сяду" went to the model (set for 19:00)
    shown, timers, asked = await _play(tmp_path, [
        "ох, засунула пирог в духовку, в рецепте написано час-полтора... давай на полтора часа поставим, а то я щас за сериал сяду"])
    assert [at for at, _text in timers] == ["19:30"] and not asked, (shown, timers)


async def test_a_plan_told_after_a_reminder_is_no_second_reminder(tmp_path):
    _shown, timers, asked = await _play(tmp_path, ["remind me at 9 pm to call grandma, and at 10 I'll take the trash out"],
                                        reply_fn=_asks)
    assert asked and not timers


@pytest.mark.parametrize("turns, left", [
    # h27: "make it quarter to six" of a 06:30 alarm, read at 18:00 as 17:45, moved the alarm to the evening
    (["wake me up at six thirty tomorrow, I've got an early flight", "actually make it quarter to six, I still haven't packed"],
     [("29:45", "alarm")]),
    # the day said after the clock time, before a remark: set for today at 19:00 (a wrong day)
    (["remind me at 7 pm tomorrow, I have a meeting"], [("43:00", "alarm")]),
    (["напомни в семь вечера завтра, у меня встреча"], [("43:00", "у меня встреча")]),
])
async def test_a_time_keeps_its_half_of_the_day_and_its_day(tmp_path, turns, left):
    shown, timers, asked = await _play(tmp_path, turns)
    assert timers == left and not asked, (shown, timers)


@pytest.mark.parametrize("said, left", [
    # h27: one timer "in 10 minutes; three timers for the rice, 25 for the chicken and 40 for the cake" was set
    ("set three timers: 10 min for the rice, 25 for the chicken and 40 for the cake",
     [("18:10", "the rice"), ("18:25", "the chicken"), ("18:40", "the cake")]),
    ("поставь два таймера: на пельмени семь минут и на компот полчаса", [("18:07", "пельмени"), ("18:30", "компот")]),
    ("set two timers: one for 5 minutes and one for 10 minutes", [("18:05", "timer"), ("18:10", "timer")]),
])
async def test_timers_named_in_the_plural_and_listed_are_each_set_with_its_length_and_purpose(tmp_path, said, left):
    shown, timers, asked = await _play(tmp_path, [said])
    assert timers == left and not asked, shown


@pytest.mark.parametrize("said", ["поставь три таймера: на пельмени семь минут и на компот полчаса",  # three said, two listed
                                  "set timers: 1 hour and 30 minutes"])  # one length said in parts
async def test_a_list_of_timers_that_does_not_add_up_is_the_models_and_no_timer_is_set_for_it(tmp_path, said):
    shown, timers, asked = await _play(tmp_path, [said], reply_fn=_asks)
    assert timers == [] and asked and shown == "Which one?"


async def test_a_timer_named_by_its_purpose_is_given_the_length_it_needs_and_the_wrong_one_said_is_no_new_timer(tmp_path):
    # h27: "hmm, the chicken actually needs thirty-five minutes, not twenty-five" was the model's (which set nothing)
    shown, left, asked = await _play(tmp_path, [
        "set three timers: 10 min for the rice, 25 for the chicken and 40 for the cake",
        "hmm, the chicken actually needs thirty-five minutes, not twenty-five"])
    assert left == [("18:10", "the rice"), ("18:35", "the chicken"), ("18:40", "the cake")] and not asked, shown
    shown, left, asked = await _play(tmp_path / "ru", ["поставь таймер на 20 минут на курицу",
                                                       "курице на самом деле нужно 35 минут, а не 20"])
    assert left == [("18:35", "курицу")] and not asked, shown


@pytest.mark.parametrize("said", ["the chicken needs 35 minutes", "the recipe says it takes 40 minutes"])
async def test_a_length_something_needs_with_no_timer_for_it_sets_and_changes_nothing_itself(tmp_path, said):
    shown, left, asked = await _play(tmp_path, ["поставь таймер на 10 минут на рис", said], reply_fn=_asks)
    assert left == [("18:10", "рис")] and asked and shown == "Which one?"


async def test_every_morning_at_an_hour_is_a_daily_reminder_in_the_morning(tmp_path):
    # h27: "напоминай мне каждое утро в девять" was no sentence ("каждый утро" was: not Russian)
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend, clock=lambda: AT_18, timezone="Europe/Moscow") as system:
        shown = [m.text for m in await system.turn("s", "напоминай мне каждое утро в девять пить витамин д")
                 if isinstance(m, p.Display) and m.final]
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
    assert calls == ["TOOL_CALL: timers_set|09:00; пить витамин д; every=1 day"] and not backend.calls, shown


@pytest.mark.parametrize("said", [
    # h28: a trap; the model set "in 9 am; sync" for the boss's words to the team
    "my boss literally told the whole team 'set a reminder for the nine am sync', like we're in kindergarten",
    "начальник сказал всему отделу: «поставьте напоминание на девять», как в детском саду"])
async def test_a_request_quoted_as_said_to_someone_else_sets_nothing_whatever_the_model_calls(tmp_path, said):
    def sets_it(messages):
        return "TOOL_CALL: timers_set|09:00; sync" if messages[-1].role == "user" else "Ha, okay."
    shown, left, asked = await _play(tmp_path, [said], reply_fn=sets_it)
    assert left == [] and asked, shown


async def test_timers_named_in_a_reminders_text_are_no_list_of_timers(tmp_path):
    shown, left, asked = await _play(tmp_path, ["remind me in 10 minutes to check the timers"])
    assert left == [("18:10", "check the timers")] and not asked, shown


# ---- a clock time said by another place's clock -------------------------------------------------
def _frame_or_model(command: str):
    def reply(messages):
        return command if "ONE command from this list" in messages[0].content else "The model's answer."
    return reply


async def test_a_clock_time_said_by_the_clock_of_the_place_asked_about_is_set_on_the_users_clock(tmp_path):
    # h30 (and h25's "в пять по-ихнему"): "remind me at 8 am their time" after Tokyo's time was set
    # for 08:00 of the user's own clock (the fast path), six hours off
    import time
    from core.places import moment_there

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_frame_or_model("-"))) as system:
        await system.turn("s", "what time is it in Tokyo")
        finals = [m.text for m in await system.turn("s", "remind me at 8 am their time to call Kenji") if isinstance(m, p.Display) and m.final]
        pending = system.actors["session"].sessions["s"].timers.pending()
    assert [(round(t.due), t.text) for t in pending] == [(round(moment_there("08:00", "Asia/Tokyo", time.time())), "to call Kenji")]
    assert "Set for" in finals[-1]


async def test_the_frames_timer_by_their_clock_is_put_on_the_users_and_with_no_place_asked_is_the_models(tmp_path):
    import time
    from core.places import moment_there

    backend = ScriptedBackend(reply_fn=_frame_or_model("remind me at 08:00 to набрать кэндзи"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        await system.turn("s", "сколько сейчас в токио")
        await system.turn("s", "ой, поздно уже звонить. напомни мне набрать кэндзи, когда у них будет восемь утра")
        pending = system.actors["session"].sessions["s"].timers.pending()
    assert [round(t.due) for t in pending] == [round(moment_there("08:00", "Asia/Tokyo", time.time()))]
    async with inproc_system(tmp_path / "2", backend=ScriptedBackend(reply_fn=_frame_or_model("-"))) as system:
        shown = await system.turn("s", "напомни в 9 утра по их времени позвонить маме")
        assert not system.actors["session"].sessions["s"].timers.pending()  # whose clock: the model asks
        assert [m.text for m in shown if isinstance(m, p.Display) and m.final][-1] == "The model's answer."


def _confirms_in_the_text(messages):
    """The local model of h32: its confirmation put as the alarm's text, then the list asked for."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool" or last.content.startswith("[System notice]"):
        return "Done."
    if "what have I got" in last.content:
        return "TOOL_CALL: timers_list"
    return 'TOOL_CALL: timers_set|tomorrow 06:30; "Alarm set for 6:30 AM tomorrow"'


async def test_the_models_confirmation_is_no_timers_text_and_the_list_claims_nothing(tmp_path):
    """h32: the alarm's text was "Alarm set for 6:30 AM tomorrow", and "what have I got set now?"
    listed "06:15 — Alarm set for 6:30 AM tomorrow": a claim no call of the turn made."""
    final, left, _ = await _play(tmp_path, ["set my alarm clock please, the usual time, half six tomorrow",
                                            "okay so what have I got set now?"], reply_fn=_confirms_in_the_text)
    assert [text for _time, text in left] == ["alarm"]
    assert "set for" not in final.casefold(), final


@pytest.mark.parametrize("turns, due, text", [
    # "за десять минут" set a ten-minute timer whose text was "за" (h34's replay)
    (["у нас с ребятами ужин в семь вечера, напомни за двадцать минут"], "18:40", "ужин"),
    (["dinner with the Kims is at seven pm, remind me twenty minutes before"], "18:40", "dinner with the Kims"),
    # another place's clock: the place asked about before (Lisbon: 15:00 when Moscow is 18:00)
    (["what time is it in Lisbon?", "the webinar starts at twenty past eight their time, remind me half an hour before"],
     "22:50", "webinar"),
    (["в Калининграде у брата концерт начинается в восемь вечера по ихнему времени, напомни минут за пятнадцать"],
     "20:45", "концерт"),
    # "в час дня": the hour said as "час" (Los Angeles: 08:00 when Moscow is 18:00)
    (["а в Лос-Анджелесе сколько сейчас?", "у подруги там встреча в час дня по ихнему, напомни за полчаса ей написать"],
     "22:30", "встреча"),
])
async def test_a_reminder_counted_back_from_the_time_said_is_set_before_it(tmp_path, turns, due, text):
    shown, left, asked = await _play(tmp_path, turns)
    assert [when for when, _text in left] == [due], (shown, left)
    assert text in left[0][1] and "за" not in left[0][1].split(), left
    assert due in shown and not asked, shown


async def test_a_reminder_counted_back_from_an_event_with_no_time_said_is_the_models(tmp_path):
    shown, left, asked = await _play(tmp_path, ["напомни за полчаса до начала матча"], reply_fn=_asks)
    assert left == [] and asked and shown == "Which one?", (shown, left)


@pytest.mark.parametrize("turns, left_after", [
    # a retraction that opens the words takes back what the turn before set
    (["напомни через час позвонить брату", "ой, отбой, он сам позвонит"], []),
    (["remind me in 20 minutes to move the car", "scratch that, my neighbour moved it"], []),
    # not when it says what instead, nor when it takes back other words of its own turn
    (["поставь таймер на 5 минут", "забудь, поставь лучше на 20"], [("18:20", "таймер")]),
    (["set a timer for 10 minutes", "what's the capital of france? never mind"], [("18:10", "timer")]),
    # a request after it is the model's, whatever toolset it needs: nothing is undone on the way
    (["set a timer for 10 minutes", "actually forget it, find me flights to Rome instead"], [("18:10", "timer")]),
])
async def test_a_retraction_right_after_a_timer_takes_it_back(tmp_path, turns, left_after):
    shown, left, _asked = await _play(tmp_path, turns, reply_fn=_asks)
    assert [(when, text) for when, text in left] == left_after, (shown, left)


@pytest.mark.parametrize("second, due", [
    # h35: a second reminder "in an hour and a half" was set for 5 hours (a decimal point read as a sentence's end)
    ("oh and in an hour and a half to call grandma", "19:30"),
    ("and in 2.5 hours to call grandma", "20:30"),
])
async def test_one_more_reminder_with_a_part_of_an_hour_is_set_for_its_whole_length(tmp_path, second, due):
    shown, left, asked = await _play(tmp_path, ["remind me in forty minutes to move the laundry", second])
    assert left == [("18:40", "move the laundry"), (due, "call grandma")], (shown, left)
    assert not asked


@pytest.mark.parametrize("turns, left_after", [
    # h36: the old time said after the new one
    (["поставь таймер на семь минут, яйца варю", "не, всмятку же, давай четыре вместо семи"], [("18:04", "яйца варю")]),
    (["set a timer for twelve minutes for the pasta", "oh it's fresh pasta, make it three instead of twelve"],
     [("18:03", "the pasta")]),
])
async def test_a_new_time_said_instead_of_the_old_puts_the_timer_right(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns, reply_fn=_asks)
    assert left == left_after and not asked, (shown, left)


async def test_a_length_said_in_passing_then_ping_me_when_its_done_sets_that_timer(tmp_path):
    # h36: "…, would you?" after the bare request, and an interjection is no timer's text
    shown, left, asked = await _play(tmp_path, [
        "ugh, the oven's got like twenty minutes to go and I'll be on a call. tell me when it's done, would you?"])
    assert [when for when, _text in left] == ["18:20"] and not asked, (shown, left)


async def test_a_toolsets_sentence_opened_by_a_word_that_says_nothing_still_matches(tmp_path):
    # h36: "тогда напомни мне завтра в десять утра …" went to the model (which set the home city)
    shown, left, asked = await _play(tmp_path, ["ага, понятно. тогда напомни мне завтра в девять утра позвонить в банк",
                                                "okay so what have I got set now?"], reply_fn=_asks)
    assert left == [("33:00", "позвонить в банк")] and not asked, (shown, left)
    assert "позвонить в банк" in shown, shown


@pytest.mark.parametrize("turns, left_after", [
    # h37: "на завтра" before the clock time, said of the second reminder, went to the model (which set none)
    (["поставь напоминание на восемь вечера: позвонить маме", "и ещё одно на завтра на десять утра, забрать посылку с почты"],
     [("20:00", "позвонить маме"), ("34:00", "забрать посылку с почты")]),
    (["set a reminder for tomorrow at eight fifteen am, dentist"], [("32:15", "dentist")]),
    # "wipe" is a cancel: every reminder goes
    (["remind me in 20 minutes to call Mike", "ugh, they just texted me to reschedule. wipe all my reminders, I'll redo them later"],
     []),
])
async def test_a_reminders_day_said_with_for_and_a_wipe_are_read_on_the_fast_path(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns, reply_fn=_asks)
    assert left == left_after and not asked, (shown, left)


@pytest.mark.parametrize("said", ["set a reminder for 8 pm, every day", "поставь напоминание на 8 вечера, каждый день",
                                  "remind me at 8 pm to water the plants, every day"])
async def test_a_repeat_said_beside_a_reminder_never_sets_it_once(tmp_path, said):
    # the fast path read "every day" after the comma as a remark (or as the reminder's text) and set one reminder today
    backend = ScriptedBackend(reply_fn=_asks)
    async with inproc_system(tmp_path, backend=backend, clock=lambda: AT_18, timezone="Europe/Moscow") as system:
        await system.turn("s", said)
        pending = system.actors["session"].sessions["s"].timers.pending()
    assert all(timer.every == 86400 for timer in pending) and (pending or backend.calls), pending


async def test_a_clock_time_over_there_is_the_clock_of_the_place_a_follow_up_asked_about(tmp_path):
    # h37: "… when it's nine a.m. over there" after "and in LA?" was set for 09:00 of the user's clock tomorrow
    shown, left, asked = await _play(tmp_path, ["what time is it in london", "and in LA?",
                                                "ok, remind me to call my brother when it's nine a.m. over there"],
                                     reply_fn=_asks)
    assert left == [("19:00", "call my brother")] and not asked, (shown, left)


@pytest.mark.parametrize("turns, left_after", [
    # h38: a repeat after the time, said of a "напоминалка", went to the model (which listed the timers)
    (["врач прописал таблетки от давления. поставь мне напоминалку на девять утра каждый день"], [("33:00", "будильник")]),
    (["set a timer for ten minutes for the eggs", "and another one for an hour and a half for the bread",
      "kill em all, we're ordering takeout"], []),
])
async def test_a_repeat_after_the_time_and_kill_em_all_are_read_on_the_fast_path(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns, reply_fn=_asks)
    assert left == left_after and not asked, (shown, left)


@pytest.mark.parametrize("turns, left_after", [
    # h39: "утренний убери" named the 08:00 alarm by its part of the day (the model asked what was meant)
    (["поставь будильник на завтра на восемь утра", "и ещё напомни через час духовку выключить",
      "чё у меня там по таймерам щас?", "утренний убери, завтра ж воскресенье, высплюсь"], [("19:00", "духовку выключить")]),
    (["set an alarm for 7 am tomorrow", "remind me at 9 pm to call mom", "cancel the morning one"], [("21:00", "call mom")]),
])
async def test_a_timer_named_by_the_part_of_the_day_it_is_due_is_that_one(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns, reply_fn=_asks)
    assert left == left_after and not asked, (shown, left)


async def test_a_part_of_the_day_two_timers_are_due_in_names_neither(tmp_path):
    shown, left, asked = await _play(tmp_path, ["remind me at 8 pm to call mom", "remind me at 9 pm to call dad",
                                                "cancel the evening one"], reply_fn=_asks)
    assert len(left) == 2 and asked, (shown, left)


@pytest.mark.parametrize("turns, left_after", [
    # h41: the day and the time before "напомни" (the model set "in 7 hours": 01:00), an imperfective "ставь" with
    # its repeat, a polite tail after remarks that speak of mornings, "and one for tomorrow at nine: dentist"
    (["весь день на даче грядки копал, спина отваливается. завтра в семь утра напомни рассаду полить, а то засохнет"],
     [("31:00", "рассаду полить")]),
    (["ставь напоминалку каждый день в девять вечера — выпить таблетки"], [("21:00", "выпить таблетки")]),
    (["the tomatoes are finally in the ground and they want water every single morning. remind me every day at seven "
      "a.m., would you"], [("31:00", "alarm")]),
    (["remind me at eight tonight to call Dad", "and one for tomorrow at nine in the morning: dentist"],
     [("20:00", "call Dad"), ("33:00", "dentist")]),
])
async def test_the_forty_first_blind_blocks_reminders_are_read_on_the_fast_path(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns, reply_fn=_asks)
    assert left == left_after and not asked, (shown, left)


@pytest.mark.parametrize("turns, left_after", [
    # h41: "на полчаса попозже" went to the model, which listed the timers and moved nothing
    (["напомни в семь вечера маме позвонить", "ой, не, давай на полчаса попозже, она в семь ещё с работы едет"],
     [("19:30", "маме позвонить")]),
    # h41: "make it quarter past" of a reminder at eight: the minutes of its hour
    (["remind me at eight tonight to call Dad", "no wait, make it quarter past"], [("20:15", "call Dad")]),
    (["разбуди меня в семь утра", "сдвинь на час позже"], [("32:00", "будильник")]),
    (["set a timer for 10 minutes for the rice", "make it 5 minutes earlier"], [("18:05", "the rice")]),
    (["set a timer for 10 minutes for the rice", "push it back two minutes"], [("18:12", "the rice")]),
])
async def test_a_timer_moved_by_a_length_or_to_a_part_of_its_hour_is_moved_from_the_time_it_had(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns)
    assert left == left_after and not asked, (shown, left)


async def test_a_move_said_in_the_same_breath_as_the_time_it_moves_is_the_models(tmp_path):
    # "…at 8, no, half an hour later": no timer had that time yet; never a timer "in half an hour"
    shown, left, asked = await _play(tmp_path, ["remind me at 8 to call mom, no, half an hour later"], reply_fn=_asks)
    assert left == [] and asked, (shown, left)


@pytest.mark.parametrize("turns, left_after", [
    # h42: the verb said after the time was the timer's text; "давай на час вместо сорока" (a unit alone) went to the model
    (["таймер на сорок минут поставь, курица в духовке", "ой, не, в рецепте час написано. давай на час вместо сорока"],
     [("19:00", "курица в духовке")]),
    # h43: "ой не, через полчаса": an interjection before the no
    (["напомни через сорок минут, что пересадка", "ой не, через полчаса, я криво посчитал"], [("18:30", "пересадка")]),
])
async def test_a_put_right_after_an_interjection_or_with_a_unit_alone_moves_the_timer(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns)
    assert left == left_after and not asked, (shown, left)


@pytest.mark.parametrize("turns, left_after", [
    # h44: a day of the week (the model answered "I can't help with that"), then moved with a length and a time
    (["please remind me on Monday at ten in the morning about my appointment with Doctor Patel",
      "actually, could you move that reminder an hour earlier, to nine, so I've time to catch the bus?"],
     [("57:00", "my appointment with Doctor Patel")]),
    (["напомни в понедельник в десять утра позвонить врачу"], [("58:00", "позвонить врачу")]),
    # today's weekday: today while the time is ahead, else a week on
    (["remind me on Saturday at 8 pm to call mom"], [("20:00", "call mom")]),
])
async def test_a_reminder_on_a_day_of_the_week_is_set_for_that_day(tmp_path, turns, left_after):
    shown, left, asked = await _play(tmp_path, turns)
    assert left == left_after and not asked, (shown, left)


def test_a_day_of_the_week_said_to_the_timer_tool_is_the_next_one():
    from core.timers import parse_when
    import zoneinfo
    moscow = zoneinfo.ZoneInfo("Europe/Moscow")
    assert parse_when("monday 10:00", AT_18, moscow) == AT_18 + 40 * 3600
    assert parse_when("saturday 08:00", AT_18, moscow) == AT_18 + (7 * 24 - 10) * 3600  # this morning's is past
    assert parse_when("saturday 20:00", AT_18, moscow) == AT_18 + 2 * 3600


@pytest.mark.parametrize("said", ["make that six-thirty instead", "давай в полседьмого"])
async def test_a_morning_alarm_moved_earlier_after_its_new_time_has_passed_stays_in_the_morning(tmp_path, said):
    """At 06:40, a 07:00 alarm made 6:30: tomorrow's 06:30, never tonight's 18:30 (it rang at
    18:30 when the test suite ran between 06:30 and 07:00 Moscow time)."""
    at_0640 = calendar.timegm((2026, 3, 14, 3, 40, 0))
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend, clock=lambda: at_0640, timezone="Europe/Moscow") as system:
        await system.turn("s", "remind me every morning at seven to check the proofer temperature")
        shown = [m.text for m in await system.turn("s", said) if isinstance(m, p.Display) and m.final]
        [timer] = system.actors["session"].sessions["s"].timers.pending()
    assert timer.due - at_0640 == 23 * 3600 + 50 * 60 and "06:30" in shown[-1] and not backend.calls, shown
