"""A text spelled in Latin letters ('брат 2' -> 'brat 2'): how a Latin keyboard, or a speech
recogniser set to English, writes a Russian title. Used by the catalog's index and by the
reflexes that compare what was asked with the titles a search showed. The letters are each
language's (core/words/<language>/letters.toml, `latin`)."""
from __future__ import annotations

from functools import lru_cache

from core import lexicon


@lru_cache(maxsize=1)
def _latin() -> dict[int, str]:
    return str.maketrans({letter: str(latin) for letter, latin in lexicon.table("letters", "latin").items()})


def transliterate(lowered: str) -> str:
    """Latin spelling of a lower-case text; letters no language spells otherwise are kept."""
    return lowered.translate(_latin())
