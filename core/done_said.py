"""An action done is said: the model's last words of a turn that set a timer or started a film
must tell the user so.

The small model follows a recipe, sets the timer right and then ends with words that say nothing
of it ("Порridge готово.", "OK"): the glasses never show that a timer runs, nor when it goes off.
For another tool's change (an MCP tool not read-only) only a bare "Done" gets its result's line.
The guard against the opposite (an action claimed that no call made) asks again; here nothing is
wrong with the action, only the words lack it, so the runtime adds the sentence a reflex would
have said, in the user's language. Pure functions over the turn's (tool, result) pairs.
"""
from __future__ import annotations

import re

from core.echo import first_line
from core.timewords import in_digits, numbers_said

# "Timer t3 set for 18:07 today (in 7 min): каша готова" (core.timers.Timers.set)
_TIMER_SET = re.compile(r"^Timer \S+ set for (?P<moment>.*?(?P<clock>\d{1,2}:\d{2})(?::\d{2})?.*?) \(in (?P<span>[^)]*)\)"
                        r"(?P<repeat>[^:\n]*): (?P<text>.*)$", re.MULTILINE)
# "«Матрица» (matrix-1999): play sent to the phone (task …)", "«Матрица» (matrix-1999) is playing on the phone"
_PLAYED = re.compile(r"^«(?P<title>[^»]+)» \((?P<title_id>[\w-]+)\)(?::\s+play\s+sent|\s+is\s+playing)", re.MULTILINE)
_SPAN_UNITS_RU = {"s": "сек", "min": "мин", "h": "ч", "d": "дн"}


def unsaid_done(answer: str, results: list[tuple[str, str, bool]], russian: bool) -> list[str]:
    """The sentences to add to `answer` for the timers set, films started and other changes made by
    the turn's calls that the answer does not mention; [] when it says each. `results`: (the kind
    of action its tool's spec declares (core.intent.action_kind; "" for a lookup), result, whether
    the tool changes something) of the calls that ran, in order."""
    said = in_digits(answer).casefold()
    missing = []
    for kind, result, changes in results:
        if kind == "timer_set":
            timer = _TIMER_SET.search(result)  # after "(toolset … enabled on the way)"
            if timer is not None and not _says_timer(said, timer):
                missing.append(_timer_sentence(timer, russian))
        elif kind == "play":
            played = _PLAYED.search(result)
            if played is not None and not _says_title(said, played["title"], played["title_id"]):
                missing.append(f"Включаю «{played['title']}»." if russian else f"Playing «{played['title']}».")
        elif changes and _BARE.fullmatch(said.strip(" .!")) and not _shares_a_word(said, first_line(result)):
            # "Done" after an MCP tool's change: its result says what ("home city set: Berlin …")
            line = first_line(result).strip().rstrip(".")
            missing.append(line[:1].upper() + line[1:CHANGE_LINE_CHARS] + ".")
    return missing


# an answer that says only that something was done; another tool's result is added to nothing else
_BARE = re.compile(r"(?:done|ok|okay|sure|all\s+set|готово|сделано|выполнено|хорошо|ок)")
CHANGE_LINE_CHARS = 160  # of another tool's result, said when the answer names nothing of it


def _shares_a_word(said: str, result: str) -> bool:
    return bool({w for w in re.findall(r"[^\W\d_]{4,}", result.casefold())} & set(re.findall(r"[^\W\d_]{4,}", said)))


def _says_timer(said: str, timer: re.Match[str]) -> bool:
    """The answer names when it goes off (its clock) or how long it runs (a number of its span)."""
    clock = timer["clock"].zfill(5)
    spans = {int(n) for n in re.findall(r"\d+", timer["span"])}
    return clock in said or clock.lstrip("0") in said or bool(spans & numbers_said(re.findall(r"\w+", said)))


def _says_title(said: str, title: str, title_id: str) -> bool:
    """The answer names the film: its title, or a word of its id (the English title, mostly)."""
    stems = [w[:max(4, len(w) - 2)] for w in re.findall(r"[^\W\d_]+", title.casefold()) if len(w) >= 4]
    if title.casefold() in said or stems and all(stem in said for stem in stems):  # "включила Матрицу"
        return True
    words = [w for w in title_id.split("-") if len(w) >= 4 and not w.isdigit()]
    return bool(words) and any(w in said for w in words)


def _timer_sentence(timer: re.Match[str], russian: bool) -> str:
    text = timer["text"].strip()
    about = f": {text}" if text and text not in ("таймер", "timer") else ""
    if russian:
        span = re.sub(r"\b(s|min|h|d)\b", lambda m: _SPAN_UNITS_RU[m.group(1)], timer["span"])
        return f"Таймер поставлен на {span}, сработает в {timer['clock']}{about}."
    return f"Timer set for {timer['span']}, it goes off at {timer['clock']}{about}."
