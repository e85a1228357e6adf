"""Turn admission (core/admission.py): a wave of turns waits at the gate, in order, while the
actor's inbox has a standing queue, and a machine that keeps up never waits."""
import anyio
import pytest

import protocol as p

from core.admission import TurnAdmission


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def gate(**kwargs) -> tuple[TurnAdmission, Clock]:
    clock = Clock()
    defaults = dict(target_s=0.05, min_turns=2, max_turns=64, interval_s=0.1, clock=clock)
    return TurnAdmission(**{**defaults, **kwargs}), clock


async def fill(admission: TurnAdmission, turns: int) -> None:
    """Start `turns` turns that must not wait (a test that got it wrong fails, never hangs)."""
    for _ in range(turns):
        with anyio.fail_after(1):
            await admission.enter()


class Generating:
    """The scripted model's wait for a reply's first word (`ScriptedBackend(sleep=...)`), counting
    the replies being generated at once and their peak."""

    def __init__(self) -> None:
        self.now = self.peak = 0

    async def wait(self, seconds: float) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await anyio.sleep(seconds)  # the model's time to a first word: what the gate is about
        finally:
            self.now -= 1


def start_turns(tg, admission: TurnAdmission, turns: int) -> list[int]:
    """Start `turns` turns at the gate in `tg`; the list holds each one once it is admitted."""
    started: list[int] = []

    async def turn(number: int) -> None:
        await admission.enter()
        started.append(number)

    for number in range(turns):
        tg.start_soon(turn, number)
    return started


def intervals(admission: TurnAdmission, clock: Clock, ages: list[float]) -> None:
    """One interval per age, a message that old in it; an interval is judged when the next begins
    (so the last one here is not judged yet)."""
    for age in ages:
        clock.now += admission.interval_s
        admission.observe(age)


async def test_a_machine_that_keeps_up_never_waits():
    admission, clock = gate(max_turns=4096)
    await fill(admission, 500)
    intervals(admission, clock, [0.002, 0.001, 0.003] * 20)
    assert (admission.running, admission.waiting, admission.waited) == (500, 0, 0)
    assert admission.limit == 4096


async def test_a_standing_queue_cuts_the_limit_and_new_turns_wait_in_order():
    admission, clock = gate()
    await fill(admission, 40)
    intervals(admission, clock, [0.001, 0.4, 0.4])  # the first sets the base, the second is a standing queue
    assert admission.limit == 35 and admission.cuts == 1  # 7/8 of the 40 running
    started: list[int] = []

    async def turn(n: int) -> None:
        await admission.enter()
        started.append(n)

    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(turn, n)
            await anyio.wait_all_tasks_blocked()  # they queue in this order
        assert started == [] and admission.waiting == 3
        for _ in range(6):  # 40 -> 34 running: the first below the limit gives a place
            admission.leave()
        await anyio.wait_all_tasks_blocked()
        assert started == [0]
        for _ in range(2):
            admission.leave()
            await anyio.wait_all_tasks_blocked()
    assert started == [0, 1, 2] and admission.waited == 3


async def test_one_burst_of_slow_messages_is_not_a_standing_queue():
    """CoDel's test: the smallest delay of an interval counts, so a single late message in an
    interval of prompt ones cuts nothing."""
    admission, clock = gate()
    await fill(admission, 10)
    intervals(admission, clock, [0.001, 0.9])
    for age in (0.002, 0.7):
        admission.observe(age)
    clock.now += admission.interval_s
    admission.observe(0.001)
    assert admission.cuts == 0 and admission.limit == 64


async def test_a_clock_offset_between_hosts_is_not_a_queue():
    """Ages measured against a sender whose clock runs 3 s ahead are all about -3 s; one 2 s
    behind, about +2 s: the smallest age of the last minutes is the base, only above it counts."""
    for offset in (-3.0, 2.0):
        admission, clock = gate()
        for _ in range(10):
            await admission.enter()
        intervals(admission, clock, [offset + 0.001 * (i % 3) for i in range(30)])
        assert admission.cuts == 0, offset
        intervals(admission, clock, [offset + 0.3, offset])
        assert admission.cuts == 1, offset


async def test_the_limit_grows_back_while_turns_wait_and_the_queue_is_short():
    admission, clock = gate()
    await fill(admission, 16)
    intervals(admission, clock, [0.001] + [0.5] * 11 + [0.002])
    assert admission.limit == 2  # cut down to min_turns, never below
    async with anyio.create_task_group() as tg:
        started = start_turns(tg, admission, 30)
        await anyio.wait_all_tasks_blocked()
        assert len(started) == 0
        intervals(admission, clock, [0.002] * 30)  # the queue drained: +1/8 (at least 1) per interval
        await anyio.wait_all_tasks_blocked()
        assert len(started) == 30 and admission.limit == 46  # the 16 running and the 30: it grows no further
        intervals(admission, clock, [0.002] * 100)
        assert admission.limit == 46  # nobody waits: no reason to grow


async def test_the_limit_never_exceeds_max_turns():
    admission, clock = gate(max_turns=4)
    await fill(admission, 4)
    async with anyio.create_task_group() as tg:
        tg.start_soon(admission.enter)
        intervals(admission, clock, [0.001] * 50)
        await anyio.wait_all_tasks_blocked()
        assert (admission.limit, admission.running, admission.waiting) == (4, 4, 1)
        admission.leave()


async def test_a_phone_with_many_sessions_does_not_keep_the_others_waiting():
    """Round-robin between phones: the one that opened five sessions at once gets every other
    place, the user who spoke after them the next one; within a phone, the order said."""
    admission, clock = gate(min_turns=1, max_turns=1)
    await fill(admission, 1)
    started: list[str] = []

    async def turn(owner: str, name: str) -> None:
        await admission.enter(owner)
        started.append(name)

    async with anyio.create_task_group() as tg:
        for name, owner in [("flood-1", "flooder"), ("flood-2", "flooder"), ("flood-3", "flooder"),
                            ("alice-1", "alice"), ("bob-1", "bob"), ("alice-2", "alice")]:
            tg.start_soon(turn, owner, name)
            await anyio.wait_all_tasks_blocked()
        for _ in range(6):
            admission.leave()
            await anyio.wait_all_tasks_blocked()
    assert started == ["flood-1", "alice-1", "bob-1", "flood-2", "alice-2", "flood-3"]
    assert admission.waiting == 0


async def test_a_cancelled_wait_gives_up_its_place():
    admission, clock = gate(max_turns=2)
    await fill(admission, 2)
    started: list[str] = []
    given_up = anyio.CancelScope()

    async def turn(name: str, scope: anyio.CancelScope | None = None) -> None:
        with scope or anyio.CancelScope():
            await admission.enter()
            started.append(name)

    async with anyio.create_task_group() as tg:
        for name, scope in (("first", None), ("given up", given_up), ("last", None)):
            tg.start_soon(turn, name, scope)
            await anyio.wait_all_tasks_blocked()
        given_up.cancel()
        await anyio.wait_all_tasks_blocked()
        assert admission.waiting == 2
        admission.leave()
        await anyio.wait_all_tasks_blocked()
        assert started == ["first"]
        admission.leave()
        await anyio.wait_all_tasks_blocked()
    assert started == ["first", "last"] and admission.running == 2


def test_limits_are_checked():
    with pytest.raises(ValueError, match="min_turns"):
        TurnAdmission(target_s=0.05, min_turns=10, max_turns=5)


# ---- in the running system -------------------------------------------------------------------
async def test_a_wave_of_turns_is_acked_at_once_and_answered_all_in_order(tmp_path):
    """Through the real session actor: six sessions speak at once, at most two turns run; every
    event is acked before any turn ends (admission never delays an ack), and all six answers come,
    the waiting ones in the order they were said."""
    from llm.scripted import ScriptedBackend
    from tests.harness import inproc_system

    model = Generating()
    backend = ScriptedBackend(first_token_delay_s=0.3, sleep=model.wait)
    async with inproc_system(tmp_path, backend=backend, admission_max_turns=2, admission_min_turns=1) as system:
        glasses = system.actors["glasses"]
        sessions = [f"wave-{n}" for n in range(6)]
        acks = []
        for sid in sessions:  # one after another: the order they wait in
            acks.append(await system.deliver(sid, f"hello {sid}", event_id=f"ev-{sid}"))
        assert all(isinstance(a, p.EventAccepted) for a in acks), acks
        assert not any(isinstance(m, p.TurnDone) for shown in glasses.shown.values() for m in shown)
        finished: list[str] = []

        async def answered(sid: str) -> None:
            shown = await glasses.wait_event_done(sid, f"ev-{sid}", timeout=20)
            assert any(isinstance(m, p.Display) and m.final and m.text for m in shown), shown
            finished.append(sid)

        async with anyio.create_task_group() as tg:
            for sid in sessions:
                tg.start_soon(answered, sid)
        admission = system.actors["session"].settings.admission
    assert model.peak == 2
    assert admission.waited == 4 and admission.running == 0
    assert set(finished[:2]) == set(sessions[:2]) and set(finished[2:4]) == set(sessions[2:4])


async def test_a_queue_on_one_path_counts_though_the_other_is_prompt():
    """Acks that wait behind a slow journal while model replies flow: the smallest age of all
    would hide it; each path is judged on its own."""
    admission, clock = gate(paths=2)
    await fill(admission, 10)
    for ack_age in (0.005, 0.005, 0.6, 0.6):
        clock.now += admission.interval_s
        admission.observe(0.001, path=1)
        admission.observe(ack_age, path=0)
    assert admission.cuts == 1 and 0.5 < admission.delay_s < 0.6


async def test_a_target_of_zero_turns_admission_off():
    admission, clock = gate(target_s=0.0)
    admission.slow_start()  # a restart's slow start too: nothing would grow the limit again
    await fill(admission, 40)
    intervals(admission, clock, [0.001] + [5.0] * 20)
    assert (admission.limit, admission.cuts, admission.running) == (64, 0, 40)


async def test_a_slow_start_admits_from_min_turns_and_grows_while_the_queue_is_short():
    admission, clock = gate(max_turns=4096)
    admission.slow_start()
    assert admission.limit == 2 and admission.lowest_limit == 2
    async with anyio.create_task_group() as tg:
        started = start_turns(tg, admission, 20)
        await anyio.wait_all_tasks_blocked()
        assert len(started) == 2 and admission.waiting == 18
        intervals(admission, clock, [0.002] * 12)  # 11 judged: +1 each (1/8 of a limit under 16 is less)
        await anyio.wait_all_tasks_blocked()
        assert len(started) == 13, admission.limit
        intervals(admission, clock, [0.002] * 5)
        await anyio.wait_all_tasks_blocked()
        assert len(started) == 20


async def test_turns_a_restart_cut_continue_a_few_at_a_time_not_all_at_once(tmp_path):
    """Killed under load, the session actor comes back with many cut turns: they start from
    `admission_min_turns` (a slow start), not all together into a machine it has not measured."""
    from llm.scripted import ScriptedBackend
    from tests.harness import inproc_system, until

    sessions = [f"cut-{n}" for n in range(12)]
    async with inproc_system(tmp_path, backend=ScriptedBackend(first_token_delay_s=60), admission_min_turns=2) as system:
        for sid in sessions:
            assert isinstance(await system.deliver(sid, f"hello {sid}", event_id=f"ev-{sid}"), p.EventAccepted)
        # no slow start at a fresh start: every turn runs (each acked first, so waited for, not read at once:
        # a loaded machine starts the last few a moment after their acks)
        await until(lambda: system.actors["session"].settings.admission.running == len(sessions))
    model = Generating()
    backend = ScriptedBackend(first_token_delay_s=0.2, sleep=model.wait)
    async with inproc_system(tmp_path, backend=backend, admission_min_turns=2) as system:
        for sid in sessions:
            await system.actors["glasses"].wait_event_done(sid, f"ev-{sid}", timeout=30)
        admission = system.actors["session"].settings.admission
    assert 2 <= model.peak <= len(sessions) // 2, model.peak
    assert admission.waited >= len(sessions) // 2 and admission.lowest_limit == 2
