"""The timer wheel: when each session's next timer is due, earliest first.

The SessionActor sleeps until the earliest due of all its sessions and wakes only the sessions whose
time has come: a wake-up costs the sessions due, never a pass over every session in memory. A key
(a session) has one due at a time, its soonest timer's; scheduling it again replaces the one before,
and a key taken by `due` has left the wheel until its owner schedules its next timer.

A replaced due stays in the heap until it comes to the top, where it is skipped: cheaper than
taking it out of the middle of a heap. When such entries pile up (timers set and cancelled long
before they were due) the heap is rebuilt once from the live dues, so the work stays amortized.
"""
from __future__ import annotations

import heapq
from typing import Callable

import anyio


class TimerWheel:
    compact_at = 4096  # heap entries before the first rebuild; later, 4x the live dues

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self._heap: list[tuple[float, str]] = []  # (due, key), some replaced since
        self._due: dict[str, float] = {}  # key -> its live due
        self._limit = self.compact_at
        self._wake = anyio.Event()
        if hasattr(clock, "on_change"):  # a clock a test moves forward: look again at once
            clock.on_change(self.wake)

    def __len__(self) -> int:
        return len(self._due)

    def schedule(self, key: str, due: float | None) -> None:
        """`key`'s next due from now on, replacing the one before (None: nothing due)."""
        if due is None:
            self._due.pop(key, None)
        elif self._due.get(key) != due:
            self._due[key] = due
            heapq.heappush(self._heap, (due, key))
        if len(self._heap) > self._limit:
            self._heap = [(due, key) for key, due in self._due.items()]
            heapq.heapify(self._heap)
            self._limit = max(self.compact_at, 4 * len(self._heap))

    def due(self, now: float | None = None) -> list[str]:
        """The keys due by `now` (default: the clock), earliest first, each once. They leave the
        wheel: the owner schedules the next timer of each after firing what was due."""
        now = self.clock() if now is None else now
        heap, due = self._heap, []
        while heap and heap[0][0] <= now:
            when, key = heapq.heappop(heap)
            if self._due.get(key) == when:
                del self._due[key]
                due.append(key)
        return due

    def next_due(self) -> float | None:
        """The earliest live due, or None when nothing is scheduled."""
        heap = self._heap
        while heap and self._due.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def wake(self) -> None:
        """Look again now (a timer was set, a session came back, the clock moved): ends the
        sleep in progress, or the next one at once."""
        self._wake.set()

    async def sleep_until(self, until: float) -> None:
        """Until the clock reads `until`, or a `wake()` since the last sleep ended (one during the
        pass between two sleeps is not lost)."""
        with anyio.move_on_after(max(0.0, until - self.clock())):
            await self._wake.wait()
        self._wake = anyio.Event()
