"""Channels (E10, seed 003's `connect_channel`): events from outside a session - a notification
on the user's phone, a signed webhook - and the interests the model registers in them.

The model says once what matters (a watch: a channel and what to wait for, "telegram; Anna"); the runtime matches every
later event of that channel against it (sender or words, case-folded, crude stems), so the model
is never woken for a message nobody asked about. An event no watch matches, on a channel that
only wakes for watched events, is kept in the journal and not shown.

A channel event is data (E9): its text is fenced as untrusted, like an MCP server's (core.batching:
labels and tool-call markers escaped); its label names the channel and the sender, each fenced as a
field (core.fence.fence_field: one line, brackets escaped), so neither can end the label and speak. It is urgent only when its source or the channel's config says
`high`: then it interrupts the running step (core.urgency's urgent_source rule: the generation is
dropped, a running tool keeps running) instead of waiting for the next safe point.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

import msgspec

from core import lexicon
from core.fence import fence_field
from core.background import ASKED_KEY
from protocol import Event

CHANNEL_KIND = "channel"  # Event.kind of everything that arrives on a channel
ANY_CHANNEL = ("*", *lexicon.words("channels", "any_channel"))

Wake = Literal["always", "watched"]

# Words that say how, not what: "tell me when Anna writes" matters for "anna" alone (the words
# are data: core/words/<language>/channels.toml).
_FILLER = frozenset(lexicon.words("channels", "filler_words"))
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class Watch(msgspec.Struct, array_like=True):
    """One registered interest: `words` are what "what matters" reduces to."""

    watch_id: str
    channel: str
    what: str
    words: list[str]
    asked: str = ""  # the user's words that set it: the turn a match starts may carry them out


def interest_words(what: str) -> list[str]:
    """The words of "what matters" that say what, stemmed: "when Anna writes" -> ["anna"]."""
    words = [w for w in _WORD.findall(lexicon.fold(what)) if w not in _FILLER]
    return list(dict.fromkeys(_stem(w) for w in words if len(w) >= 2))


def _stem(word: str) -> str:
    """A crude stem for Russian and English endings: "анны", "анне" and "анна" all match "анн"."""
    return word[:max(3, len(word) - 2)] if len(word) >= 5 else word[:max(3, len(word) - 1)] if len(word) == 4 else word


def _matches(watch: Watch, channel: str, sender: str, text: str) -> bool:
    if watch.channel not in ANY_CHANNEL and watch.channel != channel:
        return False
    if not watch.words:
        return True  # "everything on this channel"
    said = {_stem(w) for w in _WORD.findall(lexicon.fold(f"{sender} {text}"))}
    return any(word in said or (len(word) >= 4 and any(s.startswith(word) for s in said)) for word in watch.words)


def matching(watches: Iterable[Watch], event: Event) -> Watch | None:
    """The first watch this channel event matches, or None."""
    sender, text = event.data.get("sender", ""), event.content
    return next((w for w in watches if _matches(w, event.channel, sender, text)), None)


def channel_name(name: str) -> str:
    """How a channel is named everywhere: "Telegram " -> "telegram"."""
    return " ".join(name.casefold().split())


def channel_event(*, event_id: str, source: Literal["phone", "webhook"], channel: str, sender: str, text: str,
                  urgency: str, ts: float) -> Event:
    """The session's event for something that arrived on a channel (E1: who, how, what)."""
    data = {"sender": sender, "urgency": urgency}
    return Event(event_id=event_id, kind=CHANNEL_KIND, source=source, channel=channel_name(channel),
                 content=text, ts=ts, data=data)


def labelled(event: Event, watch: Watch | None) -> Event:
    """The event as the session queues it: its label says where it came from and, when a watch
    matched, which. A `high` one interrupts (core.urgency's urgent_source rule)."""
    sender = fence_field(event.data.get("sender", ""))  # from outside: it must not end the label (issue 51)
    where = "phone notification" if event.source == "phone" else "webhook"
    context = f"{where} on channel {fence_field(event.channel)}" + (f", from {sender}" if sender else "")
    if event.data.get("urgency") == "high":
        context += ", urgent"
    if watch is None:
        return msgspec.structs.replace(event, context=context)
    context += f"; matches your watch {watch.watch_id}: {watch.what}"
    data = {**event.data, ASKED_KEY: watch.asked} if watch.asked else event.data
    return msgspec.structs.replace(event, context=context, data=data)


class WatchTable:
    """One session's watches. Ids are short ("w1") so they can be said aloud."""

    __slots__ = ("watches", "next_number", "limit")

    def __init__(self, watches: list[Watch] | None = None, next_number: int = 1, limit: int = 20):
        self.watches = list(watches or [])
        self.next_number = next_number
        self.limit = limit

    def add(self, channel: str, what: str, asked: str = "") -> str:
        """Register an interest (`asked`: the user's words that asked for it); the text for the model
        (S3: forgiving, never raises)."""
        channel = channel_name(channel)
        if not channel:
            return "Not watched: say which channel (an app like telegram, a webhook name, or 'any')."
        words = interest_words(what)
        for watch in self.watches:
            if watch.channel == channel and watch.words == words:
                return f"Already watching {channel} for {watch.what} (watch {watch.watch_id})."
        if len(self.watches) >= self.limit:
            return f"Not watched: {self.limit} watches already ({self.ids()}); end one of them first."
        watch = Watch(f"w{self.next_number}", channel, " ".join(what.split()) or "everything", words, asked)
        self.next_number += 1
        self.watches.append(watch)
        scope = ", ".join(words) if words else "every message"
        return (f"Watch {watch.watch_id} set: messages on {channel} matching {scope} will wake you; "
                "others are kept, not shown.")

    def remove(self, watch_id: str) -> str:
        wanted = watch_id.strip().casefold()
        if wanted.isdigit():
            wanted = f"w{wanted}"
        for watch in self.watches:
            if watch.watch_id == wanted:
                self.watches.remove(watch)
                return f"Watch {wanted} removed ({watch.channel}: {watch.what})."
        return f"Watch {watch_id.strip() or '(no id)'} is not set; watches: {self.ids() or 'none'}."

    def list(self) -> str:
        if not self.watches:
            return "No watches set."
        return "\n".join(f"{w.watch_id}: {w.channel} - {w.what}" for w in self.watches)

    def ids(self) -> str:
        return ", ".join(w.watch_id for w in self.watches)
