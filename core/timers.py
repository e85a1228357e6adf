"""Timers a session sets for itself (E10): one-shot and repeating, woken by the clock, not polled.

The session actor asks `next_due()` and sleeps exactly until then; on waking, `due(now)` hands
back the timers that fired (their `to_event()` goes into the session's queue like any event).
Times are epoch seconds from an injectable clock; text shown to the model is ISO 8601 in the
session's time zone. The `timers` toolset (toolsets/timers) lets the model manage them; its tools
are forgiving like every tool (S3): cancelling twice or an unknown id is an explanation, not an error.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from core import lexicon
from protocol import Event

LATE_AFTER_S = 5.0  # a timer fired this long after its time was missed (the runtime was down)
MAX_AHEAD_S = 3660 * 86400.0  # ~10 years: beyond that it is a mistake, not a reminder
EXAMPLES = "'in 5 minutes', 'через 2 часа', '5m', '1h30m', '09:30', 'tomorrow 07:00' or ISO time like 2026-12-01T09:00"
DAYS_EXAMPLES = "'weekdays', 'weekends' or days of the week like 'tuesday,thursday'"


class TimerError(ValueError):
    """A time or timer request that cannot be honoured; the message says what to send instead."""


# the words of a length and a moment are data (core/words/<language>/durations.toml)
UNIT_SECONDS: dict[str, float] = {}  # a unit's word -> its seconds (core.timewords reads lengths with it too)
for _unit, _seconds in (("second", 1.0), ("minute", 60.0), ("hour", 3600.0), ("day", 86400.0), ("week", 604800.0)):
    UNIT_SECONDS.update(dict.fromkeys(lexicon.words("durations", f"{_unit}_words"), _seconds))

_WORD_NUMBERS: dict[str, str] = {word: str(n) for word, n in lexicon.table("durations", "number_words").items()}
LENGTH_PHRASES = tuple((phrase, str(plain)) for phrase, plain in lexicon.table("durations", "phrases").items())
_FILLER = frozenset(lexicon.words("durations", "filler_words"))
_ALL = frozenset(lexicon.words("durations", "all_words"))
_TOKEN = re.compile(r"(\d+(?:\.\d+)?)?\s*([^\W\d_]+)")
_CLOCK = re.compile(r"(?:(?:" + "|".join(map(re.escape, lexicon.words("durations", "clock_prepositions"))) + r") )?"
                    r"(\d{1,2})[:.](\d{2})")
_ISO_START = re.compile(r"\d{4}-\d{2}-\d{2}")
# the tool's names of the days of the week ("monday 10:00": the next Monday's; today's when still ahead)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_CLOCK = re.compile(r"(today|tomorrow|" + "|".join(WEEKDAYS) + r")\s+(?:at\s+)?(\d{1,2})[:.](\d{2})")  # "tomorrow 07:00": that day's
# a repeat on days of the week (`every`: "weekdays", "tuesday,thursday", "mon-fri"), as a bit mask: Monday = 1
WORK_DAYS, WEEKEND_DAYS = 0b0011111, 0b1100000
_DAY_SET_NAMES = {**dict.fromkeys(lexicon.words("durations", "work_days_words"), WORK_DAYS),
                  **dict.fromkeys(lexicon.words("durations", "weekend_words"), WEEKEND_DAYS)}
_DAY_SEPARATORS = re.compile(r"\s*(?:,|;|/|&|\+|\b(?:" + "|".join(lexicon.words("durations", "joining_words")) + r")\b)\s*")
_DAY_RANGE = re.compile(r"([a-z]+)\s*(?:-|–|\bto\b|\bthrough\b|\bthru\b)\s*([a-z]+)")


def parse_duration(text: str) -> float:
    """Seconds in "5 minutes", "через 2 часа", "1h30m", "полчаса", "every hour" (a unit alone = 1)."""
    said = re.sub(r"(\d),(\d)", r"\1.\2", text.casefold()).replace(",", " ")
    said = " ".join(said.split()).strip(".!?;: ")
    for phrase, plain in LENGTH_PHRASES:
        said = said.replace(phrase, plain)
    words = [_WORD_NUMBERS.get(w, w) for w in said.split() if w not in _FILLER]
    rest = " ".join(words).replace(",", ".")
    total, pos = 0.0, 0
    for match in _TOKEN.finditer(rest):
        if rest[pos:match.start()].strip():
            break
        number, unit = match.groups()
        if unit not in UNIT_SECONDS:
            raise TimerError(f"cannot understand {text!r} ({unit!r} is not a time unit): use {EXAMPLES}")
        total += float(number or 1) * UNIT_SECONDS[unit]
        pos = match.end()
    if rest.replace(".", "").isdigit():
        raise TimerError(f"the duration {text!r} has no unit: say e.g. '{rest} minutes'")
    if not rest or rest[pos:].strip():
        raise TimerError(f"cannot understand the duration {text!r}: use {EXAMPLES}")
    if total <= 0:
        raise TimerError(f"the duration {text!r} is zero: a timer needs a moment in the future")
    if total > MAX_AHEAD_S:
        raise TimerError(f"the duration {text!r} is more than ten years away")
    return total


def _weekday_number(word: str) -> int | None:
    """0 for "monday", "mon", "mondays", "Tues"..., None for a word that names no day."""
    word = word.strip(". ").removesuffix("s") if len(word) > 4 else word.strip(". ")
    return next((number for number, name in enumerate(WEEKDAYS) if len(word) >= 3 and name.startswith(word)), None)


def parse_days(text: str) -> int:
    """The days of the week a repeat names, as a bit mask (Monday = 1): "weekdays", "weekends",
    "tuesday,thursday", "every Tuesday and Friday", "mon-fri"; 0 when `text` names no day (a
    length then: "1 day"). Raises TimerError for days mixed with words that are none."""
    said = " ".join((text or "").casefold().split()).strip(" .!")
    if said in _DAY_SET_NAMES:
        return _DAY_SET_NAMES[said]
    mask, others = 0, []
    for part in filter(None, _DAY_SEPARATORS.split(said)):
        words = [w for w in part.split() if w not in _FILLER and w not in ("on", "at")]
        span = _DAY_RANGE.fullmatch(" ".join(words))
        if span is not None and None not in (first := _weekday_number(span[1]), last := _weekday_number(span[2])):
            mask |= sum(1 << day % 7 for day in range(first, first + (last - first) % 7 + 1))
        elif len(words) == 1 and (words[0] in _DAY_SET_NAMES or _weekday_number(words[0]) is not None):
            mask |= _DAY_SET_NAMES.get(words[0]) or 1 << _weekday_number(words[0])
        else:
            others.append(part)
    if mask and others:
        raise TimerError(f"cannot read the days {text!r}: use {DAYS_EXAMPLES}")
    return mask


def day_names(mask: int) -> tuple[str, ...]:
    """The tool's names of the days in `mask`, Monday first."""
    return tuple(name for number, name in enumerate(WEEKDAYS) if mask >> number & 1)


def next_on_days(moment: float, mask: int, tz: tzinfo, after: bool = False) -> float:
    """The first moment at `moment`'s clock time on a day in `mask`, from `moment`'s own day on
    (the day after it with `after`), on the wall clock of `tz` (a change of summer time keeps 07:00)."""
    local = datetime.fromtimestamp(moment, tz)
    for ahead in range(int(after), int(after) + 7):
        day = local.date() + timedelta(days=ahead)
        if mask >> day.weekday() & 1:
            return datetime.combine(day, local.time().replace(tzinfo=None), tzinfo=tz).timestamp()
    return moment + 7 * 86400.0  # no day in the mask: never set (parse_days makes none)


def said_as_clock(text: str) -> bool:
    """Whether `when` names a moment ("21:00", "tomorrow 07:00", an ISO time), not a span from now."""
    said = " ".join((text or "").split()).casefold()
    return bool(_ISO_START.match(said) or _DAY_CLOCK.fullmatch(said) or _CLOCK.fullmatch(said))


def parse_when(text: str, now: float, tz: tzinfo = timezone.utc) -> float:
    """The epoch time meant by `text`: a relative duration, a time of day (the next one), or an
    ISO 8601 moment (naive ones are in `tz`). Raises TimerError with what to send instead."""
    said = " ".join((text or "").split())
    if not said:
        raise TimerError(f"'when' is empty: use {EXAMPLES}")
    if _ISO_START.match(said):
        try:
            moment = datetime.fromisoformat(said)
        except ValueError:
            raise TimerError(f"{said!r} is not a valid ISO 8601 time: use e.g. 2026-12-01T09:00") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=tz)
        due = moment.timestamp()
        if due <= now:
            raise TimerError(f"{said} is in the past (now is {format_time(now, tz)})")
        if due - now > MAX_AHEAD_S:
            raise TimerError(f"{said} is more than ten years away")
        return due
    day_clock = _DAY_CLOCK.fullmatch(said.casefold())
    if day_clock:
        days = _days_to(day_clock.group(1), int(day_clock[2]), int(day_clock[3]), now, tz)
        return _on_day(said, days, int(day_clock[2]), int(day_clock[3]), now, tz)
    clock = _CLOCK.fullmatch(said.casefold())
    if clock:
        hour, minute = int(clock.group(1)), int(clock.group(2))
        if hour > 23 or minute > 59:
            raise TimerError(f"{said!r} is not a time of day: use HH:MM from 00:00 to 23:59")
        local_now = datetime.fromtimestamp(now, tz)
        moment = local_now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if moment.timestamp() <= now:
            moment = (moment + timedelta(days=1)).replace(hour=hour, minute=minute)
        return moment.timestamp()
    return now + parse_duration(said)


def _days_to(day: str, hour: int, minute: int, now: float, tz: tzinfo) -> int:
    """Days from today to `day` ("today", "tomorrow" or a weekday: the next one, today's only
    while `hour`:`minute` is still ahead)."""
    if day in ("today", "tomorrow"):
        return int(day == "tomorrow")
    local_now = datetime.fromtimestamp(now, tz)
    days = (WEEKDAYS.index(day) - local_now.weekday()) % 7
    return 7 if days == 0 and (hour, minute) <= (local_now.hour, local_now.minute) else days


def _on_day(said: str, days: int, hour: int, minute: int, now: float, tz: tzinfo) -> float:
    """The moment `hour`:`minute` of the day `days` after today in `tz`."""
    if hour > 23 or minute > 59:
        raise TimerError(f"{said!r} is not a time of day: use HH:MM from 00:00 to 23:59")
    day = datetime.fromtimestamp(now, tz).date() + timedelta(days=days)
    moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz).timestamp()
    if moment <= now:
        raise TimerError(f"{said} is in the past (now is {format_time(now, tz)})")
    return moment


def dial_nearest(when: str, now: float, tz: tzinfo = timezone.utc) -> str:
    """"7:30" said at 18:00 is 19:30, said at 23:00 the morning's 07:30: an hour from 1 to 11 with
    no half of the day named is the next time a 12-hour dial shows it. Any other `when` as it is."""
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})", when.strip())
    if clock is None or not 1 <= int(clock.group(1)) <= 11:
        return when
    later = f"{int(clock.group(1)) + 12}:{clock.group(2)}"
    try:
        return later if parse_when(later, now, tz) < parse_when(when, now, tz) else when
    except TimerError:
        return when


def format_time(ts: float, tz: tzinfo = timezone.utc) -> str:
    """ISO 8601 in the session's zone, to the minute unless seconds matter."""
    moment = datetime.fromtimestamp(ts, tz)
    return moment.isoformat(timespec="minutes" if moment.second == 0 else "seconds")


def spoken_moment(ts: float, now: float, tz: tzinfo = timezone.utc) -> str:
    """"15:05 today", "09:00 tomorrow", "Monday 8 June 09:00": what a small model can say as
    is (an ISO stamp reached the glasses, issue 33)."""
    moment, today = datetime.fromtimestamp(ts, tz), datetime.fromtimestamp(now, tz).date()
    clock = moment.strftime("%H:%M" if moment.second == 0 else "%H:%M:%S")
    days = (moment.date() - today).days
    if days == 0:
        return f"{clock} today"
    if days == 1:
        return f"{clock} tomorrow"
    return f"{moment.strftime('%A')} {moment.day} {moment.strftime('%B')}{moment.strftime(' %Y') if days > 300 else ''} {clock}"


def format_span(seconds: float) -> str:
    """"45 s", "5 min", "1 h 30 min", "2 d 3 h": how far away, for people and the model."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            parts.append(f"{s // size} {unit}")
            s %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def set_order(timer: "Timer") -> int:
    """Its place in the order the timers were set (its id's number: t1, t2, ...): "the second
    one" of what the user asked for, whatever goes off first."""
    number = timer.timer_id[1:]
    return int(number) if number.isdigit() else 0


@dataclass(slots=True)
class Timer:
    timer_id: str
    due: float
    text: str
    every: float | None = None  # seconds between firings; None: one-shot
    days: int = 0  # or a repeat on these days of the week at the same clock time (parse_days' mask)

    def to_event(self, fired_at: float, tz: tzinfo = timezone.utc) -> Event:
        """The timer event for the session queue (E1); the id is stable per firing (dedupe). One
        that fires well after its time (the runtime was down) says so."""
        late = fired_at - self.due > LATE_AFTER_S
        context = f"late: it was due at {spoken_moment(self.due, fired_at, tz)}; the runtime was down then" if late else ""
        return Event(event_id=f"timer-{self.timer_id}-{int(self.due)}", kind="timer", source="timers",
                     channel="timer", content=self.text, context=context, ts=fired_at,
                     data={"timer_id": self.timer_id, "due": str(self.due)})


class TimerTable:
    """One session's timers. Ids are short ("t1") so they can be said aloud."""

    __slots__ = ("_timers", "_next_number", "clock", "tz", "max_timers", "min_repeat_s", "on_change")

    def __init__(self, clock: Callable[[], float] = time.time, tz: tzinfo = timezone.utc,
                 max_timers: int = 50, min_repeat_s: float = 60.0) -> None:
        self._timers: dict[str, Timer] = {}
        self._next_number = 1
        self.clock = clock
        self.tz = tz
        self.max_timers = max_timers
        self.min_repeat_s = min_repeat_s
        self.on_change: Callable[[], None] | None = None  # told after every change (the journal)

    def snapshot(self) -> tuple[list[Timer], int]:
        """(timers, next id number): what a restart needs to bring the table back."""
        return [Timer(t.timer_id, t.due, t.text, t.every, t.days) for t in self._timers.values()], self._next_number

    def restore(self, timers: list[Timer], next_number: int) -> None:
        self._timers = {t.timer_id: t for t in timers}
        self._next_number = max(next_number, 1)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def __len__(self) -> int:
        return len(self._timers)

    def set(self, when_text: str, text: str, every: str | None = None) -> tuple[str, float, str]:
        """Add a timer: (id, due epoch, confirmation for the model). Raises TimerError."""
        text = " ".join((text or "").split())
        if not text:
            raise TimerError("'text' is empty: say what the timer should remind about")
        if len(self._timers) >= self.max_timers:
            raise TimerError(f"too many timers ({self.max_timers}): cancel some first ({self._ids()})")
        now = self.clock()
        due = parse_when(when_text, now, self.tz)
        interval, days = None, parse_days(every or "")
        if days:  # "every weekday at 07:00": from the first of those days on
            due = next_on_days(due, days, self.tz)
        elif every is not None and every.strip():
            interval = parse_duration(every)
            if interval < self.min_repeat_s:
                raise TimerError(f"a repeating timer needs at least {format_span(self.min_repeat_s)} between firings")
        timer_id = f"t{self._next_number}"
        self._next_number += 1
        self._timers[timer_id] = Timer(timer_id, due, text, interval, days)
        self._changed()
        repeat = f", then {self._repeat(self._timers[timer_id])}" if interval or days else ""
        confirmation = f"Timer {timer_id} set for {self._when(due, now)}{repeat}: {text}"
        return timer_id, due, confirmation

    def list(self) -> str:
        """One line per timer, soonest first, or a plain "no timers"."""
        if not self._timers:
            return "No timers set."
        now = self.clock()
        lines = [f"{len(self._timers)} timer{'s' if len(self._timers) > 1 else ''}:"]
        for timer in sorted(self._timers.values(), key=lambda t: t.due):
            repeat = f", {self._repeat(timer)}" if timer.every or timer.days else ""
            lines.append(f"{timer.timer_id} at {self._when(timer.due, now)}{repeat}: {timer.text}")
        return "\n".join(lines)

    def cancel(self, timer_id: str) -> str:
        """Remove a timer ("all" removes every one). Idempotent: an unknown id is explained."""
        wanted = " ".join((timer_id or "").casefold().split())
        if wanted in _ALL:
            count = len(self._timers)
            self._timers.clear()
            self._changed()
            return f"All {count} timers cancelled." if count else "No timers set; nothing to cancel."
        if wanted.isdigit():
            wanted = f"t{wanted}"
        timer = self._timers.pop(wanted, None)
        if timer is not None:
            self._changed()
            return f"Timer {wanted} cancelled: {timer.text}"
        active = f"active timers: {self._ids()}" if self._timers else "no timers are set"
        return f"Timer {timer_id.strip() or '(no id)'} is not set (already fired, cancelled, or never set); {active}."

    def due(self, now: float | None = None) -> list[Timer]:
        """Timers due by `now`, soonest first. One-shots are removed; a repeating timer is
        rescheduled after `now` (missed periods fire once, not in a burst)."""
        now = self.clock() if now is None else now
        fired = sorted((t for t in self._timers.values() if t.due <= now), key=lambda t: t.due)
        result = []
        for timer in fired:
            if timer.every:
                result.append(Timer(timer.timer_id, timer.due, timer.text, timer.every))
                missed = (now - timer.due) // timer.every + 1
                timer.due += missed * timer.every
            elif timer.days:
                result.append(Timer(timer.timer_id, timer.due, timer.text, days=timer.days))
                while timer.due <= now:
                    timer.due = next_on_days(timer.due, timer.days, self.tz, after=True)
            else:
                result.append(self._timers.pop(timer.timer_id))
        if result:
            self._changed()
        return result

    def pending(self) -> list[Timer]:
        """The timers set, soonest first (for observers)."""
        return sorted(self._timers.values(), key=lambda t: t.due)

    def next_due(self) -> float | None:
        """When the soonest timer fires (epoch), or None: the actor sleeps exactly that long."""
        return min((t.due for t in self._timers.values()), default=None)

    def _ids(self) -> str:
        return ", ".join(sorted(self._timers, key=lambda i: self._timers[i].due))

    def _repeat(self, timer: Timer) -> str:
        """"every 1 d", "every weekday at 07:00", "every tuesday, thursday at 09:30"."""
        if not timer.days:
            return f"every {format_span(timer.every or 0)}"
        names = [name.capitalize() for name in day_names(timer.days)]
        named = {WORK_DAYS: "weekday", WEEKEND_DAYS: "weekend day"}.get(timer.days) or \
            " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        return f"every {named} at {datetime.fromtimestamp(timer.due, self.tz).strftime('%H:%M')}"

    def _when(self, due: float, now: float) -> str:
        return f"{spoken_moment(due, now, self.tz)} (in {format_span(due - now)})"
