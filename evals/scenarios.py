"""Eval scenarios as data, and how one played turn is judged.

A scenario is a short conversation (a few user turns) with expectations per turn, in one of three
files (docs/evals.md): `evals/dev.toml` (tune texts and rules on it), `evals/test.toml` (report it,
never tune on it) and `evals/traps.toml` (turns whose only right outcome is no side effect). Judging is by outcome, never by wording: the tools the model had to
call (in order), what the final display must mention, what must not happen (a raw TOOL_CALL on
the glasses, a forbidden tool, running out of steps).
"""
from __future__ import annotations

from pathlib import Path

import msgspec

from core.echo import echoed, refused

SETS = {name: Path(__file__).with_name(f"{name}.toml") for name in ("dev", "test", "traps")}
SETS["discovery"] = Path(__file__).with_name("discovery") / "scenarios.toml"  # issue 53: over the 120-tool hub
DEFAULT_SCENARIOS = SETS["dev"]
RESTART_POINTS = ("", "tool", "answer", "toolsets", "toolsets-lost")


class Turn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    say: str
    calls: list[str] = []  # required, in this order: "tool" or "tool|text the arguments contain"
    mentions: list[str] = []  # the final display mentions at least one of these (case-insensitive)
    forbid: list[str] = []  # tools that must not be called in this turn
    advance_s: float = 0.0  # move the clock this far before the turn (timers fire, toolsets expire)
    while_busy: str = ""  # said while the model works on `say` (a correction)
    # the runtime crashes mid-turn and comes back from what the journal holds (core.resume):
    # "tool" while the turn's first toolset call runs (its result is lost), "answer" as the model
    # starts the reply after that call's result; `calls` then count from the restart on
    restart_at: str = ""


class Scenario(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    id: str
    lang: str
    tags: list[str] = []
    skills: dict[str, str] = {}  # user skills the scenario installs: name -> SKILL.md text
    turns: list[Turn]


class ScenarioFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    scenario: list[Scenario]


def load_scenarios(path: Path | str = DEFAULT_SCENARIOS) -> list[Scenario]:
    """Every scenario of a TOML file; a malformed file is a ValueError naming the problem."""
    try:
        scenarios = msgspec.toml.decode(Path(path).read_bytes(), type=ScenarioFile).scenario
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"scenarios {path}: {exc}") from None
    seen: set[str] = set()
    for scenario in scenarios:
        if scenario.id in seen:
            raise ValueError(f"scenarios {path}: id {scenario.id!r} is used twice")
        seen.add(scenario.id)
        for number, turn in enumerate(scenario.turns, start=1):
            if turn.restart_at not in RESTART_POINTS:
                raise ValueError(f"scenarios {path}: {scenario.id} turn {number}: restart_at must be one of "
                                 f"{', '.join(repr(r) for r in RESTART_POINTS if r)}, not {turn.restart_at!r}")
    return scenarios


class PlayedTurn(msgspec.Struct, kw_only=True):
    """What happened in one turn: every call the model made, every display, the final one."""

    calls: list[tuple[str, str]]  # (tool, raw args) in order, invisible ones included
    displays: list[str]
    final: str
    steps: int
    gave_up: bool  # the turn ran out of steps, or the model was unavailable


def _call_matches(expected: str, call: tuple[str, str]) -> bool:
    tool, _, needle = expected.partition("|")
    return call[0] == tool and needle.lower() in call[1].lower()


def judge_turn(turn: Turn, played: PlayedTurn) -> list[str]:
    """Why the turn failed; empty when it passed."""
    problems = []
    position = 0
    for expected in turn.calls:
        while position < len(played.calls) and not _call_matches(expected, played.calls[position]):
            position += 1
        if position == len(played.calls):
            problems.append(f"no call {expected} (calls: {_calls_text(played.calls)})")
            break
        position += 1
    for tool in turn.forbid:
        if any(name == tool for name, _ in played.calls):
            problems.append(f"called {tool}, which it must not")
    if turn.mentions and not any(word.lower() in played.final.lower() for word in turn.mentions):
        problems.append(f"final display {played.final[:80]!r} mentions none of {turn.mentions}")
    if refused(played.final):  # even after a call that worked: never a pass
        problems.append(f"final display {played.final[:80]!r} is a canned refusal")
    if played.final and echoed(played.final, turn.say):
        problems.append(f"final display {played.final[:80]!r} only repeats the request")
    leaked = next((text for text in played.displays if "TOOL_CALL" in text), None)
    if leaked is not None:
        problems.append(f"a TOOL_CALL line reached the glasses: {leaked[:160]!r}")
    if played.gave_up:
        problems.append(f"gave up after {played.steps} steps: {played.final[:60]!r}")
    return problems


def _calls_text(calls: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name}|{args}" for name, args in calls) or "none"
