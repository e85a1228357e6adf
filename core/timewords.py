"""The clock in the user's words: "суббота, 14 марта, 18:00" / "Saturday, 14 March, 18:00".

A small model copies what a tool says; given "2026-03-14T18:00:00+03:00 (MSK, Saturday)" it put
the ISO stamp on the glasses or translated the weekday wrongly. So get_current_time says the
time the way the answer should, in the user's language; the year and zone come after, in
parentheses, for the questions that need them.
"""
from __future__ import annotations

import datetime as dt

_WEEKDAYS_RU = ("понедельник", "вторник", "среда", "четверг", "пятница", "суббота", "воскресенье")
_MONTHS_RU = ("января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября",
              "ноября", "декабря")
_WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")


def spoken_time(now: dt.datetime, russian: bool) -> str:
    """`now` (aware) as a line to copy: weekday, day month, HH:MM, then (year, zone)."""
    zone = now.tzname() or ""
    if russian:
        line = f"{_WEEKDAYS_RU[now.weekday()]}, {now.day} {_MONTHS_RU[now.month - 1]}, {now:%H:%M}"
    else:
        line = f"{_WEEKDAYS_EN[now.weekday()]}, {now.day} {_MONTHS_EN[now.month - 1]}, {now:%H:%M}"
    return f"{line} ({now.year}{', ' + zone if zone else ''})"


_PROGRESS = {  # tool -> (Russian, English) line shown while its call runs; {arg}: its first argument
    "media_search": ("ищу «{arg}»…", "searching for “{arg}”…"),
    "media_info": ("смотрю подробности…", "looking up the details…"),
    "media_play": ("включаю…", "starting playback…"),
    "get_current_time": ("смотрю на часы…", "checking the clock…"),
    "history_search": ("вспоминаю…", "looking back…"),
}
_PROGRESS_ARG_CHARS = 40


def progress_line(tool: str, raw_args: str, russian: bool) -> str:
    """A first line for the glasses as soon as a call is parsed ("ищу «Матрица»…"), so the user
    sees something before the answer; "" for a call that needs none (a skill read, a timer)."""
    if tool not in _PROGRESS:
        return ""
    arg = raw_args.split(";")[0].split("|")[0].strip()
    if len(arg) > _PROGRESS_ARG_CHARS:
        arg = arg[:_PROGRESS_ARG_CHARS].rstrip() + "…"
    return _PROGRESS[tool][0 if russian else 1].format(arg=arg)
