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
    return f"{', '.join(spoken_parts(now, russian))} ({now.year}{', ' + zone if zone else ''})"


def spoken_parts(now: dt.datetime, russian: bool) -> tuple[str, str, str]:
    """(weekday, day month, HH:MM) in words: ("суббота", "14 марта", "18:00")."""
    if russian:
        return _WEEKDAYS_RU[now.weekday()], f"{now.day} {_MONTHS_RU[now.month - 1]}", f"{now:%H:%M}"
    return _WEEKDAYS_EN[now.weekday()], f"{now.day} {_MONTHS_EN[now.month - 1]}", f"{now:%H:%M}"


_PROGRESS_ARG_CHARS = 40
_THINKING = ("думаю…", "thinking…")  # a turn's first line while the model has shown nothing yet


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
    return _THINKING[0 if russian else 1]


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
    # "a timer for seven o'clock": a time of day, as "at"
    (re.compile(r"(?<!\w)(?:for|by)\s+" + _N_EN + r"\s+(?P<m>o'?clock)" + _MARK + r"(?!\w)"), None),
    (re.compile(r"(?<!\w)(?:в\s+)?(?:пол[-\s]?|половин[еуа]\s+)" + _ORD_RU + _MARK + r"(?!\w)"), -30),
    (re.compile(r"(?<!\w)(?:в\s+)?четверть\s+" + _ORD_RU + _MARK + r"(?!\w)"), -45),
    (re.compile(r"(?<!\w)(?:в\s+)?без\s+(?P<b>" + "|".join(_RU_BEFORE) + r")\s+" + _N_RU + _MARK + r"(?!\w)"), None),
)
_EVENING = re.compile(r"(?<!\w)(?:tonight|this\s+evening|in\s+the\s+evening|вечером|сегодня\s+вечером)(?!\w)")
# an alarm, a wake-up: a morning's hour ("поставь будильник на полседьмого" is 6:30, not 18:30)
_MORNING = re.compile(r"(?<!\w)(?:in\s+the\s+morning|this\s+morning|утром|ночью|at\s+night|будильник\w*|"
                      r"разбуди\w*|alarm|wake\s+me)(?!\w)")


# "в пять минут седьмого", "в двадцать минут восьмого": minutes into the hour named by its ordinal
_PAST_RU = {"пять": 5, "десять": 10, "пятнадцать": 15, "двадцать": 20, "двадцать пять": 25}
_MINUTES_INTO = re.compile(r"(?<!\w)(?:в\s+)?(?P<m>\d{1,2}|двадцать\s+пять|пятнадцать|двадцать|десять|пять)\s+минут\w*\s+"
                           + _ORD_RU + _MARK + r"(?!\w)")


_RU_SMALL = {w: n for n, w in enumerate("ноль один два три четыре пять шесть семь восемь девять десять одиннадцать "
                                        "двенадцать тринадцать четырнадцать пятнадцать шестнадцать семнадцать "
                                        "восемнадцать девятнадцать".split())} | {"одна": 1, "две": 2}
_RU_NUMBER = (r"(?:(?:двадцать|тридцать|сорок|пятьдесят)(?:\s+(?:один|одна|два|две|три|четыре|пять|шесть|семь|восемь|девять))?|"
              + "|".join(sorted(_RU_SMALL, key=len, reverse=True)) + ")")
# "в девятнадцать сорок пять", "в семь тридцать утра": an hour and its minutes, each in words
_RU_CLOCK_WORDS = re.compile(r"(?<!\w)в\s+(?P<h>" + _RU_NUMBER + r")(?:\s+час\w*)?\s+(?P<m>(?:ноль\s+)?" + _RU_NUMBER + r")"
                             r"(?:\s+минут\w*)?" + _MARK + r"(?!\w)")


def _ru_number(words: str) -> int:
    return sum(_RU_TENS.get(w, 0) or _RU_SMALL.get(w, 0) for w in words.split())


def ru_clock_words(text: str) -> str:
    """"в девятнадцать сорок пять" -> "в 19:45", "в семь тридцать утра" -> "в 7:30 утра": the digits,
    the half of the day as said (the alarm and reminder rules read them after)."""
    lowered = text.casefold().replace("ё", "е")
    words = _RU_CLOCK_WORDS.search(lowered) if len(lowered) == len(text) else None
    if words is None or _ru_number(words["h"]) >= 24 or _ru_number(words["m"]) >= 60:
        return text
    marks = " ".join(part for part in (words["mark"], words["when"]) if part)
    clock = f"в {_ru_number(words['h'])}:{_ru_number(words['m']):02d}" + (f" {marks}" if marks else "")
    return text[:words.start()] + clock + text[words.end():]


def spoken_clock(text: str) -> str:
    """"quarter to nine tonight" -> "at 20:45 tonight", "в полвосьмого вечера" -> "в 19:30",
    "без четверти два" -> "в 13:45": a time of day said in words, in digits the timer patterns
    read. A morning or night word keeps the hour; an evening one, or an hour from 1 to 6 said
    with neither (a reminder at a quarter to two is rarely for the night), is after noon."""
    lowered = text.casefold().replace("ё", "е")
    if len(lowered) != len(text):
        return text
    into = _MINUTES_INTO.search(lowered)
    if into is not None:  # "пять минут седьмого": 6:05 (a reminder's evening, as below)
        minute = int(into["m"]) if into["m"].isdigit() else _PAST_RU[" ".join(into["m"].split())]
        hour = (_RU_ORDINAL[into["o"]] - 1) or 12
        mark = into["mark"] or ""
        if minute < 60 and hour < 12 and (mark in ("вечера", "дня") or into["when"] or not mark and 1 <= hour <= 6):
            hour += 12
        if minute < 60:
            return text[:into.start()] + f"в {hour}:{minute:02d}" + text[into.end():]
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


# ---- a year said in words ----------------------------------------------------------------------
_RU_DECADES = {"двадцат": 20, "тридцат": 30, "сороков": 40, "пятидесят": 50, "шестидесят": 60, "семидесят": 70,
               "восьмидесят": 80, "девяност": 90}
_RU_TENS = {"двадцать": 20, "тридцать": 30, "сорок": 40, "пятьдесят": 50, "шестьдесят": 60, "семьдесят": 70,
            "восемьдесят": 80, "девяносто": 90}
_RU_UNIT_STEMS = {"перв": 1, "втор": 2, "трет": 3, "четверт": 4, "пят": 5, "шест": 6, "седьм": 7, "восьм": 8, "девят": 9}
_RU_ORD_END = r"(?:ого|ом|ый|ой|ий|ьего|ьем)"
_EN_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_EN_UNITS = {w: n for w, n in _EN_HOURS.items() if n < 10}
_SPOKEN_YEAR_RU = re.compile(
    r"(?<!\w)(?:(?P<century>тысяча\s+девятьсот|две\s+тысячи)\s+)?"
    r"(?:(?P<tens>" + "|".join(_RU_TENS) + r")\s+(?P<unit>" + "|".join(_RU_UNIT_STEMS) + r")" + _RU_ORD_END +
    r"|(?P<decade>" + "|".join(_RU_DECADES) + r")" + _RU_ORD_END + r")"
    r"(?P<tail>\s+(?:год|года|году|годом)(?!\w))?", re.I)
_EN_TEENS = {w: n for n, w in enumerate("ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split(), 10)}
_SPOKEN_YEAR_EN = re.compile(
    r"(?<!\w)(?P<lead>(?:from|in|of|the)\s+)(?:nineteen|(?P<new>two\s+thousand(?:\s+and)?))\s+(?:(?P<tens>" + "|".join(_EN_TENS) + r")"
    r"(?:[\s-]+(?P<unit>" + "|".join(_EN_UNITS) + r"))?|(?P<teen>" + "|".join(_EN_TEENS) + r")|"
    r"(?P<alone>" + "|".join(_EN_UNITS) + r"))(?!\w)", re.I)


# "the one from eighty-nine", "the one from '79": a year without its century, after "one from"
_SHORT_YEAR_EN = re.compile(r"(?<!\w)(?P<lead>one,?\s+from\s+|one,?\s+(?:made|released)\s+in\s+)(?:['’]?(?P<digits>[3-9]\d)|"
                            r"(?P<tens>thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[\s-]+(?P<unit>"
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
        low = found[0].casefold()
        number = (_RU_TENS[found["tens"].casefold()] + _RU_UNIT_STEMS[found["unit"].casefold()] if found["tens"]
                  else _RU_DECADES[found["decade"].casefold()])
        base = 2000 if "тысячи" in low else 1900
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
_DIMINUTIVE = re.compile(r"(?<!\w)(?:(?P<half>полчасик\w*)|(?P<hour>часик\w*|часок|часочек|часочка)|"
                         r"(?P<minute>минутк\w*|минуточк\w*))(?!\w)", re.I)


# an alarm's hour said alone ("разбуди меня в восемь", "wake me up at 7", "будильник на семь тридцать"):
# a wake-up is in the morning unless the words say otherwise
_WAKE = re.compile(r"(?<!\w)(?:разбуди\w*|будильник\w*|подними\s+меня|wake\s+me|alarm)(?!\w)")
# a reminder's hour said alone ("напомни в девять позвонить бабушке"): the next time a dial shows it
_REMIND = re.compile(r"(?<!\w)(?:напомни\w*|напоминани\w*|remind\w*|reminder)(?!\w)")
_MINUTE_WORDS = {"ноль ноль": 0, "пятнадцать": 15, "тридцать": 30, "сорок пять": 45, "двадцать": 20, "десять": 10,
                 "пятьдесят": 50, "сорок": 40, "fifteen": 15, "thirty": 30, "forty five": 45, "forty-five": 45,
                 "twenty": 20, "ten": 10, "fifty": 50, "forty": 40, "o'clock": 0, "oclock": 0, "ровно": 0}
_ALARM_HOUR = re.compile(r"(?<!\w)(?P<at>в|на|к|at|for)\s+" + _N_RU.replace("?P<h>", "?P<ru>") + r"?"
                         r"(?:(?<=\s)" + _N_EN.replace("?P<h>", "?P<en>") + r")?"
                         r"(?:\s+(?P<m>\d{2}|" + "|".join(sorted(_MINUTE_WORDS, key=len, reverse=True)) + r"))?"
                         r"(?P<mark>\s+(?:утра|вечера|дня|ночи|am|pm|a\.m\.|p\.m\.))?(?!\w|[:.]\d)")


def alarm_clock(text: str) -> str:
    """"разбуди меня в восемь" -> "разбуди меня в 8:00 утра", "wake me up at 7" -> "wake me up at
    7:00 am": an hour said with a wake-up word, as a clock time of the morning; with a reminder's
    word ("напомни в девять …") as a clock time the session puts on the nearest dial (text
    unchanged without such a word, or with a half of the day already said)."""
    lowered = text.casefold().replace("ё", "е")
    wake = _WAKE.search(lowered)
    if len(lowered) != len(text) or not (wake or _REMIND.search(lowered)):
        return text
    for found in _ALARM_HOUR.finditer(lowered):
        said = found["ru"] or found["en"]
        if re.match(r"\s*(?:минут|секунд|час|min|sec|hour)", lowered[found.end():]):
            continue  # "в 5 минут седьмого", "at 5 minutes past": no hour alone
        if not said or found["mark"] or said == "час" and not found["m"]:
            continue  # "будильник на час" is a span, not one o'clock
        hour = int(said) if said.isdigit() else _EN_HOURS.get(said) or _RU_HOURS.get(said, 0)
        minute = int(found["m"]) if found["m"] and found["m"].isdigit() else _MINUTE_WORDS.get(found["m"] or "", 0)
        if not 1 <= hour <= 11 or minute > 59:
            continue  # "wake me at 12": noon or midnight, the model asks
        if not wake and (found["at"] in ("на", "for") or found["at"] == "к" and not found["m"] and not said.isdigit()):
            continue  # "напомни на пять" is no clock; a reminder's clock is "в"/"at"
        russian = found["at"] in ("в", "на", "к")
        half = (" утра" if russian else " am") if wake else ""  # a reminder's hour: the session dials the nearest
        clock = f"{found['at']} {hour}:{minute:02d}" + half
        return text[:found.start()] + clock + text[found.end():]
    return text


# "in a quarter of an hour", "через три четверти часа": a span in minutes ("quarter of" was read as
# a reminder's text and "an hour" as the span: an hour instead of 15 minutes)
_PART_OF_HOUR = (
    (re.compile(r"(?<!\w)three[\s-]+quarters\s+of\s+an\s+hour(?!\w)", re.IGNORECASE), "45 minutes"),
    (re.compile(r"(?<!\w)(?:an?\s+|one\s+)?quarter(?:\s+of\s+an|\s+an|-)?\s*hour(?!\w)", re.IGNORECASE), "15 minutes"),
    (re.compile(r"(?<!\w)(?:an?\s+)?half(?:\s+an|-)?\s*hour(?!\w)", re.IGNORECASE), "30 minutes"),  # "a half hour timer"
    (re.compile(r"(?<!\w)три\s+четверти\s+часа(?!\w)", re.IGNORECASE), "45 минут"),
    (re.compile(r"(?<!\w)(?:одну\s+)?четверть\s+часа(?!\w)", re.IGNORECASE), "15 минут"),
)


def in_digits(text: str) -> str:
    """`text` with the times, years and units people say in words put as the reflexes read them:
    alarm_clock, spoken_clock, spoken_year, and "часик" as "час", "полчасика" as "полчаса",
    "минутку" as "минуту", "a quarter of an hour" as "15 minutes"."""
    plain = _DIMINUTIVE.sub(lambda m: "полчаса" if m["half"] else "час" if m["hour"] else "минуту", text)
    for pattern, minutes in _PART_OF_HOUR:
        plain = pattern.sub(minutes, plain)
    return spoken_year(spoken_clock(alarm_clock(ru_clock_words(plain))))


# ---- which numbers words say ------------------------------------------------------------------
_NUMBER_WORDS = {
    "полтора": 1, "полторы": 1, "пару": 2, "пара": 2, "couple": 2, "часик": 1,
    "один": 1, "одну": 1, "одна": 1, "два": 2, "две": 2, "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7,
    "восемь": 8, "девять": 9, "десять": 10, "одиннадцать": 11, "двенадцать": 12, "тринадцать": 13,
    "четырнадцать": 14, "пятнадцать": 15, "шестнадцать": 16, "семнадцать": 17, "восемнадцать": 18,
    "девятнадцать": 19, "двадцать": 20, "тридцать": 30, "сорок": 40, "пятьдесят": 50, "полчаса": 30,
    "one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "half": 30, "quarter": 15, "час": 1, "hour": 1, "минуту": 1, "minute": 1,
}


def numbers_said(words: list[str]) -> set[int]:
    """The numbers a text's words say, as digits or words ("двадцать пять" is 25; 0 always: a
    clock's ":00")."""
    found = {0}
    for word in words:
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
    for text in texts:
        said |= numbers_said(re.findall(r"[^\W_]+", spoken_clock(text).casefold().replace("ё", "е")))
    for number in re.findall(r"\d+", _DATE.sub(" ", when.casefold())):
        value = int(number)
        other_unit = {value * 60} | ({value // 60} if value % 60 == 0 else set())
        if not ({value, value - 12, value + 12} | other_unit) & said and not (value == 90 and 1 in said):
            return number
    return ""
