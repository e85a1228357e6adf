"""What a tool call found or did, as fields: the typed payload beside the text the model reads (issue 50).

A tool's result is two things. `text` is for the model and is never read back by the runtime.
`data`, one of the tagged Structs below, is for the runtime: the session's fast path answers
from it, resolves "the second one" or "cancel it" against it, the guard of a tool's `seen_args`
accepts only the ids payloads showed, and the journal keeps it next to the text, so a session
restored from storage still knows what it showed. A failed call may carry one too (an unknown
id's close matches: the titles it showed). A tool that has no
payload (an MCP tool, a core tool) leaves `data` None: the runtime then knows nothing was shown.

Adding a kind: a Struct here with its own `tag`, listed in `ToolData`. A tag is stored in
journals, so renaming one is a storage change.
"""
from typing import Literal, Union

import msgspec

TitleKind = Literal["film", "series"]
PlayAction = Literal["play", "pause", "resume", "stop"]
# "sent": the phone took the command and confirms later (E7); else the phone's PlaybackStatus.state
PlayState = Literal["sent", "started", "paused", "resumed", "stopped", "failed"]


class _Data(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="type"):
    """Base of every payload: tagged by `type` (each class names its tag)."""

    def shown_ids(self) -> tuple[str, ...]:
        """The ids this result showed, which a later call may name (a tool's `seen_args`)."""
        return ()


class TitleRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One title a result showed. names: the catalog's name first, then its original when that
    differs. facts: the bracketed facts of its line as the model read them ("1999, Lana
    Wachowski, 136 min"), for an answer that repeats them."""

    id: str
    names: list[str]
    year: int = 0
    kind: TitleKind = "film"
    facts: str = ""


class TitlesShown(_Data, tag="titles"):
    """A search's page: its titles in the catalog's order, and how many there are in all."""

    query: str
    titles: list[TitleRef] = []
    total: int = 0
    by: Literal["title", "director", "genre"] = "title"  # what named them (a genre's word names no one title)

    def shown_ids(self) -> tuple[str, ...]:
        return tuple(title.id for title in self.titles)


class TitleInfo(_Data, tag="title_info"):
    """One title's details, as the text shows them: runtime_min for a film, episodes for a
    series (0: unknown or not told), director ("" unknown), description (the catalog's words)."""

    title: TitleRef
    director: str = ""
    runtime_min: int = 0
    episodes: int = 0
    genres: list[str] = []
    description: str = ""

    def shown_ids(self) -> tuple[str, ...]:
        return (self.title.id,)


class Playing(_Data, tag="playing"):
    """A play or a playback command for one title; task_id: the phone's task, when it confirms later."""

    media_id: str
    action: PlayAction
    state: PlayState
    title: str = ""
    task_id: str = ""

    def shown_ids(self) -> tuple[str, ...]:
        return (self.media_id,)


class TimerSet(_Data, tag="timer_set"):
    """A timer set: its id, when it fires and when it was set (epoch seconds: it runs `due -
    set_at`), its text, its period when it repeats, and whether it was set for a clock time
    ("21:00") rather than a span ("in 2 hours"): "make it 10" is then 10 o'clock."""

    id: str
    due: float
    text: str
    set_at: float = 0.0
    every_s: float | None = None
    by_clock: bool = False
    days: tuple[str, ...] = ()  # a repeat on these days of the week ("monday", ...), at the same clock time

    def shown_ids(self) -> tuple[str, ...]:
        return (self.id,)


class TimerRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    due: float
    text: str


class TimersListed(_Data, tag="timers_listed"):
    """The timers set, soonest first."""

    timers: list[TimerRef] = []

    def shown_ids(self) -> tuple[str, ...]:
        return tuple(timer.id for timer in self.timers)


class ClockRead(_Data, tag="clock"):
    """The moment a clock was read (epoch seconds) and its zone's name as the result gave it;
    `place`: the IANA zone of the place it was read for ("" for the user's own clock)."""

    at: float
    zone: str = ""
    place: str = ""


class TaskRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A task running in the background: a toolset call (its tool) or a monitor (its name)."""

    id: str
    kind: Literal["call", "monitor"]
    name: str


class TasksListed(_Data, tag="tasks_listed"):
    """The session's background tasks and monitors running now."""

    tasks: list[TaskRef] = []

    def shown_ids(self) -> tuple[str, ...]:
        return tuple(task.id for task in self.tasks)


class WatchRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A watch for messages: on which channel, for what (as the user put it)."""

    id: str
    channel: str
    what: str


class Watching(_Data, tag="watching"):
    """A watch set; already: it was set before, with the same words (nothing new was set)."""

    watch: WatchRef
    already: bool = False

    def shown_ids(self) -> tuple[str, ...]:
        return (self.watch.id,)


class WatchesListed(_Data, tag="watches_listed"):
    """The watches that are set, oldest first."""

    watches: list[WatchRef] = []

    def shown_ids(self) -> tuple[str, ...]:
        return tuple(watch.id for watch in self.watches)


class WatchEnded(_Data, tag="watch_ended"):
    """A watch removed."""

    watch: WatchRef

    def shown_ids(self) -> tuple[str, ...]:
        return (self.watch.id,)


class TextSent(_Data, tag="text_sent"):
    """A text put before the user: on the glasses' screen, or sent to the phone ("the same on the
    glasses" after a note to the phone is this text)."""

    text: str
    to: Literal["glasses", "phone"] = "glasses"

    def shown_ids(self) -> tuple[str, ...]:
        return ()


ToolData = Union[TitlesShown, TitleInfo, Playing, TimerSet, TimersListed, ClockRead, TasksListed, Watching, WatchesListed,
                 WatchEnded, TextSent]


def shown_ids(data: ToolData | None) -> tuple[str, ...]:
    """The ids a result's payload showed; none without one."""
    return () if data is None else data.shown_ids()
