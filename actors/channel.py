"""A mailbox and a reply slot that cost less than anyio's memory object streams per message.

Profiled, the event loop took about half of a turn's CPU, most of it per message: a memory
stream's `receive()` is a scheduler round trip even when an item is already there, and a
receive with a timeout needs a cancel scope of its own. Here:

- `Channel`: a deque with one waiting receiver. Handing it an item is an append (and one
  wake-up, when its receiver sleeps); taking one that is already there does not yield, except
  once every `_YIELD_EVERY` in a row, so a receiver with a long backlog still lets others run.
  A cancelled receive takes nothing, so nothing is lost.
- `Deadlines`: the timeouts of receives (`receive(timeout=...)`), kept in one heap and enforced
  by one task, which sleeps until the earliest of them. Nearly every ask is answered long before
  its timeout, so that task sleeps through them all: no cancel scope per receive.

Single consumer: one task receives from a channel at a time (an actor's loop, one asker).
"""
from __future__ import annotations

import collections
import heapq
import itertools
import math
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")
_YIELD_EVERY = 64  # items taken without a checkpoint, at most
_COARSE_FROM_S, _GRID_S = 1.0, 0.1  # a timeout this long or longer may end up to one grid step late


class Deadlines:
    """The timeouts of an endpoint's waits; `run` it in the endpoint's task group."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Channel, anyio.Event]] = []
        self._order = itertools.count()
        self._armed = math.inf  # what `run` sleeps until
        self._rearm = anyio.Event()
        self.running = False

    def add(self, deadline: float, channel: "Channel", wait: anyio.Event) -> None:
        heapq.heappush(self._heap, (deadline, next(self._order), channel, wait))
        if deadline < self._armed:
            self._armed = deadline
            self._rearm.set()

    async def run(self) -> None:
        heap = self._heap
        self.running = True
        try:
            while True:
                now = anyio.current_time()
                # due waits time out; waits that ended already (the usual case) are only dropped
                while heap and (heap[0][0] <= now or heap[0][2]._wait is not heap[0][3]):
                    _, _, channel, wait = heapq.heappop(heap)
                    if channel._wait is wait:
                        channel._expire()
                self._armed = heap[0][0] if heap else math.inf
                self._rearm = anyio.Event()
                with anyio.move_on_after(self._armed - now):
                    await self._rearm.wait()
        finally:
            # stopped (the endpoint ends): a wait still in progress times itself out from now on
            self.running = False
            for _, _, channel, wait in heap:
                if channel._wait is wait:
                    wait.set()
            heap.clear()


class Channel(Generic[T]):
    """Bounded FIFO, many senders, one receiver. `send_nowait` raises anyio.WouldBlock when full
    and anyio.ClosedResourceError once closed; `receive` raises anyio.EndOfStream once closed and
    empty. `deadlines` is needed only for `receive(timeout=...)`."""

    __slots__ = ("_items", "_max", "_wait", "_room", "_closed", "_expired", "_streak", "_deadlines")

    def __init__(self, max_items: int, deadlines: Deadlines | None = None):
        self._items: collections.deque[T] = collections.deque()
        self._max = max_items
        self._wait: anyio.Event | None = None  # the receiver sleeps on it
        self._room: anyio.Event | None = None  # senders waiting for room sleep on it
        self._closed = False
        self._expired = False
        self._streak = 0
        self._deadlines = deadlines

    def __len__(self) -> int:
        return len(self._items)

    # ---- sending --------------------------------------------------------------------------
    def send_nowait(self, item: T) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if len(self._items) >= self._max:
            raise anyio.WouldBlock
        self._items.append(item)
        if self._wait is not None:
            self._wait.set()

    async def send(self, item: T) -> None:
        """Wait for room, then send. Cancellation-safe: a cancelled send sent nothing."""
        while len(self._items) >= self._max and not self._closed:
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()
        self.send_nowait(item)

    def close(self) -> None:
        self._closed = True
        if self._wait is not None:
            self._wait.set()
        if self._room is not None:
            self._room.set()
            self._room = None

    # ---- receiving ------------------------------------------------------------------------
    def receive_nowait(self) -> T:
        if self._items:
            return self._take()
        if self._closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self, timeout: float | None = None) -> T | None:
        """The next item; None when `timeout` (seconds) passed first."""
        if self._items:
            self._streak += 1
            if self._streak < _YIELD_EVERY:
                return self._take()
            self._streak = 0
            await anyio.lowlevel.checkpoint()
        if timeout is not None and timeout <= 0 and not self._items:
            return None
        deadline = None if timeout is None else anyio.current_time() + timeout
        if deadline is not None and timeout >= _COARSE_FROM_S:
            # on a grid: the waits of one tick share one wake-up of the deadlines task, which at
            # low load otherwise woke once per ask, to drop the entry of a wait long answered
            deadline = math.ceil(deadline / _GRID_S) * _GRID_S
        while not self._items:
            if self._closed:
                raise anyio.EndOfStream
            self._expired = False
            wait = self._wait = anyio.Event()
            try:
                if deadline is None:
                    await wait.wait()
                else:
                    assert self._deadlines is not None, "a channel without deadlines cannot time out"
                    if self._deadlines.running:
                        self._deadlines.add(deadline, self, wait)
                        await wait.wait()
                    else:
                        with anyio.CancelScope(deadline=deadline) as scope:
                            await wait.wait()
                        self._expired = scope.cancelled_caught
            finally:
                self._wait = None
            if self._expired and not self._items:
                return None
        self._streak = 0
        return self._take()

    def _take(self) -> T:
        item = self._items.popleft()
        if self._room is not None:
            self._room.set()
            self._room = None
        return item

    def _expire(self) -> None:
        """Called by Deadlines: the wait in progress timed out."""
        self._expired = True
        assert self._wait is not None
        self._wait.set()

    def __aiter__(self) -> "Channel[T]":
        return self

    async def __anext__(self) -> T:
        try:
            item = await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
        assert item is not None
        return item
