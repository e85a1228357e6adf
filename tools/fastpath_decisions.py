"""`python -m tools.fastpath_decisions OUT.json [--compare BEFORE.json]`: what the fast path decides
for every user turn of the eval sets (evals/dev.toml, test.toml, traps.toml), without a model.

Per turn: the toolsets' sentences (core.local_intents), a request put right in one breath, a
request among remarks, a toolset's declared call, `core.reflex.recognise` and `recognise_both` - the request's kind and its
fields (subject, time, text, reference), or none: the model's turn. Written as JSON by turn
("test/<scenario>/<turn>": [words, decision]). With `--compare`, the turns whose decision differs
from an earlier run's are printed: the oracle for a change that must not change what the fast path
does (issue 50 moved the recognisers into the toolsets' folders with 0 of 1,330 changed).
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from core.intent import addressed_elsewhere, remark
from core.reflex import put_right, recognise_both, said_again_otherwise
from core.reflex_steps import aside_or_reflex, builtin_local_intents, declared_call, intent_among_remarks, recognised, request_among_remarks

SETS = ("dev", "test", "traps")


def _described(intent) -> str:
    return f"{intent.kind}|{intent.subject}|{intent.when}|{intent.text}|{intent.reference}"


def decision(said: str) -> str | None:
    """The fast path's reading of one turn's words, as a line; None when the model takes it."""
    if addressed_elsewhere(said):
        return None  # said to someone in the room (core.reflex_steps)
    local = builtin_local_intents()
    halves = said_again_otherwise(said)
    first = recognised(local.match(halves[0]), halves[0]) if halves else None
    if first is not None:
        intent = put_right(first, recognised(local.match(halves[1]), halves[1]))
        return f"PUT_RIGHT {_described(intent)}" if intent else "PUT_RIGHT None"
    match = local.match(said)
    aside = request_among_remarks(local, said) if match is None else None
    call = declared_call(match or aside, said)
    if call is None and match is None:
        call = declared_call(local.match_in_context(said, remark=remark), said)
    if call is not None:  # a toolset's own sentence that calls its tool ("convert 5 miles to km")
        return "CALL " + "|".join(call)
    intent = recognised(match, said)
    if aside is not None:
        intent = aside_or_reflex(aside, intent, said)
    if intent is None and aside is None:
        intent = intent_among_remarks(said)
    if intent is not None:
        return _described(intent)
    both = recognise_both(said)
    return "BOTH " + " + ".join(_described(b) for b in both) if both else None


def decisions(root: Path) -> dict[str, tuple[str, str | None]]:
    out = {}
    for name in SETS:
        data = tomllib.loads((root / "evals" / f"{name}.toml").read_text(encoding="utf-8"))
        for scenario in data["scenario"]:
            for index, turn in enumerate(scenario.get("turns", [])):
                if turn.get("say"):
                    out[f"{name}/{scenario['id']}/{index}"] = (turn["say"], decision(turn["say"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write this run's decisions (JSON)")
    parser.add_argument("--compare", type=Path, help="an earlier run's JSON: print the turns decided otherwise")
    args = parser.parse_args(argv)
    now = decisions(Path(__file__).resolve().parent.parent)
    args.out.write_text(json.dumps(now, ensure_ascii=False, indent=0), encoding="utf-8")
    print(f"{len(now)} user turns, {sum(1 for _said, d in now.values() if d)} taken by the fast path")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    changed = [key for key in now if list(now[key]) != list(before.get(key, ("", None)))]
    for key in changed:
        print(f"{key}: {before.get(key, ['', None])[1]} -> {now[key][1]}  ({now[key][0]!r})")
    print(f"changed: {len(changed)} of {len(now)}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
