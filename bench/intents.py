"""The local-intent stage alone (core.local_intents): how long matching one utterance takes with
every toolset's sentences loaded (the whole words, then each part among remarks:
core.reflex_steps.request_among_remarks). `python -m bench.intents [--rounds N]` plays Home Assistant's
test sentences (tests/data/home_assistant_sentences.yaml, the ones that match) and the eval
sets' user turns (most of which match nothing, the stage's common case) and prints p50/p99/max
per kind. A benchmark, not a test: run it on a quiet machine."""
from __future__ import annotations

import argparse
import statistics
import time
import tomllib
from pathlib import Path

import yaml

from core.loading import intent_files
from core.local_intents import LocalIntents
from core.reflex_steps import request_among_remarks

ROOT = Path(__file__).resolve().parent.parent


def utterances() -> dict[str, list[str]]:
    """Sentences Home Assistant's tests say, and the user turns of the eval sets."""
    sentences = yaml.safe_load((ROOT / "tests" / "data" / "home_assistant_sentences.yaml").read_text(encoding="utf-8"))
    said = [case["sentence"] for language in sentences.values() for case in language]
    turns = []
    for name in ("dev.toml", "test.toml", "traps.toml"):
        data = tomllib.loads((ROOT / "evals" / name).read_text(encoding="utf-8"))
        turns += [turn["say"] for scenario in data.get("scenario", []) for turn in scenario.get("turns", [])
                  if isinstance(turn.get("say"), str)]
    return {"home assistant": said, "eval turns": turns}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.intents", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="times each utterance is matched (default 3)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    intents = LocalIntents.load(intent_files())
    print(f"loaded {len(intents.actions)} intents in {(time.perf_counter() - started) * 1000:.0f} ms")
    for kind, said in utterances().items():
        took, matched = [], 0
        for _ in range(args.rounds):
            for text in said:
                begin = time.perf_counter()
                matched += (intents.match(text) or request_among_remarks(intents, text)) is not None
                took.append((time.perf_counter() - begin) * 1000)
        print(f"{kind}: {len(said)} utterances x {args.rounds}, matched {matched // args.rounds}; "
              f"p50 {statistics.median(took):.2f} ms, p99 {_percentile(took, 0.99):.2f} ms, max {max(took):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
