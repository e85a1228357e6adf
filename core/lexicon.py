"""The words the runtime itself reads in what users say, as data: one folder per language,
one file per topic (core/words/<language>/<topic>.toml), as Home Assistant keeps a language's
sentences per domain. A file holds named word lists ("set_verbs", "stop_phrases"); the code
that reads them (the guards in core.intent, the router in core.urgency, the clock words in
core.timewords) keeps the grammar and takes the words from here, so a translator adds a
language by adding a folder and its code to LANGUAGES (the texts the runtime shows are
core/texts, core.user_texts), and a test checks that every language has every list.

These are the runtime's: what asks for an action of a kind, what stops a turn, how a clock and a
number are said. A toolset's own words live in its folder (intents.yaml; words/<language>/<topic>.toml
read through the same functions with `root=`: toolsets/timers/words).
"""
from __future__ import annotations

import re
import tomllib
from collections.abc import Container, Iterable
from functools import lru_cache
from pathlib import Path

LANGUAGES = ("ru", "en")  # the order lists are joined in (every reader matches all languages at once)
_DIR = Path(__file__).with_name("words")


class LexiconError(LookupError):
    """A list the code asks for that a language's file lacks, or a word file that cannot be read:
    a mistake in the files or the code, named with the file, found at import."""



# where a sentence ends in written speech: after its stop and a space, not after an abbreviation's
# stops ("remind me at seven a.m. to call the yard", "what time is it in L.A.? and Chicago?")
SENTENCE_END = r"(?<=[.!?…])(?<!\b[^\W\d_]\.[^\W\d_]\.)\s+"

def _folder(root: Path | None) -> Path:
    return _DIR if root is None else root


def _shown(root: Path | None) -> str:
    return "core/words" if root is None else str(root)


@lru_cache(maxsize=None)
def topic(language: str, name: str, root: Path | None = None) -> dict[str, object]:
    """One language's file for a topic (under `root`, a toolset's words folder; None: the
    runtime's), read once; {} when that language has no such file. A file that is not TOML is a
    LexiconError naming it."""
    path = _folder(root) / language / f"{name}.toml"
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LexiconError(f"{path}: cannot read it: {exc}") from None


def _every_language_has(name: str, key: str, root: Path | None = None) -> None:
    """A list the code reads must be in every language's file: one missing would leave that
    language's speakers unheard without a word ("стоп" no longer a stop)."""
    lacking = [language for language in LANGUAGES if key not in topic(language, name, root)]
    if len(lacking) == len(LANGUAGES):
        raise LexiconError(f"no language has the list {key!r} in {_shown(root)}/*/{name}.toml")
    if lacking:
        raise LexiconError(f"{_shown(root)}/{lacking[0]}/{name}.toml lacks {key!r}, which another language has")


def topics(language: str, root: Path | None = None) -> tuple[str, ...]:
    """The topics a language has a file for."""
    return tuple(sorted(p.stem for p in (_folder(root) / language).glob("*.toml")))


def words_of(language: str, name: str, key: str, root: Path | None = None) -> tuple[str, ...]:
    """One language's list `key` of topic `name` (() when that language lacks it)."""
    value = topic(language, name, root).get(key, ())
    return tuple(value) if isinstance(value, list) else ()


@lru_cache(maxsize=None)
def words(name: str, key: str, root: Path | None = None) -> tuple[str, ...]:
    """The list `key` of topic `name` in every language, Russian first, duplicates once: what the
    runtime reads whatever language the user speaks (people mix them mid-sentence)."""
    _every_language_has(name, key, root)
    joined = [w for language in LANGUAGES for w in words_of(language, name, key, root)]
    return tuple(dict.fromkeys(joined))


def alternation(name: str, key: str, root: Path | None = None) -> str:
    """The list `key` of topic `name` as one regex alternation, for the code that sets it in its
    grammar: lists named `*_patterns` are regular expressions, kept as written; other lists are
    words, matched as written. A list no language fills matches nothing (an empty alternation would
    match everywhere)."""
    found = words(name, key, root)
    if not found:
        return "(?!)"
    return "|".join(found if key.endswith("_patterns") else map(re.escape, found))


def table(name: str, key: str, root: Path | None = None) -> dict[str, object]:
    """The mapping `key` of topic `name` (word -> value: "пять" -> 5) in every language, joined."""
    _every_language_has(name, key, root)
    joined: dict[str, object] = {}
    for language in LANGUAGES:
        value = topic(language, name, root).get(key, {})
        if isinstance(value, dict):
            joined.update(value)
    return joined


@lru_cache(maxsize=1)
def _folding() -> dict[int, str]:
    return {ord(letter): str(plain) for letter, plain in table("letters", "fold").items()}


def fold(text: str) -> str:
    """`text` as every reader compares words: case-folded, and each language's letters written at
    will read as one ("ё" as "е": core/words/<language>/letters.toml)."""
    return text.casefold().translate(_folding())


@lru_cache(maxsize=1)
def _spoken() -> tuple[re.Pattern[str], dict[str, str]]:
    forms = {str(said).casefold(): str(plain) for said, plain in table("spoken", "spoken_forms").items()}
    said = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
    return re.compile(r"(?<![\w'-])(?:" + said + r")(?![\w'-])", re.IGNORECASE), forms


def plainly_spoken(text: str) -> str:
    """`text` with the spoken forms of common words as written ("скока" -> "сколько", "gimme" ->
    "give me": core/words/<language>/spoken.toml), so a sentence or a reader that knows the
    written word knows the said one; a word addressing the assistant, said as a clause of its
    own ("голубчик, переведи …", "… for me, dear?"), left out."""
    pattern, forms = _spoken()
    plain = _without_particles(pattern.sub(lambda m: forms[m.group(0).casefold()], text))
    unaddressed = _addressed().sub("", plain)
    return unaddressed.lstrip(" ,") if unaddressed != plain else plain


@lru_cache(maxsize=1)
def _particles() -> re.Pattern[str]:
    own = "|".join(re.escape(str(word)) for word in sorted(words("spoken", "particle_own_words"), key=len, reverse=True))
    particle = alternation("spoken", "emphatic_particles")
    return re.compile(rf"(?<![\w-])(?!(?:{own or '(?!)'})-)(?P<word>[^\W\d_]+)-(?:{particle})(?![\w-])", re.IGNORECASE)


def _without_particles(text: str) -> str:
    """"а за чем ты ещё следишь-то?", "глянь-ка": a word's emphatic particle left off, as sentences
    write the word; a word the particle makes ("что-то", "кто-то") kept."""
    return _particles().sub(lambda m: m["word"], text) if "-" in text else text


@lru_cache(maxsize=1)
def _addressed() -> re.Pattern[str]:
    said = "|".join(re.escape(str(word)).replace(r"\ ", r"\s+") for word in sorted(words("spoken", "address_words"), key=len, reverse=True))
    return re.compile(r"(?:^|,)\s*(?:" + said + r")\s*(?=[,.!?]|$)", re.IGNORECASE)


@lru_cache(maxsize=1)
def _hundreds() -> tuple[re.Pattern[str], dict[str, int]]:
    values = {str(word).casefold(): int(n) for name in ("hundreds", "hundreds_oblique") for word, n in table("spoken", name).items()}
    values |= {str(word).casefold(): int(n) for key in ("tens", "teens", "units") for word, n in table("requests", key).items()}
    values |= {str(word).casefold(): int(n) for key in ("tens_oblique", "teens_oblique", "units_oblique")
               for word, n in table("spoken", key).items()}
    def any_of(key: str, name: str = "requests") -> str:  # a number's word in any case after a hundred ("до трёхсот семидесяти пяти")
        said = {**table(name, key), **table("spoken", f"{key}_oblique")}
        return "|".join(re.escape(str(word)) for word in sorted(said, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?P<h>{any_of('hundreds', 'spoken')})(?:\s+(?:and\s+)?(?:(?P<t>{any_of('tens')})"
                      rf"(?:[\s-](?P<u>{any_of('units')}))?|(?P<teen>{any_of('teens')})|(?P<lone>{any_of('units')})))?"
                      r"(?![\w-])", re.IGNORECASE), values


@lru_cache(maxsize=1)
def _paired_hundreds() -> tuple[re.Pattern[str] | None, dict[str, int]]:
    heads = {str(word).casefold(): int(n) for word, n in table("spoken", "paired_hundreds").items()}
    if not heads:
        return None, {}
    values = {str(word).casefold(): int(n) for key in ("tens", "teens", "units") for word, n in table("requests", key).items()}
    zeros = [str(word) for word, n in table("spoken", "digits").items() if int(n) == 0 and len(str(word)) > 1]
    def any_of(words: Iterable[str]) -> str:
        return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))
    units = [str(word) for word in table("requests", "units")]
    return re.compile(rf"(?<![\w-])(?P<h>{any_of(heads)})\s+(?:(?:{any_of(zeros)})\s+(?P<lone>{any_of(units)})|"
                      rf"(?P<t>{any_of(table('requests', 'tens'))})(?:[\s-](?P<u>{any_of(units)}))?|"
                      rf"(?P<teen>{any_of(table('requests', 'teens'))}))(?![\w-])(?:\s+(?P<next>[^\W\d_]+))?", re.IGNORECASE), \
        {**values, **{f"h:{word}": n for word, n in heads.items()}}


def paired_hundreds_in_figures(text: str, followers: Container[str] | None) -> str:
    """"one eighty celsius" -> "180 celsius", "two twenty-five pounds" -> "225 pounds" (the
    language's `paired_hundreds`, core/words/*/spoken.toml): only before a word of `followers`
    (folded: the units a sentence names), so "at one thirty" stays a time of day; every such
    pair with `followers` None (what a guard counts as said: "the limit's one thirty")."""
    pattern, values = _paired_hundreds()
    if pattern is None:
        return text
    def figure(match: re.Match[str]) -> str:
        if followers is not None and (match["next"] is None or fold(match["next"]) not in followers):
            return match.group(0)
        number = values[f"h:{match['h'].casefold()}"] + sum(values[match[g].casefold()] for g in ("t", "u", "teen", "lone") if match[g])
        return f"{number} {match['next'] or ''}".rstrip()
    return pattern.sub(figure, text)


@lru_cache(maxsize=1)
def _one_word_numbers() -> dict[str, str]:
    return {str(word).casefold(): str(n) for key in ("units", "teens", "tens") for word, n in table("requests", key).items()}


def numbers_in_figures(text: str) -> str:
    """`text` (its words split by spaces) with each number said in one word as figures ("брат два"
    -> "брат 2"): how a title's part or a count is written."""
    numbers = _one_word_numbers()
    return " ".join(numbers.get(word.casefold(), word) for word in text.split())


@lru_cache(maxsize=1)
def _digit_run() -> tuple[re.Pattern[str], dict[str, int]]:
    digits = {str(word).casefold(): int(n) for word, n in table("spoken", "digits").items()}
    word = "|".join(re.escape(w) for w in sorted(digits, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{word})(?:[\s,-]+(?:{word})){{2,}}(?![\w-])", re.IGNORECASE), digits


def digits_in_figures(text: str) -> str:
    """"the gate code is four seven one nine" -> "… 4719" (core/words/<language>/spoken.toml): three
    digits or more said one by one are a code or a number, written as figures in a message to send."""
    pattern, digits = _digit_run()
    return pattern.sub(lambda m: "".join(str(digits[w.casefold()]) for w in re.split(r"[\s,-]+", m.group(0))), text)


def hundreds_in_figures(text: str) -> str:
    """"сто двадцать" -> "120", "two hundred and fifty" -> "250" (core/words/<language>/spoken.toml):
    for the readers of numbers (a timer's length, a sentence's number slot); a message to send
    keeps the words as said."""
    pattern, values = _hundreds()
    def figure(match: re.Match[str]) -> str:
        return str(sum(values[match[group].casefold()] for group in ("h", "t", "u", "teen", "lone") if match[group]))
    return _decimals_in_figures(_thousands_in_figures(pattern.sub(figure, text)))


@lru_cache(maxsize=1)
def _thousands() -> tuple[re.Pattern[str], dict[str, int]]:
    values = {str(word).casefold(): int(n) for key in ("tens", "teens", "units") for word, n in table("requests", key).items()}
    def any_of(key: str) -> str:
        return "|".join(re.escape(str(word)) for word in sorted(table("requests", key), key=len, reverse=True))
    number = rf"\d+|(?:{any_of('tens')})(?:[\s-](?:{any_of('units')}))?|{any_of('teens')}|{any_of('units')}"
    following = "|".join(re.escape(str(word)) for word in sorted(values, key=len, reverse=True))
    # the hundreds after the thousands were written as figures first ("seventy eight thousand five
    # hundred" -> "78 thousand 500"): they are the number's rest; a number word left after them
    # (an ordinal: "две тысячи двадцать шестого года") is no count of thousands
    return re.compile(rf"(?<![\w.,-])(?:(?P<count>{number})\s+)?(?:{alternation('spoken', 'thousand_words')})(?!\w)"
                      rf"(?:\s+(?:and\s+)?(?P<rest>\d{{1,3}})(?![\w.,]?\d))?"
                      rf"(?!\s+(?:and\s+)?(?:\d|{following})(?!\w))", re.IGNORECASE), values


@lru_cache(maxsize=1)
def _thousand_words() -> tuple[str, ...]:
    return tuple(str(word).casefold() for word in words("spoken", "thousand_words"))


def _thousands_in_figures(text: str) -> str:
    """"тридцать восемь тысяч футов" -> "38000 футов", "eleven thousand km" -> "11000 km": a count of
    thousands with nothing after it; "две тысячи двадцать шестого года" (a year, read by its own reader) stays."""
    if not any(word in text.casefold() for word in _thousand_words()):  # a cheap test first: most words say none
        return text
    pattern, values = _thousands()
    def figure(match: re.Match[str]) -> str:
        count = match["count"] or "1"
        number = int(count) if count.isdigit() else sum(values[word.casefold()] for word in re.split(r"[\s-]+", count))
        return str(number * 1000 + int(match["rest"] or 0))
    return pattern.sub(figure, text)


@lru_cache(maxsize=1)
def _number_words() -> dict[str, int]:
    """Every word a whole number up to 999 is said with (its hundreds, tens, teens and units)."""
    values = {str(word).casefold(): int(n) for key in ("tens", "teens", "units") for word, n in table("requests", key).items()}
    return values | {str(word).casefold(): int(n) for word, n in table("spoken", "hundreds").items()}


def tenths_said_with_and(text: str, followers: Container[str], *, alone: bool = False) -> str:
    """"сто один и три по Фаренгейту" -> "101.3 по Фаренгейту", "тридцать шесть и шесть градусов" ->
    "36.6 градусов": a whole number, the language's `decimal_and_words` and one digit, said before a
    word of `followers` (folded: the units a sentence names) are tenths, as a temperature is said; "серии
    пять и шесть", "в семь и восемь" (no unit after them) stay two numbers. `alone`: or said last
    (an amount said alone after a conversion: "а девяносто семь и семь?")."""
    joins = {str(word).casefold() for word in words("spoken", "decimal_and_words")}
    tokens = text.split(" ")
    if not joins or not joins.intersection(word.casefold() for word in tokens):  # most words say none
        return text
    numbers, digits = _number_words(), {str(w).casefold(): int(n) for w, n in table("spoken", "digits").items()}
    at = len(tokens) - 1
    while (at := at - 1) > 0:  # from the end: a replacement leaves the words before it where they were
        part, after = tokens[at + 1].casefold(), re.sub(r"\W+$", "", tokens[at + 2] if at + 2 < len(tokens) else "")
        if tokens[at].casefold() not in joins or fold(after) not in followers and not (alone and not after):
            continue
        tenth = int(part) if part.isdigit() and len(part) == 1 else digits.get(part)
        start = at
        while start > 0 and (tokens[start - 1].isdigit() or tokens[start - 1].casefold() in numbers):
            start -= 1
        whole = tokens[start:at]
        if tenth is None or not whole or (len(whole) > 1 and any(word.isdigit() for word in whole)):
            continue
        said = [int(word) if word.isdigit() else numbers[word.casefold()] for word in whole]
        if any(len(str(bigger)) <= len(str(smaller)) for bigger, smaller in zip(said, said[1:])):
            continue  # "пять шесть": two numbers, not one said by its hundreds, tens and units
        tokens[start:at + 2] = [f"{sum(said)}.{tenth}"]
        at = start
    return " ".join(tokens)


@lru_cache(maxsize=1)
def _decimal_point() -> tuple[re.Pattern[str], dict[str, int]]:
    digits = {str(word).casefold(): int(n) for word, n in table("spoken", "digits").items()}
    digit = "|".join(re.escape(w) for w in sorted(digits, key=len, reverse=True))
    return re.compile(rf"(?<![\w.,-])(?P<whole>\d+|{digit})\s+(?:{alternation('spoken', 'decimal_point_words')})\s+"
                      rf"(?P<part>\d+(?![\w.,]\d)|(?:(?:{digit})(?:[\s-]+(?=(?:{digit})(?![\w-])))?)+)(?![\w-])", re.IGNORECASE), digits


def _decimals_in_figures(text: str) -> str:
    """"101 point three" -> "101.3" (a temperature, a weight): the digits after the point one by one."""
    pattern, digits = _decimal_point()
    def figure(match: re.Match[str]) -> str:
        part = match["part"] if match["part"].isdigit() else "".join(
            str(digits[word.casefold()]) for word in re.split(r"[\s-]+", match["part"]))
        whole = match["whole"] if match["whole"].isdigit() else str(digits[match["whole"].casefold()])
        return f"{whole}.{part}"
    return pattern.sub(figure, text)
