"""Telling the user where they are (seed 003's user-communication tool, "attention return").

Everything meant for the user's eyes - what a notice to the user says, and the final answer of a turn
that ran while the glasses were off - is a `Note`. With the glasses on it is shown at once and
is read; with them off it waits unread and is shown when they come back; a `high` one also goes
to the phone as a push message. Notes live in the session's journal state (`WorldState`), so
`run.py sessions show` lists them and a restart keeps the unread ones.
"""
from __future__ import annotations

import msgspec

from protocol.world import URGENCIES

PRESENCE_ON = ("session_start", "user_text", "user_interrupt", "button")  # event kinds that prove the glasses are on
PRESENCE_OFF = ("session_end",)


class Note(msgspec.Struct, array_like=True):
    note_id: str
    ts: float
    text: str
    urgency: str = "normal"
    source: str = "assistant"
    read: bool = False
    pushed: bool = False


def urgency_of(text: str, default: str = "normal") -> str | None:
    """"high", "normal", "low" from what a model or a webhook wrote ("urgent" and "срочно" too);
    None when it names none."""
    said = " ".join((text or "").casefold().split()).removeprefix("urgency=").strip()
    if not said:
        return default
    if said in URGENCIES:
        return said
    return {"urgent": "high", "срочно": "high", "высокая": "high", "важно": "high",
            "обычная": "normal", "medium": "normal", "низкая": "low", "не срочно": "low"}.get(said)


class Notes:
    """One session's notes, oldest first, bounded: past `limit` the oldest read one goes (an
    unread one only when every note is unread)."""

    __slots__ = ("items", "next_number", "limit")

    def __init__(self, items: list[Note] | None = None, next_number: int = 1, limit: int = 100):
        self.items = list(items or [])
        self.next_number = next_number
        self.limit = limit

    def add(self, text: str, urgency: str, source: str, ts: float, *, read: bool) -> Note:
        note = Note(f"n{self.next_number}", ts, text, urgency, source, read)
        self.next_number += 1
        self.items.append(note)
        while len(self.items) > self.limit:
            old = next((n for n in self.items if n.read), self.items[0])
            self.items.remove(old)
        return note

    def unread(self) -> list[Note]:
        return [n for n in self.items if not n.read]

    def mark_read(self, notes: list[Note]) -> None:
        for note in notes:
            note.read = True


def delivery_text(note: Note) -> str:
    """How a note kept while the glasses were off reads when they come back."""
    mark = "❗ " if note.urgency == "high" else ""
    return f"{mark}{note.text}"
