"""GlassesBridge: the runtime's edge, where phone bridge processes connect.

Besides its actor inbox it binds a ROUTER at `phone.endpoint`. Phone events become
`protocol.Event`s and go to the SessionActor with `ask("session", DeliverEvent)`:

- at-least-once: the phone gets `Ack` only once the session has the event; the phone resends
  what is not acked and the session drops duplicates by event id;
- per session a bounded FIFO lane with one delivery task, so one session's events arrive in
  order while sessions proceed concurrently; a full lane answers `Busy`, never drops silently;
- when the session actor does not answer in time (restarting) the event is not acked (the
  phone resends it) and the lane holds later events of that session with `Busy` until that
  event comes back, so a restart does not reorder a session's events;
- ownership is durable (storage.ownership, SQLite) and must be proved, never declared: with
  CURVE the session belongs to the phone's key; without, to a secret token the phone sends with
  the session's first event (or one handed out in that event's Ack), which every later event must
  carry - a resend of the first event included. Others get "forbidden". Idle sessions leave
  memory, never the table (docs/security.md);
- bounded edges: per connection a token bucket (`RateLimited`), a cap on sessions and on events
  waiting (`Busy`); per runtime a cap on connections and on sessions (phone.max_connections,
  phone.max_sessions); per peer an outbox, so a phone that does not read loses only its own replies
  (and is cut off past `phone.send_queue_per_peer`); garbage is logged once per peer per interval;
- a removed phone key is refused within half a second, live connection or not.

CURVE (phone.curve): the ROUTER is a CURVE server and every handshake is checked by a small ZAP
responder in this actor (not pyzmq's thread authenticator): it lives and dies with the actor's
task group, needs no thread, and re-reads the allow-list on every handshake, so adding or
removing a phone's key file takes effect without a restart. It is bound before the ROUTER: a
CURVE server without a ZAP handler would accept any key.
"""
from __future__ import annotations

import collections
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Callable

import anyio
import zmq

import protocol as p
from actors.base import Actor, AskTimeout, Inbound, describe
from transport.zap import zap_service
from transport.zmqio import AsyncSocket, SocketClosed
from core.channels import channel_event
from core.config import Config
from core.edge_limits import Connections, GarbageLog, Outboxes, notification_problem, session_id_problem
from transport import keys as keyfiles
from storage.ownership import Owner, OwnershipStore, new_token, proves
from storage.store import ownership_store

ZAP_DOMAIN = b"porfiry"
HEARTBEAT_IVL_MS, HEARTBEAT_TIMEOUT_MS = 5_000, 15_000
EVENT_TYPES = (p.SessionStart, p.SessionEnd, p.GlassesState, p.UserText, p.UserInterrupt, p.ButtonPress, p.PlaybackStatus, p.PhoneNotification)
TO_PHONE = (p.Display, p.TurnDone, p.PlaybackCommand, p.PushNotification, p.StatusLine)
ORIGINS_KEPT = 8192  # events whose sending connection is remembered until their TurnDone


# ---- pure logic ------------------------------------------------------------------------------
def to_event(body: p.Msg) -> p.Event:
    """A phone message as the session's structured event (E1: who, how, what)."""
    if isinstance(body, p.UserText):
        return p.Event(event_id=body.event_id, kind="user_text", source="user", channel="speech", content=body.text, ts=body.ts)
    if isinstance(body, p.UserInterrupt):
        return p.Event(event_id=body.event_id, kind="user_interrupt", source="user", channel="button", content="stop", ts=body.ts)
    if isinstance(body, p.ButtonPress):
        return p.Event(event_id=body.event_id, kind="button", source="user", channel="button", content=body.button, ts=body.ts)
    if isinstance(body, p.SessionStart):
        return p.Event(event_id=body.event_id, kind="session_start", source="phone", channel="phone", ts=body.ts)
    if isinstance(body, p.SessionEnd):
        return p.Event(event_id=body.event_id, kind="session_end", source="phone", channel="phone", ts=body.ts)
    if isinstance(body, p.GlassesState):  # presence only (actors/world.py): no model turn
        return p.Event(event_id=body.event_id, kind="glasses", source="phone", channel="phone", content=f"glasses {body.state}",
                       ts=body.ts, data={"state": body.state})
    if isinstance(body, p.PlaybackStatus):
        content = f"playback {body.task_id}: {body.state}" + (f" ({body.detail})" if body.detail else "")
        data = {"task_id": body.task_id, "state": body.state, "detail": body.detail}
        return p.Event(event_id=body.event_id, kind="playback", source="phone", channel="phone", content=content, ts=body.ts, data=data)
    if isinstance(body, p.PhoneNotification):  # data from another app, never an instruction (core.channels)
        return channel_event(event_id=body.event_id, source="phone", channel=body.app, sender=body.sender,
                             text=body.text, urgency="", ts=body.ts)
    raise TypeError(f"{type(body).__name__} is not a phone event")


def owner_key(identity: bytes, user_id: bytes) -> str:
    """Who a connection is. With CURVE: its public key (z85, vouched for by our ZAP handler).
    Without: its client id, the routing identity up to the first '/' (a PhoneClient's identity
    is CLIENT_ID/RANDOM, so one client may hold several connections)."""
    if user_id:
        return user_id.decode("ascii", "replace")
    return identity.split(b"/", 1)[0].decode("utf-8", "replace")


def zap_answer(request: list[bytes], allowed: set[bytes]) -> tuple[list[bytes], bool, str]:
    """The reply to one ZAP request (RFC 27) received on a ROUTER, whether it admits the peer,
    and the peer's key for the log."""
    if len(request) < 8 or request[1] != b"":
        routing = request[:1] or [b""]
        return [*routing, b"", b"1.0", b"", b"500", b"malformed ZAP request", b"", b""], False, ""
    routing, _, version, request_id, _domain, _address, _identity, mechanism, *credentials = request

    def reply(code: bytes, text: bytes, user: bytes = b"") -> list[bytes]:
        return [routing, b"", b"1.0", request_id, code, text, user, b""]

    if version != b"1.0":
        return reply(b"400", b"unsupported ZAP version"), False, ""
    if mechanism != b"CURVE" or len(credentials) != 1 or len(credentials[0]) != 32:
        return reply(b"400", b"CURVE required"), False, ""
    key = keyfiles.z85_text(credentials[0])
    if key in allowed:
        return reply(b"200", b"OK", key), True, key.decode()
    return reply(b"400", b"unknown phone key"), False, key.decode()


class SessionTable:
    """Who owns each session (durable, in an OwnershipStore), and which connection its displays
    go back to."""

    def __init__(self, clock: Callable[[], float] = time.time, store: OwnershipStore | None = None) -> None:
        self.clock = clock
        self.store = store if store is not None else OwnershipStore(":memory:")
        self._seen: dict[str, float] = {}  # last traffic either way

    def admit(self, session: str, identity: bytes, *, key: str = "", token: str = "", event_id: str = "") -> tuple[bool, str]:
        """(allowed, token to hand back). `key`: the connection's CURVE key (z85), "" without CURVE.
        The first comer opens the session: bound to its key, or to the token its opening event
        carries (PhoneClient draws one), else to a fresh one handed back once, in that event's
        Ack. Later, with CURVE the same key; without, the token - always: a resend of the opening
        event proves nothing (its id is no secret), so it never gets the token or the session's
        output. Routes the session to `identity`."""
        owner = self.store.get(session)
        handed = ""
        if owner is None:
            # a history without a claim is nobody's to take: only the key the journal recorded proves
            # it. One no phone ever spoke in (a webhook opened it: "") is fed by a channel, owned by
            # none: the first phone that proves itself owns it (issue 51)
            recorded = self.store.unclaimed_history(session)
            if recorded and not (key and proves(Owner("key", recorded, "", b""), "key", key)):
                return False, ""
            # compare-and-set: another node's phone may have opened it a moment ago (first wins)
            kind, proof = ("key", key) if key else ("token", token if len(token) >= 16 else new_token())
            if not proves(self.store.claim(session, kind, proof, event_id, identity), kind, proof):
                return False, ""
            handed = "" if key else proof
        elif key:
            if not proves(owner, "key", key):
                return False, ""
        elif not token or not proves(owner, "token", token):
            return False, ""
        self.store.set_route(session, identity)
        self._seen[session] = self.clock()
        return True, handed

    def owner(self, session: str) -> Owner | None:
        return self.store.get(session)

    def owned_by(self, session: str, *, key: str = "", token: str = "") -> bool:
        """Does this key (CURVE) or token prove ownership of an existing session? Changes nothing."""
        owner = self.store.get(session)
        return owner is not None and (proves(owner, "key", key) if key else bool(token) and proves(owner, "token", token))

    def route(self, session: str) -> bytes | None:
        owner = self.store.get(session)
        if owner is None:
            return None
        self._seen[session] = self.clock()
        return owner.route

    def forget(self, sessions: list[str], idle_s: float) -> list[str]:
        """Forget those of `sessions` without traffic for `idle_s`; one that came alive again
        since the session actor decided keeps its owner. Returns the forgotten."""
        now = self.clock()
        gone = [s for s in sessions if self.store.get(s) is not None and now - self._seen.get(s, now) >= idle_s]
        self.store.forget(gone)
        for session in gone:
            self._seen.pop(session, None)
        return gone

    def __len__(self) -> int:
        return len(self.store)


@dataclass
class Pending:
    """One phone event waiting in its session's lane."""

    event: p.Event
    identity: bytes  # the connection to ack
    corr: str  # the phone envelope's id
    phone_key: str
    token: str = ""  # handed back in the Ack: this event opened the session (no CURVE)


@dataclass
class Lane:
    queue: collections.deque[Pending] = field(default_factory=collections.deque)
    ids: set[str] = field(default_factory=set)
    running: bool = False
    blocked_on: str = ""
    blocked_until: float = 0.0


class Lanes:
    """Per-session bounded FIFO lanes: the bridge's delivery bookkeeping, without sockets."""

    def __init__(self, limit: int, hold_s: float, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.hold_s = hold_s
        self.clock = clock
        self._lanes: dict[str, Lane] = {}
        self.by_identity: collections.Counter[bytes] = collections.Counter()  # events waiting per connection

    def offer(self, session: str, item: Pending) -> str:
        """Queue an event. Returns "start" (queued; start the lane's delivery task), "queued",
        "pending" (already queued or in flight: the resend is absorbed) or "busy: why"."""
        lane = self._lanes.setdefault(session, Lane())
        event_id = item.event.event_id
        if event_id in lane.ids:
            return "pending"
        if lane.blocked_on:
            if event_id == lane.blocked_on or self.clock() >= lane.blocked_until:
                lane.blocked_on = ""
            else:
                return f"busy: session {session} waits for the resend of earlier event {lane.blocked_on}; resend in order"
        if len(lane.queue) >= self.limit:
            self.hold(session, event_id)  # a later event that finds room must not overtake this one
            return f"busy: session {session} has {len(lane.queue)} events waiting for delivery; retry shortly"
        lane.queue.append(item)
        lane.ids.add(event_id)
        self.by_identity[item.identity] += 1
        if lane.running:
            return "queued"
        lane.running = True
        return "start"

    def head(self, session: str) -> Pending | None:
        lane = self._lanes[session]
        return lane.queue[0] if lane.queue else None

    def done(self, session: str) -> None:
        """The head was answered (accepted, busy or error): take it off the lane."""
        lane = self._lanes[session]
        item = lane.queue.popleft()
        lane.ids.discard(item.event.event_id)
        self._release(item.identity)

    def flush(self, session: str) -> list[Pending]:
        """Take every queued event off the lane (they get Busy and come back in order)."""
        lane = self._lanes[session]
        items = list(lane.queue)
        lane.queue.clear()
        lane.ids.clear()
        for item in items:
            self._release(item.identity)
        return items

    def _release(self, identity: bytes) -> None:
        self.by_identity[identity] -= 1
        if self.by_identity[identity] <= 0:
            del self.by_identity[identity]

    def block(self, session: str, event_id: str) -> None:
        """Hold later events until `event_id` is resent (or hold_s passes)."""
        lane = self._lanes[session]
        lane.blocked_on = event_id
        lane.blocked_until = self.clock() + self.hold_s

    def hold(self, session: str, event_id: str) -> None:
        """`event_id` was turned away before reaching the lane (rate limit): later events of the
        session wait for its resend, so the session still gets them in order."""
        lane = self._lanes.setdefault(session, Lane())
        if not lane.blocked_on or self.clock() >= lane.blocked_until:
            lane.blocked_on = event_id
            lane.blocked_until = self.clock() + self.hold_s

    def stop(self, session: str) -> None:
        """The delivery task ends; forget an idle, unblocked lane."""
        lane = self._lanes[session]
        lane.running = False
        if not lane.queue and (not lane.blocked_on or self.clock() >= lane.blocked_until):
            del self._lanes[session]

    def depth(self, session: str) -> int:
        lane = self._lanes.get(session)
        return len(lane.queue) if lane else 0


class _RecentIds:
    """A bounded set of recently seen ids (statuses handed to a waiting asker)."""

    def __init__(self, size: int = 4096):
        self._ids: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._size = size

    def add(self, key: str) -> None:
        self._ids[key] = None
        while len(self._ids) > self._size:
            self._ids.popitem(last=False)

    def __contains__(self, key: str) -> bool:
        return key in self._ids


class _PeerKeyedRouter(zmq.Socket):
    """A ROUTER whose received messages end with one extra frame: the peer's ZAP User-Id (its
    z85 CURVE key; empty without CURVE). The metadata lives only on zero-copy frames, and the
    AsyncSocket pump asks for copies, so it is read here."""

    def recv_multipart(self, flags: int = 0, copy: bool = True, track: bool = False) -> list[bytes]:  # type: ignore[override]
        frames = super().recv_multipart(flags, copy=False, track=track)
        try:
            user = frames[-1].get("User-Id").encode()
        except zmq.ZMQError:
            user = b""
        return [frame.bytes for frame in frames] + [user]


# ---- the actor -------------------------------------------------------------------------------
class _Waiter:
    __slots__ = ("done", "status")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.status: p.PlaybackStatus | None = None


class GlassesBridge(Actor):
    name = "glasses"
    resend_hold_s = 10.0  # how long a lane waits for a timed-out event's resend
    outbox_hold_s = 30.0  # how long a reply waits for a phone that cannot take it (full, or reconnecting)
    revocation_check_s = 0.5  # how often the CURVE allow-list is re-read for removed keys

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic):
        super().__init__(config, zmq_context=zmq_context, clock=clock)
        self.sessions = SessionTable(self.clock)  # in memory until on_start opens the durable store
        self.lanes = Lanes(config.phone.pending_per_session, self.resend_hold_s, monotonic)
        self.endpoint = config.phone.endpoint
        self._phone: AsyncSocket | None = None
        self._waiting: dict[tuple[str, str], _Waiter] = {}
        self._handed: _RecentIds = _RecentIds()
        self.busy_sent = 0  # Busy answers to phones (metrics: EdgeStats)
        self.frames_dropped = 0  # phone frames undecodable, malformed, or not sendable
        phone = config.phone
        self.connections = Connections(phone.events_per_s, phone.sessions_per_connection, monotonic, max_connections=phone.max_connections)
        self.outboxes: Outboxes[bytes] = Outboxes(phone.send_queue_per_peer, self.outbox_hold_s, monotonic)
        self.garbage = GarbageLog(phone.garbage_log_interval_s, monotonic)
        self.unanswered = GarbageLog(1.0, monotonic)  # DeliverEvents the session actor did not answer in time
        self.storage_failures = GarbageLog(phone.garbage_log_interval_s, monotonic)  # ownership writes that failed
        self.cut_off = 0  # peers whose outbox overflowed
        self._cut: collections.OrderedDict[bytes, None] = collections.OrderedDict()  # best effort only, no outbox
        self._outbox_ready = anyio.Event()
        self._allowed: set[bytes] = set()  # CURVE: the allow-list as last read (removals refused)
        # (session, event id) -> the connection that sent it, until a TurnDone covers it: a phone
        # that sent a second event from another connection (a second `say`) moves the session's
        # route, and the first must still hear that its event is done (or cancelled)
        self._origins: collections.OrderedDict[tuple[str, str], bytes] = collections.OrderedDict()

    # ---- start-up ---------------------------------------------------------------------------
    async def on_start(self) -> None:
        phone = self.config.phone
        store = ownership_store(self.config)
        self.sessions = SessionTable(self.clock, store)
        self.log.info("actor=glasses session owners=%d store=%s", len(self.sessions), store.path)
        self.spawn(self._flush_outboxes, name="glasses-outboxes")
        if phone.curve:
            server_public, server_secret = keyfiles.load_server_keys(self.config.path(phone.keys_dir))
            # one ZAP socket per context, shared with the bus's domain (transport/zap.py)
            zap_service(self.zmq).register(ZAP_DOMAIN, self._answer_zap, self.spawn)
            allowed = self._allowed = self._allowed_keys()
            if not allowed:
                self.log.warning("actor=glasses curve=on allow-list is empty: no phone can connect; see `run.py keys`")
            self.spawn(self._watch_allow_list, name="glasses-revocations")
        sock = self.zmq.socket(zmq.ROUTER, socket_class=_PeerKeyedRouter)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, self.config.protocol.max_message_bytes)  # larger: peer disconnected
        # Heartbeats drop a vanished phone's pipe, so its reconnect (same identity) is accepted.
        sock.setsockopt(zmq.HEARTBEAT_IVL, HEARTBEAT_IVL_MS)
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, HEARTBEAT_TIMEOUT_MS)
        if phone.curve:
            sock.curve_server = True
            sock.curve_publickey = server_public
            sock.curve_secretkey = server_secret
            sock.zap_domain = ZAP_DOMAIN
        try:
            sock.bind(self.endpoint)
        except zmq.ZMQError as exc:
            sock.close(linger=0)
            raise RuntimeError(f"cannot bind the phone endpoint {self.endpoint}: {exc}") from None
        # the pump hands each phone message straight to _on_phone_frames (never blocks)
        self._phone = AsyncSocket(sock, deliver=self._on_phone_frames)
        self.spawn(self._phone.run, name="glasses-phone")
        self.log.info("actor=glasses phone endpoint=%s curve=%s", self.endpoint, "on" if phone.curve else "off")

    def _allowed_keys(self) -> set[bytes]:
        try:
            return keyfiles.load_allowed_keys(self.config.path(self.config.phone.keys_dir))
        except (OSError, ValueError) as exc:
            self.log.error("actor=glasses cannot read the phone allow-list, refusing everyone: %s", exc)
            return set()

    def _answer_zap(self, request: list[bytes]) -> list[bytes]:
        reply, admitted, key = zap_answer(request, self._allowed_keys())
        address = request[5].decode(errors="replace") if len(request) > 5 else "?"
        if admitted:
            self._allowed.add(key.encode())
            self.log.info("actor=glasses phone admitted key=%s address=%s", key, address)
        else:
            self.log.warning("actor=glasses phone refused key=%s address=%s reason=%s", key or "-", address, reply[5].decode())
        return reply

    async def _watch_allow_list(self) -> None:
        """A key removed from authorized/ is refused within revocation_check_s, even on a
        connection that was admitted before (ZAP only sees new handshakes)."""
        while True:
            await anyio.sleep(self.revocation_check_s)
            allowed = await anyio.to_thread.run_sync(self._allowed_keys)
            for key in self._allowed - allowed:
                self.log.warning("actor=glasses phone key removed from the allow-list: key=%s; its connections are refused from now on", key.decode())
            self._allowed = allowed

    def _garbage(self, identity: bytes, what: str) -> None:
        """Log bad input once per peer per interval, with a count."""
        self.frames_dropped += 1
        count = self.garbage.note(identity)
        if count:
            self.log.warning("actor=glasses phone=%r sent %d bad message(s) (latest: %s)", identity, count, what)

    # ---- phone -> runtime -------------------------------------------------------------------
    def _on_phone_frames(self, frames: list[bytes]) -> None:
        *parts, user_id = frames
        if not parts:
            return
        identity = parts[0]
        if self.config.phone.curve and user_id not in self._allowed:
            self._garbage(identity, "message on a connection whose key was removed")
            self.outboxes.drop(identity)
            return
        if not self.connections.admit(identity):
            self._over_capacity(identity, parts)
            return
        if not self.connections.get(identity).bucket.take():
            self._rate_limited(identity, parts, user_id)
            return
        if len(parts) != 2:
            self._garbage(identity, f"{len(parts) - 1} frames, expected 1")
            self._error(identity, "", "malformed", f"expected one frame per message, got {len(parts) - 1}")
            return
        self._on_phone_frame(identity, parts[1], user_id)

    def _over_capacity(self, identity: bytes, parts: list[bytes]) -> None:
        """Past phone.max_connections: a new connection is told so (per message: one answer for
        one frame) and nothing of it is kept."""
        try:
            env = self.codec.decode(parts[1]) if len(parts) == 2 else None
        except p.DecodeError:
            env = None
        self._garbage(identity, "a new connection past phone.max_connections")
        limit = self.config.phone.max_connections
        self._error(identity, env.session if env else "", "too_many_connections",
                    f"the runtime serves {limit} phone connections (phone.max_connections); try again later", corr=env.id if env else "")

    def _rate_limited(self, identity: bytes, parts: list[bytes], user_id: bytes) -> None:
        """Past phone.events_per_s: an event is answered RateLimited (nothing taken, resend later);
        anything else is dropped."""
        conn = self.connections.get(identity)
        try:
            env = self.codec.decode(parts[1]) if len(parts) == 2 else None
        except p.DecodeError:
            env = None
        event_id = getattr(env.body, "event_id", "") if env is not None else ""
        self._garbage(identity, "over the rate limit")
        if event_id:
            if env.session and isinstance(env.body, EVENT_TYPES) and self.sessions.owned_by(
                    env.session, key=user_id.decode("ascii", "replace") if user_id else "", token=env.body.token):
                self.lanes.hold(env.session, event_id)  # only its owner may hold a session's lane
            wait = conn.bucket.retry_after()
            self._to_phone(identity, p.RateLimited(
                event_id=event_id, retry_after_s=round(wait, 3),
                detail=f"more than {self.config.phone.events_per_s:g} events/s on this connection; resend in {wait:.2f} s"),
                session=env.session, corr=env.id)

    def _on_phone_frame(self, identity: bytes, payload: bytes, user_id: bytes) -> None:
        try:
            env = self.codec.decode(payload)
        except p.DecodeError as exc:
            self._garbage(identity, f"decode error kind={exc.kind} detail={exc.detail[:200]}")
            self._error(identity, "", f"decode:{exc.kind}", exc.detail)
            return
        body = env.body
        if isinstance(body, p.Hello):
            self.log.info("actor=glasses hello client=%s phone=%r", body.client, identity)
            self._to_phone(identity, p.Ok(detail="porfiry glasses bridge"), corr=env.id)
            return
        if not isinstance(body, EVENT_TYPES):
            self._garbage(identity, f"a non-phone message {describe(env)}")
            allowed = ", ".join(t.__name__ for t in (p.Hello, *EVENT_TYPES))
            self._error(identity, env.session, "wrong_direction", f"{type(body).__name__} is not a phone message; phones send {allowed}", corr=env.id)
            return
        if self._out_of_bounds(identity, env):
            return
        phone = self.config.phone
        if len(self.sessions) >= phone.max_sessions and self.sessions.owner(env.session) is None:
            self._error(identity, env.session, "runtime_full", f"the runtime holds {phone.max_sessions} sessions "
                        "(phone.max_sessions); try again later", corr=env.id)
            return
        if not self.connections.admit_session(identity, env.session):
            self._error(identity, env.session, "too_many_sessions", f"this connection already addresses {phone.sessions_per_connection} "
                        "sessions (phone.sessions_per_connection); end some or open another connection", corr=env.id)
            return
        owner = owner_key(identity, user_id)
        try:
            allowed, token = self.sessions.admit(env.session, identity, key=user_id.decode("ascii", "replace") if user_id else "",
                                                 token=body.token, event_id=body.event_id)
        except sqlite3.Error as exc:  # e.g. disk full: nothing claimed, nothing acked, the phone resends
            self._not_stored(identity, env.session, body.event_id, exc, corr=env.id)
            return
        if not allowed:
            self.log.warning("actor=glasses refused session=%s to phone=%r (owned by another phone)", env.session, identity)
            self._error(identity, env.session, "forbidden", f"session {env.session} belongs to another phone"
                        + ("" if user_id else "; present the session's token from the Ack of its first event"), corr=env.id)
            return
        if isinstance(body, p.PlaybackStatus) and self._status_for_waiter(env.session, body, identity, env.id):
            return
        if self.lanes.by_identity[identity] >= phone.pending_per_connection:
            self.lanes.hold(env.session, body.event_id)  # later events of the session wait for this one
            self._to_phone(identity, p.Busy(event_id=body.event_id, detail=f"this connection has {phone.pending_per_connection} "
                           "events waiting for delivery (phone.pending_per_connection); retry shortly"), session=env.session, corr=env.id)
            return
        item = Pending(event=to_event(body), identity=identity, corr=env.id, phone_key=owner, token=token)
        verdict = self.lanes.offer(env.session, item)
        if verdict == "start":
            self.spawn(self._drain, env.session, name=f"glasses-lane-{env.session}")
        elif verdict.startswith("busy"):
            self.log.debug("actor=glasses busy session=%s %s", env.session, verdict)  # the verdict may name an event id
            self._to_phone(identity, p.Busy(event_id=body.event_id, detail=verdict[6:]), session=env.session, corr=env.id)

    def _out_of_bounds(self, identity: bytes, env: p.Envelope) -> bool:
        """A session id that is no id (too long, a space, a control character), or a field past
        its bound: the phone is told why (bad_session, too_long) and nothing is taken."""
        body, phone = env.body, self.config.phone
        if (problem := session_id_problem(env.session, phone.max_session_id_chars)) is not None:
            if env.session:
                self._garbage(identity, f"a bad session id: {problem}")
            self._error(identity, "", "bad_session" if env.session else "no_session", f"{type(body).__name__}: {problem}", corr=env.id)
            return True
        if isinstance(body, p.PhoneNotification):
            problem = notification_problem(body.app, body.sender, body.text, phone)
        elif isinstance(body, p.UserText) and len(body.text) > phone.max_text_chars:
            problem = (f"text of {len(body.text)} characters exceeds phone.max_text_chars ({phone.max_text_chars}); "
                       "split it or shorten it")
        if problem is not None:
            self._error(identity, env.session, "too_long", problem, corr=env.id)
        return problem is not None

    def _not_stored(self, identity: bytes, session: str, event_id: str, exc: sqlite3.Error, *, corr: str) -> None:
        """The ownership store could not write: the phone is told as for an event the journal
        cannot store (ErrorReply "storage"); logged once per interval, with a count. A write that
        waited out the database's lock (the journal's commit holding it under load) is `Busy`: the
        phone backs off and resends the event, where an ErrorReply would end it."""
        count = self.storage_failures.note(b"ownership")
        if count:
            self.log.error("actor=glasses the session ownership store cannot write: %s (%d event(s) refused, latest "
                           "session=%s); the phones resend", exc, count, session)
        if getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            self._to_phone(identity, p.Busy(event_id=event_id, detail=f"the session store is busy: {exc}; resend"),
                           session=session, corr=corr)
            return
        self._error(identity, session, "storage", f"event {event_id} could not be stored: session ownership: {exc}", corr=corr)

    def _status_for_waiter(self, session: str, status: p.PlaybackStatus, identity: bytes, corr: str) -> bool:
        """Hand an awaited PlaybackStatus to its PhoneCommand's asker (acking it at once)."""
        if status.event_id in self._handed:
            self._to_phone(identity, p.Ack(event_id=status.event_id, duplicate=True), session=session, corr=corr)
            return True
        waiter = self._waiting.get((session, status.task_id))
        if waiter is None or waiter.status is not None:
            return False
        waiter.status = status
        waiter.done.set()
        self._handed.add(status.event_id)
        self._to_phone(identity, p.Ack(event_id=status.event_id), session=session, corr=corr)
        return True

    async def _drain(self, session: str) -> None:
        """The lane's delivery task: one event at a time, in order, until the lane is empty."""
        try:
            while (item := self.lanes.head(session)) is not None:
                await self._deliver(session, item)
        finally:
            self.lanes.stop(session)

    async def _deliver(self, session: str, item: Pending) -> None:
        event_id = item.event.event_id
        try:
            reply = await self.ask("session", p.DeliverEvent(event=item.event, phone_key=item.phone_key), session=session)
        except AskTimeout:
            self.lanes.done(session)
            later = self.lanes.flush(session)
            self.lanes.block(session, event_id)
            count = self.unanswered.note(b"session")  # under overload this happens per event: one line per interval
            if count:
                self.log.warning("actor=glasses session actor did not answer %d event(s) in time (latest: session=%s, "
                                 "%d later events of it told busy); not acked, the phones resend", count, session, len(later))
            for other in later:
                self._busy(session, other, f"session {session} is not answering (event {event_id}); resend in order")
            return
        self.lanes.done(session)
        if isinstance(reply, p.EventAccepted):
            self._note_origin(session, event_id, item.identity)
            self._to_phone(item.identity, p.Ack(event_id=event_id, duplicate=reply.duplicate, token=item.token), session=session, corr=item.corr)
        elif isinstance(reply, p.Busy):
            self._busy(session, item, reply.detail)
            for other in self.lanes.flush(session):
                self._busy(session, other, f"session {session} is busy (event {event_id}); resend in order")
        elif isinstance(reply, p.ErrorReply):
            self.log.warning("actor=glasses session refused an event session=%s code=%s", session, reply.code)
            self._error(item.identity, session, reply.code, reply.detail, corr=item.corr)
        else:
            self.log.error("actor=glasses session answered %s to DeliverEvent", type(reply).__name__)
            self._error(item.identity, session, "internal", f"session answered {type(reply).__name__}", corr=item.corr)

    def _busy(self, session: str, item: Pending, detail: str) -> None:
        self._to_phone(item.identity, p.Busy(event_id=item.event.event_id, detail=detail), session=session, corr=item.corr)

    # ---- runtime -> phone -------------------------------------------------------------------
    def _to_phone(self, identity: bytes, body: p.Msg, *, session: str = "", corr: str = "") -> str:
        """Send now, or queue in this peer's own outbox (never in a queue shared with others)."""
        assert self._phone is not None
        env = p.Envelope(body=body, sender=self.name, session=session, corr=corr)
        self.busy_sent += isinstance(body, p.Busy)
        payload = self.codec.encode(env)
        if not self.outboxes.has(identity):
            try:
                outcome = self._phone.try_send([identity, payload])
            except (SocketClosed, zmq.ZMQError) as exc:
                self.log.warning("actor=glasses could not send %s to phone=%r: %s", describe(env), identity, exc)
                return env.id
            if outcome == "sent":
                self._cut.pop(identity, None)  # it reads again
                return env.id
            if identity in self._cut:
                self.frames_dropped += 1
                return env.id  # cut off: what it cannot take now is dropped, not queued
        if not self.outboxes.put(identity, payload):
            self.cut_off += 1
            self._cut[identity] = None
            while len(self._cut) > 4096:
                self._cut.popitem(last=False)
            self.log.warning("actor=glasses phone=%r does not read its replies: %d waiting, cut off (phone.send_queue_per_peer)",
                             identity, self.config.phone.send_queue_per_peer)
        self._outbox_ready.set()
        return env.id

    async def _flush_outboxes(self) -> None:
        """Retry each peer's outbox in order; a peer that cannot take its head waits, alone."""
        while True:
            await self._outbox_ready.wait()
            self._outbox_ready = anyio.Event()
            while len(self.outboxes):
                for peer in self.outboxes.peers():
                    while (payload := self.outboxes.head(peer)) is not None:
                        try:
                            outcome = self._phone.try_send([peer, payload]) if self._phone else "unreachable"
                        except (SocketClosed, zmq.ZMQError):
                            outcome = "unreachable"
                        if outcome != "sent":
                            break
                        self.outboxes.pop(peer)
                await anyio.sleep(0.02)

    def _error(self, identity: bytes, session: str, code: str, detail: str, *, corr: str = "") -> None:
        self._to_phone(identity, p.ErrorReply(code=code, detail=detail), session=session, corr=corr)

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, TO_PHONE):
            identity = self.sessions.route(msg.session)
            if identity is None:
                self.log.warning("actor=glasses no phone owns session=%s; dropped %s", msg.session, describe(msg.env))
                return
            self._to_phone(identity, body, session=msg.session)  # not connected yet: it waits in the outbox
            if isinstance(body, p.TurnDone):
                for origin in self._origins_of(msg.session, body.event_ids) - {identity}:
                    self._to_phone(origin, body, session=msg.session)
        elif isinstance(body, p.PhoneCommand):
            self.spawn(self._relay_command, msg, name=f"glasses-command-{body.command.task_id}")
        elif isinstance(body, p.EdgeStatsRequest):
            dropped = self.frames_dropped
            msg.reply(self, p.EdgeStats(busy=self.busy_sent, dropped_frames=dropped, sessions=len(self.sessions)))
        elif isinstance(body, p.SessionDelete):  # `run.py sessions delete`: the session is gone, its claim too
            self.sessions.store.delete([msg.session])
            self.connections.forget_session(msg.session)
        elif isinstance(body, p.SessionsForgotten):
            # A little under the session actor's TTL: its sweep and our clock agree on "idle".
            gone = self.sessions.forget(body.sessions, 0.9 * self.config.session.idle_session_ttl_s)
            for session in gone:
                self.connections.forget_session(session)
            self.log.info("actor=glasses forgot %d idle session(s); %d remain", len(gone), len(self.sessions))
        else:
            await super().handle(msg)

    def _note_origin(self, session: str, event_id: str, identity: bytes) -> None:
        self._origins[(session, event_id)] = identity
        while len(self._origins) > ORIGINS_KEPT:
            self._origins.popitem(last=False)

    def _origins_of(self, session: str, event_ids: list[str]) -> set[bytes]:
        """The connections that sent these events (each told once: the TurnDone closes them)."""
        found = (self._origins.pop((session, event_id), None) for event_id in event_ids)
        return {identity for identity in found if identity is not None}

    async def _relay_command(self, msg: Inbound) -> None:
        """PhoneCommand: the phone's status if it answers within wait_s, else Ok("pending") and
        the status reaches the session later as a playback event (E7)."""
        body: p.PhoneCommand = msg.body  # type: ignore[assignment]
        session, task_id = msg.session, body.command.task_id
        identity = self.sessions.route(session)
        if identity is None:
            msg.reply(self, p.ErrorReply(code="no_phone", detail=f"no phone connection owns session {session!r}"))
            return
        key = (session, task_id)
        waiter = self._waiting[key] = _Waiter()
        try:
            self._to_phone(identity, body.command, session=session)
            wait_s = body.wait_s if body.wait_s > 0 else self.config.phone.playback_wait_s
            with anyio.move_on_after(wait_s):
                await waiter.done.wait()
        finally:
            if self._waiting.get(key) is waiter:
                del self._waiting[key]
        if waiter.status is not None:
            msg.reply(self, waiter.status)
        else:
            self.log.info("actor=glasses playback task=%s session=%s pending: no status within wait", task_id, session)
            msg.reply(self, p.Ok(detail="pending"))
