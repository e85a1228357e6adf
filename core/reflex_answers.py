"""The answers of the reflexes (core.reflex), worded from the results of the calls the session
made for them, and what those results and the history say back: the timers a cancel means, the
title a play or a details answer named, a fired timer's text, another place's time.

Pure functions, like core.reflex; the session (core.reflex_steps) runs them. Every answer is in the
user's language (`Intent.russian`) and says only what a result holds.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Container
from typing import NamedTuple
import zoneinfo

import msgspec

from core.reflex import _PLACE_CLOCK, _TIMER_WORD, ANSWER_TITLES, Intent, Shown, _among, _norm, is_russian
from core.local_intents import Say
from core.timewords import spoken_parts
from protocol import ChatMessage
from protocol.results import ClockRead, TasksListed, TimerSet, TitleInfo, TitlesShown, ToolData


def plural_ru(n: int, one: str, few: str, many: str) -> str:
    if n % 10 == 1 and n % 100 != 11:
        return one
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return few
    return many


def span_words(seconds: float, russian: bool) -> str:
    """"1 минуту", "1 час 30 минут", "45 seconds": how long, in the user's words."""
    total = max(0, round(seconds))
    hours, minutes, secs = total // 3600, total % 3600 // 60, total % 60
    units = ((hours, ("час", "часа", "часов"), "hour"), (minutes, ("минуту", "минуты", "минут"), "minute"),
             (secs, ("секунду", "секунды", "секунд"), "second"))
    parts = []
    for number, ru, en in units:
        if number:
            word = plural_ru(number, *ru) if russian else en + ("s" if number != 1 else "")
            parts.append(f"{number} {word}")
    return " ".join(parts) or ("0 секунд" if russian else "0 seconds")


def title_line(title: Shown) -> str:
    return f"«{title.names[0]}»" + (f" / {title.names[1]}" if len(title.names) > 1 else "") + f" ({title.facts})"


def search_answer(say: Say, intent: Intent, titles: list[Shown], total: int) -> str | None:
    if not titles:
        return not_found_answer(say, intent)
    listed = "; ".join(title_line(t) for t in titles[:ANSWER_TITLES])
    more = total - min(len(titles), ANSWER_TITLES)
    return say("titles_found_more", listed=listed, more=more) if more > 0 else say("titles_found", listed=listed)


def not_found_answer(say: Say, intent: Intent) -> str | None:
    """A play or a search the catalog has nothing for: said plainly, in the user's language."""
    return say("not_in_catalog", subject=intent.subject)


def play_answer(say: Say, title: Shown | None, name: str) -> str | None:
    return say("playing", title=title_line(title) if title is not None else f"«{name}»")


def _english_name(info: TitleInfo) -> str:
    """"Spirited Away" for «Унесённые призраками»: its original name when the catalog's differs."""
    names = info.title.names
    return names[1] if len(names) > 1 else ""


def details_answer(say: Say, intent: Intent, info: TitleInfo, translated: str = "") -> str | None:
    """The facts a details question asks, from a title's details (its payload), one sentence
    each; None when they lack one (the model answers from the result instead). `translated`: the
    plot in English, for an English question about it (`plot_in_english`)."""
    answers = [_one_detail(say, msgspec.structs.replace(intent, detail=detail), info, translated)
               for detail in (intent.detail, *intent.more_details)]
    return None if None in answers else " ".join(answers)


def asks_plot_in_english(intent: Intent) -> bool:
    return not intent.russian and "about" in (intent.detail, *intent.more_details)


def russian_plot(info: TitleInfo) -> str:
    """The catalog's description of a title when it is in Russian, or ""."""
    plot = " ".join(info.description.split())
    return plot if re.search(r"[а-яё]", plot.casefold()) else ""


def translation_messages(russian: str) -> list[ChatMessage]:
    """The question that puts a film's Russian description in English (one short generation)."""
    return [ChatMessage(role="system", content="You translate Russian into English word for word. Keep every name. "
                                               "Answer with the English translation only."),
            # worked examples, none the catalog's: a sentence copied from here names a film nobody asked about
            ChatMessage(role="user", content="Старый рыбак три дня борется с огромной рыбой в открытом море."),
            ChatMessage(role="assistant", content="An old fisherman fights a huge fish in the open sea for three days."),
            ChatMessage(role="user", content="Девочка Варя находит в лесу говорящего ежа и помогает ему вернуться домой."),
            ChatMessage(role="assistant", content="A girl named Varya finds a talking hedgehog in the forest and helps "
                                                  "him get back home."),
            ChatMessage(role="user", content=russian)]


def plot_in_english(reply: str, russian: str) -> str:
    """The model's translation when it is one: English letters only, about as long as the
    original; "" otherwise (the answer then gives the Russian words, said as such)."""
    text = " ".join(reply.split()).strip("\"' ")
    if not text or re.search(r"[а-яё]", text.casefold()) or not 0.4 * len(russian) <= len(text) <= 2.5 * len(russian):
        return ""
    return text


def _one_detail(say: Say, intent: Intent, info: TitleInfo, translated: str = "") -> str | None:
    name, year = info.title.names[0] if info.title.names else info.title.id, info.title.year
    if intent.detail == "year" and year:
        return say("came_out", name=name, year=year)
    plot = russian_plot(info)
    if intent.detail == "about" and plot:
        when = f" ({year})" if year else ""
        if intent.russian:
            return say("plot", name=name, when=when, plot=plot)  # the catalog's own words
        if translated:  # the catalog describes in Russian only: put in English by the model, asked aside (said so:
            # the small model's translation is rough, a name or a relation may come out wrong)
            return say("plot_translated", name=_english_name(info) or name, when=when, plot=translated.rstrip("."))
        # the small model, asked to answer, copied the title line instead
        return say("plot_in_russian", name=_english_name(info) or name, when=when, plot=plot)
    value = {"runtime": info.runtime_min, "director": info.director.strip(), "episodes": info.episodes}.get(intent.detail or "")
    if not value:
        return None  # not a fact the details hold, or unknown
    if intent.detail == "runtime":
        return say("runtime_hours" if value >= 60 else "runtime", name=name, minutes=value, hours=value // 60, rest=value % 60)
    if intent.detail == "director":
        return say("directed_by", name=name, director=value)
    return say("episodes", name=name, episodes=value)


_TO_YOU_RU = {"мне": "вам", "меня": "вас", "мой": "ваш", "моя": "ваша", "мою": "вашу", "мое": "ваше", "моё": "ваше",
              "мои": "ваши"}
_TO_YOU_EN = {"me": "you", "my": "your", "i": "you", "i'm": "you're", "mine": "yours", "myself": "yourself"}


def watch_answer(say: Say, intent: Intent) -> str | None:
    """"Хорошо, скажу, когда вам напишет Анна." - the user's condition, said back to them."""
    swaps = _TO_YOU_RU if intent.russian else _TO_YOU_EN
    condition = re.sub(r"[^\W\d_]+(?:'[a-z]+)?", lambda w: swaps.get(w.group(0).casefold(), w.group(0)), intent.text)
    return say("watch_set", condition=condition)


def tasks_answer(say: Say, listed: TasksListed) -> str | None:
    """Nothing running, said plainly; a list is worded by the model (it names the tools)."""
    return None if listed.tasks else say("nothing_running")


def time_answer(say: Say, now: dt.datetime, russian: bool) -> str | None:
    """"Сейчас 18:00, суббота, 14 марта.": the moment a clock read (aware), in words."""
    weekday, date, clock = spoken_parts(now, russian)
    return say("time_now", clock=clock, weekday=weekday, date=date)


_DAYS_FROM_TODAY = {-2: "day_before_yesterday", -1: "yesterday", 1: "tomorrow", 2: "day_after_tomorrow"}


def day_answer(say: Say, day: dt.datetime, offset: int, russian: bool) -> str | None:
    """"Завтра воскресенье, 15 марта." - the weekday and date `offset` days from today."""
    weekday, date, _clock = spoken_parts(day, russian)
    return say(_DAYS_FROM_TODAY.get(offset, "another_day"), weekday=weekday, date=date)


def shown_total(data: ToolData | None) -> int:
    """How many titles a search found in all (its pages together); 0 without its payload."""
    return data.total if isinstance(data, TitlesShown) else 0


def played_id(assistant_line: str, play_tool: str) -> str:
    """The id an assistant's call of `play_tool` (the tool that serves "title_play") named: a
    play, not a pause; "" for any other line."""
    marker = f"{play_tool}|"
    return "" if ";" in assistant_line.rsplit(marker, 1)[-1] else controlled_id(assistant_line, play_tool)


def controlled_id(assistant_line: str, play_tool: str) -> str:
    """The id any call of `play_tool` named (a play or a pause); "" for any other line."""
    if not play_tool:
        return ""
    found = re.search(rf"TOOL_CALL: {re.escape(play_tool)}\|([a-z0-9]+(?:-[a-z0-9]+)*)", assistant_line)
    return found.group(1) if found else ""


_PLAYBACK_DONE = {"pause": "paused", "resume": "resumed", "stop": "stopped"}


def playback_answer(say: Say, intent: Intent, title: Shown | None) -> str | None:
    return say(_PLAYBACK_DONE[intent.action or "pause"], name=f" «{title.names[0]}»" if title is not None else "")


def info_title(data: ToolData | None) -> Shown | None:
    """The title a details result (its payload) is about; None for any other result."""
    if not isinstance(data, TitleInfo) or not data.title.names:
        return None
    title = data.title
    return Shown(title.id, tuple(title.names), str(title.year), title.year, title.kind)


def matching_timers(words: str, timers: list) -> list:
    """The timers whose text shares a word with `words`, in any grammatical case: "отмени
    таймер про маму" -> "позвонить маме"."""
    said = ({w for w in _norm(words).split() if len(w) >= 3 and not _TIMER_WORD.match(w)}
            - {"про", "the", "about", "for", "one", "тот", "тот", "что", "который", "которая", "that"})
    return [t for t in timers if any(_among(w, set(_norm(t.text).split())) for w in said)]


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
    if intent.all_timers or not pending:
        return pending
    chosen = matching_timers(intent.text, pending)
    if not chosen and len(pending) == 1 and _TIMER_WORD.search(intent.text):
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
    """"нью-йорке" -> "Нью-Йорке", "new york" -> "New York"."""
    return re.sub(r"(?:^|(?<=[\s-]))(\w)", lambda m: m.group(1).upper(), place.strip())
