"""What the console remembers of each session, so a page opened late sees the recent past, and the
fan-out of new facts to the pages watching.

Per session: the last display (the HUD), the last state, the last prompt, and the most recent
timeline facts (events, turns, model and tool calls), bounded by `web.timeline_facts`. Sessions
are bounded by `web.sessions_kept` (the least recently active forgotten first). Pure bookkeeping:
no sockets; the server turns what it holds into JSON.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Callable

import anyio
import msgspec

import protocol as p

TIMELINE = (p.EventFact, p.TurnFact, p.ModelCallFact, p.ToolCallFact)
_encode = msgspec.json.Encoder().encode


@dataclass
class SessionView:
    hud: p.DisplayFact | None = None
    state: p.StateFact | None = None
    prompt: p.PromptFact | None = None
    timeline: collections.deque = field(default_factory=collections.deque)
    busy: bool = False
    last_active: float = 0.0

    def summary(self, session: str) -> dict:
        return {"session": session, "busy": self.busy, "last_active": self.last_active}


class PageStream:
    """What waits for one page's event stream, bounded in bytes (`web.stream_max_bytes`): a page
    that does not read loses its oldest facts, never more memory, and never holds a session up
    (`send_nowait` never blocks). The next fact it reads is preceded by a `Dropped` marker."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.dropped = 0  # facts dropped since the page last read
        self._items: collections.deque[bytes] = collections.deque()
        self._ready = anyio.Event()
        self._closed = False

    def send_nowait(self, data: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        self._items.append(data)
        self.bytes += len(data)
        while self.bytes > self.max_bytes and len(self._items) > 1:  # the newest stays, whatever its size
            self.bytes -= len(self._items.popleft())
            self.dropped += 1
        self._ready.set()

    async def receive(self) -> bytes:
        while not self._items:
            self._ready = anyio.Event()
            await self._ready.wait()
        if self.dropped:
            marker = _encode({"type": "Dropped", "facts": self.dropped,
                              "detail": f"this page read too slowly: {self.dropped} older facts dropped (web.stream_max_bytes = {self.max_bytes})"})
            self.dropped = 0
            return marker
        data = self._items.popleft()
        self.bytes -= len(data)
        return data

    def close(self) -> None:
        self._closed = True
        self._items.clear()
        self.bytes = 0


class Journal:
    def __init__(self, timeline_facts: int = 1000, sessions_kept: int = 200, max_clients: int = 32):
        self.timeline_facts = timeline_facts
        self.sessions_kept = sessions_kept
        self.max_clients = max_clients
        self.sessions: collections.OrderedDict[str, SessionView] = collections.OrderedDict()
        self._clients: list[tuple[str, anyio.abc.ObjectSendStream]] = []
        self.on_fact: list[Callable[[p.Msg], None]] = []  # metrics

    # ---- intake -----------------------------------------------------------------------------------
    def take(self, fact: p.Msg) -> None:
        for hook in self.on_fact:
            hook(fact)
        if isinstance(fact, p.SessionGoneFact):
            for sid in fact.sessions:
                self.sessions.pop(sid, None)
            self._broadcast_sessions()
            return
        session = getattr(fact, "session", "")
        if not session:
            return
        known = session in self.sessions
        view = self._view(session)
        view.last_active = fact.ts
        if isinstance(fact, p.DisplayFact):
            view.hud = fact
        elif isinstance(fact, p.StateFact):
            changed = view.busy != fact.busy
            view.state, view.busy = fact, fact.busy
            if changed and known:
                self._broadcast_sessions()
        elif isinstance(fact, p.PromptFact):
            view.prompt = fact
        if isinstance(fact, TIMELINE):
            view.timeline.append(fact)
            while len(view.timeline) > self.timeline_facts:
                view.timeline.popleft()
        self._send(session, _encode(fact))
        if not known:
            self._broadcast_sessions()

    def seed(self, sessions: list[p.SessionSummary]) -> None:
        """The runtime's sessions at subscription time (some may predate the console)."""
        for summary in sessions:
            view = self._view(summary.session)
            view.busy = summary.busy
            view.last_active = max(view.last_active, summary.last_active)
        self._broadcast_sessions()

    def _view(self, session: str) -> SessionView:
        view = self.sessions.get(session)
        if view is None:
            view = self.sessions[session] = SessionView()
            while len(self.sessions) > self.sessions_kept:
                self.sessions.popitem(last=False)
        else:
            self.sessions.move_to_end(session)
        return view

    # ---- pages --------------------------------------------------------------------------------------
    def session_list(self) -> list[dict]:
        return [view.summary(sid) for sid, view in reversed(self.sessions.items())]

    def snapshot(self, session: str) -> list[bytes]:
        """What a page opening `session` is sent first: the session list, then the kept facts."""
        out = [_encode({"type": "Sessions", "sessions": self.session_list()})]
        view = self.sessions.get(session)
        if view is None:
            return out
        out += [_encode(fact) for fact in view.timeline]
        out += [_encode(fact) for fact in (view.state, view.prompt, view.hud) if fact is not None]
        return out

    def attach(self, session: str, stream: anyio.abc.ObjectSendStream) -> bool:
        if len(self._clients) >= self.max_clients:
            return False
        self._clients.append((session, stream))
        return True

    def watched(self) -> list[str]:
        """The sessions pages show now."""
        return sorted({session for session, _ in self._clients})

    def detach(self, stream: anyio.abc.ObjectSendStream) -> None:
        self._clients = [(s, c) for s, c in self._clients if c is not stream]

    def _send(self, session: str, data: bytes, *, everyone: bool = False) -> None:
        for watched, stream in list(self._clients):
            if everyone or watched == session:
                try:
                    stream.send_nowait(data)
                except anyio.WouldBlock:
                    pass  # a page that does not read loses facts; its next load catches up
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    self.detach(stream)

    def _broadcast_sessions(self) -> None:
        self._send("", _encode({"type": "Sessions", "sessions": self.session_list()}), everyone=True)
