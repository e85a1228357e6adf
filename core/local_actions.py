"""What a local intent's action asks of the session, as the reflex steps carry it out.

A toolset's `intents.yaml` (core.local_intents) names an action for each intent it answers;
this turns a match's action and typed slots into the request `core.reflex_steps` carries out,
so a sentence matched whole needs no second reading of its words: "set a timer for 1 and a 1/2
hours" arrives as {"hours": 1, "minutes": 30} and is set as 90 minutes.
"""
from __future__ import annotations

import re

from core.fastpath import Reference
from core.intent import says_repeat
from core.lexicon import alternation
from core.local_intents import LocalMatch
from core.reflex import NUMBER_WORDS, TEENS, TENS, Intent, norm_words
from core.timers import WEEKDAYS

_UNITS = (("hours", "hours"), ("minutes", "minutes"), ("seconds", "seconds"))
# a timer of a length named ("cancel my 5 minute timer"): its words, for the timer's own text
_START_UNITS = (("start_hours", "hours"), ("start_minutes", "minutes"), ("start_seconds", "seconds"))
_TEXT_SLOTS = ("conversation_command", "timer_name", "name")
_TIMER_WORD = {True: "таймер", False: "timer"}  # a cancel's words name a timer: the only one is meant
_ALARM_WORD = {True: "будильник", False: "alarm"}
# the speaker's reason after what to remind of ("кардиомагнил выпить. а то я-то точно забуду"): no part of the
# reminder's text (the sentence matcher reads the words with their full stops gone)
_REASON_AFTER = re.compile(r"\s+(?:" + alternation("requests", "reason_after_patterns") + r")(?:\s.*)?$", re.IGNORECASE)


def _without_reason(text: str) -> str:
    """A reminder's text less the speaker's reason said after it; the text as said when that leaves nothing."""
    return _REASON_AFTER.sub("", text).strip() or text
DAY_SLOTS = ("day", "repeat")  # slots that read the day said: "tomorrow", "every day"
LENGTH_SLOTS = tuple(slot for slot, _unit in _UNITS)  # slots that read a timer's length: "дай мне час, потом напомни …"


def clock_words(slots: dict[str, str | float]) -> str:
    """"tomorrow 19:30" from {"day": "tomorrow", "hour": 7, "minute": 30, "half": "pm"}: what
    core.timers.parse_when reads; "" without an hour that fits a day."""
    hour, minute = slots.get("hour"), slots.get("minute", 0.0)
    if not isinstance(hour, float) or not isinstance(minute, float) or not 0 <= hour <= 23 or not 0 <= minute <= 59:
        return ""
    if slots.get("half") == "night":  # "в два ночи" is 02:00, "в одиннадцать ночи" 23:00
        hour += 12 if 6 <= hour < 12 else 0
    elif slots.get("half") == "pm" and hour < 12:
        hour += 12
    elif slots.get("half") == "am" and hour == 12:
        hour = 0
    clock = f"{int(hour):02d}:{int(minute):02d}"
    return f"{slots['day']} {clock}" if slots.get("day") in ("today", "tomorrow", *WEEKDAYS) else clock


def duration_words(slots: dict[str, str | float], units=_UNITS) -> str:
    """"1 hours 30 minutes" from {"hours": 1, "minutes": 30}: what core.timers.parse_duration
    reads; "" when no unit was said."""
    parts = []
    for slot, unit in units:
        value = slots.get(slot)
        if isinstance(value, float) and value > 0:
            parts.append(f"{value:g} {unit}")
    return " ".join(parts)


_NUMBER_WORDS = frozenset({*NUMBER_WORDS, *TEENS, *TENS})


def _first_word_a_number(text: str) -> bool:
    first = text.split(maxsplit=1)[0].casefold() if text.strip() else ""
    return first.isdigit() or first in _NUMBER_WORDS


def _last_word_a_number(text: str) -> bool:
    """"another one for forty-five minutes": a name that took the first part of the length ("forty-")."""
    last = text.split()[-1].casefold().strip("-") if text.strip() else ""
    return last.isdigit() or last in _NUMBER_WORDS or text.rstrip().endswith("-")


def _time_there(match: LocalMatch, russian: bool) -> Intent | None:
    """Another place's clock time asked on the user's: its hour read on a 12-hour dial when no half
    of the day is said ("nine o'clock their time"); "ночи" is the night's ("в два ночи", "в одиннадцать ночи")."""
    slots = dict(match.slots)
    when = clock_words(slots)  # "monday 09:00": the next Monday there
    hour = slots.get("hour")
    dial = not slots.get("half") and isinstance(hour, float) and 1 <= hour <= 11
    # `text`: the place whose clock it is asked on, when the words name one ("это во сколько по Москве?")
    return Intent(kind="time_there", russian=russian, subject=str(slots.get("place", "")), when=when, dial=dial,
                  text=str(slots.get("here_place", ""))) if when else None


def reflex_intent(match: LocalMatch) -> Intent | None:
    """The request a matched action means, or None when this runtime has no such action (the
    model then reads the words)."""
    russian = match.language == "ru"
    action = match.action
    if action == "timer_set":
        when = duration_words(match.slots)
        text = next((str(match.slots[s]) for s in _TEXT_SLOTS if match.slots.get(s)), "")
        if _last_word_a_number(text):
            return None  # a part of the length read as the name: the reflex or the model reads the words
        return Intent(kind="timer_set", russian=russian, when=f"in {when}", text=text) if when else None
    if action == "alarm":  # a clock time, its day, its repeat: "wake me tomorrow at 6:45"
        when = clock_words(match.slots)
        text = _without_reason(str(match.slots.get("reminder") or _ALARM_WORD[russian]))
        if _first_word_a_number(text):
            return None  # "в девять ноль пять вечера полить …": a part of the time not read, left in the text
        every = {"day": "1 day", "week": "1 week"}.get(str(match.slots.get("repeat", "")), "")
        if match.slots.get("repeat") == "days":  # "on weekdays", "every Tuesday and Friday": the timer tool's names
            every = ",".join(str(match.slots[slot]) for slot in ("days", "days_2", "days_3") if match.slots.get(slot))
        if not every and says_repeat(text):
            return None  # "поставь напоминание на 8 вечера, каждый день": a repeat left in the text is the model's
        return Intent(kind="timer_set", russian=russian, when=when, text=text, every=every) if when else None
    if action == "timer_day":  # "move that one to Monday", "oh and thursdays too": the timer talked about, on that day
        days = ",".join(str(match.slots[slot]) for slot in ("day", "day_2", "day_3") if match.slots.get(slot))
        return Intent(kind="timer_change", russian=russian, when=f"day:{days}",
                      action="add" if match.slots.get("also") else "")
    if action == "timer_cancel":  # "cancel the timer": the only one; "my 5 minute timer": the one so named
        said = duration_words(match.slots, _START_UNITS)
        return Intent(kind="timer_cancel", russian=russian, text=f"{said} {_TIMER_WORD[russian]}".strip())
    if action == "timer_cancel_all":
        return Intent(kind="timer_cancel", russian=russian, all_timers=True)
    if action == "timer_list":
        return Intent(kind="timer_list", russian=russian)
    if action in ("time_now", "date_now"):
        return Intent(kind="time_now", russian=russian)
    if action == "repeat":  # "чего? громче говори, не слышу я": the answer before, again
        return Intent(kind="repeat", russian=russian)
    if action == "time_there":  # "what's 9 pm London time for me?": the place said, or the one the words name
        return _time_there(match, russian)
    if action in ("pause", "resume", "stop"):
        return Intent(kind="playback", russian=russian, action=action)
    if action == "tasks":  # "is anything running in the background?": a question with no slot
        return Intent(kind="tasks", russian=russian)
    if action == "watches":  # "what else are you watching for me?": the watches' list
        return Intent(kind="tasks", russian=russian, action="watches")
    if action == "unwatch":  # "drop the Mike one": the watch it names; "эту слежку убери": the one just talked about
        named = norm_words(str(match.slots.get("watch_name", "")))
        return Intent(kind="unwatch", russian=russian, subject=named, found_only=match.wildcard,
                      reference=None if named else Reference(last=True))
    if action == "watch_moved":  # "перекинь на телегу": the watch just set, on the app the words name
        return Intent(kind="watch", russian=russian, action="move", subject=norm_words(str(match.slots.get("watch_app", ""))))
    if action == "play" and match.slots.get("search_query"):
        return Intent(kind="play", russian=russian, subject=str(match.slots["search_query"]).casefold())
    if action == "search" and match.slots.get("search_query"):  # "а X у нас есть?": X, if the catalog has it
        return Intent(kind="search", russian=russian, subject=norm_words(str(match.slots["search_query"])),
                      found_only=match.wildcard)
    return None
