"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests: scripted SSE replies over h11.

    async with ScriptedOpenAIServer([Reply(status=429), Reply(chunks=["Hel", "lo"])]) as server:
        backend = OpenAIBackend(ProfileConfig(kind="openai", base_url=server.base_url))

Each POST to /v1/chat/completions takes the next scripted `Reply` (the last one repeats). The
server records request bodies and headers, how many streams the client abandoned mid-way
(`disconnects`, `client_gone`), and the peak number of concurrent requests. Every response
closes its connection, so a retry always opens a new one.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import anyio
import anyio.abc
import h11


@dataclass
class Reply:
    """One scripted answer. With status != 200 the body is sent as JSON error and nothing streams."""

    chunks: list[str] = field(default_factory=list)  # content deltas, one SSE event each
    status: int = 200
    first_chunk_delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    finish_reason: str = "stop"
    send_done: bool = True  # end with `data: [DONE]`
    raw_lines: list[str] | None = None  # sent verbatim (each + "\n\n") instead of `chunks`
    hang_after_chunks: bool = False  # keep the stream open forever after the chunks
    usage: dict[str, int] | None = None


def chunk_event(text: str, finish_reason: str | None = None) -> str:
    payload = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish_reason}]}
    return "data: " + json.dumps(payload)


class ScriptedOpenAIServer:
    def __init__(self, replies: list[Reply] | None = None, *, models: list[str] | None = None,
                 respond: Callable[[dict[str, Any]], Reply] | None = None):
        self.replies = list(replies or [Reply(chunks=["ok"])])
        self.respond = respond  # the reply computed from each request body, instead of the script
        self.models = models or ["scripted-model"]
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.disconnects = 0  # streams the client left before they ended
        self.client_gone = anyio.Event()
        self.completed_streams = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.port = 0
        self._listener: anyio.abc.SocketListener | None = None
        self._task_group: anyio.abc.TaskGroup | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies = list(replies)

    async def __aenter__(self) -> ScriptedOpenAIServer:
        self._listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = self._listener.extra(anyio.abc.SocketAttribute.local_port)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._listener.serve, self._serve_connection)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task_group is not None and self._listener is not None
        self._task_group.cancel_scope.cancel()
        await self._task_group.__aexit__(None, None, None)
        await self._listener.aclose()

    def _next_reply(self) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    async def _serve_connection(self, stream: anyio.abc.ByteStream) -> None:
        async with stream:
            conn = h11.Connection(h11.SERVER)
            request, body = await _read_request(conn, stream)
            if request is None:
                return
            target = request.target.decode()
            if request.method == b"GET" and target.endswith("/models"):
                payload = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})
                await _send_whole(conn, stream, 200, payload.encode())
                return
            if request.method != b"POST" or not target.endswith("/chat/completions"):
                await _send_whole(conn, stream, 404, b'{"error": {"message": "not found"}}')
                return
            self.requests.append(json.loads(body or b"{}"))
            self.headers.append({k.decode().lower(): v.decode() for k, v in request.headers})
            reply = self.respond(self.requests[-1]) if self.respond else self._next_reply()
            if reply.status != 200:
                error = json.dumps({"error": {"message": f"scripted status {reply.status}", "code": reply.status}})
                await _send_whole(conn, stream, reply.status, error.encode())
                return
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                await self._stream_reply(conn, stream, reply)
            finally:
                self.in_flight -= 1

    async def _stream_reply(self, conn: h11.Connection, stream: anyio.abc.ByteStream, reply: Reply) -> None:
        headers = [("content-type", "text/event-stream"), ("connection", "close"), ("transfer-encoding", "chunked")]
        finished = False
        async with anyio.create_task_group() as group:

            async def watch_client() -> None:
                # The request is fully read, so anything here means the client closed the socket.
                try:
                    while await stream.receive():
                        pass
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                if not finished:
                    self.disconnects += 1
                    self.client_gone.set()
                group.cancel_scope.cancel()

            group.start_soon(watch_client)
            try:
                await stream.send(conn.send(h11.Response(status_code=200, headers=headers)))
                if reply.raw_lines is not None:
                    events = list(reply.raw_lines)
                else:
                    events = [chunk_event(text) for text in reply.chunks]
                    if not reply.hang_after_chunks:
                        events.append(chunk_event("", reply.finish_reason))
                        if reply.usage is not None:
                            events.append("data: " + json.dumps({"choices": [], "usage": reply.usage}))
                if reply.send_done and reply.raw_lines is None:
                    events.append("data: [DONE]")
                for index, event in enumerate(events):
                    # the scripted model's pace, as the test asked for it: the behaviour under test
                    await anyio.sleep(reply.first_chunk_delay_s if index == 0 else reply.chunk_delay_s)
                    if index == len(events) - 1 and not reply.hang_after_chunks:
                        finished = True  # the client may hang up as soon as it has the last event
                        self.completed_streams += 1
                    await stream.send(conn.send(h11.Data(data=(event + "\n\n").encode())))
                if reply.hang_after_chunks:
                    await anyio.sleep_forever()
                finished = True
                await stream.send(conn.send(h11.EndOfMessage()))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                if not finished:
                    self.disconnects += 1
                    self.client_gone.set()
                    finished = True  # counted once, not again by the watcher
            group.cancel_scope.cancel()


async def _read_request(conn: h11.Connection, stream: anyio.abc.ByteStream) -> tuple[h11.Request | None, bytes]:
    request: h11.Request | None = None
    body = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                data = b""
            conn.receive_data(data)
            if not data:
                return None, b""
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return request, body
        else:
            return None, b""


async def _send_whole(conn: h11.Connection, stream: anyio.abc.ByteStream, status: int, body: bytes) -> None:
    headers = [("content-type", "application/json"), ("content-length", str(len(body))), ("connection", "close")]
    try:
        await stream.send(conn.send(h11.Response(status_code=status, headers=headers)))
        await stream.send(conn.send(h11.Data(data=body)))
        await stream.send(conn.send(h11.EndOfMessage()))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
