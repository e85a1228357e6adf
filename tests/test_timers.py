"""E10 timers: parsing, the table, and the timers toolset, on a fake clock."""
from datetime import datetime, timedelta, timezone

import pytest

from core.timers import TimerError, TimerTable, parse_duration, parse_when
from core.toolsets import SessionContext
from toolsets.timers import TIMERS_TOOLSET, TOOLSET, run_timer_tool

UTC = timezone.utc
MSK = timezone(timedelta(hours=3))
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC).timestamp()
CLOCK_START = NOW  # manual_clock starts here


@pytest.mark.parametrize("text, seconds", [
    ("in 5 minutes", 300), ("через 5 минут", 300), ("in 1 hour", 3600), ("через 2 часа", 7200),
    ("in 30 s", 30), ("5m", 300), ("1h30m", 5400), ("через час", 3600), ("in an hour", 3600),
    ("in an hour and a half", 5400), ("час с половиной", 5400),
    ("через полчаса", 1800), ("через 1,5 часа", 5400),
])
def test_relative_times(text, seconds):
    assert parse_when(text, NOW) == NOW + seconds


def test_absolute_iso_times_with_and_without_offset():
    assert parse_when("2026-12-01T09:00", NOW, MSK) == datetime(2026, 12, 1, 6, 0, tzinfo=UTC).timestamp()
    assert parse_when("2026-12-01T09:00", NOW) == datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()
    assert parse_when("2026-12-01T09:00+01:00", NOW, MSK) == datetime(2026, 12, 1, 8, 0, tzinfo=UTC).timestamp()


def test_time_of_day_means_the_next_one():
    assert parse_when("15:30", NOW, MSK) == datetime(2026, 6, 1, 12, 30, tzinfo=UTC).timestamp()
    assert parse_when("14:00", NOW, MSK) == datetime(2026, 6, 2, 11, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("soon", "cannot understand"), ("5", "no unit"), ("in 0 minutes", "zero"),
    ("2020-01-01T00:00", "in the past"), ("2026-13-01T00:00", "not a valid ISO 8601"),
    ("25:00", "not a time of day"), ("in 5 parsecs", "not a time unit"),
])
def test_invalid_times_say_what_is_wrong(text, message):
    with pytest.raises(TimerError, match=message):
        parse_when(text, NOW)


def test_set_list_cancel_twice(manual_clock):
    table = TimerTable(clock=manual_clock, tz=MSK)
    assert table.list() == "No timers set."
    timer_id, due, confirmation = table.set("in 5 minutes", "check the oven")
    assert (timer_id, due) == ("t1", NOW + 300)
    assert confirmation == "Timer t1 set for 15:05 today (in 5 min): check the oven"
    table.set("2026-06-02T09:00", "call mom")
    assert table.list().splitlines() == [
        "2 timers:",
        "t1 at 15:05 today (in 5 min): check the oven",
        "t2 at 09:00 tomorrow (in 18 h): call mom",
    ]
    assert table.cancel("t1") == "Timer t1 cancelled: check the oven"
    again = table.cancel("t1")
    assert "t1 is not set" in again and "active timers: t2" in again
    assert table.cancel("2") == "Timer t2 cancelled: call mom"
    assert "no timers are set" in table.cancel("t2")


def test_set_rejects_bad_input_and_leaves_table_unchanged(manual_clock):
    table = TimerTable(clock=manual_clock)
    with pytest.raises(TimerError, match="text"):
        table.set("in 5 minutes", "  ")
    with pytest.raises(TimerError, match="cannot understand"):
        table.set("whenever", "x")
    with pytest.raises(TimerError, match="at least 1 min"):
        table.set("in 1 minute", "x", every="10 s")
    assert len(table) == 0 and table.next_due() is None


def test_due_fires_one_shots_once_as_the_clock_advances(manual_clock):
    clock = manual_clock
    table = TimerTable(clock=clock)
    table.set("in 10 minutes", "second")
    table.set("in 5 minutes", "first")
    assert table.next_due() == NOW + 300
    assert table.due() == []
    clock.now = NOW + 300
    fired = table.due()
    assert [t.text for t in fired] == ["first"]
    assert table.next_due() == NOW + 600
    clock.now = NOW + 3600
    assert [t.text for t in table.due()] == ["second"]
    assert table.due() == [] and table.next_due() is None


def test_repeating_timer_reschedules_and_skips_missed_periods(manual_clock):
    clock = manual_clock
    table = TimerTable(clock=clock)
    table.set("in 1 hour", "drink water", every="1 hour")
    clock.now = NOW + 3 * 3600 + 60  # slept through three firings
    fired = table.due()
    assert len(fired) == 1 and fired[0].due == NOW + 3600
    assert table.next_due() == NOW + 4 * 3600
    event = fired[0].to_event(clock.now)
    assert (event.kind, event.content, event.data["timer_id"]) == ("timer", "drink water", "t1")


def test_durations_for_repeats():
    assert parse_duration("every 2 hours") == 7200
    assert parse_duration("каждые 10 минут") == 600
    assert parse_duration("каждый час") == 3600


def test_timer_toolset_spec_is_prefixed_and_terse():
    assert TIMERS_TOOLSET.name == "timers"
    assert [t.name for t in TIMERS_TOOLSET.tools] == ["timers_set", "timers_list", "timers_cancel"]
    assert all(t.name.startswith("timers_") and "\n" not in t.summary for t in TIMERS_TOOLSET.tools)
    set_args = {a.name: a.required for a in TIMERS_TOOLSET.tools[0].args}
    assert set_args == {"when": True, "text": True, "every": False}


def test_the_timers_toolset_sets_the_sessions_timer_and_wakes_the_wheel(manual_clock):
    """Its handler gets the session's timers and the wheel's wake-up, no more (a SessionContext)."""
    table, woken = TimerTable(clock=manual_clock), []
    context = SessionContext(sid="s", timers=table, timer_set=lambda: woken.append(1), tell_user=lambda body: None,
                             background=(), cancel_task=lambda run: None, world=None)
    set_ = TOOLSET.handler(context, "timers_set", {"when": "in 5 minutes", "text": "tea"})
    assert set_.kind == "ok" and set_.text.startswith("Timer t1 set")
    assert [t.text for t in table.pending()] == ["tea"] and woken == [1]
    assert "t1" in TOOLSET.handler(context, "timers_list", {}).text and woken == [1]


def test_run_timer_tool_never_raises(manual_clock):
    table = TimerTable(clock=manual_clock)
    set_ = run_timer_tool(table, "timers_set", {"when": "in 5 minutes", "text": "tea"})
    assert set_.kind == "ok" and set_.text.startswith("Timer t1 set")
    assert "t1" in run_timer_tool(table, "timers_list", {}).text
    unread = run_timer_tool(table, "timers_set", {"when": "later", "text": "tea"})
    assert unread.kind == "error" and unread.text.startswith("Timer not set:")
    assert run_timer_tool(table, "timers_cancel", {"id": "t1"}).text == "Timer t1 cancelled: tea"
    assert "not set" in run_timer_tool(table, "timers_cancel", {"id": "t1"}).text


# ---- through the real session loop ---------------------------------------------------------
async def test_fifty_timers_due_at_once_all_fire_none_dropped_at_the_queue_limit(tmp_path, manual_clock):
    """50 timers of one session due together (more than session.queue_limit = 32): each fires now,
    none waits for the next restart; the journal holds no event left unanswered."""
    from harness import inproc_system, until
    from llm.scripted import ScriptedBackend
    from storage import journal

    backend = ScriptedBackend(reply_fn=lambda messages: "noted")
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock) as system:
        await system.turn("s", "hello")
        timers = system.actors["session"].sessions["s"].timers
        for index in range(50):
            timers.set("in 5 minutes", f"reminder number {index}")
        manual_clock.advance(301)

        async def fired() -> set[str]:
            history = await system.history("s")
            return {line.rsplit("reminder number ", 1)[1].split()[0] for m in history if m["role"] == "user"
                    for line in m["content"].splitlines() if "reminder number " in line}

        async def all_fired() -> bool:
            return len(await fired()) >= 50

        await until(all_fired)
        assert await fired() == {str(index) for index in range(50)}
        assert len(timers) == 0
    conn = journal.connect(tmp_path / "porfiry.sqlite3")
    try:
        assert journal.unfinished_sessions(conn) == []
    finally:
        conn.close()


def test_an_hour_said_without_its_half_of_the_day_is_the_next_on_a_twelve_hour_dial():
    import datetime as dt
    import zoneinfo

    from core.timers import dial_nearest

    moscow = zoneinfo.ZoneInfo("Europe/Moscow")
    evening = dt.datetime(2026, 3, 14, 18, 0, tzinfo=moscow).timestamp()
    night = dt.datetime(2026, 3, 14, 23, 0, tzinfo=moscow).timestamp()
    assert dial_nearest("7:30", evening, moscow) == "19:30"  # "в полвосьмого", said at six in the evening
    assert dial_nearest("7:30", night, moscow) == "7:30"  # at eleven at night: the morning's
    assert dial_nearest("19:30", evening, moscow) == "19:30" and dial_nearest("in 5 minutes", evening, moscow) == "in 5 minutes"


@pytest.mark.parametrize("text, seconds", [("через часик", 3600), ("in полчасика", 1800), ("через минутку", 60)])
def test_a_unit_said_fondly_is_the_unit(text, seconds):
    assert parse_when(text, 0) == seconds


@pytest.mark.parametrize("given, text", [
    ('"Alarm set for 6:30 AM tomorrow"', "alarm"),  # h32: the model's confirmation as the text
    ("Timer set for the pasta", "pasta"),
    ("Поставил таймер на 10 минут: чай", "чай"),
    ("Будильник поставлен на 6:30 утра", "будильник"),
    ("курица", "курица"),
    ("set the table", "set the table"),  # a purpose that starts with a verb is no confirmation
])
def test_a_timers_text_is_what_it_is_for_never_the_models_confirmation(given, text):
    from toolsets.timers import timer_text
    assert timer_text(given) == text
