"""The timers toolset (E10): the model sets, lists and cancels the session's own reminders.

It runs in the session: the timers are the session's state (core.timers.TimerTable, journaled
with it, woken by the session actor's timer wheel). Arguments arrive bound and checked.
What it says and does without the model: intents.yaml (its sentences and responses) and local.py.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from core.lexicon import alternation, fold, words, words_of
from core.reflex import TIMER_WORD, is_russian
from core.timers import TimerError, TimerTable, day_names, said_as_clock
from core.toolsets import SessionContext, SessionToolset
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec
from protocol.results import TimerRef, TimersListed, TimerSet
from toolsets.timers.local import STEPS
from toolsets.timers.phrasing import PHRASING

TIMERS_TOOLSET = ToolsetSpec(
    # placeholders: a worked example's "позвонить" was set as the timer of a thank-you (issue 33)
    example=("\"напомни через <N> минут <что>\" -> TOOL_CALL: timers_set|in <N> minutes; <что, the user's words> -> "
             "the time the result gives"),
    name="timers",
    summary="reminders that wake you later: one-shot or repeating",
    tools=[
        ToolSpec(name="timers_set",
                 summary="set a reminder; when: 'in 5 minutes', '09:30', 'tomorrow 07:00', 'monday 10:00' or ISO time (add ; every=1 day to repeat; every=weekdays, weekends or tuesday,thursday for days of the week)",
                 args=[ArgSpec(name="when"), ArgSpec(name="text"), ArgSpec(name="every", required=False)],
                 action="timer_set", grounded_args=["text"], serves="timer_set"),
        ToolSpec(name="timers_list", summary="list the timers that are set", read_only=True, serves="timer_list"),
        ToolSpec(name="timers_cancel", summary="cancel a timer by id (or 'all')", args=[ArgSpec(name="id")],
                 action="timer_cancel", serves="timer_cancel"),
    ],
)


_WORDS = Path(__file__).with_name("words")
_SAID_BACK = re.compile(r"^\W*(?:" + alternation("naming", "said_back_patterns", _WORDS) + r")", re.IGNORECASE)
_TIME_WORDS = frozenset(words("naming", "said_back_time_words", _WORDS))


def timer_text(text: str) -> str:
    """A timer's text as the model gave it, less its own confirmation ("Alarm set for 6:30 AM
    tomorrow" is the timer word "alarm"; "Timer set for the pasta" is "pasta"): such a text says
    nothing the timer is for, and listed back it reads as a claim of setting it."""
    text = " ".join(text.strip().strip("\"'«»“”").split())
    said_back = _SAID_BACK.match(fold(text))
    if said_back is None:
        return text
    rest = [word for word in text[said_back.end():].split()
            if (bare := fold(word).strip(".,!?;:")) and bare not in _TIME_WORDS and not re.fullmatch(r"[\d:.]+", bare)]
    if rest:
        return " ".join(rest).strip(".,!?;: ")
    named = re.search(rf"\w*(?:{TIMER_WORD.pattern})\w*", fold(text[:said_back.end()]))
    if named is not None:
        return named.group(0)
    return words_of("ru" if is_russian(text) else "en", "naming", "unnamed_timer", _WORDS)[0]


def run_timer_tool(table: TimerTable, tool: str, args: Mapping[str, str]) -> CallOutcome:
    """Execute one timers_* call; never raises on bad input (a time it cannot read is an error)."""
    try:
        if tool == "timers_set":
            now = table.clock()  # the moment its span is counted from (the table reads the clock again: µs later)
            timer_id, due, text = table.set(args["when"], timer_text(args["text"]), args.get("every"))
            timer = next(t for t in table.pending() if t.timer_id == timer_id)
            return CallOutcome(kind="ok", text=text, data=TimerSet(id=timer_id, due=due, text=timer.text, set_at=now,
                                                                   every_s=timer.every, by_clock=said_as_clock(args["when"]),
                                                                   days=day_names(timer.days)))
        if tool == "timers_list":
            listed = [TimerRef(id=t.timer_id, due=t.due, text=t.text) for t in table.pending()]
            return CallOutcome(kind="ok", text=table.list(), data=TimersListed(timers=listed))
        return CallOutcome(kind="ok", text=table.cancel(args["id"]))
    except TimerError as exc:
        return CallOutcome(kind="error", text=f"Timer not set: {exc}")


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    outcome = run_timer_tool(context.timers, tool, args)
    if tool == "timers_set":
        context.timer_set()  # the timer wheel sleeps until the soonest timer
    return outcome


# the plain timer requests the session carries out itself (local.py) and how they are said (phrasing.py)
TOOLSET = SessionToolset(spec=TIMERS_TOOLSET, handler=_run, steps=STEPS, phrasing=PHRASING)
