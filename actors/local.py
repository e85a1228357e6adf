"""Links between actors of one OS process that skip ZeroMQ.

Actors of one process group (or every actor, in inproc mode) used to reach each other over
inproc:// sockets. At low load each such hop still woke ZeroMQ's signaler and the
receiver's pump, and cost as much as a hop between processes. A `LocalLink` hands the encoded
message straight to the receiving actor's mailbox, in the sender's task: the receiver decodes it
with its own codec (the same size limit and strict validation as off the wire), so actors still
share nothing but bytes, and a reply comes back the same way.

It behaves like the link it replaces: order is kept per link, a full mailbox makes the message
wait in the link's backlog (bounded like a socket's send queue: past it `send_nowait` raises
anyio.WouldBlock and `send` waits), and a message for an actor that is not running in this
process now (stopped, restarting) is dropped with a warning, as a crashed actor's mailbox is.
The receiver is looked up on every send, so a restarted actor is found again.
"""
from __future__ import annotations

import collections
import logging
import weakref
from typing import Any, Callable, Protocol

import anyio
import zmq

import protocol as p
from transport.zmqio import SocketClosed

Accepted = tuple[p.Envelope, Callable[[bytes], None]]
"""A decoded message and the way to answer its sender."""


class Actor(Protocol):
    """What a link needs of the actor it delivers to (an actors.base.Actor)."""

    zmq: zmq.Context

    def accept(self, payload: bytes, reply: Callable[[bytes], None]) -> Accepted | None: ...
    def _dispatch_nowait(self, envelope: p.Envelope, reply: Callable[[bytes], None]) -> None: ...
    async def _dispatch(self, envelope: p.Envelope, reply: Callable[[bytes], None]) -> None: ...


class Endpoint(Protocol):
    """What a link needs of the endpoint that owns it (an actors.base.Endpoint)."""

    zmq: zmq.Context
    name: str

    def spawn(self, fn: Callable[..., Any], *args: Any, name: str | None = None) -> None: ...
    def _decode(self, payload: bytes) -> p.Envelope | None: ...
    def _dispatch_nowait(self, envelope: p.Envelope, reply: Callable[[bytes], None]) -> None: ...

_log = logging.getLogger("porfiry.actor")

_ACTORS: "weakref.WeakKeyDictionary[zmq.Context, dict[str, Actor]]" = weakref.WeakKeyDictionary()
"""The actors of this process by ZeroMQ context and inbox address: one context is one runtime
(tests run several runtimes in one process, each with its own context)."""


def register(actor: "Actor", address: str) -> None:
    _ACTORS.setdefault(actor.zmq, {})[address] = actor


def unregister(actor: "Actor", address: str) -> None:
    actors = _ACTORS.get(actor.zmq)
    if actors is not None and actors.get(address) is actor:
        del actors[address]


def local_actor(context: zmq.Context, address: str) -> "Actor | None":
    actors = _ACTORS.get(context)
    return actors.get(address) if actors else None


class LocalLink:
    """What `Endpoint._link` returns for an actor of this process: `send_nowait`, `send`, `close`."""

    def __init__(self, owner: "Endpoint", address: str, *, send_buffer: int = 10_000):
        self._owner = owner
        self._address = address
        self._backlog: collections.deque[tuple["Actor", Accepted]] = collections.deque()
        self._send_buffer = send_buffer
        self._room: anyio.Event | None = None
        self._closed = False
        self.sent = 0
        self.dropped = 0

    def close(self) -> None:
        self._closed = True
        if self._room is not None:
            self._room.set()

    def send_nowait(self, frames: list[bytes]) -> None:
        if self._closed:
            raise SocketClosed("link is closed")
        if len(self._backlog) >= self._send_buffer:
            raise anyio.WouldBlock
        target = local_actor(self._owner.zmq, self._address)
        if target is None:
            self.dropped += 1
            _log.warning("actor=%s dropped a message for %s: it is not running", self._owner.name, self._address)
            return
        inbound = target.accept(frames[0], self._reply)
        if inbound is None:
            return
        self.sent += 1
        if not self._backlog:
            try:
                target._dispatch_nowait(*inbound)
                return
            except anyio.WouldBlock:
                self._owner.spawn(self._drain, name=f"local-link-{self._address}")
        self._backlog.append((target, inbound))

    async def send(self, frames: list[bytes]) -> None:
        while len(self._backlog) >= self._send_buffer and not self._closed:
            self._room = self._room or anyio.Event()
            await self._room.wait()
        self.send_nowait(frames)

    async def _drain(self) -> None:
        """The receiver's mailbox was full: deliver the backlog in order as it makes room."""
        while self._backlog and not self._closed:
            target, inbound = self._backlog[0]
            try:
                await target._dispatch(*inbound)
            except anyio.ClosedResourceError:  # that actor stopped: its mail is gone with it
                self.dropped += len(self._backlog)
                self._backlog.clear()
                break
            self._backlog.popleft()
            if self._room is not None:
                self._room.set()
                self._room = None

    def _reply(self, payload: bytes) -> None:
        """How the receiver answers: the reply goes to the sender as if it came off this link."""
        owner = self._owner
        envelope = owner._decode(payload)
        if envelope is None:
            return
        try:
            owner._dispatch_nowait(envelope, self._reply_back)
        except anyio.WouldBlock:
            _log.warning("actor=%s dropped a message from %s: its mailbox is full", owner.name, self._address)

    def _reply_back(self, payload: bytes) -> None:
        """An answer to something the receiver sent back on this link (an uncorrelated message)."""
        try:
            self.send_nowait([payload])
        except anyio.WouldBlock:
            _log.warning("actor=%s dropped an answer to %s: the link is full", self._owner.name, self._address)

