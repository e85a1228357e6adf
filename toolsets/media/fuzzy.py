"""Typo-tolerant title matching for the media catalog: "матрца" finds "Матрица".

A title matches when some run of its words (one word fewer to one more than the query has)
scores at least `MIN_RATIO` against the query with difflib's `SequenceMatcher.ratio()`. The
answers are those of comparing the query with every window of every title; the work is not:

- titles sharing too few letter pairs with the query are never looked at: an inverted index
  (letter pair -> titles) counts the shared pairs in C instead of a set intersection per title;
- each title's windows for a query length are computed once and kept, duplicates removed
  (a two-word title's windows for a three-word query were the same string three times);
- cheap upper bounds of the ratio run before difflib's quadratic `ratio()`, which only a few
  windows a search reach: the lengths (difflib's `real_quick_ratio`), the window's letters that
  occur in the query at all (one `str.translate` in C), then the letters in common
  (`quick_ratio`, from counts made once per window).

Why it matters: the search runs on the toolset executor's event loop (`ready_now()`), so its
cost is every session's latency there, and it grows with the catalog (a user's may hold
thousands of titles); the answers are the same as difflib over every window would give.
"""
from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from typing import Generic, TypeVar

MIN_RATIO = 0.75
MIN_QUERY_CHARS = 4
MIN_BIGRAM_SHARE = 0.5

T = TypeVar("T")

_Window = tuple[str, int, dict[str, int]]  # text, length, letter counts


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
        self._alphabet = frozenset(letter for names in self._names for name in names for letter in name)
        self._longest = [max((len(name.split()) for name in names), default=0) for names in self._names]
        self._windows: dict[tuple[int, int], tuple[_Window, ...]] = {}

    def match(self, core: str) -> list[tuple[T, float]]:
        """(item, best ratio) for every item with a window at `MIN_RATIO` or above, in index order."""
        if len(core.replace(" ", "")) < MIN_QUERY_CHARS:
            return []
        n = len(core.split())
        query_grams = bigrams(core)
        # A typo in a short word spoils most of its pairs ("шрэк"/"шрек" share one), so ask less there.
        needed = 1 if len(core) <= 5 else len(query_grams) * MIN_BIGRAM_SHARE
        if needed > 0:
            shared = Counter()
            for gram in query_grams:
                shared.update(self._postings.get(gram, ()))
            candidates = sorted(position for position, count in shared.items() if count >= needed)
        else:
            candidates = range(len(self._items))
        query_length = len(core)
        query_counts = dict.fromkeys(self._alphabet, 0) | Counter(core)
        # Deleting the letters the query lacks leaves an upper bound of the letters in common, in C.
        foreign = {ord(letter): None for letter in self._alphabet if not query_counts[letter]}
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(core)
        found = []
        for position in candidates:
            best = 0.0
            for window, length, counts in self._windows_of(position, n):
                total = length + query_length
                # real_quick_ratio() and quick_ratio() of difflib, from what is already counted
                if 2.0 * min(length, query_length) / total < MIN_RATIO:
                    continue
                if 2.0 * len(window.translate(foreign)) / total < MIN_RATIO:
                    continue
                common = sum(min(count, query_counts[letter]) for letter, count in counts.items())
                if 2.0 * common / total < MIN_RATIO:
                    continue
                matcher.set_seq1(window)
                best = max(best, matcher.ratio())
            if best >= MIN_RATIO:
                found.append((self._items[position], best))
        return found

    def _windows_of(self, position: int, n: int) -> tuple[_Window, ...]:
        # Beyond one word more than the title's longest name every window size is cut to the whole
        # name, so longer queries share one entry: the cache is bounded by titles x name lengths.
        n = min(n, self._longest[position] + 1)
        key = (position, n)
        windows = self._windows.get(key)
        if windows is None:
            texts = dict.fromkeys(w for name in self._names[position] for w in _windows(name.split(), n))
            windows = self._windows[key] = tuple((w, len(w), dict(Counter(w))) for w in texts)
        return windows


def _windows(name_words: list[str], n: int):
    """Runs of n-1..n+1 consecutive title words (the query may be a part of a longer title)."""
    for size in {max(1, n - 1), n, n + 1}:
        if size > len(name_words):
            size = len(name_words)
        for start in range(0, len(name_words) - size + 1):
            yield " ".join(name_words[start:start + size])
