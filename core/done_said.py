"""An action done is said: the model's last words of a turn that set a timer or started a film
must tell the user so.

The small model follows a recipe, sets the timer right and then ends with words that say nothing
of it ("Порridge готово.", "OK"): the glasses never show that a timer runs, nor when it goes off.
For another tool's change (an MCP tool not read-only) only a bare "Done" gets its result's line.
The guard against the opposite (an action claimed that no call made) asks again; here nothing is
wrong with the action, only the words lack it, so the runtime adds the sentence a reflex would
have said, in the user's language, in the words of the toolsets' responses (`say`: the timers'
and the media's intents.yaml; none worded, nothing added). Pure functions over the turn's results:
a timer and a play are read from their payloads (protocol.results), another tool's change from its
result's first line.
"""
from __future__ import annotations

import datetime as dt
import re

from core.echo import first_line
from core.lexicon import alternation
from core.local_intents import Say
from core.timers import WEEKEND_DAYS, WORK_DAYS, WEEKDAYS, format_span
from core.timewords import in_digits, numbers_said, spoken_parts
from protocol.results import Playing, TimerSet, ToolData

_PLAYING = ("sent", "started", "resumed")  # a play under way: sent to the phone, or the phone says it plays
# a timer set this far ahead is an alarm: said by its day and clock time, and a bare number
# putting it right is a clock hour (toolsets/timers)
ALARM_SPAN_S = 3 * 3600
DAY_S = 86400


def unsaid_done(answer: str, results: list[tuple[str, str, ToolData | None, bool]], russian: bool, say: Say,
                tz: dt.tzinfo = dt.timezone.utc) -> list[str]:
    """The sentences to add to `answer` for the timers set, films started and other changes made by
    the turn's calls that the answer does not mention; [] when it says each. `results`: (the kind
    of action its tool's spec declares (core.intent.action_kind; "" for a lookup), result, its
    payload, whether the tool changes something) of the calls that ran, in order. `say`: the
    toolsets' responses in the user's language. `tz`: the session's, for a timer's clock time."""
    said = in_digits(answer).casefold()
    missing = []
    for kind, result, data, changes in results:
        if kind == "timer_set":
            if isinstance(data, TimerSet) and not _says_timer(said, data, tz):
                missing.append(_timer_sentence(data, russian, say, tz))
        elif kind == "play":
            if isinstance(data, Playing) and data.title and data.state in _PLAYING and \
                    not _says_title(said, data.title, data.media_id):
                missing.append(say("playing", title=f"«{data.title}»"))
        elif changes and (kind == "change" and len(said.split()) <= SHORT_ANSWER_WORDS or _BARE.fullmatch(said.strip(" .!"))) \
                and not _shares_a_word(said, first_line(result)):
            # "Done", "Спасибо!" (or nothing: a refusal left out) after an MCP tool's change: its result says what
            line = first_line(result).strip().rstrip(".")
            missing.append(line[:1].upper() + line[1:CHANGE_LINE_CHARS] + ".")
    return [sentence for sentence in missing if sentence]  # what no toolset words is not added


# an answer that says only that something was done; another tool's result is added to nothing else
_BARE = re.compile("(?:" + alternation("guards", "bare_done_patterns") + ")")
CHANGE_LINE_CHARS = 160  # of another tool's result, said when the answer names nothing of it
SHORT_ANSWER_WORDS = 2  # an answer this short that names nothing of the change ("Спасибо!", "All set") says nothing of it


def _shares_a_word(said: str, result: str) -> bool:
    return bool({w for w in re.findall(r"[^\W\d_]{4,}", result.casefold())} & set(re.findall(r"[^\W\d_]{4,}", said)))


def _clock(timer: TimerSet, tz: dt.tzinfo) -> str:
    """"18:07": when it goes off, as its result said it."""
    return dt.datetime.fromtimestamp(timer.due, tz).strftime("%H:%M")


def _span(timer: TimerSet) -> str:
    """"7 min": how long from when it was set, as its result said it (core.timers.format_span)."""
    return format_span(timer.due - timer.set_at)


def _says_timer(said: str, timer: TimerSet, tz: dt.tzinfo) -> bool:
    """The answer names when it goes off (its clock) or how long it runs (a number of its span)."""
    clock = _clock(timer, tz)
    spans = {int(n) for n in re.findall(r"\d+", _span(timer))}
    return clock in said or clock.lstrip("0") in said or bool(spans & numbers_said(re.findall(r"\w+", said)))


def _says_title(said: str, title: str, title_id: str) -> bool:
    """The answer names the film: its title, or a word of its id (the English title, mostly)."""
    stems = [w[:max(4, len(w) - 2)] for w in re.findall(r"[^\W\d_]+", title.casefold()) if len(w) >= 4]
    if title.casefold() in said or stems and all(stem in said for stem in stems):  # "включила Матрицу"
        return True
    words = [w for w in title_id.split("-") if len(w) >= 4 and not w.isdigit()]
    return bool(words) and any(w in said for w in words)


def set_for_said(say: Say, due: float, since: float, tz: dt.tzinfo, russian: bool, text: str) -> str | None:
    """"Set for tomorrow at 07:00: alarm.": a timer by the day it goes off (counted from `since`)
    and its clock time, in the timers' words; `text` is ": its text" or ""."""
    moment, start = (dt.datetime.fromtimestamp(t, tz) for t in (due, since))
    days = (moment.date() - start.date()).days
    day = (say("day_today") if days == 0 else say("day_tomorrow") if days == 1
           else say("day_date", date=spoken_parts(moment, russian)[1], weekday=spoken_parts(moment, russian)[0]))
    return say("timer_set_for", day=day, at=f"{moment:%H:%M}", text=text) if day is not None else None


def days_said(say: Say, days: tuple[str, ...]) -> str | None:
    """"on weekdays", "every Tuesday and every Friday", "по вторникам и по четвергам": the days of
    the week a timer repeats on (the timer tool's names), in the timers' words."""
    mask = sum(1 << WEEKDAYS.index(day) for day in days if day in WEEKDAYS)
    named = {WORK_DAYS: "weekly_weekdays", WEEKEND_DAYS: "weekly_weekends"}.get(mask)
    if named is not None:
        return say(named)
    each = [say(f"weekly_{day}") for day in days]
    if not each or None in each:
        return None
    return each[0] if len(each) == 1 else say("weekly_and", first=", ".join(each[:-1]), last=each[-1])  # type: ignore[arg-type]


def span_said(say: Say, seconds: float) -> str | None:
    """"1 минуту", "1 час 30 минут", "45 seconds": how long, in the timers toolset's words
    (`span_hours`, `span_minutes`, `span_seconds`, `span_zero`: counts in their form); None when
    no toolset words them."""
    total = max(0, round(seconds))
    counts = (("span_hours", total // 3600), ("span_minutes", total % 3600 // 60), ("span_seconds", total % 60))
    parts = [say(name, n=n) for name, n in counts if n] or [say("span_zero")]
    return None if None in parts else " ".join(parts)  # type: ignore[arg-type]


def _timer_sentence(timer: TimerSet, russian: bool, say: Say, tz: dt.tzinfo) -> str | None:
    """As the fast path says a timer it set: by its length ("Таймер поставлен на 7 минут,
    сработает в 18:07: каша готова."; whole minutes from a minute on, as its result says it: a
    timer set for a clock time is not "2 hours 22 minutes 5 seconds" away), by its day and clock
    time when that far ahead ("Set for tomorrow at 09:00: wake up."), "every day at 08:00" for a
    daily one."""
    text, clock, span = timer.text.strip(), _clock(timer, tz), _span(timer)
    about = f": {text}" if text and text not in ("таймер", "timer") else ""
    if timer.every_s == DAY_S:
        return say("timer_set_daily", at=clock, text=about)
    if timer.days:  # "I'll remind you on weekdays at 07:00: alarm."
        days = days_said(say, timer.days)
        return None if days is None else say("timer_set_weekly", days=days, at=clock, text=about)
    if timer.due - timer.set_at >= ALARM_SPAN_S:
        return set_for_said(say, timer.due, timer.set_at, tz, russian, about)
    seconds = max(0, round(timer.due - timer.set_at))
    whole = seconds - seconds % 60 if seconds >= 60 else seconds
    return say("timer_set", span=span_said(say, whole) or span, at=clock, text=about)
