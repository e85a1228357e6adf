"""Figures from samples: percentiles and the per-run tallies the load benchmark reports."""
from __future__ import annotations

import collections
import math
from typing import Iterable, Sequence

import msgspec


class Percentiles(msgspec.Struct, kw_only=True):
    p50: float
    p95: float
    p99: float
    max: float
    count: int


def percentile(sorted_samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of already sorted samples; NaN when there are none.
    Nearest rank, not interpolation: p99 of 100 samples is the 99th, a value that happened."""
    if not sorted_samples:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_samples)))
    return sorted_samples[min(rank, len(sorted_samples)) - 1]


def summarize(samples: Iterable[float]) -> Percentiles:
    ordered = sorted(samples)
    return Percentiles(
        p50=percentile(ordered, 50), p95=percentile(ordered, 95), p99=percentile(ordered, 99),
        max=ordered[-1] if ordered else math.nan, count=len(ordered),
    )


class Tally:
    """Errors by kind, with the first few details of each so a report can say what happened."""

    def __init__(self, examples_per_kind: int = 3):
        self.counts: collections.Counter[str] = collections.Counter()
        self.examples: dict[str, list[str]] = {}
        self._keep = examples_per_kind

    def add(self, kind: str, detail: str = "") -> None:
        self.counts[kind] += 1
        kept = self.examples.setdefault(kind, [])
        if detail and len(kept) < self._keep:
            kept.append(detail)

    def total(self) -> int:
        return sum(self.counts.values())
