"""The learned part of the busy-state router: a normaliser and a small softmax classifier.

What a person says while the assistant is busy is routed to cancel / interrupt / queue /
parallel (core.urgency). Phrase lists know the list, not the language ("Стоп-стоп, …", "всё,
хватит", "scrap that", "hang on, … first" are all missed by lists of leading words), so:

  normalise   case, ё→е, punctuation, hyphenated repeats ("стоп-стоп" -> "стоп"), particles
              ("погоди-ка"), consecutive repeats ("stop stop stop"), politeness and fillers
              ("пожалуйста", "ну", "ой", "please", "um") and the assistant's name are dropped;
  features    word unigrams and bigrams with the utterance's start and end marked, the first two
              words, character 3-5-grams of each word (morphology: "отмени", "отменяй"), and
              flags from the configured phrase lists (a leading stop / interrupt phrase);
  classify    multinomial logistic regression over those features, weights in
              core/router_weights.json (trained by `python run.py train-router` on the corpus
              that evals/router_corpus.py generates; pure Python, no dependency, < 1 ms).

Training lives here too (`train`): plain SGD with L2, deterministic for a given corpus and seed.
"""
from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from core import lexicon

LABELS = ("cancel", "interrupt", "queue", "parallel")
WEIGHTS_PATH = Path(__file__).with_name("router_weights.json")

# The normaliser's words are data (core/words/<language>/urgency.toml, every language joined).
# Said around a request without changing what it asks for (the assistant's names among them).
FILLERS = frozenset((*lexicon.words("urgency", "fillers"), *lexicon.words("urgency", "assistant_names")))
_NEGATORS = frozenset(lexicon.words("urgency", "negators"))
_PARTICLES = frozenset(lexicon.words("urgency", "hyphen_particles"))  # "погоди-ка", "что-нибудь"
_TOKEN = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_DIGITS = re.compile(r"^\d+(?:[.,]\d+)?$")
_DECIMAL_MARK = re.compile(r"(\d)[.,](\d)")


def tokens(text: str) -> list[str]:
    """The normalised words of an utterance (see the module doc); digits become "<num>"."""
    text = text.replace("’", "'").replace("ё", "е").replace("Ё", "Е").casefold()
    text = _DECIMAL_MARK.sub(r"\1\2", text)
    words: list[str] = []
    for raw in _TOKEN.findall(text):
        parts = raw.split("-")
        if len(parts) > 1 and (len(set(parts)) == 1 or parts[-1] in _PARTICLES):
            parts = [part for part in dict.fromkeys(parts) if part not in _PARTICLES]  # стоп-стоп, погоди-ка
        else:
            parts = [raw]
        for word in parts:
            if word in FILLERS:
                continue
            word = "<num>" if word[:1].isdecimal() and _DIGITS.match(word) else word
            if words and words[-1] == word:
                continue  # "stop stop stop", "нет, нет"
            words.append(word)
    return words


def features(words: Sequence[str], flags: Iterable[str] = ()) -> list[str]:
    """Sparse features of normalised words (each counted once)."""
    out = ["bias"]
    padded = ["<s>", *words, "</s>"]
    out += ["w:" + w for w in words]
    out += ["b:" + a + "_" + b for a, b in zip(padded, padded[1:])]
    out += ["first:" + "_".join(words[:2]), "len:" + str(min(len(words), 6))]
    # "не останавливайся", "don't stop": a negated verb is not the verb
    out += ["neg:" + b for a, b in zip(words, words[1:]) if a in _NEGATORS]
    for word in words:
        marked = f"<{word}>"
        for n in (3, 4, 5):
            out += ["c:" + marked[i:i + n] for i in range(max(1, len(marked) - n + 1))]
    out += ["f:" + flag for flag in flags]
    return list(dict.fromkeys(out))


class Classifier:
    """Softmax regression: label -> weight per feature."""

    def __init__(self, weights: dict[str, list[float]], labels: Sequence[str] = LABELS) -> None:
        self.weights = weights
        self.labels = tuple(labels)

    def scores(self, feats: Iterable[str]) -> list[float]:
        totals = [0.0] * len(self.labels)
        for feat in feats:
            row = self.weights.get(feat)
            if row is not None:
                for i, value in enumerate(row):
                    totals[i] += value
        return totals

    def probabilities(self, feats: Iterable[str]) -> dict[str, float]:
        scores = self.scores(feats)
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {label: e / total for label, e in zip(self.labels, exps)}

    def predict(self, feats: Iterable[str]) -> str:
        scores = self.scores(feats)
        return self.labels[max(range(len(scores)), key=scores.__getitem__)]

    def to_json(self) -> str:
        rows = {f: [round(v, 3) for v in row] for f, row in sorted(self.weights.items())}
        return json.dumps({"labels": list(self.labels), "weights": rows}, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "Classifier":
        raw = json.loads(text)
        return cls({f: list(row) for f, row in raw["weights"].items()}, raw["labels"])


@lru_cache(maxsize=4)
def load(path: Path = WEIGHTS_PATH) -> Classifier:
    """The shipped classifier. Raises OSError/ValueError when its file is missing or broken."""
    return Classifier.from_json(Path(path).read_text(encoding="utf-8"))


def train(examples: Sequence[tuple[list[str], str]], *, runs: int = 3, seed: int = 7, prune: float = 0.01,
          **options) -> Classifier:
    """The average of `runs` models trained on differently shuffled passes (one SGD run depends
    on its order more than a router should); weights under `prune` are left out."""
    models = [_train_once(examples, seed=seed + run, **options) for run in range(runs)]
    weights: dict[str, list[float]] = {}
    for model in models:
        for feat, row in model.weights.items():
            total = weights.setdefault(feat, [0.0] * len(LABELS))
            for k, value in enumerate(row):
                total[k] += value / runs
    return Classifier({f: row for f, row in weights.items() if max(abs(v) for v in row) >= prune})


def _train_once(examples: Sequence[tuple[list[str], str]], *, epochs: int = 10, rate: float = 0.3,
                l2: float = 1e-4, seed: int = 7, min_count: int = 1) -> Classifier:
    """Softmax regression by SGD over (features, label) pairs; features seen fewer than
    `min_count` times are dropped."""
    counts = Counter(f for feats, _ in examples for f in feats)
    keep = {f for f, n in counts.items() if n >= min_count}
    index = {label: i for i, label in enumerate(LABELS)}
    weights: dict[str, list[float]] = {f: [0.0] * len(LABELS) for f in keep}
    order = list(range(len(examples)))
    rng = random.Random(seed)
    model = Classifier(weights)
    for epoch in range(epochs):
        rng.shuffle(order)
        step = rate / (1 + epoch * 0.5)
        for i in order:
            feats, label = examples[i]
            feats = [f for f in feats if f in keep]
            probs = model.probabilities(feats)
            target = index[label]
            grads = [probs[lab] - (1.0 if k == target else 0.0) for k, lab in enumerate(LABELS)]
            for f in feats:
                row = weights[f]
                for k in range(len(LABELS)):
                    row[k] -= step * (grads[k] + l2 * row[k])
    return model
