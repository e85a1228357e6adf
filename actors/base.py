"""The actor base: an inbox, outbound links, tell and ask, and structured logs.

Wiring, the same in every topology:
- each actor binds one ROUTER inbox at `topology.address(name)`;
- to talk to another actor it connects a DEALER link to that actor's inbox (lazily, once);
- a reply travels back over the connection the request came in on (ROUTER -> identity), so an
  outside client (CLI, phone tools) can ask any actor without an inbox of its own;
- replies and streamed chunks carry `corr` = the request's id and go to the waiting `ask`, not
  to the mailbox, so an actor busy awaiting a reply never deadlocks on its own mailbox.

Handlers run one at a time from a bounded mailbox (`actors/channel.py`: cheaper per message than a
memory object stream, and so are the reply slots of asks); an actor that must serve many requests at
once (one slow tool must not stall other sessions) starts tasks with `spawn`. A handler that
raises is logged and answered with ErrorReply: a bad message never kills an actor.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Literal

import anyio
import anyio.abc
import msgspec
import zmq

import protocol as p
from actors import local
from actors.channel import Channel, Deadlines
from actors.topology import Topology
from transport import bus
from transport.zap import zap_service
from transport.zmqio import AsyncSocket, SocketClosed
from core import tracing
from core.config import Config
from core.ratelog import RateLimitedLog

_log = logging.getLogger("porfiry.actor")


class AskTimeout(TimeoutError):
    pass


class MessageTooLarge(ValueError):
    """A request larger than protocol.max_message_bytes: the receiver would refuse it unanswered,
    so it is never sent and the caller fails at once instead of waiting for a timeout."""


class RequestLost(Exception):
    """The request died with the process it went to, and is not to be asked again."""


@dataclasses.dataclass(frozen=True, slots=True)
class SendAgain:
    """A verdict on a request whose target's process was replaced: send it once more, to the new
    process."""
    body: p.Msg | None = None  # a changed request (a new request id, say); None: the same
    timeout: float | None = None  # its wait from now on; None: the deadline stays


RUNS_THERE: Literal["runs_there"] = "runs_there"  # it runs in the new process (sent as it came up): wait there
NO_VERDICT: Literal["no_verdict"] = "no_verdict"  # not known yet: asked again at the next probe
LOST: Literal["lost"] = "lost"  # it died with the old process and may not be made again: RequestLost
Verdict = SendAgain | Literal["runs_there", "no_verdict", "lost"]
WhenReplaced = Callable[["Asking", float], Awaitable[Verdict]]


def describe(env: p.Envelope) -> str:
    """Structured log fields for one message."""
    parts = [f"type={type(env.body).__name__}", f"id={env.id}"]
    if env.session:
        parts.append(f"session={env.session}")
    if env.corr:
        parts.append(f"corr={env.corr}")
    if env.sender:
        parts.append(f"from={env.sender}")
    return " ".join(parts)


class Inbound:
    """A received message and the way back to its sender."""

    __slots__ = ("env", "_send")

    def __init__(self, env: p.Envelope, send: Callable[[bytes], None]):
        self.env = env
        self._send = send

    @property
    def body(self) -> p.Msg:
        return self.env.body

    @property
    def session(self) -> str:
        return self.env.session

    def reply(self, endpoint: "Endpoint", body: p.Msg) -> None:
        """Send `body` back to the sender, correlated with this message."""
        envelope = p.Envelope(body=body, sender=endpoint.name, session=self.env.session, corr=self.env.id)
        try:
            self._send(endpoint.codec.encode(envelope))
        except (anyio.WouldBlock, SocketClosed) as exc:
            # The asker reads nothing (its pipe and our queue are full) or we are stopping: drop
            # the reply - the asker times out and its caller resends - rather than crash the actor.
            _log.warning("actor=%s dropped a reply %s: %s", endpoint.name, describe(envelope), type(exc).__name__)


class Endpoint:
    """Outbound links with tell/ask. A bare Endpoint is what a CLI client or test uses; an Actor
    adds an inbox."""

    name = "client"
    makes_bus_keys = False  # a client reads the bus pair; an actor makes it at first start

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None, name: str | None = None):
        self.config = config
        if name:
            self.name = name
        self.topology = Topology(config.topology, owner=self.name)
        self.codec = p.Codec(config.protocol.max_message_bytes)
        self.zmq = zmq_context or zmq.Context.instance()
        self.log = logging.getLogger(f"porfiry.{self.name}")
        self._links: dict[str, AsyncSocket] = {}
        self._pending: dict[str, Channel[p.Envelope]] = {}
        self._deadlines = Deadlines()  # the timeouts of asks: no cancel scope per receive
        self._tg: anyio.abc.TaskGroup | None = None
        self._bus_keys: bus.BusKeys | None = None
        self._started_at: dict[str, float] = {}  # actor -> the incarnation its Pong last told
        self.probe_s = config.session.probe_s  # a request silent this long: is the process that has it still there?
        self._probes: dict[str, tuple[float, anyio.Event, list[float]]] = {}  # target -> its probe in progress

    def bus_keys(self) -> bus.BusKeys | None:
        """The bus pair when the bus is authenticated (transport/bus.py: tcp mode), else None.
        Raises transport.keys.KeyFileError for a client when the runtime has not made it yet."""
        topology = self.config.topology
        if self._bus_keys is None and bus.bus_curve_on(topology.mode, topology.bus_curve):
            keys_dir = self.config.path(self.config.phone.keys_dir)
            self._bus_keys = bus.bus_keys(keys_dir, create=self.makes_bus_keys)
        return self._bus_keys

    # ---- lifecycle --------------------------------------------------------------------------
    @asynccontextmanager
    async def running(self) -> AsyncIterator["Endpoint"]:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._deadlines.run, name=f"{self.name}-deadlines")
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()
                for link in self._links.values():
                    link.close()
                self._links.clear()

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        assert self._tg is not None, "endpoint is not running"
        self._tg.start_soon(fn, *args, name=name)

    # ---- sending ----------------------------------------------------------------------------
    def _link(self, target: str) -> AsyncSocket | local.LocalLink:
        link = self._links.get(target)
        if link is None:
            address = self.topology.address(target)
            if address.startswith("inproc://") and local.local_actor(self.zmq, address) is not None:
                link = self._links[target] = local.LocalLink(self, address)  # same process: no ZeroMQ
                return link
            keys = self.bus_keys() if bus.needs_curve(address) else None
            sock = self.zmq.socket(zmq.DEALER)
            sock.setsockopt(zmq.IDENTITY, f"{self.name}-{os.getpid()}-{os.urandom(3).hex()}".encode())
            sock.setsockopt(zmq.LINGER, 0)
            if keys is not None:
                bus.secure_client(sock, keys)
            sock.connect(address)

            def reply_on_link(payload: bytes) -> None:
                link.send_nowait([payload])

            def deliver(frames: list[bytes]) -> None:
                envelope = self._decode(frames[0])
                if envelope is not None:
                    self._dispatch_nowait(envelope, reply_on_link)

            async def deliver_wait(frames: list[bytes]) -> None:
                envelope = self._decode(frames[0])
                if envelope is not None:
                    await self._dispatch(envelope, reply_on_link)

            # the pump hands each message to `deliver` itself: no reader task, one switch less
            link = AsyncSocket(sock, deliver=deliver, deliver_wait=deliver_wait)
            self._links[target] = link
            assert self._tg is not None, "endpoint is not running"
            self._tg.start_soon(link.run, name=f"link-{target}")
        return link

    def tell(self, target: str, body: p.Msg, *, session: str = "", corr: str = "") -> str:
        envelope = p.Envelope(body=body, sender=self.name, session=session, corr=corr)
        self._link(target).send_nowait([self.codec.encode(envelope)])
        return envelope.id

    async def ask(self, target: str, body: p.Msg, *, session: str = "", timeout: float | None = None) -> p.Msg:
        """Request/reply. Raises AskTimeout if no reply arrives in time (default from config)."""
        timeout = self.config.supervisor.ask_timeout_s if timeout is None else timeout
        replies, request_id = await self._request(target, body, session, 256)
        try:
            reply = await replies.receive(timeout)
        finally:
            self._pending.pop(request_id, None)
            replies.close()
        if reply is None:
            raise AskTimeout(f"{target} did not answer {type(body).__name__} within {timeout:g}s")
        return reply.body

    @asynccontextmanager
    async def ask_stream(self, target: str, body: p.Msg, *, session: str = "", buffer: int = 256):
        """Send a request and receive every envelope correlated with it (streamed replies): a
        Channel, `await replies.receive(timeout)` (None once `timeout` passed) or `async for`."""
        async with self.request_stream(target, body, session=session, buffer=buffer) as (replies, _):
            yield replies

    @asynccontextmanager
    async def request_stream(self, target: str, body: p.Msg, *, session: str = "", buffer: int = 256):
        """`ask_stream`, with the request's envelope id too (for `resend` and `post_reply`)."""
        replies, request_id = await self._request(target, body, session, buffer)
        try:
            yield replies, request_id
        finally:
            self._pending.pop(request_id, None)
            replies.close()

    # ---- asking again when the other side's process was replaced ---------------------------
    async def incarnation(self, target: str) -> float | None:
        """When `target`'s process (re)started, from its Pong; None when it does not answer.
        Shared: requests waiting at once cause one Ping per probe interval, not one each."""
        now = anyio.current_time()
        probe = self._probes.get(target)
        if probe is not None and now - probe[0] < self.probe_s / 2:
            await probe[1].wait()
            return probe[2][0] if probe[2] else None
        done, result = anyio.Event(), []
        self._probes[target] = (now, done, result)
        try:
            pong = None
            with anyio.move_on_after(1.0):  # the send too: a dead process's link may be full
                pong = await self.ask(target, p.Ping(), timeout=1.0)
            if isinstance(pong, p.Pong):
                result.append(pong.started_at)
                self._started_at.setdefault(target, pong.started_at)
        except AskTimeout:
            pass
        finally:
            done.set()
        return result[0] if result else None

    async def replaced(self, target: str, since: float | None) -> float | None:
        """The one question behind every "ask again safely": is `target`'s process still the one a
        request went to (`since`, its incarnation when the request was sent)? The new process's
        start when it was replaced (remembered: requests sent from now on go to it); None while
        it does not answer, or is the same one. What to do then is the caller's: a request that
        changes nothing is sent again, one that may have acted is asked about or reported lost."""
        now_started = await self.incarnation(target)
        if now_started is None or now_started == since:
            return None
        self._started_at[target] = now_started
        return now_started

    @asynccontextmanager
    async def asking(self, target: str, body: p.Msg, *, session: str = "", buffer: int = 256,
                     when_replaced: WhenReplaced | None = None,
                     on_again: Callable[[], None] | None = None) -> AsyncIterator["Asking"]:
        """Send a request that may be asked again (`Asking`); its replies come until the block ends."""
        incarnation = self._started_at.get(target)  # the process it goes to, as far as we know
        replies, request_id = await self._request(target, body, session, buffer)
        try:
            yield Asking(self, target, body, session, replies, request_id, incarnation, when_replaced, on_again)
        finally:
            self._pending.pop(request_id, None)
            replies.close()

    async def ask_again_if_answering(self, target: str, body: p.Msg, *, session: str = "",
                                     on_retry: Callable[[], None] | None = None) -> p.Msg:
        """`ask`, for a request that changes nothing: unanswered (its process died with it, or was
        slow for a moment), it is asked once more when `target` answers a Ping again."""
        timeout = self.config.supervisor.ask_timeout_s
        async with self.asking(target, body, session=session, on_again=on_retry) as asking:
            envelope = await asking.reply(anyio.current_time() + timeout)
            if envelope is None and await self.incarnation(target) is not None:
                await asking.again()
                envelope = await asking.reply(anyio.current_time() + timeout)
        if envelope is None:
            raise AskTimeout(f"{target} did not answer {type(body).__name__} within {timeout:g}s")
        return envelope.body

    def post_reply(self, request_id: str, body: p.Msg, sender: str) -> bool:
        """Put `body` on an open request's stream as if `sender` had answered it (a restart
        announced elsewhere); False when nobody waits or the stream has no room."""
        waiter = self._pending.get(request_id)
        if waiter is None:
            return False
        try:
            waiter.send_nowait(p.Envelope(body=body, corr=request_id, sender=sender))
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    async def _request(self, target: str, body: p.Msg, session: str, buffer: int) -> tuple[Channel[p.Envelope], str]:
        """Send a request; its replies go to the returned channel until `_pending` forgets it.
        Made inside a span (core/tracing.py), it carries that span's traceparent."""
        envelope = p.Envelope(body=body, sender=self.name, session=session)
        payload = self._payload(envelope)
        replies: Channel[p.Envelope] = Channel(buffer, self._deadlines)
        self._pending[envelope.id] = replies
        try:
            await self._send_request(target, payload)
        except BaseException:
            self._pending.pop(envelope.id, None)
            raise
        return replies, envelope.id

    def _payload(self, envelope: p.Envelope) -> bytes:
        if tracing.ON and envelope.trace is msgspec.UNSET:  # a request made inside a span carries it
            envelope.trace = tracing.tracer.traceparent() or msgspec.UNSET
        payload = self.codec.encode(envelope)
        if len(payload) > self.codec.max_bytes:
            raise MessageTooLarge(f"{type(envelope.body).__name__} of {len(payload)} bytes exceeds "
                                  f"protocol.max_message_bytes ({self.codec.max_bytes})")
        return payload

    async def _send_request(self, target: str, payload: bytes) -> None:
        link = self._link(target)
        try:
            link.send_nowait([payload])
        except anyio.WouldBlock:  # the target's inbox is behind: wait for room, never raise
            await link.send([payload])

    # ---- receiving --------------------------------------------------------------------------
    def _decode(self, payload: bytes) -> p.Envelope | None:
        try:
            return self.codec.decode(payload)
        except p.DecodeError as exc:
            self.log.warning("actor=%s decode error kind=%s detail=%s", self.name, exc.kind, exc.detail)
            return None

    def _dispatch_nowait(self, envelope: p.Envelope, send: Callable[[bytes], None]) -> None:
        """Called by a socket's pump: a reply goes to its waiter, anything else to `unsolicited_nowait`
        (raises anyio.WouldBlock when that is full; the pump then awaits `_dispatch`)."""
        if envelope.corr:
            self._to_waiter(envelope)
        else:
            self.unsolicited_nowait(Inbound(envelope, send))

    async def _dispatch(self, envelope: p.Envelope, send: Callable[[bytes], None]) -> None:
        if envelope.corr:
            self._to_waiter(envelope)
        else:
            await self.unsolicited(Inbound(envelope, send))

    def _to_waiter(self, envelope: p.Envelope) -> None:
        """A reply or streamed chunk. Nobody waiting (the asker gave up or was cancelled) means it
        is stale: drop it. Never answer a reply - two actors would ping-pong errors."""
        waiter = self._pending.get(envelope.corr)
        if waiter is None:
            self.log.debug("actor=%s dropped stale reply %s", self.name, describe(envelope))
            return
        try:
            waiter.send_nowait(envelope)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.log.warning("actor=%s dropped reply nobody reads %s", self.name, describe(envelope))

    def unsolicited_nowait(self, msg: Inbound) -> None:
        self.log.info("actor=%s ignored uncorrelated %s", self.name, describe(msg.env))

    async def unsolicited(self, msg: Inbound) -> None:
        self.unsolicited_nowait(msg)


class Asking:
    """One request in flight to another actor, asked again safely if the process it went to was
    replaced: the one way the session waits for the model, a tool and the skill store.

    `reply(deadline)` is the next reply. Every `probe_s` of silence with time left, it asks whether
    `target`'s process is still the one the request went to (`Endpoint.replaced`: one Ping for all
    the requests waiting on that target), and when it was replaced, asks `when_replaced` (the
    caller's policy: a request that changes nothing is sent again, one that may have acted is
    asked about or reported lost). `again` sends the request once more under the same id, so its
    replies come on the same stream; `sent` counts the sendings."""

    __slots__ = ("endpoint", "target", "body", "session", "replies", "request_id", "incarnation",
                 "when_replaced", "on_again", "deadline", "sent")

    def __init__(self, endpoint: Endpoint, target: str, body: p.Msg, session: str, replies: Channel[p.Envelope],
                 request_id: str, incarnation: float | None, when_replaced: WhenReplaced | None,
                 on_again: Callable[[], None] | None):
        self.endpoint, self.target, self.body, self.session = endpoint, target, body, session
        self.replies, self.request_id = replies, request_id
        self.incarnation = incarnation  # the process it went to (its start), None while not known
        self.when_replaced, self.on_again = when_replaced, on_again
        self.deadline = 0.0
        self.sent = 1

    async def reply(self, deadline: float) -> p.Envelope | None:
        """The next reply by `deadline` (anyio's clock); None when none came by then. Raises
        RequestLost when `when_replaced` says "lost" and no reply came meanwhile."""
        self.deadline = deadline
        probe_s = self.endpoint.probe_s
        while True:
            left = self.deadline - anyio.current_time()
            wait = left if self.when_replaced is None else min(left, probe_s)
            envelope = await self.replies.receive(wait) if left > 0 else None
            if envelope is not None:
                return envelope
            if left <= wait:
                return None
            now_started = await self.endpoint.replaced(self.target, self.incarnation)
            if now_started is not None:
                envelope = await self._replaced(now_started)
                if envelope is not None:
                    return envelope

    async def _replaced(self, now_started: float) -> p.Envelope | None:
        """The caller's verdict on the request, its process replaced; a reply that came while it
        was asked (just before a "not running") is taken instead of sending or losing it."""
        verdict = await self.when_replaced(self, now_started)
        if verdict == NO_VERDICT:
            return None
        self.incarnation = now_started
        if verdict == RUNS_THERE:
            return None
        if len(self.replies):
            return self.replies.receive_nowait()
        if verdict == LOST:
            raise RequestLost(f"{type(self.body).__name__} was lost with {self.target}'s process")
        await self.again(verdict.body, timeout=verdict.timeout)
        return None

    async def again(self, body: p.Msg | None = None, *, timeout: float | None = None) -> None:
        """Send the request once more (`body`: a changed one), to whichever process serves
        `target` now; `timeout`: the wait ends that long from now."""
        if body is not None:
            self.body = body
        if timeout is not None:
            self.deadline = anyio.current_time() + timeout
        self.sent += 1
        if self.on_again is not None:
            self.on_again()
        endpoint = self.endpoint
        envelope = p.Envelope(body=self.body, id=self.request_id, sender=endpoint.name, session=self.session)
        await endpoint._send_request(self.target, endpoint._payload(envelope))


class Actor(Endpoint):
    """An Endpoint with an inbox. Subclasses set `name` and implement `handle`."""

    mailbox_size = 1024
    makes_bus_keys = True

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None, clock: Callable[[], float] = time.time):
        super().__init__(config, zmq_context=zmq_context)
        self.clock = clock
        self.started_at = 0.0
        self._mail: Channel[Inbound] = Channel(self.mailbox_size)
        self._bus_refusals = RateLimitedLog(self.log, 60.0)
        self._inbox: AsyncSocket | None = None
        # reachable by the actors of this process from now on, as a bound inproc:// inbox would be
        self._local_address = self.topology.local_address(self.name)
        if self._local_address:
            local.register(self, self._local_address)

    def inbox_socket(self) -> zmq.Socket:
        sock = self.zmq.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        addresses = self.topology.bind_addresses(self.name)
        keys = self.bus_keys() if any(bus.needs_curve(address) for address in addresses) else None
        if keys is not None:  # only holders of the bus key get in (inproc:// bypasses CURVE: in-process only)
            zap_service(self.zmq).register(bus.ZAP_DOMAIN, self._admit_bus_peer, self.spawn)
            bus.secure_server(sock, keys)
        for address in addresses:
            sock.bind(address)
        return sock

    def _admit_bus_peer(self, request: list[bytes]) -> list[bytes]:
        """ZAP, bus domain: a peer that does not hold the bus key is refused, and logged (once per
        minute with a count: a scan must not flood the log)."""
        keys = self.bus_keys()
        assert keys is not None
        reply = bus.zap_answer(request, keys)
        if reply[4] != b"200":
            address = request[5].decode(errors="replace")
            self._bus_refusals.warning("bus", "actor=%s refused a bus peer address=%s reason=%s",
                                       self.name, address, reply[5].decode())
        return reply

    @property
    def inbox_depth(self) -> int:
        depth = len(self._mail)
        return depth + (self._inbox.pending_in if self._inbox else 0)

    async def run(self, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        self.started_at = time.time()
        tracing.configure(self.config.tracing, self.name)  # once per process: its first actor names it
        async with self.running():
            self._inbox = AsyncSocket(self.inbox_socket(), deliver=self._deliver_inbound, deliver_wait=self._deliver_inbound_wait)
            self.spawn(self._inbox.run, name=f"{self.name}-inbox")
            await self.on_start()
            self.log.info("actor=%s started pid=%s at=%s", self.name, os.getpid(), self.topology.address(self.name))
            task_status.started()
            try:
                async for msg in self._mail:
                    await self._handle_safely(msg)
            finally:
                if self._local_address:
                    local.unregister(self, self._local_address)

    async def on_start(self) -> None:
        """Start background tasks, load state. Runs before the first message is handled."""

    def _inbound(self, frames: list[bytes]) -> local.Accepted | None:
        """Decode what arrived in the inbox; answer what cannot be decoded, and drop it."""
        assert self._inbox is not None
        if len(frames) != 2:
            self.log.warning("actor=%s dropped a frame set of %d parts", self.name, len(frames))
            return None
        identity, payload = frames
        return self.accept(payload, _router_reply(self._inbox, identity))

    def accept(self, payload: bytes, send: Callable[[bytes], None]) -> local.Accepted | None:
        """Decode one message for this actor, from its inbox or a LocalLink; answer what cannot
        be decoded, and drop it."""
        try:
            return self.codec.decode(payload), send
        except p.DecodeError as exc:
            self.log.warning("actor=%s decode error kind=%s detail=%s", self.name, exc.kind, exc.detail)
            error = p.Envelope(body=p.ErrorReply(code=f"decode:{exc.kind}", detail=exc.detail), sender=self.name)
            send(self.codec.encode(error))
            return None

    def _deliver_inbound(self, frames: list[bytes]) -> None:
        inbound = self._inbound(frames)
        if inbound is not None:
            self._dispatch_nowait(*inbound)

    async def _deliver_inbound_wait(self, frames: list[bytes]) -> None:
        inbound = self._inbound(frames)
        if inbound is not None:
            await self._dispatch(*inbound)

    def unsolicited_nowait(self, msg: Inbound) -> None:
        self._mail.send_nowait(msg)

    async def unsolicited(self, msg: Inbound) -> None:
        await self._mail.send(msg)

    async def _handle_safely(self, msg: Inbound) -> None:
        if isinstance(msg.body, p.Ping):
            msg.reply(self, p.Pong(actor=self.name, pid=os.getpid(), inbox_depth=self.inbox_depth, started_at=self.started_at))
            return
        try:
            await self.handle(msg)
        except Exception as exc:  # noqa: BLE001 - a bad message must never kill the actor
            self.log.exception("actor=%s handler failed on %s", self.name, describe(msg.env))
            msg.reply(self, p.ErrorReply(code="internal", detail=f"{type(exc).__name__}: {exc}"))

    async def handle(self, msg: Inbound) -> None:
        self.log.warning("actor=%s has no handler for %s", self.name, describe(msg.env))
        msg.reply(self, p.ErrorReply(code="unsupported", detail=f"{self.name} does not handle {type(msg.body).__name__}"))


def _router_reply(inbox: AsyncSocket, identity: bytes) -> Callable[[bytes], None]:
    def send(payload: bytes) -> None:
        inbox.send_nowait([identity, payload])

    return send
