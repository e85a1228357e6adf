"""The clock in the user's words: "суббота, 14 марта, 18:00" / "Saturday, 14 March, 18:00".

A small model copies what a tool says; given "2026-03-14T18:00:00+03:00 (MSK, Saturday)" it put
the ISO stamp on the glasses or translated the weekday wrongly. So get_current_time says the
time the way the answer should, in the user's language; the year and zone come after, in
parentheses, for the questions that need them.

The words (weekdays, months, hours, minutes, halves of the day, years) are data in
core/words/<language>/clock.toml; the patterns here say how they combine.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from core import lexicon, user_texts
from core.timers import LENGTH_PHRASES, UNIT_SECONDS, TimerError, parse_duration

_CLOCK = "clock"  # the words: core/words/<language>/clock.toml


def _of(language: str, key: str):
    """One language's list, table or word of the clock topic, for the grammar of that language
    (a "quarter to" reads English hours only; lexicon.words/table join every language)."""
    return lexicon.topic(language, _CLOCK)[key]


def _either(key: str) -> str:
    """An alternation of the regex fragments of list `key` (every language; core.lexicon.alternation)."""
    return lexicon.alternation(_CLOCK, key)


def _one(key: str) -> str:
    """The regex fragments of list `key` as one piece to put in a pattern: the fragment itself when
    there is one, a group of the alternatives when more, one that never matches when none."""
    fragments = lexicon.words(_CLOCK, key)
    return fragments[0] if len(fragments) == 1 else f"(?:{'|'.join(fragments)})" if fragments else "(?!)"


_WEEKDAYS_RU, _MONTHS_RU = tuple(_of("ru", "weekdays")), tuple(_of("ru", "months"))
_WEEKDAYS_EN, _MONTHS_EN = tuple(_of("en", "weekdays")), tuple(_of("en", "months"))
_RU_AT, _EN_AT = _of("ru", "clock_preposition"), _of("en", "clock_preposition")  # "в 19:30", "at 19:30"


def spoken_time(now: dt.datetime, russian: bool) -> str:
    """`now` (aware) as a line to copy: weekday, day month, HH:MM, then (year, zone)."""
    zone = now.tzname() or ""
    return f"{', '.join(spoken_parts(now, russian))} ({now.year}{', ' + zone if zone else ''})"


def spoken_parts(now: dt.datetime, russian: bool) -> tuple[str, str, str]:
    """(weekday, day month, HH:MM) in words: ("суббота", "14 марта", "18:00")."""
    if russian:
        return _WEEKDAYS_RU[now.weekday()], f"{now.day} {_MONTHS_RU[now.month - 1]}", f"{now:%H:%M}"
    return _WEEKDAYS_EN[now.weekday()], f"{now.day} {_MONTHS_EN[now.month - 1]}", f"{now:%H:%M}"


_PROGRESS_ARG_CHARS = 40
CLOCKS_SAID_MAX = 4  # times of day in words put in digits in one utterance


def progress_line(spec, raw_args: str, russian: bool) -> str:
    """A first line for the glasses as soon as a call is parsed ("ищу «Матрица»…"), so the user
    sees something before the answer, as the tool's spec words it (protocol.ToolSpec.progress);
    "" for a call that needs none (a skill read, a timer)."""
    line = spec.progress.get("ru" if russian else "en", "") if spec is not None else ""
    if not line:
        return ""
    arg = raw_args.split(";")[0].split("|")[0].strip()
    if len(arg) > _PROGRESS_ARG_CHARS:
        arg = arg[:_PROGRESS_ARG_CHARS].rstrip() + "…"
    return line.replace("{arg}", arg)


def thinking_line(russian: bool) -> str:
    """The line a turn shows while the model is still silent (session.first_feedback_ms)."""
    return user_texts.text("thinking", "ru" if russian else "en")


# ---- a time of day said in words -> digits ------------------------------------------------------
_EN_HOURS: dict[str, int] = _of("en", "hours")
_RU_HOURS: dict[str, int] = _of("ru", "hours")
_RU_ORDINAL: dict[str, int] = lexicon.table(_CLOCK, "ordinal_hours")
_RU_BEFORE: dict[str, int] = lexicon.table(_CLOCK, "minutes_before")
_EN_MINUTES: dict[str, int] = lexicon.table(_CLOCK, "clock_minutes")
_HALVES: dict[str, str] = lexicon.table(_CLOCK, "day_halves")  # "вечера" -> "evening"
_EVENING_MARKS = tuple(w for w, half in _HALVES.items() if half == "evening")
_MORNING_MARKS = tuple(w for w, half in _HALVES.items() if half == "morning")
_RU_EVENING_MARKS = tuple(w for w, half in _of("ru", "day_halves").items() if half == "evening")
_MARKS = "|".join(map(re.escape, _HALVES))
_N_EN = r"(?P<h>\d{1,2}|" + "|".join(_EN_HOURS) + ")"
_N_RU = r"(?P<h>\d{1,2}|" + "|".join(sorted(_RU_HOURS, key=len, reverse=True)) + ")"
_ORD_RU = r"(?P<o>" + "|".join(_RU_ORDINAL) + ")"
_MARK = (r"(?:\s+(?P<mark>" + _MARKS + "))?"
         r"(?:\s+(?P<when>" + _either("tonight_patterns") + "))?")  # said with the hour: no timer text
_LEAD_RU = r"(?:" + _one("ordinal_clock_lead_patterns") + ")?"  # "(в) полвосьмого", "на полседьмого"
_EN_PAST: dict[str, int] = lexicon.table(_CLOCK, "minutes_past_hour")  # "twenty past nine"
_PAST = "|".join(sorted(map(re.escape, _EN_PAST), key=len, reverse=True))
_NO_UNIT = r"(?!\w|\s+(?:" + "|".join(lexicon.words(_CLOCK, "unit_stems")) + r"))"  # "ten to fifteen minutes": a span
# "at noon", "в полдень": a time of day by its name
_CLOCK_PHRASES = tuple((re.compile(r"(?<!\w)(?:" + said + r")(?!\w)"), clock)
                       for said, clock in lexicon.table(_CLOCK, "clock_phrases").items())
# each phrase (core/words: ..._patterns) before the hour it names, and the minutes it moves the hour by
_SPOKEN_CLOCK = (
    (re.compile(r"(?<!\w)" + _one("quarter_to_patterns") + _N_EN + _MARK + r"(?!\w)"), -15),
    (re.compile(r"(?<!\w)" + _one("quarter_past_patterns") + _N_EN + _MARK + r"(?!\w)"), 15),
    (re.compile(r"(?<!\w)" + _one("half_past_patterns") + _N_EN + _MARK + r"(?!\w)"), 30),
    (re.compile(r"(?<!\w)" + _one("hour_minutes_lead_patterns") + _N_EN + r"\s+(?P<m>" + _either("clock_minute_patterns")
                + "|" + _either("oclock_patterns") + ")" + _MARK + r"(?!\w)"), None),
    # "a timer for seven o'clock": a time of day, as "at"
    (re.compile(r"(?<!\w)" + _one("hour_oclock_lead_patterns") + _N_EN + r"\s+(?P<m>" + _either("oclock_patterns")
                + ")" + _MARK + r"(?!\w)"), None),
    # "twenty past nine", "at twenty to nine", "at two pm": an hour in words with its minutes or its half
    (re.compile(r"(?<!\w)(?:at\s+)?(?P<p>" + _PAST + r")" + _one("past_hour_patterns")
                + _N_EN + _MARK + _NO_UNIT), 0),
    (re.compile(r"(?<!\w)" + _one("to_hour_lead_patterns") + r"(?P<b>" + _PAST + r")"
                + _one("to_hour_patterns") + _N_EN + _MARK + _NO_UNIT), None),
    (re.compile(r"(?<!\w)" + _one("hour_half_lead_patterns") + r"(?P<h>" + "|".join(_EN_HOURS) + r")\s*(?P<mark>" + _MARKS
                + r")" + r"(?P<when>)" + r"(?![\w.])"), 0),
    (re.compile(r"(?<!\w)" + _LEAD_RU + _one("half_of_ordinal_patterns") + _ORD_RU + _MARK + r"(?!\w)"), -30),
    (re.compile(r"(?<!\w)" + _LEAD_RU + _one("quarter_of_ordinal_patterns") + _ORD_RU + _MARK + r"(?!\w)"), -45),
    (re.compile(r"(?<!\w)" + _LEAD_RU + _one("minutes_before_lead_patterns") + r"(?P<b>" + "|".join(_RU_BEFORE)
                + r")\s+" + _N_RU + _MARK + r"(?!\w)"), None),
)
_EVENING = re.compile(r"(?<!\w)(?:" + _either("evening_patterns") + r")(?!\w)")
# an alarm, a wake-up: a morning's hour ("поставь будильник на полседьмого" is 6:30, not 18:30)
_MORNING = re.compile(r"(?<!\w)(?:" + _either("morning_patterns") + r")(?!\w)")
# another time of the same words said with its half of the day ("такси на пять утра … напоминалку на
# полпятого"): a time said beside it with none is of the same half
_HALF_BESIDE = re.compile(r"(?<!\w)(?:\d{1,2}(?::\d\d)?|" + "|".join(sorted({*_EN_HOURS, *_RU_HOURS}, key=len, reverse=True))
                          + r")\s+(?P<mark>" + _MARKS + r")(?!\w)")


# "в пять минут седьмого", "в двадцать минут восьмого": minutes into the hour named by its ordinal
_PAST_RU: dict[str, int] = lexicon.table(_CLOCK, "minutes_past")


def _spaced(words) -> str:
    """Words longest first as an alternation, a space between two words as any spaces."""
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


_MINUTES_INTO = re.compile(r"(?<!\w)" + _LEAD_RU + r"(?P<m>\d{1,2}|" + _spaced(_PAST_RU) + r")\s+"
                           + _one("minute_word_patterns") + r"\s+" + _ORD_RU + _MARK + r"(?!\w)")


_RU_SMALL: dict[str, int] = lexicon.table(_CLOCK, "clock_numbers")
_RU_TENS: dict[str, int] = _of("ru", "tens")
# tens under sixty and a unit after ("сорок пять"), or a number under twenty ("девятнадцать")
_RU_NUMBER = (r"(?:(?:" + "|".join(w for w, n in _RU_TENS.items() if n < 60) + r")(?:\s+(?:"
              + "|".join(w for w, n in sorted(_RU_SMALL.items(), key=lambda item: item[1]) if 1 <= n <= 9) + r"))?|"
              + "|".join(sorted(_RU_SMALL, key=len, reverse=True)) + ")")
# "в девятнадцать сорок пять", "в семь тридцать утра": an hour and its minutes, each in words
_RU_CLOCK_WORDS = re.compile(r"(?<!\w)" + _one("clock_lead_patterns") + r"(?P<h>" + _RU_NUMBER + r")(?:\s+"
                             + _one("hour_word_patterns") + r")?\s+(?P<m>(?:" + _one("minute_zero_patterns") + ")?"
                             + _RU_NUMBER + r")(?:\s+" + _one("minute_word_patterns") + ")?" + _MARK + r"(?!\w)")


def _ru_number(words: str) -> int:
    return sum(_RU_TENS.get(w, 0) or _RU_SMALL.get(w, 0) for w in words.split())


def ru_clock_words(text: str) -> str:
    """"в девятнадцать сорок пять" -> "в 19:45", "в семь тридцать утра" -> "в 7:30 утра": the digits,
    the half of the day as said (the alarm and reminder rules read them after); every such time."""
    return _every_time(_one_ru_clock_words, text)


def _every_time(put_one: Callable[[str], str], text: str) -> str:
    """`put_one` (which puts the first time it finds in digits) until no time is left in words, at
    most CLOCKS_SAID_MAX times: "she lands at nine thirty so remind me at eight thirty... no, make it
    eight fifteen" says three."""
    for _ in range(CLOCKS_SAID_MAX):
        put = put_one(text)
        if put == text:
            break
        text = put
    return text


def _one_ru_clock_words(text: str) -> str:
    lowered = lexicon.fold(text)
    words = _RU_CLOCK_WORDS.search(lowered) if len(lowered) == len(text) else None
    if words is None or _ru_number(words["h"]) >= 24 or _ru_number(words["m"]) >= 60:
        return text
    marks = " ".join(part for part in (words["mark"], words["when"]) if part)
    clock = f"{_RU_AT} {_ru_number(words['h'])}:{_ru_number(words['m']):02d}" + (f" {marks}" if marks else "")
    return text[:words.start()] + clock + text[words.end():]


def spoken_clock(text: str) -> str:
    """"quarter to nine tonight" -> "at 20:45 tonight", "в полвосьмого вечера" -> "в 19:30",
    "без четверти два" -> "в 13:45": every time of day said in words, in digits the timer patterns
    read. A morning or night word keeps the hour; an evening one, or an hour from 1 to 6 said
    with neither (a reminder at a quarter to two is rarely for the night), is after noon."""
    return _every_time(_one_spoken_clock, text)


def _one_spoken_clock(text: str) -> str:
    lowered = lexicon.fold(text)
    if len(lowered) != len(text):
        return text
    for phrase, clock in _CLOCK_PHRASES:  # "at noon": 12:00
        named = phrase.search(lowered)
        if named is not None:
            word = _RU_AT if re.search(r"[а-я]", named.group(0)) else _EN_AT
            return text[:named.start()] + f"{word} {clock}" + text[named.end():]
    into = _MINUTES_INTO.search(lowered)
    if into is not None:  # "пять минут седьмого": 6:05 (a reminder's evening, as below)
        minute = int(into["m"]) if into["m"].isdigit() else _PAST_RU[" ".join(into["m"].split())]
        hour = (_RU_ORDINAL[into["o"]] - 1) or 12
        mark = into["mark"] or ""
        if minute < 60 and hour < 12 and (mark in _RU_EVENING_MARKS or into["when"] or not mark and 1 <= hour <= 6):
            hour += 12
        if minute < 60:
            return text[:into.start()] + f"{_RU_AT} {hour}:{minute:02d}" + text[into.end():]
    for pattern, shift in _SPOKEN_CLOCK:
        found = pattern.search(lowered)
        if found is None:
            continue
        hour, minute = _clock_said(found, shift)
        mark = found["mark"] or ""
        beside = {_HALVES[m["mark"]] for m in _HALF_BESIDE.finditer(lowered)} if not mark else set()
        evening = mark in _EVENING_MARKS or found["when"] or not mark and (_EVENING.search(lowered) or beside == {"evening"})
        morning = mark in _MORNING_MARKS or not mark and (_MORNING.search(lowered) or beside == {"morning"})
        if hour < 12 and (evening or not morning and 1 <= hour <= 6):
            hour += 12
        word = _RU_AT if re.search(r"[а-я]", found.group(0)) else _EN_AT
        return text[:found.start()] + f"{word} {hour}:{minute:02d}" + text[found.end():]
    return text


def _clock_said(found: re.Match[str], shift: int | None) -> tuple[int, int]:
    if "o" in found.groupdict() and found["o"]:  # "полвосьмого": half of the eighth hour, 7:30
        hour = _RU_ORDINAL[found["o"]] - 1 or 12
        return hour, 60 + shift if shift else 0
    said = found["h"]
    hour = int(said) if said.isdigit() else _EN_HOURS.get(said) or _RU_HOURS[said]
    if "b" in found.groupdict() and found["b"]:  # "без четверти девять", "at twenty to nine": 8:45, 8:40
        return (hour - 1) or 12, 60 - _RU_BEFORE[found["b"]]
    if "p" in found.groupdict() and found["p"]:  # "twenty past nine": 9:20
        return hour, _EN_PAST[" ".join(found["p"].split())]
    if shift is None:  # "at eight fifteen"
        return hour, _EN_MINUTES[found["m"].replace("-", " ") if "five" in found["m"] else found["m"]]
    if shift < 0:  # "quarter to nine": 8:45
        return (hour - 1) or 12, 60 + shift
    return hour, shift


# ---- a year said in words ----------------------------------------------------------------------
_RU_DECADES: dict[str, int] = lexicon.table(_CLOCK, "year_decades")
_RU_UNIT_STEMS: dict[str, int] = lexicon.table(_CLOCK, "ordinal_unit_stems")
_RU_ORD_END = r"(?:" + "|".join(lexicon.words(_CLOCK, "ordinal_endings")) + ")"
_CENTURIES: dict[str, int] = lexicon.table(_CLOCK, "centuries")  # "две тысячи" -> 2000
_EN_TENS: dict[str, int] = _of("en", "tens")
_EN_UNITS = {w: n for w, n in _EN_HOURS.items() if n < 10}
_SPOKEN_YEAR_RU = re.compile(
    r"(?<!\w)(?:(?P<century>" + "|".join(w.replace(" ", r"\s+") for w in _CENTURIES) + r")\s+)?"
    r"(?:(?P<tens>" + "|".join(_RU_TENS) + r")\s+(?P<unit>" + "|".join(_RU_UNIT_STEMS) + r")" + _RU_ORD_END +
    r"|(?P<decade>" + "|".join(_RU_DECADES) + r")" + _RU_ORD_END + r")"
    r"(?P<tail>\s+(?:" + "|".join(lexicon.words(_CLOCK, "year_words")) + r")(?!\w))?", re.I)
_EN_TEENS: dict[str, int] = _of("en", "teens")
_SPOKEN_YEAR_EN = re.compile(
    r"(?<!\w)(?P<lead>(?:" + "|".join(lexicon.words(_CLOCK, "year_leads")) + r")\s+)"
    r"(?:" + _either("century_1900_patterns") + r"|(?P<new>" + _either("century_2000_patterns") + r"))\s+(?:(?P<tens>"
    + "|".join(_EN_TENS) + r")"
    r"(?:[\s-]+(?P<unit>" + "|".join(_EN_UNITS) + r"))?|(?P<teen>" + "|".join(_EN_TEENS) + r")|"
    r"(?P<alone>" + "|".join(_EN_UNITS) + r"))(?!\w)", re.I)


# "the one from eighty-nine", "the one from '79": a year without its century, after "one from"
_SHORT_YEAR_EN = re.compile(r"(?<!\w)(?P<lead>" + _either("short_year_lead_patterns") + r")(?:['’]?(?P<digits>[3-9]\d)|"
                            r"(?P<tens>" + "|".join(w for w, n in _EN_TENS.items() if n >= 30) + r")(?:[\s-]+(?P<unit>"
                            + "|".join(_EN_UNITS) + r"))?)(?!\w|['’]?s\b)", re.I)


def spoken_year(text: str) -> str:
    """`text` with a year said in words put in digits: "тот, что семьдесят девятого года" is
    "тот, что 1979 года", "в тысяча девятьсот девяносто девятом" is "в 1999", "nineteen
    seventy nine" after "from", "in", "of" or "the" is "1979" ("at nineteen thirty" is a clock
    time, left alone). A Russian year without its century is read only before "год…"
    ("семьдесят девятого года"), as the 1900s."""
    def russian(found: re.Match[str]) -> str:
        if not found["century"] and not found["tail"]:
            return found[0]
        number = (_RU_TENS[found["tens"].casefold()] + _RU_UNIT_STEMS[found["unit"].casefold()] if found["tens"]
                  else _RU_DECADES[found["decade"].casefold()])
        base = _CENTURIES[" ".join(found["century"].casefold().split())] if found["century"] else 1900
        return f"{base + number}{found['tail'] or ''}"

    def english(found: re.Match[str]) -> str:
        if found["alone"] and not found["new"]:
            return found[0]  # "nineteen five" is no year; "two thousand five" is
        if found["tens"]:
            number = _EN_TENS[found["tens"].casefold()] + (_EN_UNITS[found["unit"].casefold()] if found["unit"] else 0)
        else:
            number = _EN_TEENS[found["teen"].casefold()] if found["teen"] else _EN_UNITS[found["alone"].casefold()]
        return found["lead"] + str((2000 if found["new"] else 1900) + number)
    def short(found: re.Match[str]) -> str:
        if found["digits"]:
            return found["lead"] + "19" + found["digits"]
        number = _EN_TENS[found["tens"].casefold()] + (_EN_UNITS[found["unit"].casefold()] if found["unit"] else 0)
        return found["lead"] + str(1900 + number)
    return _SHORT_YEAR_EN.sub(short, _SPOKEN_YEAR_EN.sub(english, _SPOKEN_YEAR_RU.sub(russian, text)))


# "через часик", "минутку", "полчасика": the plain unit a pattern and the timer parser read
_PLAIN_UNITS = tuple(lexicon.table(_CLOCK, "diminutive_patterns").items())  # ("час", ["часик\\w*", ...]), ...
_DIMINUTIVE = re.compile(r"(?<!\w)(?:" + "|".join(f"(?P<u{i}>" + "|".join(said) + ")"
                                                   for i, (_, said) in enumerate(_PLAIN_UNITS)) + r")(?!\w)", re.I)


# an alarm's hour said alone ("разбуди меня в восемь", "wake me up at 7", "будильник на семь тридцать"):
# a wake-up is in the morning unless the words say otherwise
_WAKE = re.compile(r"(?<!\w)(?:" + _either("wake_patterns") + r")(?!\w)")
# a reminder's hour said alone ("напомни в девять позвонить бабушке"): the next time a dial shows it
_REMIND = re.compile(r"(?<!\w)(?:" + _either("remind_patterns") + r")(?!\w)")
_MINUTE_WORDS: dict[str, int] = lexicon.table(_CLOCK, "minute_words")
# "в" -> "at" (a time of day), "на" -> "for" (a span), "к" -> "by"; and the morning word of its language
_ALARM_AT: dict[str, str] = lexicon.table(_CLOCK, "alarm_prepositions")
_ALARM_MORNING = {at: _of(language, "alarm_morning")
                  for language in lexicon.LANGUAGES for at in _of(language, "alarm_prepositions")}
_UNIT_AFTER = re.compile(r"\s*(?:" + "|".join(lexicon.words(_CLOCK, "unit_stems")) + ")")
_SPAN_HOURS = lexicon.words(_CLOCK, "span_hours")  # "будильник на час" is a span, not one o'clock
_ALARM_HOUR = re.compile(r"(?<!\w)(?P<at>" + "|".join(_ALARM_AT) + r")\s+" + _N_RU.replace("?P<h>", "?P<ru>") + r"?"
                         r"(?:(?<=\s)" + _N_EN.replace("?P<h>", "?P<en>") + r")?"
                         r"(?:\s+(?P<m>\d{2}|" + "|".join(sorted(_MINUTE_WORDS, key=len, reverse=True)) + r"))?"
                         r"(?P<mark>\s+(?:" + _MARKS + r"))?(?!\w|[:.]\d)")


def alarm_clock(text: str) -> str:
    """"разбуди меня в восемь" -> "разбуди меня в 8:00 утра", "wake me up at 7" -> "wake me up at
    7:00 am": an hour said with a wake-up word, as a clock time of the morning; with a reminder's
    word ("напомни в девять …") as a clock time the session puts on the nearest dial (text
    unchanged without such a word, or with a half of the day already said)."""
    lowered = lexicon.fold(text)
    wake = _WAKE.search(lowered)
    if len(lowered) != len(text) or not (wake or _REMIND.search(lowered)):
        return text
    for found in _ALARM_HOUR.finditer(lowered):
        said = found["ru"] or found["en"]
        if _UNIT_AFTER.match(lowered[found.end():]):
            continue  # "в 5 минут седьмого", "at 5 minutes past": no hour alone
        if not said or found["mark"] and said.isdigit() or said in _SPAN_HOURS and not found["m"]:
            continue  # "будильник на час" is a span, not one o'clock; "в 7 вечера" the timer patterns read
        hour = int(said) if said.isdigit() else _EN_HOURS.get(said) or _RU_HOURS.get(said, 0)
        minute = int(found["m"]) if found["m"] and found["m"].isdigit() else _MINUTE_WORDS.get(found["m"] or "", 0)
        if found["mark"] and 1 <= hour <= 12 and minute <= 59:  # "в семь вечера": "в 7:00 вечера", its half kept
            return text[:found.start()] + f"{found['at']} {hour}:{minute:02d}{found['mark']}" + text[found.end():]
        if not 1 <= hour <= 11 or minute > 59:
            continue  # "wake me at 12": noon or midnight, the model asks
        kind = _ALARM_AT[found["at"]]
        if not wake and (kind == "for" or kind == "by" and not found["m"] and not said.isdigit()):
            continue  # "напомни на пять" is no clock; a reminder's clock is "в"/"at"
        if wake and _EVENING.search(lowered):
            continue  # "set an alarm for ten thirty tonight": no morning's; spoken_clock reads it with its evening
        half = f" {_ALARM_MORNING[found['at']]}" if wake else ""  # a reminder's hour: the session dials the nearest
        clock = f"{found['at']} {hour}:{minute:02d}" + half
        return text[:found.start()] + clock + text[found.end():]
    return text


# "in a quarter of an hour", "через три четверти часа": a span in minutes ("quarter of" was read as
# a reminder's text and "an hour" as the span: an hour instead of 15 minutes)
# (each language's in its order; no two languages' patterns read the same words)
_PART_OF_HOUR = tuple((re.compile(r"(?<!\w)" + said + r"(?!\w)", re.IGNORECASE), minutes)
                      for said, minutes in lexicon.table(_CLOCK, "part_of_hour_patterns").items())


# the counts said in words ("пятнадцать", "twenty") and a length's unit words (the timer table's own)
_TENS: dict[str, int] = lexicon.table("requests", "tens")
_ONES: dict[str, int] = {word: n for key in ("units", "teens") for word, n in lexicon.table("requests", key).items()}
_COUNTS: dict[str, int] = {**_ONES, **_TENS}


def _alternatives(words) -> str:
    """A pattern's alternatives, the longest first (so "двадцать" is never read as "два")."""
    return "|".join(sorted(words, key=len, reverse=True))


_UNIT = r"(?:" + _alternatives(map(re.escape, UNIT_SECONDS)) + r")(?!\w)"


# "два с половиной часа", "two and a quarter hours": a count and a part before its unit; "an hour and
# a quarter", "час с четвертью": a part after the unit. Put as the timer table reads them (`_with_part`:
# "2.5 часа", "1 hour 15 minutes"); else "часа" alone was read as the length, an hour, and the part
# as the timer's text ("remind me in an hour and a quarter to …" set a timer of one hour)
_PARTS = tuple((re.compile(said, re.IGNORECASE), float(share))  # type: ignore[arg-type]
               for said, share in lexicon.table("durations", "and_a_part_patterns").items())
_PART_SAID = r"(?P<part>" + "|".join(f"(?:{said.pattern})" for said, _share in _PARTS) + r")"
_ONE_OF = {word.casefold(): digits for word, digits in lexicon.table("durations", "number_words").items()
           if str(digits).isdigit()}  # "a", "an", "one": a count a unit takes
_COUNT_AND_A_PART = re.compile(r"(?<![\w.,])(?P<count>\d+|" + _alternatives(_COUNTS) + r")\s+" + _PART_SAID
                               + r"\s+(?P<unit>" + _UNIT + ")", re.IGNORECASE)
_UNIT_AND_A_PART = re.compile(r"(?<![\w.,])(?:(?P<count>\d+|" + _alternatives({**_ONE_OF, **_COUNTS}) + r")\s+)?"
                              r"(?P<unit>" + _alternatives(w for w in UNIT_SECONDS if len(w) >= 3) + r")\s+"
                              + _PART_SAID + r"(?!\w)", re.IGNORECASE)


def _share(part: str) -> float:
    return next(share for said, share in _PARTS if said.fullmatch(part))


def _count(said: str | None) -> float:
    if said is None:
        return 1  # "час с четвертью": one of the unit
    said = said.casefold()
    return float(said) if said.isdigit() else float(_COUNTS.get(said) or _ONE_OF[said])


def _with_part(m: re.Match[str]) -> str:
    """A count and a part of its unit in figures: "2.5 часа"; a quarter as whole counts of the
    smaller unit ("1 hour 15 minutes": "1.25" would read as a clock's 1:25)."""
    length = _count(m["count"]) + _share(m["part"])
    unit_s = UNIT_SECONDS[m["unit"].casefold()]
    smaller = next(((size, key) for size, key in _SMALLER if size < unit_s and unit_s % size == 0 and
                    (length % 1 * unit_s / size).is_integer()), None)
    if (length * 10).is_integer() or smaller is None:
        return f"{length:g} {m['unit']}"
    language = "ru" if re.match(r"[а-яё]", m["unit"], re.I) else "en"
    size, key = smaller
    return f"{int(length)} {m['unit']} {round(length % 1 * unit_s / size)} {lexicon.topic(language, 'durations')[key]}"


# the unit a part of a bigger one is said in: a part of a day in hours, of an hour in minutes, of a minute in seconds
_SMALLER = ((3600, "hours_after_count"), (60, "minutes_after_count"), (1, "seconds_after_count"))


# "через час пятнадцать", "на два часа двадцать", "in an hour fifteen", "make it an hour ten": minutes said
# with no unit after the hours of a length (after a word that opens a length, so "в час пятнадцать", a clock
# time, is not one)
_HOUR_AND_MINUTES = re.compile(
    r"(?<!\w)(?P<opens>(?:" + lexicon.alternation("durations", "length_openers") + "|"
    + lexicon.alternation("durations", "hour_and_minutes_opener_patterns") + r")\s+)"
    r"(?:(?P<h>\d+|" + _alternatives(_ONES) + r")\s+)?(?:an?\s+)?"
    r"(?P<unit>" + _alternatives(w for w in lexicon.words("durations", "hour_words") if len(w) >= 3) + r")"
    r"\s+(?:(?:" + lexicon.alternation("durations", "joining_words") + r")\s+)?"
    r"(?P<m>\d{1,2}|(?:" + _alternatives(_TENS) + r")(?:[\s-]+(?:" + _alternatives(_ONES) + r"))?|" + _alternatives(_ONES) + r")"
    # not a part of a longer count ("an hour and forty five minutes": not "forty" alone)
    r"(?![\w-]|\s+" + _UNIT + r"|[\s-]+(?:" + _alternatives(_ONES) + r")(?!\w))", re.IGNORECASE)


# the word a length's minutes take after a number, in each language: "минут", "minutes" (the reflexes read it)
_MINUTES = {language: lexicon.topic(language, "durations")["minutes_after_count"] for language in lexicon.LANGUAGES}


def _minutes_said(words: str) -> int:
    parts = re.split(r"[\s-]+", words.casefold())
    return int(parts[0]) if parts[0].isdigit() else sum(_COUNTS.get(w, 0) for w in parts)


def with_halves(text: str) -> str:
    """"два с половиной часа" -> "2.5 часа", "an hour and a quarter" -> "1 hour 15 minutes"; and the
    minutes of a length said with no unit: "через час пятнадцать" -> "через 1 час 15 минут"."""
    text = _UNIT_AND_A_PART.sub(_with_part, _COUNT_AND_A_PART.sub(_with_part, text))

    def whole(m: re.Match[str]) -> str:
        if _minutes_said(m["m"]) % 5:
            return m.group(0)  # bare minutes after the hours are said in fives: "на час три раза" is no 1 h 3 min
        hours = m["h"] if m["h"] is None or m["h"].isdigit() else str(_ONES[m["h"].casefold()])
        minutes = _MINUTES["ru" if re.match(r"[а-яё]", m["unit"], re.I) else "en"]
        return f"{m['opens']}{hours or 1} {m['unit']} {_minutes_said(m['m'])} {minutes}"
    return _HOUR_AND_MINUTES.sub(whole, text)


_ABBREVIATED: dict[str, str] = lexicon.table("durations", "unit_abbreviations")  # type: ignore[assignment]
_HOURS = set(lexicon.words("durations", "hour_words"))
# one letter apart from its count is a unit only for hours ("1 h 15 min"; "5 m" may be metres, "с" a preposition)
_SHORT_UNIT = re.compile(r"(?<![\d.,])(?P<count>\d+(?:[.,]\d+)?)(?:(?P<glued>" + _alternatives(_ABBREVIATED) + r")|\s+(?P<spaced>"
                         + _alternatives(w for w, full in _ABBREVIATED.items() if len(w) > 1 or full in _HOURS) + r"))"
                         r"(?=[\s\d,.!?]|$)", re.IGNORECASE)


def units_said_out(text: str) -> str:
    """"timer 1h 15 min" -> "timer 1 hours 15 minutes", "1h30m" -> "1 hours 30 minutes": a unit
    written short after a count, said out."""
    said = _SHORT_UNIT.sub(lambda m: f" {m['count']} {_ABBREVIATED[(m['glued'] or m['spaced']).casefold()]} ", text)
    return " ".join(said.split()) if said != text else text


def in_digits(text: str) -> str:
    """`text` with the times, years and units people say in words put as the reflexes read them:
    alarm_clock, spoken_clock, spoken_year, hundreds in figures ("сто двадцать минут"), "часик" as "час", "полчасика" as "полчаса",
    "минутку" as "минуту", "a quarter of an hour" as "15 minutes", "два с половиной часа" as
    "2.5 часа"."""
    plain = with_halves(_DIMINUTIVE.sub(lambda m: next(unit for i, (unit, _) in enumerate(_PLAIN_UNITS) if m[f"u{i}"]),
                                        units_said_out(lexicon.hundreds_in_figures(text))))
    return spoken_year(spoken_clock(alarm_clock(ru_clock_words(parts_of_hour_said(plain)))))


def parts_of_hour_said(text: str) -> str:
    """"три четверти часа", "a quarter of an hour" as "45 минут", "15 minutes"."""
    for pattern, minutes in _PART_OF_HOUR:
        text = pattern.sub(minutes, text)
    return text


_LENGTH_PHRASES = tuple((re.compile(r"(?<!\w)" + re.escape(said) + r"(?!\w)", re.IGNORECASE), plainly)
                        for said, plainly in lexicon.table("durations", "phrases").items())


def lengths_in_units(text: str) -> str:
    """Every length said in a phrase put as a count and its unit: "полчаса" -> "30 минут", "an
    hour and a half" -> "90 minutes" (the timer table's own phrases), "a quarter of an hour"."""
    for pattern, plainly in _LENGTH_PHRASES:
        text = pattern.sub(plainly, text)
    return parts_of_hour_said(text)


# ---- which numbers words say ------------------------------------------------------------------
_NUMBER_WORDS: dict[str, int] = lexicon.table(_CLOCK, "said_numbers")  # "пару" -> 2, "quarter" -> 15


def numbers_said(words: list[str]) -> set[int]:
    """The numbers a text's words say, as digits or words ("двадцать пять" is 25; 0 always: a
    clock's ":00"). Hundreds are read whole: "a hundred and ten" says 110, not 100 and 10."""
    found = {0}
    for word in lexicon.hundreds_in_figures(" ".join(words)).split():
        if word.isdigit():
            found.add(int(word))
        elif word in _NUMBER_WORDS:
            found.add(_NUMBER_WORDS[word])
    tens = [n for n in found if n >= 20 and n % 10 == 0]
    found |= {t + u for t in tens for u in range(1, 10) if u in found}
    return found


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}[t ]?", re.I)


def unsaid_number(when: str, *texts: str) -> str:
    """The first number of a timer's `when` that none of `texts` says; "" when all are said.
    A time of day may be said in the other half of the day ("8" for 20:00), a span in the other
    unit ("2 часа" as 120 minutes, "полтора часа" as 90); an ISO date is not judged (the words
    say "завтра", not the date)."""
    said: set[int] = set()
    spans: set[float] = set()  # "an hour and a quarter" says 75 minutes, in no number of its own
    for text in texts:
        said |= numbers_said(re.findall(r"[^\W_]+", lexicon.fold(spoken_clock(text))))
        spans |= spans_said(text) or set()
    for number in re.findall(r"\d+", _DATE.sub(" ", when.casefold())):
        value = int(number)
        other_unit = {value * 60} | ({value // 60} if value % 60 == 0 else set())
        if not ({value, value - 12, value + 12} | other_unit) & said and not (value == 90 and 1 in said) \
                and not {value, value * 60, value * 3600} & spans:
            return number
    return ""


# ---- which lengths of time words say -------------------------------------------------------
_SPAN_UNITS = UNIT_SECONDS  # the timer table's own words of a length: what it reads, the guard reads
_BARE_UNITS = frozenset(lexicon.words("durations", "bare_unit_words"))
_COUNT_WORDS: dict[str, str] = {**{w: str(n) for w, n in _COUNTS.items()},
                                **{w: str(n) for w, n in lexicon.table("durations", "number_words").items()}}
_JOINERS = frozenset(lexicon.words("durations", "joining_words"))
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def spans_said(text: str) -> frozenset[float] | None:
    """The lengths of time `text` says, in seconds, each as the whole of it: "полтора часа" is
    5400, "5 minutes and 10 seconds" 310, "через час" 3600. None when a length is said whose count
    cannot be read ("a few minutes", "half a minute", "минут через двадцать") or a number
    stands apart from any unit ("10 minutes, actually 15", "at 7:30"): then no length can be judged."""
    said = with_halves(lexicon.fold(text))
    for pattern, minutes in _PART_OF_HOUR:  # "a quarter of an hour": 15 minutes
        said = pattern.sub(minutes, said)
    for phrase, plain in LENGTH_PHRASES:
        said = said.replace(phrase, plain)
    tokens = _counted(re.findall(r"\d+(?:[.,/:]\d+)*|[^\W\d_]+", said))
    spans: list[float] = []
    last_unit = -9
    for at, token in enumerate(tokens):
        unit = _SPAN_UNITS.get(token) if len(token) > 1 or at and _NUMBER.fullmatch(tokens[at - 1]) else None
        if unit is None:
            if _NUMBER.fullmatch(token) and not (at + 1 < len(tokens) and tokens[at + 1] in _SPAN_UNITS):
                return None  # a number no unit follows
            if not _NUMBER.fullmatch(token) and token not in _SPAN_UNITS and re.fullmatch(r"[\d.,/:]+", token):
                return None  # "1/2", "7:30"
            continue
        counted = at > 0 and bool(_NUMBER.fullmatch(tokens[at - 1]))
        if _VAGUE_COUNTS.intersection(tokens[max(0, at - 3):at]):
            return None  # "half a minute", "three quarters of an hour": a count not read
        if not counted and (token not in _BARE_UNITS or at > 0 and tokens[at - 1] in _VAGUE_COUNTS):
            return None  # "minutes" alone, "half an hour" unread, "a few minutes"
        value = (float(tokens[at - 1]) if counted else 1.0) * unit
        start = at - 1 if counted else at
        if spans and all(t in _JOINERS for t in tokens[last_unit + 1:start]):
            spans[-1] += value  # "1 hour 15 minutes", "5 minutes and 10 seconds": one length
        else:
            spans.append(value)
        last_unit = at
    return frozenset(spans)


# a count said but not read: "half", "пару", "quarter" (the clock's words for a number, less units and plain counts)
_VAGUE_COUNTS = frozenset(word for word in lexicon.table(_CLOCK, "said_numbers")
                          if word not in _SPAN_UNITS and word not in _COUNT_WORDS) | set(lexicon.words("durations", "vague_count_words"))


# "a", "an": a count only before a unit ("zero", "ноль" are numbers of their own)
_ARTICLES = frozenset(word for word, n in lexicon.table("durations", "number_words").items()
                      if str(n) == "1" and not word.isdigit()) - frozenset(
    w for key in ("units", "teens", "tens") for w in lexicon.table("requests", key))


def _counted(tokens: list[str]) -> list[str]:
    """Number words as digits, a compound as one ("двадцать пять" -> "25", "полтора" -> "1.5")."""
    out: list[str] = []
    for at, token in enumerate(tokens):
        value = _COUNT_WORDS.get(token)
        if token in _ARTICLES and not (at + 1 < len(tokens) and tokens[at + 1] in _SPAN_UNITS):
            value = None  # "a timer": no count; "an hour": one
        if value is None:
            out.append(token.replace(",", "."))
        elif out and out[-1].isdigit() and int(out[-1]) % 10 == 0 and int(out[-1]) >= 20 and value.isdigit() and int(value) < 10:
            out[-1] = str(int(out[-1]) + int(value))
        else:
            out.append(value)
    return out


def whole_numbers_said(text: str) -> frozenset[int]:
    """The whole numbers a text says, each as said: "пятьдесят пять" is 55 (not 50 nor 5), "a
    hundred and ten" 110, "65 inches" 65; a fraction ("26.2") says none."""
    said = set()
    # "the limit's one thirty": 130 as well as 1 and 30 (hundreds said as two numbers)
    for reading in {text, lexicon.paired_hundreds_in_figures(text, None)}:
        tokens = re.findall(r"\d+(?:[.,]\d+)?|[^\W\d_]+", lexicon.fold(lexicon.hundreds_in_figures(reading)))
        said |= {int(token) for token in _counted(tokens) if token.isdigit()}
    return frozenset(said)


BELOW_ZERO = frozenset(lexicon.words("durations", "below_zero_words"))  # "minus", "минус": a number's sign said before it


def signed_numbers_said(text: str) -> tuple[frozenset[int], frozenset[int]]:
    """(the whole numbers a text says with no minus, those it says only below zero): "минус сорок"
    and "-40" say 40 below zero; "минус двадцать … двадцать" says 20 both ways."""
    marked = re.sub(r"(?<![\w.,])-(?=\d)", f" {next(iter(sorted(BELOW_ZERO)))} ", text)
    tokens = _counted(re.findall(r"\d+(?:[.,]\d+)?|[^\W\d_]+", lexicon.fold(lexicon.hundreds_in_figures(marked))))
    above: set[int] = set()
    below: set[int] = set()
    for at, token in enumerate(tokens):
        if token.isdigit():
            (below if at and tokens[at - 1] in BELOW_ZERO else above).add(int(token))
    return frozenset(above), frozenset(below - above)


# what opens a follow-up that says only another amount: "а пятьдесят пять?", "and minus forty?", "what about 12?"
_AMOUNT_OPENS = re.compile(r"^(?:(?:" + lexicon.alternation("follow_ups", "follow_up_open_patterns") + r")(?:\W+|$))+")


def amount_alone(said: str) -> str:
    """The amount a follow-up says and nothing else ("а пятьдесят пять?": "55", "and minus forty?":
    "-40", "и 2.5?": "2.5"); "" when the words say more than one amount."""
    text = _AMOUNT_OPENS.sub("", lexicon.fold(said).strip(" ?!.,")).strip(" ?!.,")
    text = lexicon.tenths_said_with_and(text, (), alone=True)  # "а девяносто семь и семь?": 97.7
    words = re.findall(r"\d+(?:[.,]\d+)?|[^\W\d_]+|-(?=\d)", text)
    below = bool(words) and (words[0] in BELOW_ZERO or words[0] == "-")
    counted = _counted([w for w in re.findall(r"\d+(?:[.,]\d+)?|[^\W\d_]+", lexicon.hundreds_in_figures(
        " ".join(words[1:] if below else words)))])
    if len(counted) != 1 or not re.fullmatch(r"\d+(?:\.\d+)?", counted[0]):
        return ""
    return ("-" if below else "") + counted[0]


_FRACTION = re.compile(r"(?<!\w)(?:" + lexicon.alternation("durations", "fraction_patterns") + r")(?!\w)")


def amount_put_right(said: str, old: str) -> str:
    """The one amount a second thought says besides the one converted (`old`): "ой, не двести
    тридцать, а двести десять" -> "210", "no wait, recipe says four twenty-five" -> "425"; "" when
    it says none or several, or a fraction in words ("six and a half": read by no count here)."""
    folded = lexicon.fold(said)
    if _FRACTION.search(folded):
        return ""
    reading = lexicon.paired_hundreds_in_figures(lexicon.hundreds_in_figures(folded), None)
    counted = _counted(re.findall(r"\d+(?:[.,]\d+)?|[^\W\d_]+", reading))
    try:
        before = float(old)
    except ValueError:
        return ""
    new = {number for number in counted if re.fullmatch(r"\d+(?:\.\d+)?", number) and float(number) != before}
    return new.pop() if len(new) == 1 else ""


def clock_without_length(said: str) -> str:
    """The clock time the words say when they say no length of time ("завтра в семь утра напомни
    …": "7:00"); "" when they say none, or a length too ("через полчаса, в 7:30 созвон")."""
    plain = in_digits(said)
    clock = re.search(r"(?<![\d:])(\d{1,2}:\d{2})(?![\d:])", plain)
    if clock is None:
        return ""
    folded = lexicon.fold(plain)
    if any(phrase in folded for phrase, _plainly in LENGTH_PHRASES):
        return ""
    words = re.findall(r"\d+|[^\W\d_]+", folded)
    counted = any(len(word) > 1 and word in _SPAN_UNITS and at and (words[at - 1].isdigit() or words[at - 1] in _COUNT_WORDS
                                                                  or words[at - 1] in _LENGTH_OPENERS)
                  for at, word in enumerate(words))  # "20 минут", "an hour", "через час"; not "весь день", "в час дня"
    return "" if counted else clock[1]


_LENGTH_OPENERS = frozenset(lexicon.words("durations", "length_openers"))


def unsaid_length(when: str, said: str, *sources: str) -> str:
    """The length of a timer's `when` ("in 1 hour") when the user's words say lengths and none is
    it ("тесто … полтора часа": 5400 s, not 3600), nor one a result showed: the length as said,
    e.g. "1 h 30 min". "" when it is one of them, or nothing can be judged (a clock time, no
    length said, a count not read: core.timewords.spans_said)."""
    try:
        length = parse_duration(when.strip().removeprefix("in ").removeprefix("через "))
    except TimerError:
        return ""  # a clock time, an ISO moment: the numbers are judged one by one (unsaid_number)
    lengths = spans_said(said)
    if not lengths:
        return ""
    shown = frozenset(span for source in sources for span in spans_said(source) or ())
    # "10 minutes before the film ends" with a result's "136 min": a length counted from both
    allowed = lengths | shown | {a + b for a in lengths for b in shown} | {abs(a - b) for a in lengths for b in shown}
    return "" if any(abs(length - other) < 1 for other in allowed) else _spoken_span(min(lengths, key=lambda s: abs(s - length)))


def no_length_said(said: str, *sources: str) -> bool:
    """Whether the user's words say no length of time at all, nor a time of day or a number, and no
    result of the turn shows one: a timer "in 1 hour" for "If I ever open a shop, I'll need reminders
    for everything" is the model's own. False when the words cannot be judged ("in a few minutes")."""
    if spans_said(said) != frozenset() or clock_without_length(said) or whole_numbers_said(said) - {1}:
        return False
    return not any(spans_said(source) for source in sources)


def _spoken_span(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return " ".join(part for part in (f"{hours} h" if hours else "", f"{minutes} min" if minutes else "",
                                      f"{secs} s" if secs else "") if part) or "0 s"
