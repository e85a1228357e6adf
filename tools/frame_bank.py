"""`python -m tools.frame_bank [--out PATH] [--without-probe] [--check]`: writes the frame's bank
(core/frame_bank.tsv, see core/frame_bank.py) from requests written apart from the eval's test and
traps sets: evals/reflex_probe.toml, the first turns of evals/dev.toml and evals/frame_phrasings.txt.

A request the reflexes read becomes that reading said as the frame's command (core.frame.command_of),
kept only when the frame's own guard takes the command back for the request as the same kind of
request; a request labelled as none ("none" in the probe, "-" in the phrasings) becomes "-". The
request is stored as the frame sees it (numbers in digits). `--without-probe` leaves the probe out
(to measure the frame on the probe with a bank that never saw it); `--check` fails when the file
differs from what the sources give (CI: the bank is never edited by hand).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from core.frame import NONE, command_of, read_frame
from core.frame_bank import BANK_PATH
from core.reflex import recognise
from core.timewords import in_digits
from tools.reflex_probe import PROBE_PATH, load

ROOT = Path(__file__).resolve().parent.parent
PHRASINGS_PATH = ROOT / "evals" / "frame_phrasings.txt"
DEV_PATH = ROOT / "evals" / "dev.toml"
HEADER = ("# The frame's bank (core/frame_bank.py): a request as the frame sees it, a tab, its command or \"-\".\n"
          "# Written by `python -m tools.frame_bank`; edit the sources, not this file.\n")


def labelled(with_probe: bool = True) -> Iterator[tuple[str, bool]]:
    """(request, is_none) from every source, in a fixed order."""
    if with_probe:
        for case in load(PROBE_PATH):
            if not case.after:  # a follow-up's words mean nothing without the turn before
                yield case.say, case.expect == "none"
    scenarios = msgspec.toml.decode(DEV_PATH.read_bytes()).get("scenario", [])
    for scenario in scenarios:
        turns = scenario.get("turns", [])
        if turns and turns[0].get("calls"):  # a turn that calls nothing may still be the model's to answer
            yield turns[0]["say"], False
    for line in PHRASINGS_PATH.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            said, _, label = line.partition("\t")
            yield said.strip(), label.strip() == NONE


def entry(request: str, is_none: bool) -> tuple[str, str] | None:
    """The bank's line for one request, or None when its command is not known or not taken back."""
    said = in_digits(request)
    if is_none:
        return said, NONE
    intent = recognise(request)
    command = command_of(intent) if intent is not None else None
    if command is None:
        return None
    taken = read_frame(command, said).intent
    return (said, command) if taken is not None and taken.kind == intent.kind else None


def bank_text(with_probe: bool = True) -> str:
    lines, seen = [], set()
    for request, is_none in labelled(with_probe):
        found = entry(request, is_none)
        if found is not None and found[0].casefold() not in seen:
            seen.add(found[0].casefold())
            lines.append("\t".join(found))
    return HEADER + "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.frame_bank", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=BANK_PATH)
    parser.add_argument("--without-probe", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = bank_text(with_probe=not args.without_probe)
    if args.check:
        if args.out.read_text(encoding="utf-8") != text:
            print(f"{args.out} is not what its sources give: run python -m tools.frame_bank", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {text.count(chr(10)) - HEADER.count(chr(10))} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
