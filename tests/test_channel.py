"""The mailbox and reply slot (actors/channel.py): order kept, nothing lost to cancellation or to
a timeout, timeouts enforced by one task, senders held back when full. Tests of when a timeout
ends run on trio's autojump clock: virtual time, exact however loaded the machine is."""
import anyio
import pytest

from actors.channel import Channel, Deadlines
from harness import until


@pytest.fixture
async def deadlines():
    timers = Deadlines()
    async with anyio.create_task_group() as tg:
        tg.start_soon(timers.run)
        yield timers
        tg.cancel_scope.cancel()


async def test_items_come_out_in_order_and_a_full_channel_refuses():
    channel: Channel[int] = Channel(3)
    for item in range(3):
        channel.send_nowait(item)
    with pytest.raises(anyio.WouldBlock):
        channel.send_nowait(3)
    assert len(channel) == 3
    assert [await channel.receive() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(anyio.WouldBlock):
        channel.receive_nowait()


async def test_a_long_backlog_still_lets_other_tasks_run():
    channel: Channel[int] = Channel(1000)
    for item in range(1000):
        channel.send_nowait(item)
    ran = []
    async with anyio.create_task_group() as tg:
        async def other():
            ran.append(True)

        tg.start_soon(other)
        got = [await channel.receive() for _ in range(200)]
        assert ran, "receiving 200 items that were already there never yielded"
    assert got == list(range(200))


async def test_receive_times_out_with_none_and_then_still_receives(deadlines):
    channel: Channel[str] = Channel(8, deadlines)
    started = anyio.current_time()
    assert await channel.receive(0.05) is None
    assert anyio.current_time() - started >= 0.05
    assert await channel.receive(0) is None
    channel.send_nowait("late")
    assert await channel.receive(0.05) == "late"


async def test_an_item_arriving_before_the_timeout_wins(deadlines):
    channel: Channel[str] = Channel(8, deadlines)
    async with anyio.create_task_group() as tg:
        async def send_soon():
            await anyio.wait_all_tasks_blocked()  # the receiver waits
            channel.send_nowait("reply")

        tg.start_soon(send_soon)
        with anyio.fail_after(1):
            assert await channel.receive(5) == "reply"
    # the wait that ended leaves nothing behind that could time out a later one
    channel.send_nowait("next")
    assert await channel.receive(0.01) == "next"


async def test_many_waits_with_different_timeouts_each_end_on_time(deadlines, autojump_clock):
    channels = [Channel(1, deadlines) for _ in range(5)]
    ended: dict[int, float] = {}
    started = anyio.current_time()
    async with anyio.create_task_group() as tg:
        async def wait(index: int, timeout: float):
            assert await channels[index].receive(timeout) == ("answered" if index == 3 else None)
            ended[index] = anyio.current_time() - started

        for index, timeout in enumerate([0.3, 0.1, 0.2, 10, 0.05]):
            tg.start_soon(wait, index, timeout)
        await until(lambda: len(ended) == 4)  # the short ones timed out
        channels[3].send_nowait("answered")  # the long one is answered instead
        await until(lambda: 3 in ended, timeout=1)
    assert sorted(ended, key=ended.get) == [4, 1, 2, 0, 3]
    for index, timeout in enumerate([0.3, 0.1, 0.2]):
        assert timeout <= ended[index] < timeout + 0.2


async def test_a_cancelled_receive_takes_nothing(deadlines):
    channel: Channel[int] = Channel(8, deadlines)
    for round_ in range(20):
        with anyio.move_on_after(0.001):
            await channel.receive(1)
        channel.send_nowait(round_)
        assert await channel.receive(1) == round_


async def test_a_sender_waits_for_room_and_none_is_lost():
    channel: Channel[int] = Channel(2)
    async with anyio.create_task_group() as tg:
        async def produce(first: int):
            for item in range(first, first + 50):
                await channel.send(item)

        tg.start_soon(produce, 0)
        tg.start_soon(produce, 1000)
        got = [await channel.receive() for _ in range(100)]
    assert sorted(got) == list(range(50)) + list(range(1000, 1050))
    assert [g for g in got if g < 1000] == list(range(50))  # each sender's order kept


async def test_closing_ends_iteration_and_refuses_sends():
    channel: Channel[int] = Channel(4)
    channel.send_nowait(1)
    channel.close()
    with pytest.raises(anyio.ClosedResourceError):
        channel.send_nowait(2)
    assert [item async for item in channel] == [1]


async def test_a_wait_outlives_its_deadlines_task_and_still_times_out(autojump_clock):
    timers = Deadlines()
    channel: Channel[str] = Channel(1, timers)
    async with anyio.create_task_group() as outer:
        async with anyio.create_task_group() as tg:
            tg.start_soon(timers.run)
            await anyio.wait_all_tasks_blocked()  # the deadlines task runs
            result = []

            async def wait():
                result.append(await channel.receive(0.2))

            outer.start_soon(wait)
            await anyio.wait_all_tasks_blocked()  # the wait waits
            tg.cancel_scope.cancel()  # the endpoint stops while the wait goes on
        started = anyio.current_time()
    assert result == [None]
    assert anyio.current_time() - started < 0.3


async def test_a_long_timeout_ends_on_its_grid_step_at_most_a_tenth_late(deadlines, autojump_clock):
    channel: Channel[str] = Channel(8, deadlines)
    for timeout in (1.0, 2.0, 2.37):
        started = anyio.current_time()
        assert await channel.receive(timeout) is None
        assert timeout <= anyio.current_time() - started <= timeout + 0.1 + 1e-9
