"""The timer wheel (core/timer_wheel.py) on its own, with a clock the test moves: each session's
next timer due, the earliest first, each firing once; a wake-up ends the wheel's sleep."""
import anyio

from core.clock import ManualClock
from core.timer_wheel import TimerWheel


def test_due_sessions_come_earliest_first_and_each_once():
    wheel = TimerWheel(ManualClock(0.0))
    wheel.schedule("tea", 10.0)
    wheel.schedule("call", 5.0)
    wheel.schedule("walk", 20.0)
    wheel.schedule("tea", 10.0)  # the same due told twice (two changes of the session's timers)
    assert wheel.due(4.0) == []
    assert wheel.next_due() == 5.0
    assert wheel.due(10.0) == ["call", "tea"]
    assert wheel.due(10.0) == [], "a due that fired does not fire again"
    assert wheel.next_due() == 20.0
    assert wheel.due(25.0) == ["walk"]
    assert wheel.next_due() is None and len(wheel) == 0


def test_a_new_due_replaces_the_old_one_earlier_or_later():
    wheel = TimerWheel(ManualClock(0.0))
    wheel.schedule("tea", 10.0)
    wheel.schedule("tea", 30.0)  # its soonest timer was cancelled: the next one is later
    assert wheel.due(20.0) == [] and wheel.next_due() == 30.0
    wheel.schedule("tea", 5.0)  # a sooner timer set
    assert wheel.due(5.0) == ["tea"]
    assert wheel.due(30.0) == [], "the due it replaced is gone"


def test_a_session_whose_timers_are_all_cancelled_leaves_the_wheel():
    wheel = TimerWheel(ManualClock(0.0))
    wheel.schedule("tea", 10.0)
    wheel.schedule("tea", None)
    assert wheel.due(100.0) == [] and wheel.next_due() is None and len(wheel) == 0


def test_due_reads_the_injected_clock():
    clock = ManualClock(1_000.0)
    wheel = TimerWheel(clock)
    wheel.schedule("tea", 1_300.0)
    assert wheel.due() == []
    clock.advance(299.0)
    assert wheel.due() == []
    clock.advance(1.0)
    assert wheel.due() == ["tea"]


def test_timers_set_and_cancelled_all_day_leave_the_wheel_small():
    wheel = TimerWheel(ManualClock(0.0))
    wheel.schedule("steady", 50_000.0)
    for minute in range(20_000):  # a session that keeps moving its timer, long before it is due
        wheel.schedule("busy", 40_000.0 + minute)
    assert len(wheel._heap) <= 2 * TimerWheel.compact_at, "replaced dues are dropped, not kept for ever"
    assert wheel.due(60_000.0) == ["steady", "busy"]  # busy's last due, 59,999, is the later


async def test_a_wake_ends_the_sleep_and_one_between_sleeps_is_not_lost():
    clock = ManualClock(0.0)
    wheel = TimerWheel(clock)
    wheel.wake()  # a timer set while the wheel was busy firing others
    with anyio.fail_after(5):
        await wheel.sleep_until(3_600.0)  # returns at once: the wheel looks again
        async with anyio.create_task_group() as tg:
            tg.start_soon(wheel.sleep_until, 3_600.0)
            await anyio.wait_all_tasks_blocked()
            clock.advance(60.0)  # a clock moved forward wakes the wheel (ManualClock.on_change)

