"""Turn admission: how many turns one SessionActor runs at once, adapted to its own backlog.

Why: the session actor is one process, and every message of every turn passes through it. When
turns arrive faster than it can run them (a wave of sessions starting together), starting them
all at once does not finish any sooner: every message waits behind everyone else's, acks come
late and phones resend, model replies queue past their timeouts, and turns are lost. Past the
point where the actor's own inbox backs up, a new turn is better kept waiting - its event is
accepted, journaled and acked as always - until a running one ends.

The signal is queueing delay, on each of the actor's paths (`paths`; the session actor has two:
the age of a phone event when its ack leaves, after the inbox and the journal's commit, and the age
of each model reply as it arrives). Every envelope carries its sender's wall-clock `ts`; an age less
the smallest age of that path in the last minutes (the offset between two hosts' clocks, the wire,
a commit's own time) is the time spent waiting. Every `interval_s`, if on some path even the
smallest delay of the interval was above `target_s`, that path has a standing queue (CoDel's
test) and the limit drops to 7/8 of the turns running; if turns had to wait while every path was
short, it grows by 1/8. It never drops below `min_turns` and never exceeds `max_turns`, and a
machine that keeps up never sees it: no turn waits while fewer than the limit run.

Waiting turns take the places that free up round-robin between phones (`owner`: the key or
client id that owns the session), in order within one. A phone that opens sixty sessions at once gets
a place now and then, not sixty places ahead of the user who speaks next.

A restarted actor that must continue thousands of cut turns at once (`slow_start`) starts at
`min_turns` and grows from there: it knows nothing of the machine yet, and its first messages
would already be late, so the queue would become the base it measures against. Letting
thousands of continued turns start together floods the actor, and phones give up on the events
it then acks too late.

Only the start of a turn waits; a turn under way never does (it holds its place until the
conversation is idle again), so waiting cannot deadlock. Side runs of light questions (E5) and
urgent events for a turn under way do not wait either: they join a conversation that holds its
place.
"""
from __future__ import annotations

import collections
import math
import time
from typing import Callable

import anyio

ACK_PATH, REPLY_PATH = 0, 1  # the session actor's two signals: a phone event's ack, a model reply
SESSION_PATHS = 2
BASE_BUCKET_S = 60.0  # the smallest age is kept per minute...
BASE_BUCKETS = 10  # ...for the last ten: an overload shorter than that does not become the base


class _Waiter:
    __slots__ = ("event", "admitted")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.admitted = False


class TurnAdmission:
    """A gate, round-robin between owners and FIFO within one, whose width follows the measured
    queueing delay (module docstring)."""

    def __init__(self, *, target_s: float, min_turns: int = 8, max_turns: int = 4096, paths: int = 1,
                 interval_s: float = 0.1, clock: Callable[[], float] = time.monotonic):
        if min_turns < 1 or max_turns < min_turns:
            raise ValueError(f"need 1 <= min_turns ({min_turns}) <= max_turns ({max_turns})")
        self.target_s = target_s  # <= 0: never limited
        self.min_turns = min_turns
        self.max_turns = max_turns
        self.interval_s = interval_s
        self.clock = clock
        self.limit = max_turns
        self.running = 0
        # owner -> its waiting turns in order; owners in the order their turn to start comes
        self._waiting: collections.OrderedDict[str, collections.deque[_Waiter]] = collections.OrderedDict()
        self._waiting_count = 0
        self._interval_end = -math.inf
        self._interval_min = [math.inf] * paths  # per path, the smallest age of this interval
        # per path, (bucket start, smallest age) of the last minutes
        self._bases: list[collections.deque[tuple[float, float]]] = [collections.deque() for _ in range(paths)]
        self.delay_s = 0.0  # the last interval's queueing delay
        self.waited = 0  # turns that had to wait, in all
        self.cuts = 0  # times the limit was cut
        self.lowest_limit = max_turns  # the lowest the limit has been

    @property
    def waiting(self) -> int:
        return self._waiting_count

    # ---- the signal ---------------------------------------------------------------------------
    def observe(self, age_s: float, path: int = 0) -> None:
        """The age of a message on `path` (now - its envelope's ts)."""
        now = self.clock()
        if now >= self._interval_end:
            self._decide(now)  # the interval before this message
        if age_s < self._interval_min[path]:
            self._interval_min[path] = age_s

    def _decide(self, now: float) -> None:
        self._interval_end = now + self.interval_s
        delay = -math.inf
        for path, smallest in enumerate(self._interval_min):
            if smallest == math.inf:
                continue  # nothing on this path in the interval
            self._interval_min[path] = math.inf
            bases = self._bases[path]
            if not bases or now - bases[-1][0] >= BASE_BUCKET_S:
                bases.append((now, smallest))
                if len(bases) > BASE_BUCKETS:
                    bases.popleft()
            elif smallest < bases[-1][1]:
                bases[-1] = (bases[-1][0], smallest)
            delay = max(delay, smallest - min(age for _, age in bases))
        if delay == -math.inf or self.target_s <= 0:
            return
        self.delay_s = delay
        if delay > self.target_s:
            cut = max(self.min_turns, min(self.limit, self.running) * 7 // 8)
            if cut < self.limit:
                self.limit = cut
                self.cuts += 1
                self.lowest_limit = min(self.lowest_limit, cut)
        elif self._waiting and self.limit < self.max_turns:
            self.limit = min(self.max_turns, self.limit + max(1, self.limit // 8))
            self._admit()

    def slow_start(self) -> None:
        """Start from `min_turns` (a restart with many turns to continue, module docstring); the
        limit grows by 1/8 an interval while turns wait and every path is short. With admission
        off (`target_s` <= 0) nothing would grow it again: then it does nothing."""
        if self.target_s <= 0:
            return
        self.limit = min(self.limit, self.min_turns)
        self.lowest_limit = min(self.lowest_limit, self.limit)

    # ---- the gate -----------------------------------------------------------------------------
    async def enter(self, owner: str = "") -> None:
        """Wait for a place to run a turn of `owner`'s; at once when the limit allows and nobody
        waits."""
        if not self._waiting_count and self.running < self.limit:
            self.running += 1
            return
        waiter = _Waiter()
        queue = self._waiting.get(owner)
        if queue is None:
            queue = self._waiting[owner] = collections.deque()
        queue.append(waiter)
        self._waiting_count += 1
        self.waited += 1
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.admitted:
                self.leave()  # admitted and cancelled in the same moment: give the place on
            else:
                queue.remove(waiter)
                self._waiting_count -= 1
                if not queue and self._waiting.get(owner) is queue:
                    del self._waiting[owner]
            raise

    def leave(self) -> None:
        self.running -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiting_count and self.running < self.limit:
            owner, queue = next(iter(self._waiting.items()))
            waiter = queue.popleft()
            if queue:
                self._waiting.move_to_end(owner)  # the next owner's turn
            else:
                del self._waiting[owner]
            self._waiting_count -= 1
            waiter.admitted = True
            self.running += 1
            waiter.event.set()
