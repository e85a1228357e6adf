"""`python -m tools.frame_probe [--every N] [--examples K] [--bank PATH|none]`: how the frame
(core.frame) reads the reflex probe's utterances with the reflexes bypassed, on the embedded local
model (slow: a model call each, about 1 s with the fixed examples alone and 3 s with 4 of the bank's).

Each utterance (those with no turn before them; every N-th) is put to the frame as the session puts
it (numbers in digits, small talk asks nothing), its reply read by core.frame.read_frame and judged
as tools.reflex_probe judges recognise. `--bank` names the bank whose nearest requests are shown
(`none`: the fixed examples alone); to measure on the probe, build a bank that never saw it:
`python -m tools.frame_bank --without-probe --out /tmp/bank.tsv`. A dev instrument: the probe was
tuned on.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import anyio

from core.frame import FRAME_MAX_TOKENS, NEAREST_EXAMPLES, frame_messages, read_frame
from core.frame_bank import Bank, read_bank
from core.intent import small_talk
from core.timewords import in_digits
from tools.reflex_probe import PROBE_PATH, judge_intent, load


async def probe(every: int, examples: int, bank: Bank | None) -> Counter[str]:
    from llm.llamacpp_backend import LlamaCppBackend
    from llm.profiles import default_profiles

    backend = LlamaCppBackend(default_profiles()["local"])
    outcomes: Counter[str] = Counter()
    for case in [case for case in load(PROBE_PATH) if not case.after][::every]:
        said, reply = in_digits(case.say), "(small talk: not asked)"
        got = None
        if not small_talk(said):
            reply = ""
            async for piece in backend.stream(frame_messages(said, nearest=examples if bank else 0, bank=bank),
                                              tools=[], max_tokens=FRAME_MAX_TOKENS):
                reply += piece
            got = read_frame(reply, said).intent
        verdict = judge_intent(case, got)
        outcomes[verdict.outcome] += 1
        print(f"{verdict.outcome:12} {case.say!r} -> {reply.strip()!r} {verdict.why}", flush=True)
    await backend.aclose()
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.frame_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=1, help="every N-th utterance (3: a third, about 130)")
    parser.add_argument("--examples", type=int, default=NEAREST_EXAMPLES, help="the bank's requests shown")
    parser.add_argument("--bank", default=str(Path(__file__).resolve().parent.parent / "core" / "frame_bank.tsv"))
    args = parser.parse_args(argv)
    bank = None if args.bank == "none" else Bank(read_bank(Path(args.bank).read_text(encoding="utf-8")))
    started = time.monotonic()
    outcomes = anyio.run(probe, max(1, args.every), args.examples, bank)
    print(f"{sum(outcomes.values())} utterances in {time.monotonic() - started:.0f} s: " +
          ", ".join(f"{name} {outcomes[name]}" for name in ("right", "wrong_action", "wrong_lookup", "missed")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
