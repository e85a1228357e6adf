"""The fixed texts the runtime itself shows the user (a turn that ran out of steps, the model
unavailable, the header of what was kept while the glasses were off), in the session's language.

They are data, one file per language (core/texts/en.toml, ru.toml), not literals in the code:
a translator edits a file, and a test checks every language has every key. The session's
language is the language of the user's last words (core.prompt.reply_language); English when
nothing tells it.
"""
from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

LANGUAGES = ("en", "ru")
_DIR = Path(__file__).with_name("texts")


@lru_cache(maxsize=None)
def table(language: str) -> dict[str, str]:
    """One language's texts, read once."""
    return tomllib.loads((_DIR / f"{language}.toml").read_text(encoding="utf-8"))


def code_of(language_name: str) -> str:
    """"ru" for "Russian" (core.prompt.reply_language's answer), else "en"."""
    return "ru" if language_name in ("Russian", "ru") else "en"


def text(key: str, language: str = "en", **fields: object) -> str:
    """The text `key` in `language` ("ru", "en"; another code: English), its {fields} filled.
    An unknown key is a KeyError: a programming mistake, found by the test of every text."""
    return table(language if language in LANGUAGES else "en")[key].format(**fields)


def by_language(key: str) -> dict[str, str]:
    """`key` in every language, unfilled, by language code (a tool spec's progress line)."""
    return {language: table(language)[key] for language in LANGUAGES}


def variants(key: str) -> tuple[str, ...]:
    """`key` in every language, unfilled (evals recognise a runtime text whatever its language)."""
    return tuple(table(language)[key] for language in LANGUAGES)
