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
- the connection that first addresses a session owns it; others get ErrorReply "forbidden".

CURVE (phone.curve): the ROUTER is a CURVE server and every handshake is checked by a small ZAP
responder in this actor (not pyzmq's thread authenticator): it lives and dies with the actor's
task group, needs no thread, and re-reads the allow-list on every handshake, so adding or
removing a phone's key file takes effect without a restart. It is bound before the ROUTER: a
CURVE server without a ZAP handler would accept any key.
"""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import Callable

import anyio
import zmq

import protocol as p
from actors.base import Actor, AskTimeout, Inbound, describe
from actors.zmqio import AsyncSocket, SocketClosed
from core.config import Config
from phone import keys as keyfiles

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN = b"porfiry"
HEARTBEAT_IVL_MS, HEARTBEAT_TIMEOUT_MS = 5_000, 15_000
EVENT_TYPES = (p.SessionStart, p.SessionEnd, p.UserText, p.UserInterrupt, p.ButtonPress, p.PlaybackStatus)
TO_PHONE = (p.Display, p.TurnDone, p.PlaybackCommand)


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
    if isinstance(body, p.PlaybackStatus):
        content = f"playback {body.task_id}: {body.state}" + (f" ({body.detail})" if body.detail else "")
        data = {"task_id": body.task_id, "state": body.state, "detail": body.detail}
        return p.Event(event_id=body.event_id, kind="playback", source="phone", channel="phone", content=content, ts=body.ts, data=data)
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
    """Who owns each session, and which connection its displays go back to."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._owner: dict[str, str] = {}
        self._route: dict[str, bytes] = {}
        self._seen: dict[str, float] = {}  # last traffic either way

    def claim(self, session: str, owner: str, identity: bytes) -> bool:
        """True if `owner` may address `session` (first come owns it); routes it to `identity`."""
        current = self._owner.setdefault(session, owner)
        if current != owner:
            return False
        self._route[session] = identity
        self._seen[session] = self.clock()
        return True

    def owner(self, session: str) -> str | None:
        return self._owner.get(session)

    def route(self, session: str) -> bytes | None:
        identity = self._route.get(session)
        if identity is not None:
            self._seen[session] = self.clock()
        return identity

    def forget(self, sessions: list[str], idle_s: float) -> list[str]:
        """Forget those of `sessions` without traffic for `idle_s`; one that came alive again
        since the session actor decided keeps its owner. Returns the forgotten."""
        now = self.clock()
        gone = [s for s in sessions if s in self._owner and now - self._seen.get(s, now) >= idle_s]
        for session in gone:
            del self._owner[session], self._route[session], self._seen[session]
        return gone

    def __len__(self) -> int:
        return len(self._owner)


@dataclass
class Pending:
    """One phone event waiting in its session's lane."""

    event: p.Event
    identity: bytes  # the connection to ack
    corr: str  # the phone envelope's id
    phone_key: str


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
            return f"busy: session {session} has {len(lane.queue)} events waiting for delivery; retry shortly"
        lane.queue.append(item)
        lane.ids.add(event_id)
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

    def flush(self, session: str) -> list[Pending]:
        """Take every queued event off the lane (they get Busy and come back in order)."""
        lane = self._lanes[session]
        items = list(lane.queue)
        lane.queue.clear()
        lane.ids.clear()
        return items

    def block(self, session: str, event_id: str) -> None:
        """Hold later events until `event_id` is resent (or hold_s passes)."""
        lane = self._lanes[session]
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

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic):
        super().__init__(config, zmq_context=zmq_context, clock=clock)
        self.sessions = SessionTable(self.clock)
        self.lanes = Lanes(config.phone.pending_per_session, self.resend_hold_s, monotonic)
        self.endpoint = config.phone.endpoint
        self._phone: AsyncSocket | None = None
        self._waiting: dict[tuple[str, str], _Waiter] = {}
        self._handed: _RecentIds = _RecentIds()
        self.busy_sent = 0  # Busy answers to phones (metrics: EdgeStats)
        self.frames_dropped = 0  # phone frames undecodable, malformed, or not sendable

    # ---- start-up ---------------------------------------------------------------------------
    async def on_start(self) -> None:
        phone = self.config.phone
        if phone.curve:
            server_public, server_secret = keyfiles.load_server_keys(self.config.path(phone.keys_dir))
            zap = self.zmq.socket(zmq.ROUTER)
            zap.setsockopt(zmq.LINGER, 0)
            try:
                zap.bind(ZAP_ENDPOINT)
            except zmq.ZMQError as exc:
                zap.close(linger=0)
                raise RuntimeError(f"cannot serve ZAP in this zmq context ({exc}); refusing to run CURVE without it") from None
            zap_socket = AsyncSocket(zap)
            self.spawn(zap_socket.run, name="glasses-zap")
            self.spawn(self._serve_zap, zap_socket, name="glasses-zap-reader")
            allowed = self._allowed_keys()
            if not allowed:
                self.log.warning("actor=glasses curve=on allow-list is empty: no phone can connect; see `run.py keys`")
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

    async def _serve_zap(self, zap: AsyncSocket) -> None:
        while True:
            request = await zap.recv()
            reply, admitted, key = zap_answer(request, self._allowed_keys())
            address = request[5].decode(errors="replace") if len(request) > 5 else "?"
            if admitted:
                self.log.info("actor=glasses phone admitted key=%s address=%s", key, address)
            else:
                self.log.warning("actor=glasses phone refused key=%s address=%s reason=%s", key or "-", address, reply[5].decode())
            zap.send_nowait(reply)

    # ---- phone -> runtime -------------------------------------------------------------------
    def _on_phone_frames(self, frames: list[bytes]) -> None:
        *parts, user_id = frames
        if len(parts) != 2:
            self.log.warning("actor=glasses phone sent %d frames, expected 1", len(parts) - 1)
            self.frames_dropped += 1
            if parts:
                self._error(parts[0], "", "malformed", f"expected one frame per message, got {len(parts) - 1}")
            return
        self._on_phone_frame(parts[0], parts[1], user_id)

    def _on_phone_frame(self, identity: bytes, payload: bytes, user_id: bytes) -> None:
        try:
            env = self.codec.decode(payload)
        except p.DecodeError as exc:
            self.log.warning("actor=glasses phone=%r decode error kind=%s detail=%s", identity, exc.kind, exc.detail)
            self.frames_dropped += 1
            self._error(identity, "", f"decode:{exc.kind}", exc.detail)
            return
        body = env.body
        if isinstance(body, p.Hello):
            self.log.info("actor=glasses hello client=%s phone=%r", body.client, identity)
            self._to_phone(identity, p.Ok(detail="porfiry glasses bridge"), corr=env.id)
            return
        if not isinstance(body, EVENT_TYPES):
            self.log.warning("actor=glasses phone=%r sent a non-phone message %s", identity, describe(env))
            allowed = ", ".join(t.__name__ for t in (p.Hello, *EVENT_TYPES))
            self._error(identity, env.session, "wrong_direction", f"{type(body).__name__} is not a phone message; phones send {allowed}", corr=env.id)
            return
        if not env.session:
            self._error(identity, "", "no_session", f"{type(body).__name__} {body.event_id} needs a session id in the envelope", corr=env.id)
            return
        owner = owner_key(identity, user_id)
        if not self.sessions.claim(env.session, owner, identity):
            self.log.warning("actor=glasses refused session=%s to owner=%s (owned by another phone)", env.session, owner)
            self._error(identity, env.session, "forbidden", f"session {env.session} belongs to another phone connection", corr=env.id)
            return
        if isinstance(body, p.PlaybackStatus) and self._status_for_waiter(env.session, body, identity, env.id):
            return
        item = Pending(event=to_event(body), identity=identity, corr=env.id, phone_key=owner)
        verdict = self.lanes.offer(env.session, item)
        if verdict == "start":
            self.spawn(self._drain, env.session, name=f"glasses-lane-{env.session}")
        elif verdict.startswith("busy"):
            self.log.info("actor=glasses busy session=%s event=%s %s", env.session, body.event_id, verdict)
            self._to_phone(identity, p.Busy(event_id=body.event_id, detail=verdict[6:]), session=env.session, corr=env.id)

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
            self.log.warning("actor=glasses session actor did not answer session=%s event=%s; not acked, "
                             "the phone resends; %d later events told busy", session, event_id, len(later))
            for other in later:
                self._busy(session, other, f"session {session} is not answering (event {event_id}); resend in order")
            return
        self.lanes.done(session)
        if isinstance(reply, p.EventAccepted):
            self._to_phone(item.identity, p.Ack(event_id=event_id, duplicate=reply.duplicate), session=session, corr=item.corr)
        elif isinstance(reply, p.Busy):
            self._busy(session, item, reply.detail)
            for other in self.lanes.flush(session):
                self._busy(session, other, f"session {session} is busy (event {event_id}); resend in order")
        elif isinstance(reply, p.ErrorReply):
            self.log.warning("actor=glasses session refused event=%s session=%s code=%s", event_id, session, reply.code)
            self._error(item.identity, session, reply.code, reply.detail, corr=item.corr)
        else:
            self.log.error("actor=glasses session answered %s to DeliverEvent", type(reply).__name__)
            self._error(item.identity, session, "internal", f"session answered {type(reply).__name__}", corr=item.corr)

    def _busy(self, session: str, item: Pending, detail: str) -> None:
        self._to_phone(item.identity, p.Busy(event_id=item.event.event_id, detail=detail), session=session, corr=item.corr)

    # ---- runtime -> phone -------------------------------------------------------------------
    def _to_phone(self, identity: bytes, body: p.Msg, *, session: str = "", corr: str = "") -> str:
        assert self._phone is not None
        env = p.Envelope(body=body, sender=self.name, session=session, corr=corr)
        self.busy_sent += isinstance(body, p.Busy)
        try:
            self._phone.send_nowait([identity, self.codec.encode(env)])
        except (anyio.WouldBlock, SocketClosed) as exc:
            self.frames_dropped += 1
            self.log.warning("actor=glasses could not send %s to phone=%r: %s", describe(env), identity, type(exc).__name__)
        return env.id

    def _error(self, identity: bytes, session: str, code: str, detail: str, *, corr: str = "") -> None:
        self._to_phone(identity, p.ErrorReply(code=code, detail=detail), session=session, corr=corr)

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, TO_PHONE):
            identity = self.sessions.route(msg.session)
            if identity is None:
                self.log.warning("actor=glasses no phone owns session=%s; dropped %s", msg.session, describe(msg.env))
                return
            self._to_phone(identity, body, session=msg.session)
        elif isinstance(body, p.PhoneCommand):
            self.spawn(self._relay_command, msg, name=f"glasses-command-{body.command.task_id}")
        elif isinstance(body, p.EdgeStatsRequest):
            dropped = self.frames_dropped + (self._phone.dropped if self._phone else 0)
            msg.reply(self, p.EdgeStats(busy=self.busy_sent, dropped_frames=dropped, sessions=len(self.sessions)))
        elif isinstance(body, p.SessionsForgotten):
            # A little under the session actor's TTL: its sweep and our clock agree on "idle".
            gone = self.sessions.forget(body.sessions, 0.9 * self.config.session.idle_session_ttl_s)
            self.log.info("actor=glasses forgot %d idle session(s); %d remain", len(gone), len(self.sessions))
        elif msg.env.corr:
            # A reply that came after its ask gave up (e.g. the session actor answering a
            # DeliverEvent after a restart). The phone resends; answering it would start a loop.
            self.log.info("actor=glasses late reply ignored %s", describe(msg.env))
        else:
            await super().handle(msg)

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
