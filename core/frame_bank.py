"""The frame's examples chosen per request: the requests of a bank most like the user's words.

A small model puts words as a command far better right after seeing words like them put so
(nearest-neighbour few-shot): with a fixed list of examples alone the 1.5B local model answered
"-" to "который час". So after the fixed examples, core.frame shows the bank's requests nearest
to what the user said, each with its command or "-".

The bank (core/frame_bank.tsv: the request as the frame sees it, a tab, the command) is written by
`python -m tools.frame_bank` from requests written apart from the eval's test and traps sets
(evals/reflex_probe.toml, the first turns of evals/dev.toml, evals/frame_phrasings.txt): each
command is what the reflexes read the request as, said in the list's words (core.frame.command_of)
and accepted by the frame's own guard; each "-" is a turn labelled as no request.

Nearness: cosine over tf-idf weights of each word and its character 3-grams ("поставь" and
"поставьте" share most of theirs). Pure Python; a query looks only at entries that share a feature.
"""
from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from core.lexicon import fold

BANK_PATH = Path(__file__).with_name("frame_bank.tsv")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


def features(text: str) -> Counter[str]:
    """A text's words ("w:" and the word) and the 3-grams of each word with its ends marked."""
    found: Counter[str] = Counter()
    for word in _WORD.findall(fold(text)):
        found["w:" + word] += 1
        marked = f"<{word}>"
        found.update(marked[i:i + 3] for i in range(len(marked) - 2))
    return found


class Bank:
    """Requests and their commands, searchable by nearness to new words."""

    def __init__(self, pairs: Sequence[tuple[str, str]]):
        self.pairs = list(pairs)
        counted = [features(said) for said, _ in self.pairs]
        seen_in = Counter(name for found in counted for name in found)
        self._idf = {name: math.log((1 + len(counted)) / (1 + n)) + 1 for name, n in seen_in.items()}
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for index, found in enumerate(counted):
            for name, weight in self._weighed(found).items():
                self._postings[name].append((index, weight))

    def _weighed(self, found: Counter[str]) -> dict[str, float]:
        weights = {name: count * self._idf[name] for name, count in found.items() if name in self._idf}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        return {name: w / norm for name, w in weights.items()}

    def nearest(self, said: str, k: int) -> list[tuple[str, str]]:
        """The `k` entries nearest to `said` (none identical to it), the nearest last: a small
        model follows the example it read last the most."""
        scores: dict[int, float] = defaultdict(float)
        for name, weight in self._weighed(features(said)).items():
            for index, other in self._postings.get(name, ()):
                scores[index] += weight * other
        plain = said.strip().casefold()
        ranked = heapq.nlargest(k, ((score, -index) for index, score in scores.items()
                                    if self.pairs[index][0].strip().casefold() != plain))
        return [self.pairs[-index] for _, index in reversed(ranked)]


def read_bank(text: str) -> list[tuple[str, str]]:
    """The entries of a bank file: `request<TAB>command` lines; blank and `#` lines are skipped."""
    pairs = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            said, _, command = line.partition("\t")
            if said.strip() and command.strip():
                pairs.append((said.strip(), command.strip()))
    return pairs


@cache
def default_bank() -> Bank:
    """The shipped bank (an empty one when the file is missing: the fixed examples still serve)."""
    try:
        return Bank(read_bank(BANK_PATH.read_text(encoding="utf-8")))
    except OSError:
        return Bank([])
