"""The clock in the user's words: "суббота, 14 марта, 18:00" / "Saturday, 14 March, 18:00".

A small model copies what a tool says; given "2026-03-14T18:00:00+03:00 (MSK, Saturday)" it put
the ISO stamp on the glasses or translated the weekday wrongly. So get_current_time says the
time the way the answer should, in the user's language; the year and zone come after, in
parentheses, for the questions that need them.
"""
from __future__ import annotations

import datetime as dt
import re

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


# ---- a time of day said in words -> digits ------------------------------------------------------
_EN_HOURS = {w: n for n, w in enumerate("one two three four five six seven eight nine ten eleven twelve".split(), 1)}
_RU_HOURS = {w: n for n, w in enumerate("час два три четыре пять шесть семь восемь девять десять одиннадцать "
                                        "двенадцать".split(), 1)} | {"одного": 1, "один": 1}
_RU_ORDINAL = {w: n for n, w in enumerate("первого второго третьего четвертого пятого шестого седьмого восьмого "
                                          "девятого десятого одиннадцатого двенадцатого".split(), 1)}
_RU_BEFORE = {"четверти": 15, "пятнадцати": 15, "десяти": 10, "пяти": 5, "двадцати": 20}
_EN_MINUTES = {"fifteen": 15, "thirty": 30, "forty-five": 45, "forty five": 45, "o'clock": 0, "oclock": 0}
_N_EN = r"(?P<h>\d{1,2}|" + "|".join(_EN_HOURS) + ")"
_N_RU = r"(?P<h>\d{1,2}|" + "|".join(sorted(_RU_HOURS, key=len, reverse=True)) + ")"
_ORD_RU = r"(?P<o>" + "|".join(_RU_ORDINAL) + ")"
_MARK = (r"(?:\s+(?P<mark>вечера|утра|дня|ночи|a\.m\.|p\.m\.|am|pm))?"
         r"(?:\s+(?P<when>tonight|this\s+evening|сегодня\s+вечером|вечером))?")  # said with the hour: no timer text
_SPOKEN_CLOCK = (
    (re.compile(r"(?<!\w)(?:at\s+)?(?:a\s+)?quarter\s+to\s+" + _N_EN + _MARK + r"(?!\w)"), -15),
    (re.compile(r"(?<!\w)(?:at\s+)?(?:a\s+)?quarter\s+past\s+" + _N_EN + _MARK + r"(?!\w)"), 15),
    (re.compile(r"(?<!\w)(?:at\s+)?half\s+past\s+" + _N_EN + _MARK + r"(?!\w)"), 30),
    (re.compile(r"(?<!\w)at\s+" + _N_EN + r"\s+(?P<m>fifteen|thirty|forty[\s-]five|o'?clock)" + _MARK + r"(?!\w)"), None),
    (re.compile(r"(?<!\w)(?:в\s+)?(?:пол[-\s]?|половин[еуа]\s+)" + _ORD_RU + _MARK + r"(?!\w)"), -30),
    (re.compile(r"(?<!\w)(?:в\s+)?четверть\s+" + _ORD_RU + _MARK + r"(?!\w)"), -45),
    (re.compile(r"(?<!\w)(?:в\s+)?без\s+(?P<b>" + "|".join(_RU_BEFORE) + r")\s+" + _N_RU + _MARK + r"(?!\w)"), None),
)
_EVENING = re.compile(r"(?<!\w)(?:tonight|this\s+evening|in\s+the\s+evening|вечером|сегодня\s+вечером)(?!\w)")
_MORNING = re.compile(r"(?<!\w)(?:in\s+the\s+morning|this\s+morning|утром|ночью|at\s+night)(?!\w)")


def spoken_clock(text: str) -> str:
    """"quarter to nine tonight" -> "at 20:45 tonight", "в полвосьмого вечера" -> "в 19:30",
    "без четверти два" -> "в 13:45": a time of day said in words, in digits the timer patterns
    read. A morning or night word keeps the hour; an evening one, or an hour from 1 to 6 said
    with neither (a reminder at a quarter to two is rarely for the night), is after noon."""
    lowered = text.casefold().replace("ё", "е")
    if len(lowered) != len(text):
        return text
    for pattern, shift in _SPOKEN_CLOCK:
        found = pattern.search(lowered)
        if found is None:
            continue
        hour, minute = _clock_said(found, shift)
        mark = found["mark"] or ""
        evening = mark in ("вечера", "дня", "pm", "p.m.") or found["when"] or not mark and _EVENING.search(lowered)
        morning = mark in ("утра", "ночи", "am", "a.m.") or not mark and _MORNING.search(lowered)
        if hour < 12 and (evening or not morning and 1 <= hour <= 6):
            hour += 12
        word = "в" if re.search(r"[а-я]", found.group(0)) else "at"
        return text[:found.start()] + f"{word} {hour}:{minute:02d}" + text[found.end():]
    return text


def _clock_said(found: re.Match[str], shift: int | None) -> tuple[int, int]:
    if "o" in found.groupdict() and found["o"]:  # "полвосьмого": half of the eighth hour, 7:30
        hour = _RU_ORDINAL[found["o"]] - 1 or 12
        return hour, 60 + shift if shift else 0
    said = found["h"]
    hour = int(said) if said.isdigit() else _EN_HOURS.get(said) or _RU_HOURS[said]
    if "b" in found.groupdict() and found["b"]:  # "без четверти девять": 8:45
        return (hour - 1) or 12, 60 - _RU_BEFORE[found["b"]]
    if shift is None:  # "at eight fifteen"
        return hour, _EN_MINUTES[found["m"].replace("-", " ") if "five" in found["m"] else found["m"]]
    if shift < 0:  # "quarter to nine": 8:45
        return (hour - 1) or 12, 60 + shift
    return hour, shift
