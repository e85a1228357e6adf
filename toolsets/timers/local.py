"""The timers toolset's fast path (issue 50): the plain timer requests the session carries out
itself - set one ("wake me up at 6:30", "set a timer for 10 minutes for the pasta"), put the one
just set right ("actually make it 8 minutes"), list them, cancel one or all - and which timers a
cancel means. The tools called are the ones that serve "timer_set", "timer_list" and
"timer_cancel" (core.fastpath.FastPath.tool), never named here; what the user is told is this
folder's responses (intents.yaml). Each step returns None to leave the turn to the model.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Container

import msgspec

from core.done_said import ALARM_SPAN_S, set_for_said, span_said
from core.fastpath import FastPath, Intent
from core.intent import counted_back
from core.reflex import TIMER_WORD, among, norm_words
from core.timers import TimerError, dial_nearest, parse_when
from core.turn import TurnState
from protocol.results import TimerSet, ToolData

# a half of the day named with a clock time ("7 утра", "at 7 in the morning"), or a wake-up
# ("разбуди в 7:30", "alarm for 6"): the hour as said, the next time the clock shows it
_MORNING_SAID = re.compile(r"утр|ночи|ночью|morning|(?<!to)night|\bam\b|a\.m\.|разбуд|будильник|wake|alarm")


def _in_unit_of(timer: TimerSet, number: str, russian: bool) -> str:
    """A bare number said of a timer ("нет, давай на 25", "another one for 20") as a span in the
    unit that timer was set in: seconds, minutes or hours by its length."""
    span = timer.due - timer.set_at
    unit = 0 if span < 120 else 1 if span < 3 * 3600 else 2
    return f"in {number} {(('секунд', 'минут', 'часов') if russian else ('seconds', 'minutes', 'hours'))[unit]}"


def matching_timers(words: str, timers: list) -> list:
    """The timers whose text shares a word with `words`, in any grammatical case: "отмени
    таймер про маму" -> "позвонить маме"."""
    said = ({w for w in norm_words(words).split() if len(w) >= 3 and not TIMER_WORD.match(w)}
            - {"про", "the", "about", "for", "one", "тот", "тот", "что", "который", "которая", "that"})
    return [t for t in timers if any(among(w, set(norm_words(t.text).split())) for w in said)]


def timers_to_cancel(intent: Intent, pending: list, results_before: list[tuple[str, ToolData | None]] = (),
                     timer_tools: Container[str] = ()) -> list | None:
    """The timers a cancel means: all, the one whose text its words name, or the only one when
    the words say "timer" ("отмени таймер"); None when that is not plain (the model asks).
    "kill the pizza one" names no timer word: it cancels only a timer about pizza. "cancel it"
    (`intent.last_timer`) means the timer the turn before set, or the only one it listed; with
    `results_before` the (tool, result's payload) pairs of that turn, `timer_tools` the tools
    that set, list and cancel timers."""
    if intent.last_timer:
        return _timer_talked_about(results_before, pending, timer_tools)
    if intent.both_timers:  # "scratch both of them": which two is plain only when two are set
        return pending if len(pending) == 2 else None
    if intent.all_timers or not pending:
        return pending
    chosen = matching_timers(intent.text, pending)
    if not chosen and len(pending) == 1 and TIMER_WORD.search(intent.text):
        return pending
    return chosen if len(chosen) == 1 else None


def _timer_talked_about(results_before: list[tuple[str, ToolData | None]], pending: list,
                        timer_tools: Container[str]) -> list | None:
    touched = [name for name, _data in results_before if name in timer_tools]
    set_ids = [data.id for _name, data in results_before if isinstance(data, TimerSet)]
    if set_ids:  # "set a 30 minute timer" … "actually cancel it": the one just set, if it still runs
        chosen = [t for t in pending if t.timer_id == set_ids[-1]]
        return chosen or None
    if touched and len(pending) == 1:  # "what timers have I got?" … "scrap that one": the only one
        return pending
    return None


# ---- the steps ------------------------------------------------------------------------------
async def timer_set(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    if counted_back(fast.turn_words(turn)):
        return None  # "за полчаса до начала": counted back from an event only the model can place
    if intent.when.isdigit():  # "and another one for 20": in the unit of the timer the turn before set
        set_before = [data for _name, data in fast.results_before(turn) if isinstance(data, TimerSet)]
        if not set_before:
            return None
        intent = msgspec.structs.replace(intent, when=_in_unit_of(set_before[-1], intent.when, intent.russian))
    now = fast.now()
    when = intent.when if _MORNING_SAID.search(fast.turn_words(turn).casefold()) else \
        dial_nearest(intent.when, now, fast.timezone())  # "в полвосьмого" at 18:00: 19:30
    try:
        due = parse_when(when, now, fast.timezone())
    except TimerError:
        return None  # the model asks what was meant
    before = len(fast.pending_timers())
    text = intent.text or ("таймер" if intent.russian else "timer")
    every = f"; every={intent.every}" if intent.every else ""
    if await fast.call(turn, fast.tool("timer_set"), f"{when}; {text}{every}") is None or len(fast.pending_timers()) <= before:
        return None
    return _timer_set_said(fast, intent, now, due)


def _timer_set_said(fast: FastPath, intent: Intent, now: float, due: float) -> str | None:
    """"Timer set for 10 minutes, it goes off at 05:13: the pasta." for a length; for a clock
    time the day and the time it goes off ("Set for tomorrow at 07:00: alarm.", never "for
    25 hours 56 minutes 27 seconds"), and "every day at 08:00" for a daily one."""
    text = f": {intent.text}" if intent.text else ""
    at, russian = fast.clock_time(due), intent.russian
    if intent.when.startswith("in ") or intent.every and intent.every != "1 day":
        span = span_said(fast.speaker(russian), due - now)
        return None if span is None else _say(fast, "timer_set", russian, span=span, at=at, text=text)
    if intent.every:
        return _say(fast, "timer_set_daily", russian, at=at, text=text)
    return set_for_said(fast.speaker(russian), due, now, fast.timezone(), russian, text)


async def timer_change(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    """"actually make it 10 minutes", "нет, давай на 25": the timer the turn before set, set
    again for the new time with its text (the new one first: if it cannot be set, the old one
    stays), then the old one cancelled. A bare number is in the old timer's unit. With no
    timer set the turn before, a length said ("сделай на 40 минут") is a new timer; else the
    model's."""
    set_before = [data for _name, data in fast.results_before(turn) if isinstance(data, TimerSet)]
    old = set_before[-1] if len(set_before) == 1 else None
    if old is None or old.every_s or not any(t.timer_id == old.id for t in fast.pending_timers()):
        plain = intent.when.startswith("in ") and not set_before
        return await timer_set(fast, turn, msgspec.structs.replace(intent, kind="timer_set")) if plain else None
    when = intent.when
    if when.isdigit() and old.due - old.set_at >= ALARM_SPAN_S:  # an alarm's "make it 7": 7 o'clock of its day
        when = _same_day_hour(fast, old.due, int(when))
    elif when.isdigit():  # in the unit the timer it puts right was set in
        when = _in_unit_of(old, when, intent.russian)
    if not when:
        return None
    answer = await timer_set(fast, turn, Intent(kind="timer_set", russian=intent.russian, when=when, text=old.text))
    if answer is None or await fast.call(turn, fast.tool("timer_cancel"), old.id) is None:
        return None
    return answer


def _same_day_hour(fast: FastPath, due: float, hour: int) -> str:
    """The clock time `hour` on the day of `due`, in the same half of the day ("06:30
    tomorrow" made 7: "tomorrow 07:00"); "" when that day is neither today nor tomorrow."""
    moment = dt.datetime.fromtimestamp(due, fast.timezone())
    days = (moment.date() - dt.datetime.fromtimestamp(fast.now(), fast.timezone()).date()).days
    if not 0 <= hour <= 23 or days not in (0, 1):
        return ""
    hour += 12 if moment.hour >= 12 and hour < 12 else 0
    return f"{'tomorrow ' if days else ''}{hour:02d}:00"


async def timer_list(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    if await fast.call(turn, fast.tool("timer_list"), "") is None:
        return None
    listed = "; ".join(f"{fast.clock_time(t.due)} — {t.text}" for t in fast.pending_timers())
    return _say(fast, "timers_listed", intent.russian, listed=listed) if listed else _say(fast, "no_timers", intent.russian)


async def timer_cancel(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    pending = fast.pending_timers()
    timer_tools = {fast.tool("timer_set"), fast.tool("timer_list"), fast.tool("timer_cancel")} - {""}
    chosen = timers_to_cancel(intent, pending, fast.results_before(turn) if intent.last_timer else [], timer_tools)
    if chosen is None:
        return None  # the words name none or several of the timers: the model asks
    every = intent.all_timers or not pending or len(chosen) == len(pending)
    for target in ["all"] if every else [timer.timer_id for timer in chosen]:  # never one said as several
        if await fast.call(turn, fast.tool("timer_cancel"), target) is None:
            return None
    return _timers_cancelled_said(fast, [t.text for t in chosen], intent.russian)


def _timers_cancelled_said(fast: FastPath, texts: list[str], russian: bool) -> str | None:
    if len(texts) <= 1:
        return _say(fast, "timer_cancelled", russian, name=texts[0]) if texts else _say(fast, "nothing_to_cancel", russian)
    quoted = [_say(fast, "timer_quoted", russian, name=text) for text in texts]
    return None if None in quoted else _say(fast, "timers_cancelled", russian, listed=", ".join(quoted))


def _say(fast: FastPath, response: str, russian: bool, /, **slots: object) -> str | None:
    return fast.speaker(russian)(response, **slots)


STEPS = {"timer_set": timer_set, "timer_change": timer_change, "timer_list": timer_list, "timer_cancel": timer_cancel}
