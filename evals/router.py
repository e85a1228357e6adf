"""The router evaluation: how often the rules, and the model router, pick the strategy a person
means (`python run.py eval-router [--profile P] [--json PATH]`).

Every utterance of `router_set.toml` (Russian and English, labelled cancel / interrupt / queue /
parallel) is routed as user text arriving while the session is busy, by the rule router of the
configured phrases and, when a profile is given (or `session.router = "model"`), by the model
router on that profile exactly as a session uses it: sure cases stay with the rules, the model is
asked the rest within `session.router_timeout_s` (or `--timeout`), and a useless answer falls
back to the rules. Printed: accuracy overall, per label, what decided, and the misses.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import msgspec

from core.urgency import LLMRouter, Router, RuleRouter, UrgencyConfig
from protocol import ChatMessage, Event

SET_PATH = Path(__file__).with_name("router_set.toml")
LABELS = ("cancel", "interrupt", "queue", "parallel")
LANGS = ("ru", "en")


SPLITS = ("dev", "test")


@dataclass(frozen=True)
class Utterance:
    text: str
    label: str
    lang: str
    split: str = "dev"


def load_set(path: Path = SET_PATH) -> list[Utterance]:
    """The labelled utterances: [split.label] tables (split dev|test; a flat [label] table is
    dev), a list per language. Raises ValueError."""
    try:
        raw = msgspec.toml.decode(Path(path).read_bytes(), type=dict[str, dict[str, list[str] | dict[str, list[str]]]])
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"router set {path}: {exc}") from None
    unknown = sorted(set(raw) - set(LABELS) - set(SPLITS))
    if unknown:
        raise ValueError(f"router set {path}: unknown labels {unknown}; labels: {', '.join(LABELS)} "
                         f"(or splits {', '.join(SPLITS)} holding them)")
    items: list[Utterance] = []
    for key, table in raw.items():
        if key in SPLITS:
            bad = sorted(set(table) - set(LABELS))
            if bad or not all(isinstance(v, dict) for v in table.values()):
                raise ValueError(f"router set {path}: [{key}] holds unknown labels {bad}; labels: {', '.join(LABELS)}")
            for label, by_lang in table.items():
                items += _utterances(path, label, by_lang, key)  # type: ignore[arg-type]
        else:
            items += _utterances(path, key, table, "dev")  # type: ignore[arg-type]
    if not items:
        raise ValueError(f"router set {path} is empty")
    return items


def _utterances(path: Path, label: str, by_lang: dict, split: str) -> list[Utterance]:
    items = []
    for lang, texts in by_lang.items():
        if lang not in LANGS or not isinstance(texts, list):
            raise ValueError(f"router set {path}: [{label}] has language {lang!r}; languages: {', '.join(LANGS)}")
        items += [Utterance(text, label, lang, split) for text in texts if text.strip()]
    return items


@dataclass
class Score:
    """One router's result on the set."""

    router: str
    total: int = 0
    correct: int = 0
    per_label: dict[str, list[int]] = field(default_factory=lambda: {label: [0, 0] for label in LABELS})
    decided_by: Counter = field(default_factory=Counter)
    misses: list[tuple[str, str, str]] = field(default_factory=list)  # (text, expected, got)
    fell_back: list[tuple[str, str]] = field(default_factory=list)  # (text, why the model did not decide)
    seconds: float = 0.0
    split: str = "all"
    latencies_ms: list[float] = field(default_factory=list)  # per decision

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    @property
    def false_cancels(self) -> tuple[int, int]:
        """(queue/parallel items routed to cancel, queue/parallel items)."""
        wrong = sum(1 for _, expected, got in self.misses if expected in ("queue", "parallel") and got == "cancel")
        return wrong, self.per_label["queue"][1] + self.per_label["parallel"][1]

    def percentile_ms(self, q: float) -> float:
        if not self.latencies_ms:
            return 0.0
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def recall(self, label: str) -> float:
        correct, total = self.per_label[label]
        return correct / total if total else 0.0

    def as_dict(self) -> dict:
        return {
            "router": self.router, "split": self.split, "total": self.total, "correct": self.correct,
            "accuracy": round(self.accuracy, 4),
            "recall": {label: round(self.recall(label), 4) for label in LABELS},
            "false_cancels": {"count": self.false_cancels[0], "of": self.false_cancels[1],
                              "rate": round(self.false_cancels[0] / max(1, self.false_cancels[1]), 4)},
            "decision_ms": {"p50": round(self.percentile_ms(0.5), 3), "p99": round(self.percentile_ms(0.99), 3)},
            "per_label": {label: {"correct": c, "total": t} for label, (c, t) in self.per_label.items()},
            "decided_by": dict(self.decided_by), "seconds": round(self.seconds, 3),
            "misses": [{"text": t, "expected": e, "got": g} for t, e, g in self.misses],
            "model_fell_back": [{"text": t, "why": w} for t, w in self.fell_back],
        }


def _decider(rule: str) -> str:
    """"model", "rules", or "rules (model fell back: timeout|nonsense|error)" for the tally."""
    if rule == "model":
        return "model"
    if "model fell back: " in rule:
        return "rules (model fell back: " + rule.split("model fell back: ", 1)[1].split(":")[0].rstrip(")") + ")"
    return "rules"


async def score(router: Router, items: Sequence[Utterance], name: str, split: str = "all") -> Score:
    result = Score(router=name, split=split)
    started = time.perf_counter()
    for index, item in enumerate(items):
        event = Event(event_id=f"eval-{index}", kind="user_text", source="user", channel="speech", content=item.text)
        began = time.perf_counter()
        decision = await router.route_why(event, True)
        result.latencies_ms.append((time.perf_counter() - began) * 1000)
        result.total += 1
        result.per_label[item.label][1] += 1
        result.decided_by[_decider(decision.rule)] += 1
        if "model fell back: " in decision.rule:
            result.fell_back.append((item.text, decision.rule.split("model fell back: ", 1)[1].rstrip(")")))
        if decision.strategy == item.label:
            result.correct += 1
            result.per_label[item.label][0] += 1
        else:
            result.misses.append((item.text, item.label, decision.strategy))
    result.seconds = time.perf_counter() - started
    return result


def backend_classifier(backend, max_tokens: int = 4) -> Callable[[str], Awaitable[str]]:
    """The router's question asked straight to a backend (what the LLMWorker would do)."""
    async def classify(prompt: str) -> str:
        text = ""
        async with backend.stream([ChatMessage(role="user", content=prompt)], tools=[], max_tokens=max_tokens) as generation:
            async for piece in generation:
                text += piece
        return text

    return classify


def urgency_of(config) -> UrgencyConfig:
    cfg = config.session
    return UrgencyConfig.from_mapping({
        "urgent_words": cfg.urgent_words, "interrupt_phrases": cfg.interrupt_phrases, "classifier": cfg.router_classifier,
        **({"parallel_patterns": cfg.parallel_patterns} if cfg.parallel_patterns else {}),
    })


async def evaluate(config, profile: str | None, items: Sequence[Utterance], timeout_s: float | None = None,
                   phrase_only: bool = True) -> list[Score]:
    """Per split (dev, test, then all): the default router (phrase rules + the learned
    classifier), the phrase rules alone (classifier off) when `phrase_only`, and the model
    router on `profile` over all items (None: not measured)."""
    from llm.backends import make_backend

    urgency = urgency_of(config)
    rules = RuleRouter(urgency)
    phrases = RuleRouter(dataclasses.replace(urgency, classifier=False))
    scores = []
    for split in [*[s for s in SPLITS if any(i.split == s for i in items)], "all"]:
        chosen = [i for i in items if split == "all" or i.split == split]
        scores.append(await score(rules, chosen, "rules", split))
        if phrase_only:
            scores.append(await score(phrases, chosen, "phrase-rules", split))
    if profile:
        backend = make_backend(config.llm.profiles[profile], name=profile)
        try:
            router = LLMRouter(backend_classifier(backend), rules, timeout_s=timeout_s or config.session.router_timeout_s)
            scores.append(await score(router, items, f"model:{profile}"))
        finally:
            await backend.aclose()
    return scores


def format_report(scores: Sequence[Score], items: Sequence[Utterance], path: Path, show_misses: bool = True) -> str:
    langs = Counter(item.lang for item in items)
    splits = Counter(item.split for item in items)
    lines = [f"router set: {path} ({len(items)} utterances: "
             + ", ".join(f"{n} {lang}" for lang, n in sorted(langs.items())) + "; "
             + ", ".join(f"{n} {split}" for split, n in sorted(splits.items())) + "; session busy)"]
    for s in scores:
        recall = ", ".join(f"{label} {c}/{t}" for label, (c, t) in s.per_label.items())
        wrong, of = s.false_cancels
        decided = ", ".join(f"{k} {v}" for k, v in sorted(s.decided_by.items()))
        lines.append(f"{s.split:<4} {s.router:<14} accuracy {s.accuracy:6.1%} ({s.correct}/{s.total})  recall: {recall}  "
                     f"false cancels {wrong}/{of} ({wrong / max(1, of):.1%})  decision p50 {s.percentile_ms(0.5):.2f} ms "
                     f"p99 {s.percentile_ms(0.99):.2f} ms  [decided by: {decided}]")
        if show_misses and s.split != "all" and s.router != "phrase-rules":
            for text, expected, got in s.misses:
                lines.append(f"    miss: {text!r}: expected {expected}, got {got}")
        for text, why in s.fell_back[:5]:
            lines.append(f"    model fell back on {text!r}: {why}")
        if len(s.fell_back) > 5:
            lines.append(f"    ... the model fell back {len(s.fell_back)} times in all (--json lists them)")
    return "\n".join(lines)


def cmd_eval_router(args: argparse.Namespace, config_fn) -> int:
    config = config_fn(args)
    profile = args.profile
    if profile is None and config.session.router == "model":
        profile = config.session.router_profile or config.llm.profile
    if profile and profile not in config.llm.profiles:
        sys.exit(f"porfiry: profile {profile!r} is not defined; profiles: {', '.join(sorted(config.llm.profiles))}")
    path = Path(args.set) if args.set else SET_PATH
    try:
        items = load_set(path)
    except ValueError as exc:
        sys.exit(f"porfiry: {exc}")
    scores = anyio.run(evaluate, config, profile, items, args.timeout, backend="trio")
    print(format_report(scores, items, path))
    if not profile:
        print("model router: not measured (pass --profile P, or set session.router = \"model\")")
    if args.json:
        whole = next(s for s in scores if s.split == "all" and s.router == "rules")
        model = next((s for s in scores if s.router.startswith("model:")), None)
        report = {"set": str(path), "size": len(items), "rules": whole.as_dict(),
                  "model": model.as_dict() if model else None,
                  "splits": {s.split: {} for s in scores if s.split != "all"}}
        for s in scores:
            if s.split != "all":
                report["splits"][s.split][s.router] = s.as_dict()
        Path(args.json).write_text(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


def register(sub, config_fn) -> None:
    """`run.py eval-router`."""
    parser = sub.add_parser("eval-router", help="router accuracy on the labelled set: rules and the model router")
    parser.add_argument("--profile", default=None, help="LLM profile for the model router (default: none, "
                        "or session.router_profile when session.router = \"model\")")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per model answer (default session.router_timeout_s)")
    parser.add_argument("--set", default=None, help=f"the labelled set (default {SET_PATH.name})")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.set_defaults(func=lambda args: cmd_eval_router(args, config_fn))
    train = sub.add_parser("train-router", help="train the router's classifier on the generated corpus "
                           "(evals/router_corpus.py) and write core/router_weights.json")
    train.add_argument("--out", default=None, help="where to write the weights (default core/router_weights.json)")
    train.add_argument("--seed", type=int, default=7)
    train.set_defaults(func=cmd_train_router)


def cmd_train_router(args: argparse.Namespace) -> int:
    """Generate the corpus, train, write the weights, and print the dev figures (never test's)."""
    from core import router_model
    from core.urgency import DEFAULT_CONFIG
    from evals.router_corpus import corpus

    started = time.perf_counter()
    pairs = corpus(seed=args.seed)
    examples = [(DEFAULT_CONFIG.router_features(text), label) for text, label in pairs]
    model = router_model.train(examples, seed=args.seed)
    out = Path(args.out) if args.out else router_model.WEIGHTS_PATH
    out.write_text(model.to_json() + "\n", encoding="utf-8")
    router_model.load.cache_clear()
    print(f"trained on {len(pairs)} generated utterances in {time.perf_counter() - started:.1f} s; "
          f"{len(model.weights)} features -> {out} ({out.stat().st_size // 1024} KiB)")
    return 0
