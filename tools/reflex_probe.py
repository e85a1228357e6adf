"""`python -m tools.reflex_probe [--file F] [--show wrong|missed|all]`: how `core.reflex.recognise`
reads natural phrasing written apart from the patterns (evals/reflex_probe.toml; fixed on since: a dev set).

Each utterance is read by `recognise` alone (it takes only the turn's words; an entry's `after`
is shown, not passed) and judged against what it should return: a reflex kind with its key fields
(the title, the reference, the duration or clock time, the text, the playback action, the detail)
or none, the model's turn. Printed: per kind the precision (of what recognise returned as that
kind, how much was right) and the recall (of what should be that kind, how much it got right),
then the mismatches in three lists:

  WRONG ACTIONS  an action kind (a timer set or cancelled, a play, a pause, a text on the glasses)
                 where none, another kind, or other fields were meant: a side effect nobody asked for
  WRONG LOOKUPS  a read-only kind (the time, a search, a details answer, the timers listed) where
                 something else was meant: a wrong answer without the model, but nothing changed
  MISSES         a request recognise left to the model: slower and weaker, never harmful
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple, get_args

import msgspec

from core.intent import same_word
from core.fastpath import Detail, Intent, Reference, ReflexKind
from core.reflex import recognise
from core.timers import TimerError, parse_duration

PROBE_PATH = Path(__file__).resolve().parent.parent / "evals" / "reflex_probe.toml"
KINDS: tuple[str, ...] = get_args(ReflexKind)
ACTION_KINDS = frozenset({"timer_set", "timer_cancel", "play", "playback", "show"})  # they change something
Expect = Literal[("none", *KINDS)]  # type: ignore[valid-type]
Outcome = Literal["right", "wrong_action", "wrong_lookup", "missed"]


class Case(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One utterance and what recognise should make of it (the fields: evals/reflex_probe.toml)."""

    say: str
    expect: Expect
    after: str = ""
    title: str | None = None
    it: bool = False
    ordinal: int = 0
    year: int = 0
    seconds: float | None = None
    clock: str = ""
    text: str | None = None
    action: Literal["pause", "resume", "stop", ""] = ""
    detail: Detail | Literal[""] = ""
    all: bool = False
    group: str = ""


class Verdict(NamedTuple):
    case: Case
    got: Intent | None
    outcome: Outcome
    why: str  # what differs ("" when right)


def load(path: Path = PROBE_PATH) -> list[Case]:
    """The cases of a probe file, each with its table's name as its group. Raises ValueError."""
    try:
        tables = msgspec.toml.decode(Path(path).read_bytes(), type=dict[str, list[Case]])
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"reflex probe {path}: {exc}") from None
    return [msgspec.structs.replace(case, group=group) for group, cases in tables.items() for case in cases]


# ---- comparing --------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    """Lower case, `ё` as `е`, punctuation dropped, a leading article dropped."""
    plain = re.sub(r"[«»\"“”„'`!?.,;:()\[\]]", " ", text.casefold().replace("ё", "е")).split()
    return plain[1:] if len(plain) > 1 and plain[0] in ("the", "a", "an") else plain


def same_title(expected: str, got: str) -> bool:
    mine, theirs = _words(expected), _words(got)
    return len(mine) == len(theirs) and all(same_word(a, b) for a, b in zip(mine, theirs))


def _clock(text: str) -> tuple[int, int] | None:
    found = re.fullmatch(r"\s*(\d{1,2})[:.](\d{2})\s*", text)
    return (int(found[1]), int(found[2])) if found else None


def _timer_differences(case: Case, got: Intent) -> list[str]:
    found: list[str] = []
    if case.seconds is not None:
        try:
            seconds = parse_duration(got.when) if _clock(got.when) is None else None
        except TimerError:
            seconds = None
        if seconds != case.seconds:
            found.append(f"duration {got.when!r} is not {case.seconds:g} s")
    if case.clock and _clock(got.when) != _clock(case.clock):
        found.append(f"time {got.when!r} is not {case.clock}")
    return found


def differences(case: Case, got: Intent) -> list[str]:
    """What `got` (of the expected kind) has wrong: each field the case names, compared."""
    found = _timer_differences(case, got) if case.expect == "timer_set" else []
    if case.title is not None and not same_title(case.title, got.subject):
        found.append(f"title {got.subject!r} is not {case.title!r}")
    if case.it or case.ordinal or case.year:
        if got.reference != Reference(ordinal=case.ordinal, year=case.year):
            found.append(f"reference {_reference(got)} is not {_reference_of(case)}")
    if case.text is not None and _words(got.text) != _words(case.text):
        found.append(f"text {got.text!r} is not {case.text!r}")
    for field in ("action", "detail"):
        if getattr(case, field) and getattr(got, field) != getattr(case, field):
            found.append(f"{field} {getattr(got, field)!r} is not {getattr(case, field)!r}")
    if case.expect == "timer_cancel" and got.all_timers != case.all:
        found.append(f"all timers {got.all_timers} is not {case.all}")
    return found


def _reference(got: Intent) -> str:
    if got.reference is None:
        return "none"
    ref = got.reference
    return f"#{ref.ordinal}" if ref.ordinal else f"year {ref.year}" if ref.year else "it"


def _reference_of(case: Case) -> str:
    return f"#{case.ordinal}" if case.ordinal else f"year {case.year}" if case.year else "it"


def judge(case: Case) -> Verdict:
    return judge_intent(case, recognise(case.say))


def judge_intent(case: Case, got: Intent | None) -> Verdict:
    """What `got` (recognise's or the frame's reading of the case's words) came to."""
    if got is None:
        return Verdict(case, None, "right" if case.expect == "none" else "missed", "")
    if got.kind != case.expect:
        why = f"expected {case.expect}"
    else:
        why = "; ".join(differences(case, got))
        if not why:
            return Verdict(case, got, "right", "")
    return Verdict(case, got, "wrong_action" if got.kind in ACTION_KINDS else "wrong_lookup", why)


# ---- the report -------------------------------------------------------------------------------
def describe(got: Intent | None) -> str:
    """`play(subject='матрицу')`, `timer_set(when='in 5 минут', text='')`: the fields that matter."""
    if got is None:
        return "none"
    fields = {"subject": got.subject, "when": got.when, "text": got.text, "action": got.action,
              "detail": got.detail or ""}
    shown = [f"{name}={value!r}" for name, value in fields.items() if value]
    if got.reference is not None:
        shown.append(f"ref={_reference(got)}")
    if got.all_timers:
        shown.append("all")
    if got.kind == "timer_set" and not got.text:
        shown.append("text=''")
    return f"{got.kind}({', '.join(shown)})"


def _ratio(part: int, whole: int) -> str:
    return f"{part / whole:6.0%}" if whole else "     -"


def kind_table(verdicts: Sequence[Verdict]) -> list[str]:
    """Per kind (and none): how many were expected, returned, right; precision and recall."""
    lines = [f"{'kind':<15}{'expected':>9}{'got':>6}{'right':>7}{'precision':>11}{'recall':>8}"]
    for kind in (*KINDS, "none"):
        expected = sum(v.case.expect == kind for v in verdicts)
        got = sum((v.got.kind if v.got else "none") == kind for v in verdicts)
        right = sum(v.case.expect == kind and v.outcome == "right" for v in verdicts)
        lines.append(f"{kind:<15}{expected:>9}{got:>6}{right:>7}{_ratio(right, got):>11}{_ratio(right, expected):>8}")
    return lines


_TITLES = {"wrong_action": "WRONG ACTIONS (an action nobody asked for, or not the one asked: a side effect)",
           "wrong_lookup": "WRONG LOOKUPS (answered without the model, wrongly; nothing changed)",
           "missed": "MISSES (a plain request left to the model)"}


def mismatch_lines(verdicts: Sequence[Verdict], outcome: Outcome) -> list[str]:
    chosen = [v for v in verdicts if v.outcome == outcome]
    lines = [f"{_TITLES[outcome]}: {len(chosen)}"]
    for v in chosen:
        after = f"   [after: {v.case.after}]" if v.case.after else ""
        why = f" ({v.why})" if v.why and v.got is not None and v.got.kind == v.case.expect else ""
        expected = "" if outcome == "missed" else f"  expected {v.case.expect}"
        lines.append(f"  [{v.case.group}] «{v.case.say}» → {describe(v.got)}{expected}{why}{after}")
    return lines


def report(verdicts: Sequence[Verdict], path: Path, show: str) -> str:
    counts = {outcome: sum(v.outcome == outcome for v in verdicts) for outcome in get_args(Outcome)}
    head = (f"reflex probe {path}: {len(verdicts)} utterances "
            f"({sum(v.case.expect == 'none' for v in verdicts)} for the model)\n"
            f"right {counts['right']}, wrong actions {counts['wrong_action']}, "
            f"wrong lookups {counts['wrong_lookup']}, misses {counts['missed']}")
    sections = [head, "\n".join(kind_table(verdicts))]
    if show in ("wrong", "all"):
        sections += ["\n".join(mismatch_lines(verdicts, "wrong_action")),
                     "\n".join(mismatch_lines(verdicts, "wrong_lookup"))]
    if show in ("missed", "all"):
        sections.append("\n".join(mismatch_lines(verdicts, "missed")))
    return "\n\n".join(sections)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.reflex_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=PROBE_PATH, help="the probe file (TOML)")
    parser.add_argument("--show", choices=("wrong", "missed", "all"), default="wrong",
                        help="which mismatches to list: wrong actions and lookups, misses, or both")
    args = parser.parse_args(argv)
    try:
        cases = load(args.file)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(report([judge(case) for case in cases], args.file, args.show))
    return 0


if __name__ == "__main__":
    sys.exit(main())
