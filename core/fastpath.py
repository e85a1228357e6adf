"""The fast path's seam with the toolsets (issue 50): a plain request a toolset carries out for
the session itself, as Home Assistant's integrations carry out the intents they register.

The session (core.reflex_steps) recognises a request (core.reflex: its kind, e.g. "play", and
its words) and, for a kind no step of its own handles, calls the step the toolset record declares
for it (`core.toolsets.SessionToolset` / `ExecutorToolset`, `steps={"play": play}`). A step gets
a `FastPath`: the session's calls made through the ordinary guarded call path (recorded in the
history as the model's would be), lookups asked aside (nothing recorded), the history as read,
and the toolsets' responses; it returns the answer the user is shown, or None to leave the turn to
the model, which then reads whatever the step already found. A step names tools only through what
they serve (`FastPath.tool`), so a toolset with other names serves the same requests.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from protocol import CallOutcome, ChatMessage
from protocol.results import ToolData
from protocol.tools import Serves

if TYPE_CHECKING:
    from core.local_intents import Say
    from core.timers import Timer
    from core.turn import TurnState

# ---- a request, as the runtime and the toolsets' phrasings recognise it ----------------------
ReflexKind = Literal["time_now", "time_elsewhere", "time_there", "timer_set", "timer_list", "timer_cancel", "timer_change", "play",
                     "playback", "search", "details", "show", "watch", "unwatch", "tasks", "correction", "follow_up",
                     "repeat"]
Detail = Literal["runtime", "director", "episodes", "year", "about"]

# the request a toolset serves for each kind of a plain request (protocol.ToolSpec.serves): which
# toolset's request the words are, for the kinds a toolset carries out ("" for the runtime's own:
# the clock, the screen, a correction)
REQUEST_OF_KIND: dict[str, Serves] = {
    "play": "title_play", "playback": "title_play", "search": "title_search", "details": "title_info",
    "timer_set": "timer_set", "timer_list": "timer_list", "timer_cancel": "timer_cancel", "timer_change": "timer_set",
    "watch": "watch_set", "unwatch": "watch_end", "tasks": "task_list"}


class Intent(msgspec.Struct, frozen=True, kw_only=True):
    """What a turn's words ask, as far as a reflex can carry it out.

    `subject`: a title as said ("Кин-дза-дза"); `reference`: instead of a title, which of the
    titles already shown ("it", an ordinal, a year); `when`/`text`: a timer's; `detail`: what a
    details question asks."""

    kind: ReflexKind
    russian: bool
    subject: str = ""
    reference: "Reference | None" = None
    when: str = ""
    text: str = ""
    detail: Detail | None = None
    more_details: tuple[Detail, ...] = ()  # "про что он и какого года": asked together, answered together
    all_timers: bool = False
    last_timer: bool = False  # "cancel it", "scrap that one": the timer the turn before set or listed
    both_timers: bool = False  # "scratch both of them": the two timers there are, when there are two
    action: Literal["pause", "resume", "stop", "watches", ""] = ""  # a playback's; "watches": the watches' list asked
    channel: str = ""  # a watch's: "telegram", a webhook's name, or "any"
    every: str = ""  # a timer's repeat, as the timer tool takes it: "1 day"
    found_only: bool = False  # a name a sentence's free slot took: answered only when a toolset finds it
    wrong: str = ""  # a correction's words that were wrong ("not diapers — wipes": "diapers")
    dial: bool = False  # `when` a clock time said with no half of the day: the next reading of a 12-hour dial


class Reference(msgspec.Struct, frozen=True, kw_only=True):
    """"его", "the second one", "the one from 1979": a title the conversation already showed."""

    ordinal: int = 0  # 1-based place in the last search's results; 0: none said
    year: int = 0
    oldest: bool = False  # "the original": the earliest of the titles shown
    newest: bool = False  # "the newest one", "самый новый": the latest of them
    last: bool = False  # "the last one", "последний": the last the answer named
    kind: Literal["series", "film", ""] = ""  # "включи сериал, а не фильм": the one of that kind
    other: bool = False  # "no, the other one": the namesake of the title talked about, not it



def last_data(results: list[tuple[str, ToolData | None]]) -> ToolData | None:
    """The payload of the last call among `results` (FastPath.results_before) that returned one:
    what the turn before was about."""
    return next((data for _tool, data in reversed(results) if data is not None), None)


class FastPath(Protocol):
    """What a toolset's step may use of the session it runs in."""

    def tool(self, request: Serves) -> str:
        """The tool that serves `request` in this runtime's catalog; "" when none does."""

    async def call(self, turn: TurnState, tool: str, args: str) -> str | None:
        """One call, recorded as the model's would be; its result's text, or None unless it ran."""

    async def data(self, turn: TurnState, tool: str, args: str) -> ToolData | None:
        """The same call; its result's typed payload (protocol.results), or None."""

    async def aside(self, turn: TurnState, tool: str, args: str) -> CallOutcome:
        """A read-only call asked aside: nothing recorded, so the model never reads it."""

    def names_another_toolsets_domain(self, words: str) -> bool:
        """Whether the words hold a word another toolset is offered for (protocol.ToolsetSpec.offered_for:
        "монитор", "скрипт", "почта"): no title, no timer of this one's."""
        ...

    async def others_could_serve(self) -> bool:
        """Whether a toolset beyond the built-in ones, or a user's skill, could serve a request."""

    async def ask_aside(self, turn: TurnState, messages: list[ChatMessage], max_tokens: int) -> str:
        """One short generation nobody sees; raises core.turn.ModelUnavailable."""

    def speaker(self, russian: bool) -> Say:
        """The toolsets' responses in the user's language (core.local_intents.LocalIntents.respond)."""

    def messages(self) -> Sequence[ChatMessage]:
        """The conversation's history as recorded, oldest first (read it, never change it)."""

    def data_at(self, index: int) -> ToolData | None:
        """The typed payload of the result at `index` of `messages()`, if it has one."""

    def results_before(self, turn: TurnState) -> list[tuple[str, ToolData | None]]:
        """(tool, result's payload) of the calls the turn before this one made, oldest first."""

    def place_talked_about(self, turn: TurnState) -> str:
        """The place the user last asked the time of, among their last few requests ("what time is
        it in LA right now"), as they said it; "" when none."""

    def turn_words(self, turn: TurnState) -> str:
        """What the user said in this turn (their lines only)."""

    def now(self) -> float:
        """The session's clock (injectable: core.clock), epoch seconds."""

    def timezone(self) -> tzinfo:
        """The user's time zone."""

    def clock_time(self, epoch: float) -> str:
        """`epoch` as the user's clock shows it: "07:30"."""

    def pending_timers(self) -> list[Timer]:
        """The session's timers that are set, soonest first."""


Step = Callable[[FastPath, "TurnState", Intent], Awaitable["str | None"]]


# A recogniser: (the words as the runtime plains them, as said, in Russian?) -> the request, or None.
Recogniser = Callable[[str, str, bool], Intent | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Phrasing:
    """How a toolset's plain requests are said, for core.reflex.recognise: `first`, tried before
    the runtime's own recognisers (the clock, watches, corrections), for requests whose words
    those would misread ("remind me in 5 minutes what time it is" is a timer); `recognisers`, tried
    in order after them; `pairs`, two of its requests in one breath (core.reflex.recognise_both:
    "a timer for 5 minutes for the eggs and 10 for the rice"); `negated`, its requests whose words
    hold a negation ("не надо за ним следить": an end of a watch; any other "не" is none);
    `opens`, whether a clause after a remark opens one of its requests; `requests`, by kind, a request
    of that kind made from the words that name its object ("не Дюну, а Бегущего по лезвию": a play
    of "бегущего по лезвию"), for the runtime's corrections, follow-ups and two requests in one
    breath; `asks_anywhere`, whether the words hold one of its questions anywhere ("Найди Брат.
    Кто его снял?": two requests, the model's); `commanded`, one of its requests said as a command
    of its `frame` list (intents.yaml), None where the list has none for it (the frame bank's
    commands, core.frame.command_of)."""

    first: tuple[Recogniser, ...] = ()
    recognisers: tuple[Recogniser, ...] = ()
    pairs: Callable[[str, str, Sequence[Phrasing]], tuple[Intent, ...] | None] | None = None
    negated: tuple[Recogniser, ...] = ()
    opens: Callable[[str], bool] = lambda clause: False
    requests: Mapping[str, Callable[[str, str, str, bool], Intent | None]] = field(default_factory=dict)
    asks_anywhere: Callable[[str], bool] = lambda raw: False
    commanded: Callable[[Intent], str | None] = lambda intent: None
