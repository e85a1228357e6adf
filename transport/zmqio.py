"""ZeroMQ under anyio (and so under trio), without zmq-anyio's lost-message defect.

pyzmq has no trio support, and zmq-anyio 0.4.1 loses the next message after a task waiting in
`arecv()` is cancelled (its future stays queued). So every socket here is owned by exactly ONE
task, the pump, which is the only code that touches it:

- it drains receives until EAGAIN into a bounded memory object stream, and sends from a queue;
- it re-reads ZMQ_EVENTS after every send and recv before it waits again, because the socket's
  FD is edge-triggered: any zmq call may consume the wake-up, and one FD serves both directions;
- it waits on the FD only when ZMQ_EVENTS says there is nothing to do, and a sender wakes it
  by cancelling that wait (one cancel scope serves every wait until a sender cancels it).

Receivers read from the memory stream, whose `receive()` is cancellation-safe: a cancelled
receive takes nothing, so nothing is lost. Or the owner passes `deliver`, a plain function the
pump calls with each message, which saves a task switch per message on every hop (the actors'
inboxes and links, the phone endpoint): `deliver` either takes the message or raises
anyio.WouldBlock, and then the pump awaits `deliver_wait` for it while it keeps sending. A sender whose message would be first in the queue
sends it itself (one thread, so no other code is inside the socket): no queue, no wake-up of the
pump, which costs more than the send. Only when ZeroMQ has no room does the message queue up
for the pump. After such a direct send, the sender wakes the pump if input is waiting, since
the send may have consumed the FD's edge.
"""
from __future__ import annotations

import collections
import logging
from typing import Awaitable, Callable

import anyio
import anyio.abc
import zmq

_log = logging.getLogger("porfiry.zmq")
_YIELD_EVERY = 64  # messages moved between checkpoints, so one busy socket cannot starve others
# plain ints: pyzmq's enum constants cost an enum object per `events & POLLIN`, several per message
_EVENTS, _POLLIN, _POLLOUT, _NOBLOCK = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.POLLOUT), int(zmq.NOBLOCK)
_RCVMORE, _MORE_NOBLOCK = int(zmq.RCVMORE), int(zmq.SNDMORE) | int(zmq.NOBLOCK)


def _send_frames(sock: zmq.Socket, frames: list[bytes]) -> None:
    """send_multipart(frames, NOBLOCK) for frames of bytes, without its per-call type checks and
    flag enums (a third of its cost). ZeroMQ takes a multipart message whole or refuses it at
    its first frame, so zmq.Again means nothing was sent."""
    last = len(frames) - 1
    for index in range(last):
        sock.send(frames[index], _MORE_NOBLOCK)
    sock.send(frames[last], _NOBLOCK)


def _recv_frames(sock: zmq.Socket) -> list[bytes]:
    """recv_multipart(NOBLOCK), likewise."""
    frames = [sock.recv(_NOBLOCK)]
    while sock.getsockopt(_RCVMORE):
        frames.append(sock.recv(_NOBLOCK))
    return frames


def _recv_overridden(sock: zmq.Socket) -> list[bytes]:
    return sock.recv_multipart(_NOBLOCK)


def _send_overridden(sock: zmq.Socket, frames: list[bytes]) -> None:
    sock.send_multipart(frames, _NOBLOCK)


def _deliver_later(deliver: Callable[[list[bytes]], None]) -> Callable[[list[bytes]], Awaitable[None]]:
    """For a `deliver` given alone: it never blocks, so waiting for it is just calling it."""
    async def deliver_wait(frames: list[bytes]) -> None:
        deliver(frames)

    return deliver_wait


class SocketClosed(Exception):
    pass


class AsyncSocket:
    """A pyzmq socket driven by one pump task. Use as `async with AsyncSocket(sock) as s:`.

    `recv_buffer` bounds what the pump takes from ZeroMQ before the reader catches up; past it
    the pump stops reading and ZeroMQ's own high-water marks push back on the peer.
    `send_buffer` bounds the outgoing queue: `send()` waits for room, `send_nowait()` raises.
    """

    def __init__(self, socket: zmq.Socket, *, recv_buffer: int = 1024, send_buffer: int = 10_000,
                 deliver: Callable[[list[bytes]], None] | None = None,
                 deliver_wait: Callable[[list[bytes]], Awaitable[None]] | None = None):
        self.socket = socket
        if socket.type == zmq.ROUTER:
            # Without it a ROUTER silently drops messages for a peer whose pipe is full (HWM).
            # With it the send fails with EAGAIN and we wait, or EHOSTUNREACH and we log.
            socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        # a socket class of its own (the bridge's, which adds a frame) keeps its multipart methods
        kind = type(socket)
        self._recv = _recv_frames if kind.recv_multipart is zmq.Socket.recv_multipart else _recv_overridden
        self._send = _send_frames if kind.send_multipart is zmq.Socket.send_multipart else _send_overridden
        self._out: collections.deque[list[bytes]] = collections.deque()
        self._send_buffer = send_buffer
        self._room = anyio.Event()
        self._in_tx, self._in_rx = anyio.create_memory_object_stream[list[bytes]](recv_buffer)
        self._deliver = deliver or self._in_tx.send_nowait
        self._deliver_wait = deliver_wait or (self._in_tx.send if deliver is None else _deliver_later(deliver))
        self._wait_scope: anyio.CancelScope | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._closed = False
        self.sent = 0
        self.received = 0
        self.dropped = 0

    # ---- lifecycle ------------------------------------------------------------------------
    async def __aenter__(self) -> "AsyncSocket":
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self.run, name=f"zmq-pump-{self.socket.type}")
        return self

    async def __aexit__(self, *exc_info) -> bool | None:
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        try:
            return await self._task_group.__aexit__(*exc_info)
        finally:
            self.close()

    async def run(self) -> None:
        """The pump; runs until cancelled. Start it in a task group you own, then `close()`."""
        try:
            await self._pump()
        finally:
            self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.socket.close(linger=0)
            self._in_tx.close()
            self._room.set()

    # ---- public surface -------------------------------------------------------------------
    def send_nowait(self, frames: list[bytes]) -> None:
        if self._closed:
            raise SocketClosed("socket is closed")
        if not self._out and self._send_direct(frames):
            return
        if len(self._out) >= self._send_buffer:
            raise anyio.WouldBlock
        self._out.append(frames)
        self._wake()

    def try_send(self, frames: list[bytes]) -> str:
        """Send now, never queue: "sent", "full" (no room for this peer now) or "unreachable"
        (a ROUTER peer that is not connected). For an owner that keeps its own per-peer queues, so
        one peer that does not read never holds up the others (a shared queue would)."""
        if self._closed:
            raise SocketClosed("socket is closed")
        try:
            self._send(self.socket, frames)
        except zmq.Again:
            return "full"
        except zmq.ZMQError as exc:
            if exc.errno == zmq.EHOSTUNREACH:
                return "unreachable"
            raise
        self.sent += 1
        if self._wait_scope is not None and self.socket.getsockopt(_EVENTS) & _POLLIN:
            self._wait_scope.cancel()
        return "sent"

    async def send(self, frames: list[bytes]) -> None:
        while len(self._out) >= self._send_buffer:
            if self._closed:
                raise SocketClosed("socket is closed")
            self._room = anyio.Event() if self._room.is_set() else self._room
            await self._room.wait()
        self.send_nowait(frames)

    async def recv(self) -> list[bytes]:
        """Next message. Cancellation-safe: a cancelled call consumes nothing."""
        try:
            return await self._in_rx.receive()
        except anyio.EndOfStream:
            raise SocketClosed("socket is closed") from None

    @property
    def pending_in(self) -> int:
        return self._in_rx.statistics().current_buffer_used

    # ---- the pump -------------------------------------------------------------------------
    def _send_direct(self, frames: list[bytes]) -> bool:
        """Send now, in the caller's task; False when ZeroMQ has no room (then the pump queues)."""
        try:
            self._send(self.socket, frames)
        except zmq.Again:
            return False
        except zmq.ZMQError as exc:
            self.dropped += 1
            _log.warning("zmq send dropped a message: %s", exc)
        else:
            self.sent += 1
        if self._wait_scope is not None and self.socket.getsockopt(_EVENTS) & _POLLIN:
            self._wait_scope.cancel()
        return True

    def _wake(self) -> None:
        if self._wait_scope is not None:
            self._wait_scope.cancel()

    def _send_one(self) -> None:
        """Send the head of the queue; raises zmq.Again when ZeroMQ has no room."""
        try:
            self._send(self.socket, self._out[0])
        except zmq.Again:
            raise
        except zmq.ZMQError as exc:
            # e.g. EHOSTUNREACH from a ROUTER whose peer left: drop this message, keep serving.
            self.dropped += 1
            _log.warning("zmq send dropped a message: %s", exc)
        else:
            self.sent += 1
        self._out.popleft()
        if not self._room.is_set() and len(self._out) < self._send_buffer:
            self._room.set()

    async def _pump(self) -> None:
        sock = self.socket
        fd = sock.getsockopt(zmq.FD)
        moved = 0
        while True:
            # One cancel scope for every wait until a sender wakes us through it (cancelling it),
            # not one per wait. Only a wait on the FD is ever cancelled: `_wait_scope` is set
            # just around it, so the work between waits cannot be interrupted by a wake-up.
            with anyio.CancelScope() as scope:
                while True:
                    if self._closed:  # closed by its owner while a wait returned (a context's exit): the pump is done
                        return
                    events = sock.getsockopt(_EVENTS)
                    progressed = False
                    if events & _POLLIN:
                        try:
                            frames = self._recv(sock)
                        except zmq.Again:
                            pass
                        else:
                            progressed = True
                            self.received += 1
                            try:
                                self._deliver(frames)
                            except anyio.WouldBlock:
                                # The reader is behind: wait for it, but keep sending meanwhile, so a
                                # reader waiting for room in our send queue can never deadlock with us.
                                await self._deliver_while_sending(frames, fd)
                            except Exception:  # noqa: BLE001 - a faulty deliver must not stop the socket
                                self.dropped += 1
                                _log.exception("zmq deliver failed; message dropped")
                    if self._out and events & _POLLOUT:
                        try:
                            self._send_one()
                            progressed = True
                        except zmq.Again:
                            pass
                    if progressed:
                        moved += 1
                        if moved >= _YIELD_EVERY:
                            moved = 0
                            await anyio.lowlevel.checkpoint()
                        continue
                    # ZMQ_EVENTS, read just now, says there is nothing to do: only now is it safe
                    # to wait on the edge-triggered FD.
                    moved = 0
                    self._wait_scope = scope
                    try:
                        await anyio.wait_readable(fd)
                    finally:
                        self._wait_scope = None
                    if scope.cancel_called:  # woken by the FD, and cancelled before we ran: a new scope
                        break

    async def _deliver_while_sending(self, frames: list[bytes], fd: int) -> None:
        async with anyio.create_task_group() as tg:

            async def deliver() -> None:
                await self._deliver_wait(frames)
                tg.cancel_scope.cancel()

            tg.start_soon(deliver)
            while True:
                if self._closed:  # closed by its owner while we waited
                    tg.cancel_scope.cancel()
                    return
                events = self.socket.getsockopt(_EVENTS)
                if self._out and events & _POLLOUT:
                    try:
                        self._send_one()
                        await anyio.lowlevel.checkpoint()
                        continue
                    except zmq.Again:
                        pass
                with anyio.CancelScope() as scope:
                    self._wait_scope = scope
                    if self._out:
                        await anyio.wait_readable(fd)
                    else:
                        await anyio.sleep_forever()
                self._wait_scope = None
