"""Typo-tolerant title matching for the media catalog: "матрца" finds "Матрица".

A title matches when some run of its words (one word fewer to one more than the query has)
scores at least `MIN_RATIO` against the query with rapidfuzz's `fuzz.ratio`: the normalized
Indel similarity, 2 * (longest common subsequence) / (both lengths), so a dropped, doubled or
swapped letter costs one or two of the sum.

The work per query is one `rapidfuzz.process.extract` over the catalog's distinct windows, in C++:

- the windows for a query's word count are built once and kept, each distinct text once with
  the titles it comes from (one word such as "the" or "2" is shared by many titles);
- they are kept sorted by length, and only those whose length allows `MIN_RATIO` at all
  (`2 * min / sum`, difflib's `real_quick_ratio` bound) are handed to rapidfuzz.

Why it matters: the search runs on the toolset executor's event loop (`ready_now()`), so its
cost is every session's latency there, and it grows with the catalog (a user's may hold
thousands of titles). `python -m tools.fuzzy_compare` plays this matcher against the difflib
one it replaced (docs/performance.md).
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Generic, NamedTuple, TypeVar

from rapidfuzz import fuzz, process

MIN_RATIO = 0.75
MIN_QUERY_CHARS = 4

T = TypeVar("T")


class _Windows(NamedTuple):
    """The distinct windows for one query word count, shortest first."""

    texts: list[str]
    owners: list[tuple[int, ...]]  # positions of the titles each text comes from
    lengths: list[int]


class FuzzyIndex(Generic[T]):
    """Items with their normalized names; `match(core)` yields those close to a normalized query."""

    def __init__(self, entries: Sequence[tuple[T, Sequence[str]]]):
        self._items = [item for item, _ in entries]
        self._names = [tuple(name.split() for name in names) for _, names in entries]
        # From one word more than the longest name on, every window is a whole name: one entry.
        self._widest = max((len(words) for names in self._names for words in names), default=0) + 1
        self._windows: dict[int, _Windows] = {}

    def match(self, core: str) -> list[tuple[T, float]]:
        """(item, best ratio) for every item with a window at `MIN_RATIO` or above, in index order."""
        if len(core.replace(" ", "")) < MIN_QUERY_CHARS:
            return []
        windows = self._windows_for(min(len(core.split()), self._widest))
        length = len(core)
        # A slice a little wider than the bound: rapidfuzz's own cutoff is the exact test.
        low = bisect.bisect_left(windows.lengths, math.floor(length * MIN_RATIO / (2 - MIN_RATIO)))
        high = bisect.bisect_right(windows.lengths, math.ceil(length * (2 - MIN_RATIO) / MIN_RATIO))
        best: dict[int, float] = {}
        for _, score, index in process.extract(core, windows.texts[low:high], scorer=fuzz.ratio,
                                               score_cutoff=MIN_RATIO * 100, limit=None):
            for position in windows.owners[low + index]:
                if score > best.get(position, 0.0):
                    best[position] = score
        return [(self._items[position], best[position] / 100) for position in sorted(best)]

    def _windows_for(self, n: int) -> _Windows:
        windows = self._windows.get(n)
        if windows is None:
            owners: dict[str, set[int]] = {}
            for position, names in enumerate(self._names):
                for words in names:
                    for text in _windows(words, n):
                        owners.setdefault(text, set()).add(position)
            texts = sorted(owners, key=len)
            windows = self._windows[n] = _Windows(texts, [tuple(sorted(owners[text])) for text in texts],
                                                  [len(text) for text in texts])
        return windows


def _windows(name_words: Sequence[str], n: int):
    """Runs of n-1..n+1 consecutive title words (the query may be a part of a longer title)."""
    for size in {max(1, n - 1), n, n + 1}:
        size = min(size, len(name_words))
        for start in range(0, len(name_words) - size + 1):
            yield " ".join(name_words[start:start + size])
