"""PhoneClient: what a phone bridge process imports to talk to the runtime's GlassesBridge.

    async with PhoneClient("tcp://127.0.0.1:7600", client_id="pixel") as phone:
        async with phone.events("s1") as incoming:
            await phone.send_text("s1", "what time is it?")   # returns once the runtime has it
            async for env in incoming: ...                     # Display / TurnDone / PlaybackCommand / ErrorReply

Delivery is at-least-once: every event keeps its event id until the runtime acks it. Unacked
events are resent after `ack_timeout_s`, and each further resend of the same event waits twice as
long, up to `max_ack_timeout_s` (a runtime behind under load is not flooded with resends that make
it further behind); `Busy` backs the session off (doubling, capped) and resends. Whenever a session's events are resent, ALL its unacked events are resent in their
original order (and newer events of that session wait for that round), so a lost ack or a
restarting session actor never reorders what the user said. After `max_resends` the event
fails with DeliveryFailed. The runtime drops duplicates by event id. Connected again after the
link dropped (a bridge restart), the client sends once more every acked event still waiting for
its TurnDone: a TurnDone the old bridge held died with it, and the runtime answers a duplicate of
a finished event with that turn's answer and a TurnDone.

A session opens on use: the first event for a session id claims it for this client. With CURVE
it belongs to this key pair. Without, to a secret token the client draws and sends with that
first event (the runtime's Ack confirms it); every later event of the session carries it
(`tokens`, a `SessionTokens`, keeps them; pass a file-backed one to resume sessions from another
process); until that Ack arrives, newer events of the session wait.
"""
from __future__ import annotations

import collections
import inspect
import logging
import math
import os
import secrets
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable, Union

import anyio
import anyio.abc
import msgspec
import zmq
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from zmq.utils.monitor import parse_monitor_message

import protocol as p
from transport.zmqio import AsyncSocket, SocketClosed
from phone.credentials import SessionTokens
from transport.keys import ClientKeys

_log = logging.getLogger("porfiry.phone")

PlaybackAnswer = Union[tuple[str, str], None]
PlaybackHandler = Callable[[str, p.PlaybackCommand], Union[PlaybackAnswer, Awaitable[PlaybackAnswer]]]
"""(session, command) -> (state, detail) to answer with a PlaybackStatus, or None not to answer."""

_HANDSHAKE_FAILURES = zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL


_FINISHED_KEPT = 10_000  # outcomes kept so acked() can be asked after the fact


class PhoneError(Exception):
    """Base of the client's errors; the message says what happened and what to do."""


class PhoneUnreachable(PhoneError):
    pass


class PhoneRefused(PhoneError):
    pass


class DeliveryFailed(PhoneError):
    pass


class EventRejected(PhoneError):
    """The runtime answered the event with ErrorReply (e.g. code "forbidden")."""

    def __init__(self, event_id: str, code: str, detail: str):
        super().__init__(f"event {event_id} rejected: {code}: {detail}")
        self.event_id = event_id
        self.code = code
        self.detail = detail


class TurnTimeout(PhoneError, TimeoutError):
    pass


def answer_started(session: str, command: p.PlaybackCommand) -> PlaybackAnswer:
    """The default playback handler: every command "started"."""
    return ("started", "")


@dataclass
class Turn:
    """What one user event produced: every display in order and the TurnDone that closed it."""

    event_id: str
    displays: list[p.Display]
    done: p.TurnDone

    @property
    def final_text(self) -> str:
        """The answer: the last final display, or the TurnDone's copy when that display was lost."""
        finals = [d.text for d in self.displays if d.final]
        return finals[-1] if finals else self.done.final


@dataclass(eq=False)
class _Outgoing:
    session: str
    event_id: str
    env_id: str
    payload: bytes
    body: p.Msg | None = None
    sent_at: float = -math.inf  # -inf: held back, not sent yet
    resends: int = 0
    done: anyio.Event = field(default_factory=anyio.Event)
    ack: p.Ack | None = None
    error: PhoneError | None = None


@dataclass(eq=False)
class _Lane:
    backoff: float
    pending: collections.OrderedDict[str, _Outgoing] = field(default_factory=collections.OrderedDict)
    stalled: bool = False  # Busy: wait until resume_at, then resend everything in order
    resume_at: float = 0.0
    opening: _Outgoing | None = None  # no token yet: this event opens the session, the rest wait for its Ack
    proposal: str = ""  # without CURVE: the token this client offers for a session it opens


class PhoneClient:
    """One connection to the runtime's phone endpoint. Use as `async with PhoneClient(...)`."""

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str = "phone",
        curve: ClientKeys | None = None,
        ack_timeout_s: float = 1.0,
        max_ack_timeout_s: float = 4.0,
        max_resends: int = 10,
        busy_backoff_s: float = 0.1,
        max_backoff_s: float = 2.0,
        connect_timeout_s: float | None = 10.0,
        playback_handler: PlaybackHandler | None = answer_started,
        max_message_bytes: int = p.DEFAULT_MAX_MESSAGE_BYTES,
        zmq_context: zmq.Context | None = None,
        clock: Callable[[], float] = time.time,
        tokens: SessionTokens | None = None,
        max_undone: int = 4096,
    ):
        if "/" in client_id or not client_id:
            raise ValueError(f"client_id {client_id!r} must be non-empty and contain no '/'")
        self.endpoint = endpoint
        self.client_id = client_id
        self.identity = f"{client_id}/{os.urandom(6).hex()}".encode()
        self.curve = curve
        self.ack_timeout_s = ack_timeout_s
        self.max_ack_timeout_s = max(ack_timeout_s, max_ack_timeout_s)
        self.max_resends = max_resends
        self.busy_backoff_s = busy_backoff_s
        self.max_backoff_s = max_backoff_s
        self.connect_timeout_s = connect_timeout_s
        self.playback_handler = playback_handler
        self.clock = clock
        self.tokens = tokens if tokens is not None else SessionTokens()
        self.codec = p.Codec(max_message_bytes)
        self.max_undone = max_undone  # the latest this many are asked about again; older ones not
        self._init_state(zmq_context)

    def _init_state(self, zmq_context: zmq.Context | None) -> None:
        """What the client tracks: sockets, lanes, the events in flight and its counters."""
        self._own_context = zmq_context is None
        self._context = zmq_context
        self._sock: AsyncSocket | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._monitor: AsyncSocket | None = None
        self._lanes: dict[str, _Lane] = {}
        self._by_env: dict[str, _Outgoing] = {}
        self._finished: collections.OrderedDict[str, _Outgoing] = collections.OrderedDict()  # recent, for acked()
        # session (None: every session) -> its subscribers; one dict lookup per incoming message
        self._subscribers: dict[str | None, list[MemoryObjectSendStream[p.Envelope]]] = {}
        self._wake: anyio.Event | None = None  # anyio events need a running loop: made on entry
        self._hello_id = ""
        self._hello_done: anyio.Event | None = None
        self._drop_acks = 0
        # acked events no TurnDone has covered yet: a bridge that died holding their TurnDone
        # cannot tell it again, so after a reconnect they are sent again (the runtime answers a
        # duplicate of a finished event with its final display and a TurnDone)
        self._undone: collections.OrderedDict[str, _Outgoing] = collections.OrderedDict()
        # events TurnDones covered lately: an ack may arrive after its TurnDone (one process)
        self._turn_done: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._handshakes = 0
        self.asked_again = 0  # events sent again after a reconnect
        self.refusal = ""  # why the last handshake failed, from the socket monitor
        self.resends = 0  # events resent, all sessions
        self.acks_dropped = 0  # acks dropped on purpose (drop_next_acks)
        self.busy_received = 0  # Busy answers from the runtime
        self.events_dropped = 0  # incoming messages a full subscriber could not take

    # ---- lifecycle --------------------------------------------------------------------------
    async def __aenter__(self) -> "PhoneClient":
        """Connect and, unless connect_timeout_s is None, check the link with Hello: raises
        PhoneRefused (CURVE key not allowed) or PhoneUnreachable (no answer)."""
        self._wake, self._hello_done = anyio.Event(), anyio.Event()
        context = self._context = self._context or zmq.Context()
        sock = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, self.identity)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.HEARTBEAT_IVL, 5_000)  # notice a dead link and reconnect
        sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 15_000)
        if self.curve is not None:
            sock.curve_serverkey = self.curve.server_public
            sock.curve_publickey = self.curve.public
            sock.curve_secretkey = self.curve.secret
        self._monitor = AsyncSocket(sock.get_monitor_socket(_HANDSHAKE_FAILURES | zmq.EVENT_HANDSHAKE_SUCCEEDED))
        sock.connect(self.endpoint)
        self._sock = AsyncSocket(sock, deliver=self._on_frames)  # the pump calls it: no reader task
        # The task group is entered here and left in __aexit__ WITHOUT the body's exception, so
        # an error raised inside `async with client:` reaches the caller as itself, not wrapped
        # in an ExceptionGroup.
        tg = self._tg = anyio.create_task_group()
        await tg.__aenter__()
        tg.start_soon(self._sock.run, name="phone-pump")
        tg.start_soon(self._monitor.run, name="phone-monitor-pump")
        tg.start_soon(self._watch_handshakes, self._monitor, name="phone-monitor")
        tg.start_soon(self._resender, name="phone-resender")
        try:
            if self.connect_timeout_s is not None:
                await self._hello()
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self._close()

    async def _close(self) -> None:
        assert self._tg is not None and self._sock is not None
        tg, self._tg = self._tg, None
        try:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        finally:
            self._sock.close()
            self._monitor.close()
            for streams in self._subscribers.values():
                for stream in streams:
                    stream.close()
            for lane in self._lanes.values():
                for out in lane.pending.values():
                    out.error = out.error or PhoneError(f"event {out.event_id} not acked: the client closed")
                    out.done.set()
            self._lanes.clear()
            if self._own_context and self._context is not None:
                self._context.term()
                self._context = None

    async def _hello(self) -> None:
        env = p.Envelope(body=p.Hello(client=self.client_id), sender=self.client_id)
        self._hello_id = env.id
        self._hello_refusal = ""  # the runtime's own answer: a handshake succeeding after it clears `refusal`, not this
        self._send([self.codec.encode(env)])
        with anyio.move_on_after(self.connect_timeout_s or 0):
            await self._hello_done.wait()
        self.refusal = self._hello_refusal or self.refusal
        if self.refusal:
            hint = "" if self.refusal.startswith("too_many") else (
                ". With CURVE on, the phone's public key must be in the server's keys_dir/authorized/ (see `run.py keys`)")
            raise PhoneRefused(f"the runtime at {self.endpoint} refused this phone ({self.refusal}){hint}")
        if not self._hello_done.is_set():
            raise PhoneUnreachable(
                f"no answer from the runtime at {self.endpoint} within {self.connect_timeout_s:g}s: is it running, "
                f"and does its phone.curve setting match this client's (curve {'on' if self.curve else 'off'})?")

    async def _watch_handshakes(self, monitor: AsyncSocket) -> None:
        while True:
            event = parse_monitor_message(await monitor.recv())
            if event["event"] & _HANDSHAKE_FAILURES:
                names = {zmq.EVENT_HANDSHAKE_FAILED_AUTH: "authentication refused",
                         zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "security handshake failed"}
                self.refusal = names.get(event["event"], "handshake failed")
                _log.warning("phone=%s endpoint=%s %s (code %s)", self.client_id, self.endpoint, self.refusal, event["value"])
                if not self._hello_done.is_set() and self._hello_id:
                    self._hello_done.set()
            elif event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.refusal = ""
                self._handshakes += 1
                if self._handshakes > 1:
                    self._ask_again()

    def _ask_again(self) -> None:
        """Connected again (the bridge restarted, the link came back): every acked event still
        waiting for its TurnDone is sent again, in order; its TurnDone may have died on the way."""
        for out in list(self._undone.values()):
            self.asked_again += 1
            self._send([out.payload])
        if self._undone:
            _log.info("phone=%s reconnected: asked again about %d event(s) with no TurnDone yet", self.client_id, len(self._undone))

    # ---- sending events ---------------------------------------------------------------------
    async def send_text(self, session: str, text: str, *, wait: bool = True) -> str:
        """Recognised speech or typed text. Returns its event id (after the ack when `wait`)."""
        return await self._event(session, p.UserText(event_id=p.new_id(), ts=self.clock(), text=text), wait)

    async def interrupt(self, session: str, *, wait: bool = True) -> str:
        """The user's "stop": an urgent event."""
        return await self._event(session, p.UserInterrupt(event_id=p.new_id(), ts=self.clock()), wait)

    async def button(self, session: str, button: str, *, wait: bool = True) -> str:
        return await self._event(session, p.ButtonPress(event_id=p.new_id(), ts=self.clock(), button=button), wait)

    async def start(self, session: str, *, wait: bool = True) -> str:
        return await self._event(session, p.SessionStart(event_id=p.new_id(), ts=self.clock()), wait)

    async def end(self, session: str, *, wait: bool = True) -> str:
        return await self._event(session, p.SessionEnd(event_id=p.new_id(), ts=self.clock()), wait)

    async def glasses(self, session: str, state: str, *, wait: bool = True) -> str:
        """The glasses were put on ("on") or taken off ("off"): while off, what the assistant says
        is kept unread (urgent: pushed); on again, it is shown once. Costs no model turn.
        Raises ValueError for another state (nothing is sent)."""
        if state not in ("on", "off"):
            raise ValueError(f"the glasses are 'on' or 'off', not {state!r}")
        return await self._event(session, p.GlassesState(event_id=p.new_id(), ts=self.clock(), state=state), wait)

    async def notification(self, session: str, app: str, sender: str, text: str, *, wait: bool = True) -> str:
        """Forward a notification that arrived on the phone (another app's message): data for the
        session, shown only when the session watches for it or its channel says so."""
        body = p.PhoneNotification(event_id=p.new_id(), ts=self.clock(), app=app, sender=sender, text=text)
        return await self._event(session, body, wait)

    async def playback_status(self, session: str, task_id: str, state: str, detail: str = "", *, wait: bool = True) -> str:
        """Report a playback's state (started / paused / resumed / stopped / failed)."""
        body = p.PlaybackStatus(event_id=p.new_id(), ts=self.clock(), task_id=task_id, state=state, detail=detail)
        return await self._event(session, body, wait)

    async def acked(self, event_id: str, outgoing: _Outgoing | None = None) -> p.Ack:
        """Wait until the runtime acks `event_id`; raises DeliveryFailed / EventRejected."""
        out = outgoing or self._find(event_id) or self._finished.get(event_id)
        if out is None:
            raise KeyError(f"event {event_id} was never sent by this client (or finished long ago)")
        await out.done.wait()
        if out.error is not None:
            raise out.error
        assert out.ack is not None
        return out.ack

    @property
    def pending(self) -> int:
        """Events sent and not yet acked, all sessions."""
        return sum(len(lane.pending) for lane in self._lanes.values())

    async def _event(self, session: str, body: p.Msg, wait: bool) -> str:
        if not session:
            raise ValueError("a session id is required")
        out = self._submit(session, body)
        if wait:
            await self.acked(out.event_id, out)
        return out.event_id

    def _submit(self, session: str, body: p.Msg) -> _Outgoing:
        if self._sock is None:
            raise PhoneError("the client is not connected: use `async with PhoneClient(...)`")
        lane = self._lanes.get(session) or _Lane(backoff=self.busy_backoff_s)
        if self.curve is None:
            # a session's opening event carries a token drawn here: its resend (lost Ack) proves
            # ownership with it, and nothing but the runtime's Ack ever tells it to anyone
            lane.proposal = lane.proposal or secrets.token_urlsafe(24)
            body = msgspec.structs.replace(body, token=self.tokens.get(session) or lane.proposal)
        env = p.Envelope(body=body, sender=self.client_id, session=session)
        payload = self.codec.encode(env)
        if len(payload) > self.codec.max_bytes:
            raise ValueError(f"event of {len(payload)} bytes exceeds the runtime's limit of {self.codec.max_bytes}")
        out = _Outgoing(session=session, event_id=body.event_id, env_id=env.id, payload=payload, body=body)  # type: ignore[attr-defined]
        self._lanes[session] = lane
        now = anyio.current_time()
        # Behind a Busy or an overdue ack, a new event waits for the in-order resend round;
        # behind a session's opening event (no token yet), for that event's Ack.
        send_now = not lane.stalled and self._lane_due(lane) > now and lane.opening is None
        if self.curve is None and not self.tokens.get(session) and lane.opening is None and not lane.pending:
            lane.opening = out
        lane.pending[out.event_id] = out
        self._by_env[out.env_id] = out
        if send_now:
            self._transmit(out, now)
        self._wake.set()
        return out

    def _transmit(self, out: _Outgoing, now: float) -> None:
        out.sent_at = now
        token = self.tokens.get(out.session) if self.curve is None else ""
        if token and out.body is not None and getattr(out.body, "token", token) != token:
            out.body = msgspec.structs.replace(out.body, token=token)  # the token came after it was made
            out.payload = self.codec.encode(p.Envelope(body=out.body, id=out.env_id, sender=self.client_id, session=out.session))
        self._send([out.payload])

    def _send(self, frames: list[bytes]) -> None:
        assert self._sock is not None
        try:
            self._sock.send_nowait(frames)
        except (anyio.WouldBlock, SocketClosed) as exc:
            _log.warning("phone=%s could not queue a message (%s); it will be resent", self.client_id, type(exc).__name__)

    def _lane_due(self, lane: _Lane) -> float:
        if not lane.pending:
            return math.inf
        if lane.stalled:
            return lane.resume_at
        if lane.opening is not None:
            return lane.opening.sent_at + self._ack_wait(lane.opening)
        return min(out.sent_at + self._ack_wait(out) for out in lane.pending.values())

    def _ack_wait(self, out: _Outgoing) -> float:
        """How long to wait for this send's ack: doubling with each resend, capped."""
        return min(self.ack_timeout_s * (1 << min(out.resends, 16)), self.max_ack_timeout_s)

    def _resend_lane(self, lane: _Lane, now: float) -> None:
        lane.stalled = False
        for out in list(lane.pending.values()) if lane.opening is None else [lane.opening]:
            if out.sent_at != -math.inf:
                out.resends += 1
                if out.resends > self.max_resends:
                    why = f"the runtime refused this phone ({self.refusal})" if self.refusal else "the runtime is unreachable or overloaded"
                    self._finish(out, error=DeliveryFailed(
                        f"event {out.event_id} for session {out.session} was not acknowledged after {self.max_resends} "
                        f"resends to {self.endpoint}: {why}"))
                    continue
                self.resends += 1
            self._transmit(out, now)

    async def _resender(self) -> None:
        while True:
            self._wake = anyio.Event()
            now = anyio.current_time()
            next_due = math.inf
            for session, lane in list(self._lanes.items()):
                if self._lane_due(lane) <= now:
                    self._resend_lane(lane, now)
                next_due = min(next_due, self._lane_due(lane))
                if not lane.pending and not lane.stalled:
                    del self._lanes[session]
            with anyio.move_on_after(max(0.0, next_due - now)):
                await self._wake.wait()

    def _finish(self, out: _Outgoing, *, ack: p.Ack | None = None, error: PhoneError | None = None) -> None:
        lane = self._lanes.get(out.session)
        if ack is not None and self.curve is None and (token := ack.token or getattr(out.body, "token", "")):
            self.tokens.set(out.session, token)
        if lane is not None:
            lane.pending.pop(out.event_id, None)
            if lane.opening is out:
                lane.opening = None  # the session is open (or refused): the events behind it go now
                now = anyio.current_time()
                if not lane.stalled:
                    for held in list(lane.pending.values()):
                        self._transmit(held, now)
                self._wake.set()
        self._by_env.pop(out.env_id, None)
        if ack is not None and not isinstance(out.body, p.PlaybackStatus) and out.event_id not in self._turn_done:
            self._undone[out.event_id] = out  # a status closes no turn
            while len(self._undone) > self.max_undone:
                self._undone.popitem(last=False)
        out.ack, out.error = ack, error
        self._finished[out.event_id] = out
        while len(self._finished) > _FINISHED_KEPT:
            self._finished.popitem(last=False)
        if error is not None:
            _log.warning("phone=%s %s", self.client_id, error)
        out.done.set()

    def _find(self, event_id: str) -> _Outgoing | None:
        for lane in self._lanes.values():
            if event_id in lane.pending:
                return lane.pending[event_id]
        return None

    # ---- receiving --------------------------------------------------------------------------
    @asynccontextmanager
    async def events(self, session: str | None = None, *, buffer: int = 4096) -> AsyncIterator[MemoryObjectReceiveStream[p.Envelope]]:
        """Subscribe to what the runtime sends (all sessions, or one): Display, TurnDone,
        PlaybackCommand, ErrorReply envelopes, from now on. Subscribe before sending."""
        tx, rx = anyio.create_memory_object_stream[p.Envelope](buffer)
        self._subscribers.setdefault(session, []).append(tx)
        try:
            yield rx
        finally:
            streams = self._subscribers[session]
            streams.remove(tx)
            if not streams:
                del self._subscribers[session]
            tx.close()
            rx.close()

    def _on_frames(self, frames: list[bytes]) -> None:
        try:
            env = self.codec.decode(frames[-1])
        except p.DecodeError as exc:
            _log.warning("phone=%s undecodable message from the runtime: %s", self.client_id, exc)
            return
        self._dispatch(env)

    def _dispatch(self, env: p.Envelope) -> None:
        body = env.body
        if isinstance(body, p.Ack):
            out = self._find(body.event_id)
            if out is None:
                return  # the ack of a resend we no longer wait for
            if self._drop_acks > 0:
                self._drop_acks -= 1
                self.acks_dropped += 1
                return
            lane = self._lanes.get(out.session)
            if lane is not None:
                lane.backoff = self.busy_backoff_s
            self._finish(out, ack=body)
        elif isinstance(body, (p.Busy, p.RateLimited)):
            self.busy_received += 1
            out = self._find(body.event_id)
            lane = self._lanes.get(out.session) if out else None
            if lane is not None and not lane.stalled:
                lane.stalled = True
                wait = max(lane.backoff, body.retry_after_s) if isinstance(body, p.RateLimited) else lane.backoff
                lane.resume_at = anyio.current_time() + wait
                lane.backoff = min(lane.backoff * 2, self.max_backoff_s)
                _log.info("phone=%s session=%s busy, resending in %.2fs: %s", self.client_id, env.session, lane.resume_at - anyio.current_time(), body.detail)
                self._wake.set()
        elif isinstance(body, (p.Ok, p.ErrorReply)) and env.corr and env.corr == self._hello_id:
            if isinstance(body, p.ErrorReply):  # e.g. the runtime is at phone.max_connections
                self._hello_refusal = f"{body.code}: {body.detail}"
            self._hello_done.set()
        else:
            if isinstance(body, p.TurnDone):
                for event_id in body.event_ids:
                    self._undone.pop(event_id, None)
                    self._turn_done[event_id] = None
                while len(self._turn_done) > self.max_undone:
                    self._turn_done.popitem(last=False)
            if isinstance(body, p.ErrorReply):
                out = self._by_env.get(env.corr) if env.corr else None
                if out is not None:
                    self._finish(out, error=EventRejected(out.event_id, body.code, body.detail))
                else:
                    _log.warning("phone=%s runtime error %s: %s", self.client_id, body.code, body.detail)
            elif isinstance(body, p.PlaybackCommand) and self.playback_handler is not None:
                assert self._tg is not None
                self._tg.start_soon(self._answer_playback, env.session, body)
            self._publish(env)

    def _publish(self, env: p.Envelope) -> None:
        streams = [*self._subscribers.get(env.session, ()), *self._subscribers.get(None, ())]
        for stream in streams:
            try:
                stream.send_nowait(env)
            except anyio.WouldBlock:
                self.events_dropped += 1
                _log.warning("phone=%s a subscriber is not reading; dropped %s", self.client_id, type(env.body).__name__)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def _answer_playback(self, session: str, command: p.PlaybackCommand) -> None:
        assert self.playback_handler is not None
        try:
            answer = self.playback_handler(session, command)
            if inspect.isawaitable(answer):
                answer = await answer
            if answer is not None:
                state, detail = answer
                await self.playback_status(session, command.task_id, state, detail)
        except PhoneError as exc:
            _log.warning("phone=%s playback status for task %s not delivered: %s", self.client_id, command.task_id, exc)
        except Exception:  # noqa: BLE001 - a faulty handler must not kill the client
            _log.exception("phone=%s playback handler failed on task %s", self.client_id, command.task_id)

    # ---- conveniences -----------------------------------------------------------------------
    async def turn(self, session: str, text: str, *, timeout: float = 60.0,
                   on_message: Callable[[p.Msg], None] | None = None) -> Turn:
        """Say `text` and collect what the glasses show until the TurnDone that covers it;
        `on_message` sees every message of the session meanwhile (displays, playback commands,
        errors) as it arrives. Raises TurnTimeout, EventRejected, DeliveryFailed."""
        displays: list[p.Display] = []
        async with self.events(session) as incoming:
            with anyio.move_on_after(timeout):
                event_id = await self.send_text(session, text)
                async for env in incoming:
                    body = env.body
                    if on_message is not None:
                        on_message(body)
                    if isinstance(body, p.Display):
                        displays.append(body)
                    elif isinstance(body, p.TurnDone) and (event_id in body.event_ids or not body.event_ids):
                        return Turn(event_id=event_id, displays=displays, done=body)
        raise TurnTimeout(f"no TurnDone for {text[:40]!r} in session {session} within {timeout:g}s "
                          f"({len(displays)} display lines so far)")

    # ---- test hooks -------------------------------------------------------------------------
    def drop_next_acks(self, count: int = 1) -> None:
        """Pretend the next `count` acks were lost (tests resend + dedup)."""
        self._drop_acks += count

    def send_raw(self, frames: list[bytes]) -> None:
        """Send frames as they are, bypassing the codec (tests malformed input)."""
        self._send(frames)
