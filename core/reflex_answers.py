"""The answers of the reflexes (core.reflex), worded from the results of the calls the session
made for them, and what those results and the history say back: the timers a cancel means, the
title a play or a details answer named, a fired timer's text, another place's time.

Pure functions, like core.reflex; the session (core.reflex_steps) runs them. Every answer is in the
user's language (`Intent.russian`) and says only what a result holds.
"""
from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from typing import NamedTuple

from core.local_intents import Say
from core.places import initials, place_name
from core.reflex import _PLACE_CLOCK, Intent, is_russian
from core.timewords import spoken_parts
from protocol.results import ClockRead


def time_answer(say: Say, now: dt.datetime, russian: bool) -> str | None:
    """"Сейчас 18:00, суббота, 14 марта.": the moment a clock read (aware), in words."""
    weekday, date, clock = spoken_parts(now, russian)
    return say("time_now", clock=clock, weekday=weekday, date=date)


_DAYS_FROM_TODAY = {-2: "day_before_yesterday", -1: "yesterday", 1: "tomorrow", 2: "day_after_tomorrow"}


def day_answer(say: Say, day: dt.datetime, offset: int, russian: bool) -> str | None:
    """"Завтра воскресенье, 15 марта." - the weekday and date `offset` days from today."""
    weekday, date, _clock = spoken_parts(day, russian)
    return say(_DAYS_FROM_TODAY.get(offset, "another_day"), weekday=weekday, date=date)


def time_there_answer(say: Say, place: str, there: dt.datetime, here: dt.datetime, today: dt.date, russian: bool) -> str | None:
    """"When it's 21:00 in London, it's 00:00 tomorrow for you (Sunday).": a moment on the place's
    clock and on the user's (both aware), the user's day said when it is not today."""
    weekday, _date, clock_here = spoken_parts(here, russian)
    _weekday, _date, clock_there = spoken_parts(there, russian)
    name = _place_as_said(place_name(place) or place, russian)
    response = "time_there_today" if here.date() == today else "time_there_other_day"
    return say(response, place=name, there=clock_there, here=clock_here, weekday=weekday)


def tells_place_time(summary: str) -> bool:
    """A tool whose summary says it gives a city's or a zone's time (an MCP world clock)."""
    return all(pattern.search(summary) for pattern in _PLACE_CLOCK)


def show_answer(intent: Intent) -> str:
    """What stays on the glasses: the text itself."""
    return intent.text


_FIRED = re.compile(r"^\[Timer fired(?P<late> \(late: [^)\]]*\))?\] (?P<text>.+)$", re.S)


class Fired(NamedTuple):
    text: str
    late: bool  # it went off late: the server was down when it was due


def fired_timer(recorded: str) -> Fired | None:
    """Its text and whether late, when a turn's only event is a timer firing ("[Timer fired] чай")."""
    found = _FIRED.match(recorded.strip())
    return Fired(found["text"].strip(), bool(found["late"])) if found else None


def reminder_in_russian(text: str) -> bool:
    """A fired timer's reminder is said in its text's language (Russian when it has no Latin word)."""
    return is_russian(text) or not re.search(r"[a-z]", text.casefold())


# a world clock's answer: an ISO moment ("2026-03-14T10:00:00-04:00", mcp-server-time) or the
# words "Saturday, 14 March, 10:00"
_ISO_MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)")
_EN_MOMENT = re.compile(r"(?P<weekday>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday),? (?P<day>\d{1,2}) "
                        r"(?P<month>January|February|March|April|May|June|July|August|September|October|November|"
                        r"December),? (?P<clock>\d{1,2}:\d\d)")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def place_time_answer(say: Say, intent: Intent, result: str) -> str | None:
    """"В Нью-Йорке сейчас 10:00, суббота, 14 марта." from a world clock's result, in the user's
    language; None when the result says no moment it can read (the model words it)."""
    iso = _ISO_MOMENT.search(result)
    if iso is not None:
        try:
            moment = dt.datetime.fromisoformat(iso.group(0).replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        words = _EN_MOMENT.search(result)
        if words is None:
            return None
        day, clock = int(words["day"]), words["clock"]
        month, weekday = _MONTHS.index(words["month"]), _WEEKDAYS.index(words["weekday"])
        # the words for that weekday and date (any year that has them will do)
        moment = next(dt.datetime(year, month + 1, day) for year in range(2024, 2032)
                      if _valid_date(year, month + 1, day) and dt.date(year, month + 1, day).weekday() == weekday)
        hour, minute = clock.split(":")
        moment = moment.replace(hour=int(hour), minute=int(minute))
    return _there(say, intent, moment)


def place_clock_answer(say: Say, intent: Intent, clock: ClockRead) -> str | None:
    """The same from the built-in clock read for the place (get_current_time|place)."""
    return _there(say, intent, dt.datetime.fromtimestamp(clock.at, zoneinfo.ZoneInfo(clock.place)))


def _there(say: Say, intent: Intent, moment: dt.datetime) -> str | None:
    told = time_answer(say, moment, intent.russian)
    place = _place_as_said(intent.subject, intent.russian)
    vo = intent.russian and re.match(r"[вф][^аеёиоуыэюя]", place.casefold())  # "Во Владивостоке"
    # "В Нью-Йорке сейчас …", "In Tokyo it's …"
    return told and say("place_time_vo" if vo else "place_time", place=place, time=f"{told[0].lower()}{told[1:]}")


def _valid_date(year: int, month: int, day: int) -> bool:
    try:
        dt.date(year, month, day)
    except ValueError:
        return False
    return True


def _place_as_said(place: str, russian: bool) -> str:
    """"нью-йорке" -> "Нью-Йорке", "new york" -> "New York", "la" -> "LA"."""
    if initials(place):
        return place.strip().upper()
    return re.sub(r"(?:^|(?<=[\s-]))(\w)", lambda m: m.group(1).upper(), place.strip())
