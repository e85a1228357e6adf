"""A reminder that repeats on days of the week ("wake me on weekdays at 6:30", "every Tuesday and
Thursday at nine"): the timer tool's `every` names the days, the table fires on those days only at
the same clock time (summer time included), the journal keeps the days across a restart, and the
plain sentences are carried out without the model."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

import protocol as p
from core.timers import TimerError, TimerTable, day_names, parse_days
from harness import inproc_system, until
from llm.scripted import ScriptedBackend

BERLIN = ZoneInfo("Europe/Berlin")
MOSCOW = ZoneInfo("Europe/Moscow")
# Saturday 14 March 2026, 18:00 in Moscow: the blind blocks' clock
CLOCK_START = datetime(2026, 3, 14, 18, 0, tzinfo=MOSCOW).timestamp()


@pytest.mark.parametrize("every, days", [
    ("weekdays", ("monday", "tuesday", "wednesday", "thursday", "friday")),
    ("every weekday", ("monday", "tuesday", "wednesday", "thursday", "friday")),
    ("по будням", ("monday", "tuesday", "wednesday", "thursday", "friday")),
    ("mon-fri", ("monday", "tuesday", "wednesday", "thursday", "friday")),
    ("weekends", ("saturday", "sunday")),
    ("tuesday,thursday", ("tuesday", "thursday")),
    ("every Tuesday and Friday", ("tuesday", "friday")),
    ("on Tuesdays and Thursdays", ("tuesday", "thursday")),
    ("Mon, Wed & Fri", ("monday", "wednesday", "friday")),
    ("1 day", ()), ("1 week", ()), ("", ()),
])
def test_the_days_a_repeat_names_are_read_in_the_forms_a_model_writes(every, days):
    assert day_names(parse_days(every)) == days


def test_days_mixed_with_other_words_are_an_error_that_says_the_form():
    with pytest.raises(TimerError, match="weekdays"):
        parse_days("tuesday and lunchtime")


def _local(ts: float, tz=MOSCOW) -> str:
    return datetime.fromtimestamp(ts, tz).strftime("%a %d %H:%M")


def test_a_weekday_alarm_set_on_saturday_first_rings_on_monday_and_never_at_the_weekend():
    now = [CLOCK_START]
    table = TimerTable(clock=lambda: now[0], tz=MOSCOW)
    timer_id, due, confirmation = table.set("06:30", "alarm", "weekdays")
    assert _local(due) == "Mon 16 06:30"
    assert "every weekday at 06:30" in confirmation and "every weekday at 06:30" in table.list()
    rang = []
    for _ in range(7):
        now[0] = table.next_due() + 1
        rang += [_local(t.due) for t in table.due()]
    assert rang == ["Mon 16 06:30", "Tue 17 06:30", "Wed 18 06:30", "Thu 19 06:30", "Fri 20 06:30",
                    "Mon 23 06:30", "Tue 24 06:30"]
    assert [t.timer_id for t in table.pending()] == [timer_id]


def test_missed_days_ring_once_and_the_clock_time_holds_across_summer_time():
    now = [datetime(2026, 3, 26, 12, 0, tzinfo=BERLIN).timestamp()]  # Thursday; clocks go forward on Sunday 29 March
    table = TimerTable(clock=lambda: now[0], tz=BERLIN)
    table.set("07:00", "swim", "tuesday,friday")
    now[0] = datetime(2026, 4, 2, 12, 0, tzinfo=BERLIN).timestamp()  # down from Thursday to the next Thursday
    assert [_local(t.due, BERLIN) for t in table.due()] == ["Fri 27 07:00"]  # Friday and Tuesday missed: one ring
    assert _local(table.next_due(), BERLIN) == "Fri 03 07:00"  # 07:00 in summer time, not 08:00


def _said(messages) -> list[str]:
    return [m.text for m in messages if isinstance(m, p.Display) and m.final]


@pytest.mark.parametrize("said, shown", [
    ("wake me up on weekdays at 6:30", "on weekdays at 06:30"),
    ("remind me every Tuesday and Friday at nine in the morning to feed the tomatoes",
     "every Tuesday and every Friday at 09:00: feed the tomatoes"),
    ("буди меня по будням в полшестого", "по будням в 05:30"),
    ("ставь будильник на шесть пятьдесят по будням, с понедельника по пятницу", "по будням в 06:50"),
    ("напоминай по вторникам и четвергам в шесть вечера про бассейн", "по вторникам и по четвергам в 18:00"),
])
async def test_a_repeat_on_days_of_the_week_is_set_without_the_model(tmp_path, manual_clock, said, shown):
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, timezone="Europe/Moscow") as system:
        assert shown in _said(await system.turn("s", said))[-1] and not backend.calls
        [timer] = system.actors["session"].sessions["s"].timers.pending()
        assert timer.days and not timer.every


async def test_the_days_outlive_a_restart_and_the_alarm_rings_on_the_next_of_them(tmp_path, manual_clock):
    backend = ScriptedBackend(reply_fn=lambda messages: "noted")
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, timezone="Europe/Moscow") as system:
        await system.turn("s", "wake me up on weekdays at 6:30")
    manual_clock.advance(datetime(2026, 3, 16, 6, 31, tzinfo=MOSCOW).timestamp() - manual_clock())  # Monday
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, timezone="Europe/Moscow") as system:
        async def rang() -> bool:
            return any("Timer fired" in m["content"] for m in await system.history("s"))

        await until(rang)  # the journal's due timer brings the session back
        [timer] = system.actors["session"].sessions["s"].timers.pending()
        assert _local(timer.due) == "Tue 17 06:30" and day_names(timer.days)[0] == "monday"


async def test_the_models_call_for_days_the_user_said_is_carried_out(tmp_path, manual_clock):
    """The model's path (no sentence of the toolset's): `every` names the days; the guard reads
    "on Tuesdays and Thursdays" as a repeat the user asked for."""
    def model(messages):
        if messages[-1].role == "tool":
            return "Done: choir practice on Tuesdays and Thursdays at 17:00."
        return "TOOL_CALL: timers_set|17:00; choir practice; every=tuesday,thursday"

    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, timezone="Europe/Moscow", reflexes=False) as system:
        await system.turn("s", "choir practice is on Tuesdays and Thursdays at 5 pm, can you keep reminding me")
        [timer] = system.actors["session"].sessions["s"].timers.pending()
        assert day_names(timer.days) == ("tuesday", "thursday") and _local(timer.due) == "Tue 17 17:00"


@pytest.mark.parametrize("turns, shown, days_left", [
    (["remind me Thursday at ten am to pick up the new battery from the bike shop", "sorry, I meant Friday, same time"],
     "Friday 20 March at 10:00", [("Fri 20 10:00", ())]),
    (["remind me every tuesday at 5pm to pack my basketball stuff", "oh and thursdays too, same time"],
     "every Tuesday and every Thursday at 17:00", [("Tue 17 17:00", ("tuesday", "thursday"))]),
    (["напоминай каждый вторник в десять утра, что у меня бассейн", "хотя нет, вру, бассейн по четвергам. перенеси на четверг"],
     "по четвергам в 10:00", [("Thu 19 10:00", ())]),
    (["remind me tomorrow at 10 am to cover the sweet peas", "what reminders have I got now?",
      "oh, they say it'll pour down tomorrow. move that one to Monday, same time"], "Monday 16 March at 10:00",
     [("Mon 16 10:00", ())]),
])
async def test_a_timer_moved_to_another_day_or_repeated_on_one_more_keeps_its_time_and_text(
        tmp_path, manual_clock, turns, shown, days_left):
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, timezone="Europe/Moscow") as system:
        for said in turns:
            answer = _said(await system.turn("s", said))[-1]
        pending = system.actors["session"].sessions["s"].timers.pending()
    assert shown in answer and not backend.calls, answer
    assert [(_local(t.due), day_names(t.days)) for t in pending] == days_left


async def test_i_meant_friday_after_no_timer_moves_none(tmp_path, manual_clock):
    """The day named after a question about dates, with a timer set earlier in the conversation: no
    timer was talked about, nothing is moved (the model reads it)."""
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, timezone="Europe/Moscow") as system:
        await system.turn("s", "remind me tomorrow at 10 am to cover the sweet peas")
        await system.turn("s", "what's the date next thursday")
        await system.turn("s", "sorry, I meant Friday, same time")
        [timer] = system.actors["session"].sessions["s"].timers.pending()
    assert _local(timer.due) == "Sun 15 10:00" and len(backend.calls) == 2
