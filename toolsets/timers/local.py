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
import zoneinfo
from collections.abc import Container
from pathlib import Path

import msgspec

from core.done_said import ALARM_SPAN_S, DAY_S, days_said, set_for_said, span_said
from core.fastpath import FastPath, Intent
from core.intent import counted_back
from core.lexicon import alternation, fold, table, words, words_of
from core.places import clock_elsewhere, moment_there, zone_of
from core.reflex import ANOTHER_DAY, TIMER_WORD, among, norm_words
from core.timers import WEEKDAYS, Timer, TimerError, day_names, dial_nearest, parse_days, parse_duration, parse_when, set_order
from core.timewords import in_digits
from core.turn import TurnState
from protocol.results import TimerSet, TimersListed, ToolData

_WORDS = Path(__file__).with_name("words")
WEEK_S = 7 * DAY_S
# a half of the day named with a clock time ("7 утра", "at 7 in the morning"), or a wake-up
# ("разбуди в 7:30", "alarm for 6"): the hour as said, the next time the clock shows it
_MORNING_SAID = re.compile(alternation("naming", "morning_patterns", _WORDS))
# a half of the day said with a time ("5:45 pm", "в шесть вечера"): a put-right keeps it as said
_HALF_SAID = re.compile(alternation("naming", "half_of_day_patterns", _WORDS))
_FILLER = frozenset(words("naming", "naming_filler_words", _WORDS))  # "тот, что про маму": no timer's words
# a clock time in digits (core.timewords.in_digits puts one said in words so), with its half of the
# day ("8:00 вечера", "2 pm"), and the clauses a sentence of an event and a request is said in
_HALF_OF_DAY = {half.rstrip("."): meaning for half, meaning in table("clock", "day_halves").items()}
_CLOCK_SAID = re.compile(r"(?<![\d:.,])(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?(?:\s*(?P<half>"
                         + "|".join(re.escape(half).replace(r"\.", r"\.?") for half in sorted(_HALF_OF_DAY, key=len, reverse=True))
                         + r"))?(?![\w:])")
_AT_THE_END = re.compile(r"(?:^|\s+)(?:" + alternation("durations", "clock_prepositions") + r")$")
_CLOCK_LEAD_LEFT = re.compile(r"[\s,]+(?:" + alternation("naming", "clock_lead_left_patterns", _WORDS) + r")$", re.IGNORECASE)
_CLAUSES = re.compile(r"[!?;,]\s*|\.\s+(?=\D)")
# "второе напоминание, а про маму оставь": the cancel's clause and the kept one's
_CONTRAST = re.compile(r",\s*|\s+(?:" + alternation("naming", "contrast_words", _WORDS) + r")\s+")


def _language(russian: bool) -> str:
    return "ru" if russian else "en"


def _in_unit_of(timer: TimerSet, number: str, russian: bool) -> str:
    """A bare number said of a timer ("нет, давай на 25", "another one for 20") as a span in the
    unit that timer was set in: seconds, minutes or hours by its length - unless the number is
    ten times nearer the timer's length in another ("через два с половиной часа", then "сделай
    через три": 3 hours, not 3 minutes)."""
    span = max(timer.due - timer.set_at, 1.0)
    unit = 0 if span < 120 else 1 if span < 3 * 3600 else 2
    try:
        value = float(number.replace(",", "."))
    except ValueError:
        value = 0.0
    if value > 0:
        apart = [max(value * size / span, span / (value * size)) for size in (1, 60, 3600)]
        nearest = min(range(3), key=apart.__getitem__)
        unit = nearest if apart[nearest] * 10 <= apart[unit] else unit
    return f"in {number} {words_of(_language(russian), 'naming', 'bare_number_units', _WORDS)[unit]}"


def matching_timers(words: str, timers: list) -> list:
    """The timers whose text shares a word with `words`, in any grammatical case: "отмени
    таймер про маму" -> "позвонить маме"."""
    said = ({w for w in norm_words(words).split() if len(w) >= 3 and not TIMER_WORD.match(w)}
            - _FILLER)
    return [t for t in timers if any(among(w, set(norm_words(t.text).split())) for w in said)]


_PLACES: dict[str, int] = table("naming", "ordinals", _WORDS)  # type: ignore[assignment]
# "убери второе напоминание", "cancel the last one": a place said before a timer word, "one" or
# nothing more ("отмени второй завтрак" names a timer's text, no place)
_PLACE_SAID = re.compile(r"(?<!\w)(?P<word>" + "|".join(re.escape(word) for word in sorted(_PLACES, key=len, reverse=True))
                         + r")(?=\s*$|\s+(?:" + TIMER_WORD.pattern + "|" + alternation("naming", "timer_name_patterns", _WORDS) + "|"
                         + "|".join(re.escape(word) for word in words("naming", "ordinal_followers", _WORDS)) + r")(?!\w))")
_KEEP_SAID = re.compile(r"(?<!\w)(?:" + alternation("naming", "keep_patterns", _WORDS) + r")(?!\w)")


def timers_to_cancel(intent: Intent, pending: list, results_before: list[tuple[str, ToolData | None]] = (),
                     timer_tools: Container[str] = ()) -> list | None:
    """The timers a cancel means: all, the one whose text its words name, the one at the place
    said in the order they were set ("убери второе напоминание"), or the only one when the words
    say "timer" ("отмени таймер"); None when that is not plain (the model asks), or when it
    would take one the words keep ("…, про маму оставь"). "kill the pizza one" names no timer
    word: it cancels only a timer about pizza. "cancel it" (`intent.last_timer`) means the timer
    the turn before set, or the only one it listed; with `results_before` the (tool, result's
    payload) pairs of that turn, `timer_tools` the tools that set, list and cancel timers."""
    if intent.last_timer and intent.all_timers:  # "cancel all of them": the timers the turn before was about
        return pending if any(name in timer_tools for name, _data in results_before) else None
    if intent.last_timer:
        return _timer_talked_about(results_before, pending, timer_tools)
    if intent.both_timers:  # "scratch both of them": which two is plain only when two are set
        return pending if len(pending) == 2 else None
    if intent.all_timers or not pending and (not intent.text.strip() or TIMER_WORD.search(intent.text)):
        return pending
    if not pending:
        return None  # "drop the whatsapp one" with no timer set: something else of that name (a watch), the model's
    said, kept_said = _kept_apart(intent.text)
    place = _PLACE_SAID.search(norm_words(said))
    if place is not None:
        chosen = _at_place(pending, _PLACES[place["word"]])
    else:
        chosen = matching_timers(said, pending)
        if not chosen and len(pending) == 1 and TIMER_WORD.search(said):
            chosen = pending
    kept = matching_timers(kept_said, pending) if kept_said else []
    return chosen if len(chosen) == 1 and chosen[0] not in kept else None


_PRONOUNS = frozenset(words("naming", "pronoun_words", _WORDS))


def _named_in_remark(intent: Intent, said: str, pending: list) -> list | None:
    """"а, вика сама написала. убери тот, что про неё": a cancel that names its timer by a
    pronoun, whose person or thing the sentences before it name: the one timer their words name."""
    if not _PRONOUNS & set(norm_words(intent.text).split()) or intent.all_timers or intent.both_timers:
        return None
    end = max(said.rfind(". "), said.rfind("! "), said.rfind("? "))
    before = said[:end].strip() if end > 0 else ""  # no sentence before it: nothing names whom
    chosen = matching_timers(before, pending) if before else []
    return chosen if len(chosen) == 1 else None


_PARTS_OF_DAY: dict[str, str] = table("naming", "parts_of_day", _WORDS)  # type: ignore[assignment]
# the hours each part of the day holds, on the user's clock: [from, to)
_HOURS_OF = {"morning": range(4, 12), "day": range(12, 17), "evening": range(17, 24), "night": (*range(0, 4), 23)}


def _by_part_of_day(intent: Intent, pending: list, tz) -> list | None:
    """"утренний убери", "cancel the evening one": the one timer due in the part of the day a word
    of the cancel names (by its due time, on the user's clock); None when not one."""
    parts = {_PARTS_OF_DAY[word] for word in norm_words(intent.text).split() if word in _PARTS_OF_DAY}
    if len(parts) != 1 or intent.all_timers or intent.both_timers:
        return None
    hours = _HOURS_OF[parts.pop()]
    chosen = [t for t in pending if dt.datetime.fromtimestamp(t.due, tz).hour in hours]
    return chosen if len(chosen) == 1 else None


def _kept_apart(text: str) -> tuple[str, str]:
    """A cancel's words apart from the words of what is to stay: "второе напоминание, про маму
    оставь" -> ("второе напоминание", "про маму оставь")."""
    clauses = [clause for clause in _CONTRAST.split(text) if clause.strip()]
    kept = [clause for clause in clauses if _KEEP_SAID.search(norm_words(clause))]
    return " ".join(c for c in clauses if c not in kept), " ".join(kept)


def _at_place(pending: list, place: int) -> list:
    """The timer at a place (1-based; -1 the last) in the order they were set; [] past the end."""
    in_order = sorted(pending, key=set_order)
    return [in_order[place - 1]] if 0 < place <= len(in_order) else in_order[-1:] if place == -1 else []


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
    if counted_back(fast.turn_words(turn)):  # "за полчаса до начала": from an event, at the clock time said
        return await _before_the_time_said(fast, turn, intent)
    if intent.when.isdigit():  # "and another one for 20": in the unit of the timer the turn before set
        set_before = [data for _name, data in fast.results_before(turn) if isinstance(data, TimerSet)]
        if not set_before:
            return None
        intent = msgspec.structs.replace(intent, when=_in_unit_of(set_before[-1], intent.when, intent.russian))
    now = fast.now()
    elsewhere = clock_elsewhere(fast.turn_words(turn))
    if elsewhere is not None and intent.when.startswith("in ") and not _LENGTH_SAID.search(fold(fast.turn_words(turn))):
        return None  # "… по-ихнему …, напомни, когда у него будет десять": an hour of their clock, no 10-minute timer (h72)
    if elsewhere is not None and not intent.when.startswith("in "):  # "at 8 am their time": that place's clock, put on the user's
        intent = _on_our_clock(fast, turn, intent, elsewhere)
        if intent is None:
            return None  # no place asked about, or no clock time: the model's
    when = _beside_the_one_before(fast, turn, intent) or (
        intent.when if _MORNING_SAID.search(fast.turn_words(turn).casefold()) or elsewhere or _on_days(intent)
        or intent.action == _AS_SET else
        dial_nearest(intent.when, now, fast.timezone()))  # "в полвосьмого" at 18:00: 19:30; "every Tuesday at 9": 09:00
    try:
        due = parse_when(when, now, fast.timezone())
    except TimerError:
        return None  # the model asks what was meant
    if not intent.every and _today_though_another_day_said(fast, turn, when, due):  # a repeat's days are its own
        return None  # "завтра дежурю, в восемь обход. напомни в семь сорок …": 19:40 today or 07:40 tomorrow is the model's to ask
    before = len(fast.pending_timers())
    text = intent.text or words_of(_language(intent.russian), "naming", "unnamed_timer", _WORDS)[0]
    every = f"; every={intent.every}" if intent.every else ""
    if await fast.call(turn, fast.tool("timer_set"), f"{when}; {text}{every}") is None or len(fast.pending_timers()) <= before:
        return None
    return _timer_set_said(fast, intent, now, due)


_ONE_MORE = re.compile(r"(?<!\w)(?:" + alternation("requests", "one_more_patterns") + r")(?!\w)")


def _beside_the_one_before(fast: FastPath, turn: TurnState, intent: Intent) -> str:
    """"and another one at ten fifteen" right after a reminder for tomorrow at 10:00: on that one's
    day, at the reading of the clock nearest to it (tomorrow 10:15, not 22:15 today); "" unless a
    clock time with no day is said for one more timer and the turn before set one, not repeating,
    for another day than today."""
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})", intent.when.strip())
    set_before = [data for _name, data in fast.results_before(turn) if isinstance(data, TimerSet)]
    if clock is None or not set_before or set_before[-1].every_s or intent.every \
            or not _ONE_MORE.search(fold(fast.turn_words(turn))):
        return ""
    zone = fast.timezone()
    before = dt.datetime.fromtimestamp(set_before[-1].due, zone)
    if before.date() == dt.datetime.fromtimestamp(fast.now(), zone).date():
        return ""  # today's: the next reading of the dial, as for any clock time
    hour, minute = int(clock[1]), int(clock[2])
    readings = [hour, hour + 12] if 1 <= hour <= 11 else [hour]
    nearest = min(readings, key=lambda reading: abs(reading * 60 + minute - before.hour * 60 - before.minute))
    return before.replace(hour=nearest, minute=minute).strftime("%Y-%m-%dT%H:%M")


async def _before_the_time_said(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    """"созвон в восемь вечера, напомни за десять минут", "the call is at 2:00 pm their time, remind
    me fifteen minutes before": the one clock time the words say (another place's when they say
    whose: the place named with it, else the one asked about), less the length read (the
    request's "in 10 minutes"). Its text: the words of the clause with that time. None when the
    words hold no clock time or more than one, or the moment has passed: the model's."""
    said = fast.turn_words(turn)
    event = _event_moment(fast, turn, said)
    if event is None or not intent.when.startswith("in "):
        return None
    try:
        lead = parse_duration(intent.when.removeprefix("in "))
    except TimerError:
        return None
    now = fast.now()
    if event[0] - lead <= now:
        return None
    due = dt.datetime.fromtimestamp(event[0] - lead, fast.timezone())
    before = len(fast.pending_timers())
    if await fast.call(turn, fast.tool("timer_set"), f"{due.strftime('%Y-%m-%dT%H:%M')}; {event[1]}") is None \
            or len(fast.pending_timers()) <= before:
        return None
    return set_for_said(fast.speaker(intent.russian), due.timestamp(), now, fast.timezone(), intent.russian, f": {event[1]}")


def _event_moment(fast: FastPath, turn: TurnState, said: str) -> tuple[float, str] | None:
    """The moment of the one clock time `said` names, on its place's clock when the words say it
    is another place's, and the words of its clause; None when not one, or no place is known."""
    times = [(clause, found) for clause in _CLAUSES.split(in_digits(said)) for found in _CLOCK_SAID.finditer(clause)
             if found["minute"] or found["half"]]  # a bare number is no clock time
    if len(times) != 1:
        return None
    clause, found = times[0]
    hour, minute = int(found["hour"]), int(found["minute"] or 0)
    half = _HALF_OF_DAY.get(fold(found["half"] or "").rstrip(".") , "")
    hour += 12 if half == "evening" and hour < 12 else 0
    hour -= 12 if half == "morning" and hour == 12 else 0
    tz, elsewhere = fast.timezone(), clock_elsewhere(said)
    if elsewhere is not None:  # the place named with the time, else in the words, else the one asked about
        place = _place_named(clause, said) or fast.place_talked_about(turn)
        zone = zone_of(place) if place else None
        if zone is None:
            return None
        tz = zoneinfo.ZoneInfo(zone)
    clock = f"{hour}:{minute:02d}"
    try:
        moment = parse_when(clock if half else dial_nearest(clock, fast.now(), tz), fast.now(), tz)
    except TimerError:
        return None
    words = clause.replace(found.group(0), " ")
    if elsewhere is not None and (whose := clock_elsewhere(words)) is not None:
        words = words[:whose.start()] + " " + words[whose.end():]
    words = _AT_THE_END.sub("", " ".join(words.split()).strip(" ,.!?"))  # "у меня созвон в"
    return moment, words or words_of(_language(re.search(r"[а-яё]", said, re.I) is not None), "naming", "unnamed_timer", _WORDS)[0]


def _place_named(*texts: str) -> str:
    """The first word of `texts` that names a place with a time zone; "" when none does."""
    return next((word for text in texts for word in re.findall(r"[^\W\d_]+", text) if zone_of(word)), "")


def _on_our_clock(fast: FastPath, turn: TurnState, intent: Intent, said_there: re.Match[str]) -> Intent | None:
    """A timer whose clock time is another place's ("remind me at 8 am their time to call Kenji"
    after "what time is it in Tokyo"): set for the moment that place's clock reads it, on the
    user's clock, its text without the words that said whose clock; None when the conversation
    asked the time of no place it knows, or the time is no clock time. The place is one the
    turn's own words name ("сын в Чикаго …, напомни, когда у него будет десять утра"), else the
    one the conversation asked the time of."""
    words = fast.turn_words(turn)
    zone = zone_of(_place_named(words) or fast.place_talked_about(turn))
    # no half of the day said ("at six his time"): the next time their dial shows it, as the user's own clock is read
    clock = intent.when if _HALF_SAID.search(words.casefold()) or not zone else \
        dial_nearest(re.sub(r"^0(?=\d:)", "", intent.when), fast.now(), zoneinfo.ZoneInfo(zone))
    due = moment_there(clock, zone, fast.now()) if zone else None
    if due is None:
        return None
    text = " ".join(re.sub(re.escape(said_there.group(0)), " ", intent.text, flags=re.IGNORECASE).split())
    if (left := clock_elsewhere(text)) is not None:  # "… when it's there": the time itself was read out of the text
        text = " ".join(f"{text[:left.start()]} {text[left.end():]}".split())
    text = _CLOCK_LEAD_LEFT.sub("", text).strip(" ,")
    moment = dt.datetime.fromtimestamp(due, fast.timezone()).strftime("%Y-%m-%dT%H:%M")
    return msgspec.structs.replace(intent, when=moment, text=text)


def _timer_set_said(fast: FastPath, intent: Intent, now: float, due: float) -> str | None:
    """"Timer set for 10 minutes, it goes off at 05:13: the pasta." for a length; for a clock
    time the day and the time it goes off ("Set for tomorrow at 07:00: alarm.", never "for
    25 hours 56 minutes 27 seconds"), "every day at 08:00" for a daily one, "every Wednesday at
    10:00" for a weekly one."""
    text = f": {intent.text}" if intent.text else ""
    at, russian = fast.clock_time(due), intent.russian
    if mask := _on_days(intent):  # "on weekdays at 07:00", "every Tuesday and every Friday at 09:00"
        days = days_said(fast.speaker(russian), day_names(mask))
        return None if days is None else _say(fast, "timer_set_weekly", russian, days=days, at=at, text=text)
    if intent.every == "1 week" and not intent.when.startswith("in "):  # "every Wednesday at 10:00"
        weekday = WEEKDAYS[dt.datetime.fromtimestamp(due, fast.timezone()).weekday()]
        days = _say(fast, f"weekly_{weekday}", russian)
        return None if days is None else _say(fast, "timer_set_weekly", russian, days=days, at=at, text=text)
    if intent.when.startswith("in ") or intent.every and intent.every != "1 day":
        span = span_said(fast.speaker(russian), due - now)
        return None if span is None else _say(fast, "timer_set", russian, span=span, at=at, text=text)
    if intent.every:
        return _say(fast, "timer_set_daily", russian, at=at, text=text)
    return set_for_said(fast.speaker(russian), due, now, fast.timezone(), russian, text)


async def timer_change(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    """"actually make it 10 minutes", "нет, давай на 25", "push the orchid one to ten": the timer
    the words name, else the one the turn before set, set again for the new time with its text
    (the new one first: if it cannot be set, the old one stays), then the old one cancelled. A
    bare number is an hour for a timer set for a clock time, else in the old timer's unit. With
    no timer set the turn before and none named, a length said ("сделай на 40 минут") is a new
    timer; else the model's."""
    if intent.when.startswith("day:"):
        return await _to_day(fast, turn, intent, intent.when.removeprefix("day:"))
    old = _timer_to_change(fast, turn, intent)
    if old is None:
        plain = intent.when.startswith("in ") and not intent.text and not _set_before(fast, turn)
        return await timer_set(fast, turn, msgspec.structs.replace(intent, kind="timer_set")) if plain else None
    when, clock = intent.when, re.fullmatch(r"(\d{1,2}):(\d{2})", intent.when)
    if when[:1] in ("+", "-", ":"):  # "на полчаса попозже", "make it quarter past": from the time it had
        when = _moved(fast, old, when)
    elif when.isdigit() and (old.by_clock or old.due - old.set_at >= ALARM_SPAN_S):  # "make it 7": 7 o'clock of its day
        when = _same_day_time(fast, old.due, int(when), 0)
    elif clock is not None and old.by_clock:  # "давай в полдевятого" of "каждый день в восемь утра": 08:30, not 20:30
        hour = int(clock[1])
        if not _HALF_SAID.search(fast.turn_words(turn).casefold()) and 12 < hour < 24:
            hour -= 12  # "make it quarter to six" of a 06:30 alarm, read at 18:00 as 17:45: the alarm's half of the day
        when = _same_day_time(fast, old.due, hour, int(clock[2]))
    elif re.fullmatch(r"\d+(?:\.\d+)?", when):  # in the unit the timer it puts right was set in ("через полтора": 1.5)
        when = _in_unit_of(old, when, intent.russian)
    if not when:
        return None
    text = "" if old.text in _UNNAMED else old.text
    answer = await timer_set(fast, turn, Intent(kind="timer_set", russian=intent.russian, when=when, text=text,
                                                every=",".join(old.days) or _period(old.every_s)))
    if answer is None or await fast.call(turn, fast.tool("timer_cancel"), old.id) is None:
        return None
    return answer


# the days a repeat's set names: a daily reminder "only on weekdays" keeps its clock time on those days
_DAY_SETS = {"weekdays": WEEKDAYS[:5], "weekends": WEEKDAYS[5:]}


async def _to_day(fast: FastPath, turn: TurnState, intent: Intent, day: str) -> str | None:
    """"sorry, I meant Friday, same time", "move that one to Monday", "перенеси на четверг": the
    timer the turn before set or listed alone, at its clock time on that day (a weekly one stays
    weekly; "make it every day": daily), the old one cancelled; "oh and thursdays too": a weekly one or one on days of the week
    becomes one on its days and that one, a one-shot gets a second on that day. A daily one, or
    no timer the words can mean: the model's."""
    old = _timer_to_change(fast, turn, intent) or _listed_alone(fast, turn)
    days = _DAY_SETS.get(day, tuple(day.split(",")))  # "сделай только по будням": Monday to Friday
    if old is None or not set(days) <= {*WEEKDAYS, "daily"}:
        return None
    clock = fast.clock_time(old.due)
    also, weekly = intent.action == "add", old.every_s == WEEK_S
    if days == ("daily",):  # "и пусть так каждый день будит": every day at its clock time
        if old.every_s == DAY_S and not old.days:
            return None  # a daily one already: the model's to say so
        when, every = clock, "1 day"
    elif len(days) > 1:  # "make it Mondays and Thursdays instead": a repeat on days, on these days
        if also or not (old.days or weekly or day in _DAY_SETS and old.every_s == DAY_S):
            return None  # a one-shot put on several days, a daily one on days named one by one: the model's to ask
        when, every = clock, ",".join(days)
    elif old.days or weekly and also:
        first = old.days or (WEEKDAYS[dt.datetime.fromtimestamp(old.due, fast.timezone()).weekday()],)
        when, every = clock, ",".join((*first, day) if also else (day,))
    elif old.every_s and not weekly:
        return None
    else:
        when, every = f"{day} {clock}", "1 week" if weekly else ""
    text = "" if old.text in _UNNAMED else old.text
    answer = await timer_set(fast, turn, Intent(kind="timer_set", russian=intent.russian, when=when, text=text, every=every,
                                                action=_AS_SET))
    a_second_one = also and not old.days and not weekly  # a one-shot on one more day: both stand
    if answer is None or not a_second_one and await fast.call(turn, fast.tool("timer_cancel"), old.id) is None:
        return None
    return answer


# a unit of length said ("минут", "hours"): a timer's length, not a clock hour (toolsets/timers/words/*/naming.toml)
_LENGTH_SAID = re.compile(r"(?<!\w)(?:" + alternation("naming", "length_unit_patterns", _WORDS) + r")")


def _today_though_another_day_said(fast: FastPath, turn: TurnState, when: str, due: float) -> bool:
    """A bare clock time read as today's while the words say another day ("завтра", "tomorrow") that
    the reading did not take: the day it is for is not plain."""
    if not re.fullmatch(r"\d{1,2}:\d\d", when.strip()):
        return False
    zone = fast.timezone()
    today = dt.datetime.fromtimestamp(fast.now(), zone).date()
    return dt.datetime.fromtimestamp(due, zone).date() == today and ANOTHER_DAY.search(" " + fold(fast.turn_words(turn))) is not None


_AS_SET = "as_set"  # a timer_set's `when` read off a timer already set: a 24-hour clock, no dial to read


def _listed_alone(fast: FastPath, turn: TurnState) -> TimerSet | None:
    """The one timer the turn before listed ("what reminders have I got?" - "move that one to Monday")."""
    listed = [data for _name, data in fast.results_before(turn) if isinstance(data, TimersListed)]
    pending = {t.timer_id for t in fast.pending_timers()}
    if len(listed) != 1 or len(listed[0].timers) != 1 or listed[0].timers[0].id not in pending:
        return None
    return _as_set(fast, listed[0].timers[0].id)


def _moved(fast: FastPath, old: TimerSet, move: str) -> str:
    """The time a timer moved by a put-right has: "+30 minutes" later or "-15 minutes" earlier
    than it was, ":15" the minutes of its hour; as a moment for a timer set for a clock time (or
    a long one), as a length from now for a short one. "" when it cannot be: a minute of the hour
    of a short timer, or a moment already past."""
    clock_set = old.by_clock or old.due - old.set_at >= ALARM_SPAN_S
    if move.startswith(":"):
        if not clock_set:
            return ""
        due = dt.datetime.fromtimestamp(old.due, fast.timezone()).replace(minute=int(move[1:])).timestamp()
    else:
        try:
            length = parse_duration(move[1:])
        except TimerError:
            return ""
        due = old.due + (length if move[0] == "+" else -length)
    left = round(due - fast.now())
    if left <= 0:
        return ""
    if clock_set:
        return dt.datetime.fromtimestamp(due, fast.timezone()).strftime("%Y-%m-%dT%H:%M")
    return f"in {left // 60} minutes" if left % 60 == 0 else f"in {left} seconds"


# the text a timer gets when none was said (timer_set): no text to say back
_UNNAMED = frozenset(words("naming", "unnamed_timer", _WORDS))


def _set_before(fast: FastPath, turn: TurnState) -> list[TimerSet]:
    return [data for _name, data in fast.results_before(turn) if isinstance(data, TimerSet)]


def _timer_to_change(fast: FastPath, turn: TurnState, intent: Intent) -> TimerSet | None:
    """The still-running timer a put-right means: the one its words name among those
    set ("the orchid one"), as set in this conversation; else the one the turn before set."""
    pending_ids = {t.timer_id for t in fast.pending_timers()}
    if intent.text:
        named = matching_timers(intent.text, fast.pending_timers())
        chosen = _as_set(fast, named[0].timer_id) if len(named) == 1 else None
    else:
        set_before = _set_before(fast, turn)
        chosen = set_before[-1] if len(set_before) == 1 else None
    return chosen if chosen is not None and chosen.id in pending_ids else None


def _as_set(fast: FastPath, timer_id: str) -> TimerSet | None:
    """The result that set timer `timer_id` in this conversation, the latest first."""
    messages = fast.messages()
    for index in range(len(messages) - 1, -1, -1):
        data = fast.data_at(index)
        if isinstance(data, TimerSet) and data.id == timer_id:
            return data
    return None


def _same_day_time(fast: FastPath, due: float, hour: int, minute: int) -> str:
    """The clock time `hour`:`minute` on the day of `due`, in the same half of the day ("06:30
    tomorrow" made 7: "tomorrow 07:00"), tomorrow's when today's has passed (a 07:00 alarm made
    6:30 at 06:40: tomorrow's 06:30, never tonight's 18:30); "" when that day is neither today
    nor tomorrow. Its day is named: the half is decided, no dial reads it again."""
    moment, today = (dt.datetime.fromtimestamp(t, fast.timezone()) for t in (due, fast.now()))
    days = (moment.date() - today.date()).days
    if not 0 <= hour <= 23 or not 0 <= minute <= 59 or days not in (0, 1):
        return ""
    hour += 12 if moment.hour >= 12 and hour < 12 else 0
    days = 1 if (hour, minute) <= (today.hour, today.minute) else days
    return f"{'tomorrow' if days else 'today'} {hour:02d}:{minute:02d}"


def _on_days(intent: Intent) -> int:
    """The days of the week a repeat asked for names (core.timers.parse_days' mask); 0 for none."""
    try:
        return parse_days(intent.every) if intent.every else 0
    except TimerError:
        return 0


def _period(every_s: float | None) -> str:
    """A repeat as the timer tool takes it: "1 day"; "" for none."""
    if not every_s:
        return ""
    return f"{every_s / 86400:g} day" if every_s % 86400 == 0 else f"{every_s:g} seconds"


async def timer_list(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    if await fast.call(turn, fast.tool("timer_list"), "") is None:
        return None
    listed = "; ".join(" ".join(filter(None, (fast.clock_time(t.due), _repeat_said(fast, t, intent.russian)))) + f" — {t.text}"
                       for t in fast.pending_timers())
    return _say(fast, "timers_listed", intent.russian, listed=listed) if listed else _say(fast, "no_timers", intent.russian)


def _repeat_said(fast: FastPath, timer: Timer, russian: bool) -> str:
    """"every day", "on weekdays", "every Tuesday" for a timer that repeats so; "" for another."""
    say = fast.speaker(russian)
    if timer.days:
        return days_said(say, day_names(timer.days)) or ""
    if timer.every in (DAY_S, WEEK_S):
        weekday = WEEKDAYS[dt.datetime.fromtimestamp(timer.due, fast.timezone()).weekday()]
        return say("weekly_daily" if timer.every == DAY_S else f"weekly_{weekday}") or ""
    return ""


async def timer_cancel(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    pending = fast.pending_timers()
    timer_tools = {fast.tool("timer_set"), fast.tool("timer_list"), fast.tool("timer_cancel")} - {""}
    chosen = timers_to_cancel(intent, pending, fast.results_before(turn) if intent.last_timer else [], timer_tools)
    if chosen is None:
        chosen = _named_in_remark(intent, fast.turn_words(turn), pending)
    if chosen is None:
        chosen = _by_part_of_day(intent, pending, fast.timezone())
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
