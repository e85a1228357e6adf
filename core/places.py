"""A place as the user names it ("в Нью-Йорке", "in tokyo") to its IANA time zone.

A world clock MCP server may want a zone name, not a city: the official `mcp-server-time` takes
only exact IANA keys ("America/New_York"). A small model asked "который час в Нью-Йорке?" then
passes "Нью-Йорк", gets an error and falls back to the user's own clock. The session's reflex
(core.reflex) names the zone itself when it knows the place: the common cities and a few
countries with one zone, in Russian (any grammatical case) and English, then any city the
tz database itself names ("Buenos Aires" -> America/Argentina/Buenos_Aires). Pure, no I/O
beyond the tz database's key list, read once.
"""
from __future__ import annotations

import functools
import re
import zoneinfo

from core.intent import same_word

_ZONES: dict[str, tuple[str, ...]] = {
    "Europe/Moscow": ("moscow", "москва", "мск", "saint petersburg", "st petersburg", "petersburg", "петербург",
                      "санкт-петербург", "питер"),
    "Europe/London": ("london", "лондон", "england", "англия", "britain", "великобритания", "uk"),
    "Europe/Paris": ("paris", "париж", "france", "франция"),
    "Europe/Berlin": ("berlin", "берлин", "germany", "германия", "munich", "мюнхен"),
    "Europe/Rome": ("rome", "рим", "italy", "италия", "milan", "милан"),
    "Europe/Madrid": ("madrid", "мадрид", "spain", "испания", "barcelona", "барселона"),
    "Europe/Lisbon": ("lisbon", "лиссабон", "portugal", "португалия"),
    "Europe/Amsterdam": ("amsterdam", "амстердам"),
    "Europe/Vienna": ("vienna", "вена", "austria", "австрия"),
    "Europe/Prague": ("prague", "прага"),
    "Europe/Warsaw": ("warsaw", "варшава", "poland", "польша"),
    "Europe/Kyiv": ("kyiv", "kiev", "киев"),
    "Europe/Minsk": ("minsk", "минск"),
    "Europe/Istanbul": ("istanbul", "стамбул", "turkey", "турция", "ankara", "анкара"),
    "Europe/Helsinki": ("helsinki", "хельсинки", "finland", "финляндия"),
    "Europe/Stockholm": ("stockholm", "стокгольм"),
    "Europe/Oslo": ("oslo", "осло"),
    "Europe/Athens": ("athens", "афины", "greece", "греция"),
    "Europe/Kaliningrad": ("kaliningrad", "калининград"),
    "Europe/Samara": ("samara", "самара"),
    "Asia/Yekaterinburg": ("yekaterinburg", "екатеринбург"),
    "Asia/Omsk": ("omsk", "омск"),
    "Asia/Novosibirsk": ("novosibirsk", "новосибирск"),
    "Asia/Krasnoyarsk": ("krasnoyarsk", "красноярск"),
    "Asia/Irkutsk": ("irkutsk", "иркутск"),
    "Asia/Yakutsk": ("yakutsk", "якутск"),
    "Asia/Vladivostok": ("vladivostok", "владивосток", "khabarovsk", "хабаровск"),
    "Asia/Kamchatka": ("kamchatka", "камчатка", "петропавловск-камчатский"),
    "Asia/Dubai": ("dubai", "дубай", "абу-даби", "abu dhabi", "emirates", "эмираты"),
    "Asia/Jerusalem": ("tel aviv", "тель-авив", "jerusalem", "иерусалим", "israel", "израиль"),
    "Africa/Cairo": ("cairo", "каир", "egypt", "египет"),
    "Asia/Kolkata": ("delhi", "new delhi", "дели", "нью-дели", "mumbai", "мумбаи", "india", "индия"),
    "Asia/Bangkok": ("bangkok", "бангкок", "thailand", "таиланд", "пхукет", "phuket"),
    "Asia/Singapore": ("singapore", "сингапур"),
    "Asia/Hong_Kong": ("hong kong", "гонконг"),
    "Asia/Shanghai": ("beijing", "пекин", "shanghai", "шанхай", "china", "китай"),
    "Asia/Tokyo": ("tokyo", "токио", "japan", "япония", "osaka", "осака"),
    "Asia/Seoul": ("seoul", "сеул", "korea", "корея"),
    "Asia/Almaty": ("almaty", "алматы", "алма-ата"),
    "Asia/Tashkent": ("tashkent", "ташкент", "uzbekistan", "узбекистан"),
    "Asia/Tbilisi": ("tbilisi", "тбилиси", "georgia", "грузия"),
    "Asia/Yerevan": ("yerevan", "ереван", "armenia", "армения"),
    "Asia/Baku": ("baku", "баку"),
    "Australia/Sydney": ("sydney", "сидней"),
    "Australia/Melbourne": ("melbourne", "мельбурн"),
    "America/New_York": ("new york", "нью-йорк", "нью йорк", "washington", "вашингтон", "boston", "бостон",
                         "miami", "майами", "toronto", "торонто"),
    "America/Chicago": ("chicago", "чикаго"),
    "America/Denver": ("denver", "денвер"),
    "America/Los_Angeles": ("los angeles", "лос-анджелес", "лос анджелес", "san francisco", "сан-франциско",
                            "seattle", "сиэтл", "vancouver", "ванкувер", "las vegas", "лас-вегас"),
    "America/Mexico_City": ("mexico city", "мехико"),
    "America/Sao_Paulo": ("sao paulo", "сан-паулу", "rio de janeiro", "рио-де-жанейро", "brazil", "бразилия"),
    "America/Argentina/Buenos_Aires": ("buenos aires", "буэнос-айрес", "argentina", "аргентина"),
    "Pacific/Honolulu": ("honolulu", "гонолулу", "hawaii", "гавайи", "гавайях"),
}


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("ё", "е").replace("_", " ").strip(" ?!.,").split())


def _names(said: str, name: str) -> bool:
    words, parts = said.split(), name.split()
    return len(words) == len(parts) and all(same_word(w, n) for w, n in zip(words, parts))


@functools.lru_cache(maxsize=1)
def _tz_cities() -> dict[str, str]:
    """Every zone's city as the tz database names it ("buenos aires" -> its key)."""
    return {_norm(key.rsplit("/", 1)[-1]): key for key in zoneinfo.available_timezones() if "/" in key}


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
    return None


# what people call a city in short ("what's the time in LA?"): exact words only, no near match
_SHORT_NAMES = {"la": "America/Los_Angeles", "l a": "America/Los_Angeles", "sf": "America/Los_Angeles",
                "vegas": "America/Los_Angeles", "nyc": "America/New_York", "ny": "America/New_York",
                "dc": "America/New_York", "мск": "Europe/Moscow", "спб": "Europe/Moscow", "питер": "Europe/Moscow",
                "питере": "Europe/Moscow", "нью йорк сити": "America/New_York"}


def _short_zone(said: str) -> str | None:
    return _SHORT_NAMES.get(" ".join(said.replace(".", " ").split()))  # "L.A." is "l a"


def known_names() -> tuple[str, ...]:
    """Every place name this dictionary knows, in both languages (the clock's argument choices)."""
    return tuple(name for names in _ZONES.values() for name in names)


def zone_of(place: str) -> str | None:
    """The IANA zone of a place as said ("нью-йорке", "the city of London", "LA"), or None."""
    said = _norm(place)
    short = _short_zone(said)
    if short is not None:
        return short
    for prefix in ("the city of ", "city of ", "город ", "городе "):
        said = said.removeprefix(prefix)
    if not said:
        return None
    for zone, names in _ZONES.items():
        if any(_names(said, name) for name in names):
            return zone
    return _tz_cities().get(said)
