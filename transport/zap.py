"""The one ZAP handler (ZeroMQ RFC 27) of a zmq context, shared by every security domain in it.

ZeroMQ asks whoever is bound at `inproc://zeromq.zap.01` in the socket's context to admit each
CURVE handshake; only one socket may bind there, yet one process can serve two domains: the
phone endpoint's (its allow-list of phone keys, actors/glasses.py) and the internal bus's
(transport/bus.py) when the glasses bridge runs in an actor process. So each domain registers
an answer here and the first registrant's task group serves the socket for all of them; a
handshake for a domain nobody registered is refused. A CURVE server with no ZAP handler at all
would admit any client key: `register` raises rather than let that happen.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import zmq

from transport.zmqio import AsyncSocket

ZAP_ENDPOINT = "inproc://zeromq.zap.01"

Answer = Callable[[list[bytes]], list[bytes]]
"""A domain's check: the ZAP request's frames (routing id first) -> the reply's frames."""


def zap_reply(request: list[bytes], code: bytes, text: bytes, user: bytes = b"") -> list[bytes]:
    """The reply frames to a well-formed request (at least 8 frames)."""
    return [request[0], b"", b"1.0", request[3], code, text, user, b""]


def malformed(request: list[bytes]) -> list[bytes]:
    return [*(request[:1] or [b""]), b"", b"1.0", b"", b"500", b"malformed ZAP request", b"", b""]


class ZapService:
    """The ZAP socket of one context and the answer of each domain registered in it."""

    def __init__(self, context: zmq.Context):
        self.context = context
        self.answers: dict[bytes, Answer] = {}
        self._socket: AsyncSocket | None = None

    def register(self, domain: bytes, answer: Answer,
                 spawn: Callable[..., Any]) -> None:
        """Answer handshakes of `domain` with `answer` from now on; bind and serve the ZAP socket
        (in `spawn`'s task group) when nobody does yet. Raises RuntimeError when it cannot bind."""
        self.answers[domain] = answer
        if self._socket is not None:
            return
        sock = self.context.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.bind(ZAP_ENDPOINT)
        except zmq.ZMQError as exc:
            sock.close(linger=0)
            raise RuntimeError(f"cannot serve ZAP in this zmq context ({exc}); refusing to run CURVE without it") from None
        self._socket = AsyncSocket(sock)
        spawn(self._serve, self._socket, name="zap")

    def answer(self, request: list[bytes]) -> list[bytes]:
        if len(request) < 8 or request[1] != b"":
            return malformed(request)
        answer = self.answers.get(request[4])
        if answer is None:
            return zap_reply(request, b"400", b"unknown ZAP domain")
        return answer(request)

    async def _serve(self, socket: AsyncSocket) -> None:
        try:
            async with socket:  # its pump runs beside this loop
                while True:
                    request = await socket.recv()
                    socket.send_nowait(self.answer(request))
        finally:
            if self._socket is socket:
                self._socket = None  # the next registrant binds again


_SERVICES: "weakref.WeakKeyDictionary[zmq.Context, ZapService]" = weakref.WeakKeyDictionary()


def zap_service(context: zmq.Context) -> ZapService:
    """The ZAP service of `context` (one per context, made on first use)."""
    service = _SERVICES.get(context)
    if service is None:
        service = _SERVICES[context] = ZapService(context)
    return service
