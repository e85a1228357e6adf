"""A small real MCP server for the eval and the tests: a world clock over stdio.

    python tests/mcp_worldclock_server.py

Tools: `time_now(city)` (read-only: the local time in a city, in words a small model can copy)
and `set_home(city)` (changes the server's home city: a side effect, not read-only). The clock is
WORLDCLOCK_NOW (Unix seconds) when set, so an eval is the same on every run; else the real time.
"""
import datetime as dt
import os
import time
import zoneinfo

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("worldclock", instructions="World clock: the time now in a city of the world.")
CITIES = {
    "moscow": "Europe/Moscow", "москва": "Europe/Moscow", "new york": "America/New_York", "нью-йорк": "America/New_York",
    "london": "Europe/London", "лондон": "Europe/London", "tokyo": "Asia/Tokyo", "токио": "Asia/Tokyo",
    "paris": "Europe/Paris", "париж": "Europe/Paris", "berlin": "Europe/Berlin", "берлин": "Europe/Berlin",
    "los angeles": "America/Los_Angeles", "лос-анджелес": "America/Los_Angeles", "sydney": "Australia/Sydney",
    "сидней": "Australia/Sydney", "beijing": "Asia/Shanghai", "пекин": "Asia/Shanghai", "dubai": "Asia/Dubai",
    "дубай": "Asia/Dubai", "novosibirsk": "Asia/Novosibirsk", "новосибирск": "Asia/Novosibirsk",
    "vladivostok": "Asia/Vladivostok", "владивосток": "Asia/Vladivostok",
    "yekaterinburg": "Asia/Yekaterinburg", "ekaterinburg": "Asia/Yekaterinburg", "екатеринбург": "Asia/Yekaterinburg",
    "kaliningrad": "Europe/Kaliningrad", "калининград": "Europe/Kaliningrad", "istanbul": "Europe/Istanbul",
    "стамбул": "Europe/Istanbul", "rome": "Europe/Rome", "chicago": "America/Chicago",
    "чикаго": "America/Chicago", "seoul": "Asia/Seoul", "сеул": "Asia/Seoul",
    "la": "America/Los_Angeles", "l.a.": "America/Los_Angeles", "nyc": "America/New_York",
}
HOME = ["Europe/Moscow"]


def _zone(city: str) -> str | None:
    """The zone of a city named whole ("LA"), inside longer words ("New York City", "в Лос-Анджелесе"),
    or by a part of its name; a short name inside another word is none ("LA" is not "VLAdivostok")."""
    key = " ".join(city.casefold().replace("ё", "е").split())
    if key in CITIES:
        return CITIES[key]
    words = f" {' '.join(key.replace(',', ' ').split())} "
    for name, zone in CITIES.items():
        if f" {name} " in words or len(name) >= 4 and name in key or len(key) >= 4 and key in name:
            return zone
    return None


def _now() -> float:
    fixed = os.environ.get("WORLDCLOCK_NOW", "")
    return float(fixed) if fixed else time.time()


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def time_now(city: str) -> str:
    """The time now in a city (New York, London, Tokyo, ...)."""
    zone = _zone(city)
    if zone is None:
        return f"unknown city {city!r}; known: " + ", ".join(sorted({c.title() for c in CITIES if c.isascii()}))
    now = dt.datetime.fromtimestamp(_now(), zoneinfo.ZoneInfo(zone))
    return f"{city.strip()}: {now:%A}, {now.day} {now:%B}, {now:%H:%M} ({zone})"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False))
def set_home(city: str) -> str:
    """Make a city the home city of the clock."""
    zone = _zone(city)
    if zone is None:
        return f"unknown city {city!r}"
    HOME[0] = zone
    return f"home city set: {city.strip()} ({zone})"


if __name__ == "__main__":
    server.run()
