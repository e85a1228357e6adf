"""A Russian text spelled in Latin letters ('брат 2' -> 'brat 2'): how a Latin keyboard, or a
speech recogniser set to English, writes a Russian title. Used by the catalog's index and by the
reflexes that compare what was asked with the titles a search showed."""
from __future__ import annotations

_TRANSLIT = str.maketrans({
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z", "и": "i",
    "й": "i", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r", "с": "s", "т": "t",
    "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "shch", "ъ": "", "ы": "y",
    "ь": "", "э": "e", "ю": "yu", "я": "ya",
})


def transliterate(lowered: str) -> str:
    """Latin spelling of a lower-case Russian text; other letters are kept."""
    return lowered.translate(_TRANSLIT)
