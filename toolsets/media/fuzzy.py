"""Typo-tolerant title matching for the media catalog: "матрца" finds "Матрица".

A title matches when it shares enough letter pairs with the query (`MIN_BIGRAM_SHARE` of the
query's, or one for a query of five characters or fewer) and some run of its words (one word fewer
to one more than the query has) scores at least `MIN_RATIO` against the query with rapidfuzz's
`fuzz.ratio`: the normalized Indel similarity, 2 * (longest common subsequence) / (both lengths),
so a dropped or doubled letter costs one of the sum and a swapped pair two.

- The letter pairs pick the titles worth scoring: an inverted index (letter pair -> titles)
  counts the shared pairs in C. Scoring every window of the catalog in rapidfuzz without it
  is slower: a few times over at the median on the shipped catalog, and the gap grows with the
  titles (docs/performance.md, "The typo matcher").
- Each title's windows for a query length are computed once and kept, duplicates removed, and
  scored in one `rapidfuzz.process.extractOne` call per title, whose cutoff skips the hopeless
  ones by their lengths before any comparison.

Why it matters: the search runs on the toolset executor's event loop (`ready_now()`), so its
cost is every session's latency there, and it grows with the catalog (a user's may hold
thousands of titles). `python -m tools.fuzzy_compare` plays this matcher against the difflib one
it replaced.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Generic, TypeVar

from rapidfuzz import fuzz, process

MIN_RATIO = 0.75
MIN_QUERY_CHARS = 4
MIN_BIGRAM_SHARE = 0.5

T = TypeVar("T")


def bigrams(text: str) -> set[str]:
    """Letter pairs within words: the pre-filter's unit."""
    return {text[i:i + 2] for i in range(len(text) - 1) if " " not in text[i:i + 2]}


class FuzzyIndex(Generic[T]):
    """Items with their normalized names; `match(core)` yields those close to a normalized query."""

    def __init__(self, entries: Sequence[tuple[T, Sequence[str]]]):
        self._items = [item for item, _ in entries]
        self._names = [tuple(names) for _, names in entries]
        postings: dict[str, list[int]] = {}
        for position, names in enumerate(self._names):
            for gram in {g for name in names for g in bigrams(name)}:
                postings.setdefault(gram, []).append(position)
        self._postings = postings
        self._longest = [max((len(name.split()) for name in names), default=0) for names in self._names]
        self._windows: dict[tuple[int, int], tuple[str, ...]] = {}

    def match(self, core: str) -> list[tuple[T, float]]:
        """(item, best ratio) for every item with a window at `MIN_RATIO` or above, in index order."""
        if len(core.replace(" ", "")) < MIN_QUERY_CHARS:
            return []
        n = len(core.split())
        found = []
        for position in self._candidates(core):
            best = process.extractOne(core, self._windows_of(position, n), scorer=fuzz.ratio,
                                      score_cutoff=MIN_RATIO * 100)
            if best is not None:
                found.append((self._items[position], best[1] / 100))
        return found

    def _candidates(self, core: str) -> list[int] | range:
        """The titles sharing enough letter pairs with the query, in index order."""
        query_grams = bigrams(core)
        # A typo in a short word spoils most of its pairs ("шрэк"/"шрек" share one), so ask less there.
        needed = 1 if len(core) <= 5 else len(query_grams) * MIN_BIGRAM_SHARE
        if needed <= 0:
            return range(len(self._items))
        shared = Counter()
        for gram in query_grams:
            shared.update(self._postings.get(gram, ()))
        return sorted(position for position, count in shared.items() if count >= needed)

    def _windows_of(self, position: int, n: int) -> tuple[str, ...]:
        # Beyond one word more than the title's longest name every window size is cut to the whole
        # name, so longer queries share one entry: the cache is bounded by titles x name lengths.
        n = min(n, self._longest[position] + 1)
        key = (position, n)
        windows = self._windows.get(key)
        if windows is None:
            windows = self._windows[key] = tuple(dict.fromkeys(
                w for name in self._names[position] for w in _windows(name.split(), n)))
        return windows


def _windows(name_words: list[str], n: int):
    """Runs of n-1..n+1 consecutive title words (the query may be a part of a longer title)."""
    for size in {max(1, n - 1), n, n + 1}:
        size = min(size, len(name_words))
        for start in range(0, len(name_words) - size + 1):
            yield " ".join(name_words[start:start + size])
