"""The phone edge's bounds, as plain bookkeeping without sockets (the GlassesBridge applies them):
per-connection token buckets (events/s), per-peer outboxes (one phone that does not read loses
only its own replies), and a garbage log that writes one line per peer per interval."""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class TokenBucket:
    """`rate` events per second with a burst of `burst`; `take()` says whether one may pass now,
    `retry_after()` how long until one may."""

    __slots__ = ("rate", "burst", "tokens", "stamp", "clock")

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = burst
        self.stamp = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def retry_after(self) -> float:
        return max(0.0, (1.0 - self.tokens) / self.rate) if self.rate > 0 else 1.0


@dataclass
class Connection:
    """What the edge tracks per phone connection (ROUTER identity)."""

    bucket: TokenBucket
    sessions: set[str] = field(default_factory=set)
    seen: float = 0.0


class Connections:
    """Per-connection limits: events/s and sessions opened. Idle entries are swept, so a stream of
    short-lived connections costs nothing lasting."""

    def __init__(self, events_per_s: float, max_sessions: int, clock: Callable[[], float] = time.monotonic,
                 idle_s: float = 120.0, max_connections: int = 1 << 62):
        self.events_per_s, self.max_sessions, self.clock, self.idle_s = events_per_s, max_sessions, clock, idle_s
        self.max_connections = max_connections
        self._conns: dict[bytes, Connection] = {}
        self._next_sweep = clock() + idle_s
        self._next_full_sweep = 0.0  # at the cap, idle entries are looked for at most once a second

    def admit(self, identity: bytes) -> bool:
        """May this connection talk at all? A known one yes; a new one while fewer than
        `max_connections` were active in the last `idle_s` (all phones together)."""
        if identity in self._conns or len(self._conns) < self.max_connections:
            return True
        now = self.clock()
        if now >= self._next_full_sweep:
            self._next_full_sweep = now + 1.0
            self._sweep(now)
        return len(self._conns) < self.max_connections

    def _sweep(self, now: float) -> None:
        for key in [k for k, c in self._conns.items() if now - c.seen >= self.idle_s]:
            del self._conns[key]

    def get(self, identity: bytes) -> Connection:
        now = self.clock()
        if now >= self._next_sweep:
            self._next_sweep = now + self.idle_s
            self._sweep(now)
        conn = self._conns.get(identity)
        if conn is None:
            conn = self._conns[identity] = Connection(TokenBucket(self.events_per_s, max(1.0, 2 * self.events_per_s), self.clock))
        conn.seen = now
        return conn

    def admit_session(self, identity: bytes, session: str) -> bool:
        """True if this connection may address `session` (already does, or is under its limit)."""
        conn = self.get(identity)
        if session in conn.sessions:
            return True
        if len(conn.sessions) >= self.max_sessions:
            return False
        conn.sessions.add(session)
        return True

    def forget_session(self, session: str) -> None:
        for conn in self._conns.values():
            conn.sessions.discard(session)

    def __len__(self) -> int:
        return len(self._conns)


class Outboxes(Generic[T]):
    """Replies waiting for phones that could not take them now (full pipe, or not connected yet
    after a restart). One bounded FIFO per peer: past `limit` the peer is cut off (its queue
    dropped), and a message older than `hold_s` is dropped, so a mute phone costs bounded memory
    and nobody else's replies."""

    def __init__(self, limit: int, hold_s: float, clock: Callable[[], float] = time.monotonic):
        self.limit, self.hold_s, self.clock = limit, hold_s, clock
        self._boxes: dict[bytes, collections.deque[tuple[float, T]]] = {}

    def has(self, peer: bytes) -> bool:
        return peer in self._boxes

    def put(self, peer: bytes, item: T) -> bool:
        """Queue behind what waits for `peer`. False (and the peer's queue dropped) past the limit."""
        box = self._boxes.setdefault(peer, collections.deque())
        if len(box) >= self.limit:
            del self._boxes[peer]
            return False
        box.append((self.clock(), item))
        return True

    def peers(self) -> list[bytes]:
        return list(self._boxes)

    def head(self, peer: bytes) -> T | None:
        """The oldest message still worth sending (older ones are dropped and counted)."""
        box = self._boxes.get(peer)
        now = self.clock()
        while box and now - box[0][0] > self.hold_s:
            box.popleft()
            self.expired += 1
        if not box:
            self._boxes.pop(peer, None)
            return None
        return box[0][1]

    def pop(self, peer: bytes) -> None:
        box = self._boxes[peer]
        box.popleft()
        if not box:
            del self._boxes[peer]

    def drop(self, peer: bytes) -> int:
        return len(self._boxes.pop(peer, ()))

    def depth(self, peer: bytes) -> int:
        return len(self._boxes.get(peer, ()))

    def __len__(self) -> int:
        return sum(len(box) for box in self._boxes.values())

    expired = 0


class GarbageLog:
    """Undecodable or misdirected input: one log line per peer per `interval_s`, with the count
    since the last line, instead of one line per frame (a flood of garbage would fill the disk)."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic, max_peers: int = 10_000):
        self.interval_s, self.clock, self.max_peers = interval_s, clock, max_peers
        self._peers: collections.OrderedDict[bytes, list] = collections.OrderedDict()  # peer -> [last_logged, count]

    def note(self, peer: bytes) -> int:
        """Count one bad message; returns how many to report now (0: stay quiet)."""
        now = self.clock()
        entry = self._peers.get(peer)
        if entry is None:
            self._peers[peer] = [now, 0]
            while len(self._peers) > self.max_peers:
                self._peers.popitem(last=False)
            return 1
        entry[1] += 1
        if now - entry[0] >= self.interval_s:
            count, entry[0], entry[1] = entry[1], now, 0
            return count
        return 0


def session_id_problem(session: str, max_chars: int) -> str | None:
    """Why `session` cannot be a session id, or None. An id names a session in every log line,
    the journal and the CLI: 1 to `max_chars` characters (phone.max_session_id_chars), each
    printable and not a space, so no id can break or forge a log line (issue 51)."""
    if not session:
        return "a session id is needed"
    if len(session) > max_chars:
        return f"the session id has {len(session)} characters; at most {max_chars} (phone.max_session_id_chars)"
    bad = next((char for char in session if not char.isprintable() or char.isspace()), None)
    if bad is not None:
        return f"the session id holds {ascii(bad)}: only printable characters other than spaces"
    return None


def notification_problem(app: str, sender: str, text: str, limits) -> str | None:
    """Why a phone notification is refused (too_long), or None: each field has its bound
    (`limits`: core.config.PhoneConfig; issue 51)."""
    for field, value, limit, key in (("app name", app, limits.max_app_chars, "max_app_chars"),
                                     ("sender", sender, limits.max_sender_chars, "max_sender_chars"),
                                     ("text", text, limits.max_text_chars, "max_text_chars")):
        if len(value) > limit:
            return f"the notification's {field} has {len(value)} characters; at most {limit} (phone.{key}); shorten it"
    return None
