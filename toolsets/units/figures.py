"""A conversion stated in the model's answer, checked against arithmetic (issue 50: the model's own
made-up figures - "80 кило — это примерно 35.27 фунтов", "полтора фунта … 0.4 кг" - reached the
user with no result behind them). Two amounts joined as one ("80 kg is about 176 lb", "55 F =
12.8 C", "80 кило — это 176 фунтов") of the same kind and other units: the second is put right
when the first, converted, is not it to the precision it is written in (a few per cent for a
rounded "about"). Amounts set side by side ("the limit is 50 lb and mine is 21 kg") are no
conversion and are left as said. The unit words are this folder's sentence lists (intents.yaml).
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml

_INTENTS = Path(__file__).with_name("intents.yaml")
REL_TOLERANCE = 0.05  # a rounded figure ("about 0.7 kg" for 0.68) is not wrong
_AMOUNT = r"(?P<{n}>-?\d+(?:[.,]\d+)?)"


@functools.lru_cache(maxsize=1)
def _declared() -> dict:
    return yaml.safe_load(_INTENTS.read_text(encoding="utf-8"))["sentences"]


def _said_values(list_name: str) -> dict[str, str]:
    """Every way this folder's sentences say a value of list `list_name` -> the value."""
    from hassil.parse_expression import parse_sentence
    from hassil.sample import sample_expression

    found: dict[str, str] = {}
    for language in _declared().values():
        for value in language.get("lists", {}).get(list_name, {}).get("values", []):
            for said in sample_expression(parse_sentence(value["in"]).expression):
                if said.strip():
                    found[" ".join(said.casefold().split())] = str(value["out"])
    return found


@functools.lru_cache(maxsize=1)
def _unit_words() -> dict[str, str]:
    """Every way the sentences name a unit ("градусов цельсия", "kilos", "°F") -> its code."""
    return _said_values("unit")


@functools.lru_cache(maxsize=1)
def _amount_words() -> dict[str, float]:
    """An amount said in words before a unit ("полтора", "half a", "one and a half") -> its value."""
    return {said: float(value) for name in ("amount_half", "amount_part") for said, value in _said_values(name).items()}


@functools.lru_cache(maxsize=1)
def _pair() -> re.Pattern[str]:
    """Two amounts with their units, joined by words that say the one is the other."""
    units = "|".join(re.escape(word).replace(r"\ ", r"\s+") for word in sorted(_unit_words(), key=len, reverse=True))
    joined = (r"\s*(?:=|≈|~|\(|—|–|-|:|,)?\s*(?:(?:is|are|equals|makes|that's|это|будет|равно|составляет|примерно|около|"
              r"about|roughly|around|approximately|almost|nearly|just\s+over|just\s+under|or|или|почти|чуть\s+больше|"
              r"чуть\s+меньше|где-то)\s*[,:]?\s*){0,3}")
    said = "|".join(re.escape(word).replace(r"\ ", r"\s+") for word in sorted(_amount_words(), key=len, reverse=True))
    return re.compile(rf"(?<![\w.,])(?:{_AMOUNT.format(n='a')}|(?P<a_said>{said}))\s*(?P<unit_a>{units})(?!\w){joined}"
                      rf"{_AMOUNT.format(n='b')}\s*(?P<unit_b>{units})(?!\w)", re.IGNORECASE)


def figures_put_right(text: str, convert) -> str:
    """`text` with the second amount of each stated conversion put right by `convert(value,
    unit_from, unit_to)` (ValueError when they do not convert: left as said)."""
    words = _unit_words()

    def checked(match: re.Match[str]) -> str:
        unit_a, unit_b = (words[" ".join(match[k].casefold().split())] for k in ("unit_a", "unit_b"))
        if unit_a == unit_b:
            return match.group(0)
        said = float(match["b"].replace(",", "."))
        value = float(match["a"].replace(",", ".")) if match["a"] else _amount_words()[" ".join(match["a_said"].casefold().split())]
        try:
            right = convert(value, unit_a, unit_b)
        except ValueError:
            return match.group(0)
        decimals = len(match["b"].replace(",", ".").partition(".")[2])
        if abs(right - said) <= max(REL_TOLERANCE * abs(right), 0.5 * 10 ** -decimals):
            return match.group(0)
        shown = f"{round(right, max(decimals, 1)):g}"
        shown = shown.replace(".", ",") if "," in match["b"] else shown
        return match.group(0)[:match.start("b") - match.start()] + shown + match.group(0)[match.end("b") - match.start():]
    return _pair().sub(checked, text)
