"""A place as the user names it ("в Нью-Йорке", "in tokyo") to its IANA time zone.

A world clock MCP server may want a zone name, not a city: the official `mcp-server-time` takes
only exact IANA keys ("America/New_York"). A small model asked "который час в Нью-Йорке?" then
passes "Нью-Йорк", gets an error and falls back to the user's own clock. The session's reflex
(core.reflex) names the zone itself when it knows the place: the common cities and a few
countries with one zone, in Russian (any grammatical case) and English, then any city the
tz database itself names ("Buenos Aires" -> America/Argentina/Buenos_Aires). The names are data
(core/words/<language>/places.toml). Pure, no I/O beyond those files and the tz database's key
list, read once.
"""
from __future__ import annotations

import difflib
import functools
import re
import zoneinfo

from core import lexicon
from core.intent import same_word
from core.timers import TimerError, parse_when
from core.translit import transliterate


def _zones() -> dict[str, tuple[str, ...]]:
    """Each zone's names (core/words/<language>/places.toml), English first: the name a tool gets
    when the said's script has none. Names of one script never match a word of the other, so
    which language comes first changes no reading."""
    zones: dict[str, list[str]] = {}
    for language in sorted(lexicon.LANGUAGES, key=lambda language: language != "en"):
        for name, zone in lexicon.topic(language, "places").get("zones", {}).items():
            zones.setdefault(zone, []).append(name)
    return {zone: tuple(names) for zone, names in zones.items()}


_ZONES = _zones()


_CYRILLIC = re.compile(r"[а-яё]")


def _norm(text: str) -> str:
    return " ".join(lexicon.fold(text).replace("_", " ").strip(" ?!.,").split())


def _names(said: str, name: str) -> bool:
    """Whether the words said are the name, a Russian word in any case ("дубае" is "дубай"); an
    English one as written ("miles" is no "milan")."""
    words, parts = said.split(), name.split()
    return len(words) == len(parts) and all((same_word(w, n) or _misspelt(w, n)) if re.search(r"[а-я]", n) else w == n
                                            for w, n in zip(words, parts))


MISSPELT_MIN_LETTERS = 6  # a shorter Russian name has too many near words to be told by one letter
MISSPELT_RATIO = 0.85


def _misspelt(word: str, name: str) -> bool:
    """A long Russian name said with a letter lost or changed, in any case ("анжелесе": "анджелес")."""
    return len(name) >= MISSPELT_MIN_LETTERS and difflib.SequenceMatcher(None, word, name).ratio() >= MISSPELT_RATIO


@functools.lru_cache(maxsize=1)
def _tz_cities() -> dict[str, str]:
    """Every zone's city as the tz database names it ("buenos aires" -> its key)."""
    return {_norm(key.rsplit("/", 1)[-1]): key for key in zoneinfo.available_timezones() if "/" in key}


@functools.lru_cache(maxsize=4096)  # the same words are asked of several readers each turn; the names are fixed
def place_name(place: str) -> str | None:
    """The place as a dictionary names it, in the script it was said in ("дубае" -> "дубай",
    "нью-йорке" -> "нью-йорк"), for a tool that takes a city; None for a place not listed."""
    said = _norm(place)
    for names in _ZONES.values():
        for name in names:
            if _names(said, name):
                return name
    short = _short_zone(said)  # "LA": "los angeles"
    if short is not None and short in _ZONES:
        cyrillic = bool(re.search(r"[а-я]", said))
        return next((name for name in _ZONES[short] if bool(re.search(r"[а-я]", name)) == cyrillic), _ZONES[short][0])
    clipped = _clipped(said)
    return clipped[1] if clipped is not None else None


# what people call a city in short ("what's the time in LA?"): exact words only, no near match
_SHORT_NAMES = lexicon.table("places", "short_names")
# "the city of London": removed in turn, as the English ones were first
_CITY_PREFIXES = lexicon.words_of("en", "places", "city_prefixes") + lexicon.words_of("ru", "places", "city_prefixes")


def initials(place: str) -> bool:
    """Whether a place is said by its initials ("LA", "NYC", "l.a."): written back in capitals."""
    said = _norm(place)
    return _short_zone(said) is not None and len(said.replace(".", "").replace(" ", "")) <= 3


def _short_zone(said: str) -> str | None:
    return _SHORT_NAMES.get(" ".join(said.replace(".", " ").split()))  # "L.A." is "l a"


# the letters a clipped name keeps at least ("в новосибе"): a shorter stem begins too many words
CLIPPED_MIN_LETTERS = 6
# a case ending a clipped name takes ("новосиб-е", "новосиб-а"): up to two letters
_CASE_ENDING_MAX = 2


def _clipped(said: str) -> tuple[str, str] | None:
    """(zone, name) of a long one-word name said clipped, as people say it ("в новосибе" ->
    "новосибирск"): the word, or it less a case ending, begins exactly one zone's one-word name
    that is at least three letters longer; None when no zone or several do."""
    if " " in said or any(c.isdigit() for c in said):
        return None
    stems = {said[:len(said) - cut] for cut in range(_CASE_ENDING_MAX + 1) if len(said) - cut >= CLIPPED_MIN_LETTERS}
    found = {zone: name for zone, names in _ZONES.items() for name in names
             if " " not in name and any(name.startswith(stem) and len(name) >= len(stem) + 3 for stem in stems)}
    return next(iter(found.items())) if len(found) == 1 else None


def known_names() -> tuple[str, ...]:
    """Every place name this dictionary knows, in both languages (the clock's argument choices)."""
    return tuple(name for names in _ZONES.values() for name in names)


@functools.lru_cache(maxsize=4096)  # a miss scans every zone's names (core.places._clipped)
def zone_of(place: str) -> str | None:
    """The IANA zone of a place as said ("нью-йорке", "the city of London", "LA"), or None."""
    said = _norm(place)
    short = _short_zone(said)
    if short is not None:
        return short
    for prefix in _CITY_PREFIXES:
        said = said.removeprefix(prefix)
    if not said:
        return None
    for zone, names in _ZONES.items():
        if any(_names(said, name) for name in names):
            return zone
    exact = _tz_cities().get(said) or (_tz_cities().get(transliterate(said)) if _CYRILLIC.search(said) else None)
    clipped = _clipped(said) if exact is None else None  # (a city the tz database names, said in Cyrillic: "найроби")
    return exact if clipped is None else clipped[0]


# a clock time said by another place's clock: "at 8 am their time", "в пять по-ихнему"
_ELSEWHERE_CLOCK = re.compile(r"(?<!\w)(?:" + lexicon.alternation("places", "elsewhere_clock_patterns") + r")(?!\w)")


def clock_elsewhere(said: str) -> re.Match[str] | None:
    """Where the words say a clock time is another place's ("remind me at 8 am their time", "когда у
    них будет восемь утра"), or None: the time is the user's own."""
    return _ELSEWHERE_CLOCK.search(lexicon.fold(said))


def moment_there(clock: str, zone: str, now: float) -> float | None:
    """The next moment `zone`'s clock reads `clock` ("08:00", "monday 09:00"), as epoch seconds; None for no clock."""
    try:
        return parse_when(clock, now, zoneinfo.ZoneInfo(zone)) if re.fullmatch(r"(?:[a-z]+\s+)?\d{1,2}:\d{2}", clock) else None
    except (TimerError, zoneinfo.ZoneInfoNotFoundError):
        return None
