"""A session continued after a restart: what the journal kept in, the conversation set to go on.
Pure: `resume` reads the restored history and the journal's open events and returns a
`ResumePoint`, a value the conversation applies (`Conversation.resume_at`). The SessionActor runs
it on every session it reads back, `run.py eval` on the scenarios that crash mid-turn (so the
texts a model reads after a crash are measured, not assumed)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import protocol as p
from core.trajectory import CUT_BY_RESTART, Recorded, Trajectory

RESUME_KIND = "resume"  # an event that only makes a cut turn go on: the model never sees it
RESTART_NOTICE = "The runtime restarted while this turn was in progress; continue it where it stopped."


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a session read back after a restart goes on from."""

    event: p.Event | None  # what continues the cut turn (its TurnDone covers `cut` too); None: nothing was cut
    cut: tuple[str, ...]  # accepted events already in the history: the turn the crash cut
    waiting: tuple[p.Event, ...]  # accepted events that never reached the history: queued again
    cut_calls: tuple[str, ...] = ()  # calls the crash cut: each gets the result saying so
    late_results: tuple[tuple[str, str], ...] = ()  # (call id, late result) of calls answered "still running"
    turn_start: int | None = None  # where in the history the cut turn begins


def resume(trajectory: Trajectory, entries: Sequence[Recorded], open_events: Iterable[p.Event],
           now: float) -> ResumePoint:
    """Where a session goes on: `trajectory` is its history restored from `entries`;
    `open_events`: the accepted events no TurnDone closed. A call the crash cut gets a result
    saying so; a call answered "still running" gets that as its late result (the task that waited
    for it died); a cut turn goes on as the current turn - after a notice of the restart when a
    call was cut, else as if the lost step were simply taken again (a `resume` event, never
    recorded) -; the waiting events follow it."""
    open_events = list(open_events)
    taken = {event_id for entry in entries for event_id in entry.event_ids}
    cut = tuple(e.event_id for e in open_events if e.event_id in taken)
    waiting = tuple(e for e in open_events if e.event_id not in taken)
    calls = tuple(call_id for call_id, _tool in trajectory.pending_calls())
    late = tuple((call_id, CUT_BY_RESTART.format(tool=tool)) for call_id, tool in trajectory.placeholder_calls())
    if not (cut or calls):
        return ResumePoint(None, cut, waiting, calls, late)
    # run.py eval's restart scenarios: told of the restart after a cut call, the model makes
    # it again (not told, it does not); with the turn's results intact, a notice made it play
    # the film it was asked to find, where the turn simply going on, as if the step had not
    # been lost, answers
    event = p.Event(event_id=f"restart-{p.new_id()}", kind="system" if calls else RESUME_KIND,
                    source="runtime", channel="system", content=RESTART_NOTICE, ts=now)
    return ResumePoint(event, cut, waiting, calls, late, _turn_start(entries, set(cut)))


def _turn_start(entries: Sequence[Recorded], cut: set[str]) -> int | None:
    """Where in the restored history the cut turn begins: its first message holding a cut event
    (Trajectory.restore makes a message of every entry with a role)."""
    index = 0
    for entry in entries:
        if not entry.role:
            continue
        if cut.intersection(entry.event_ids):
            return index
        index += 1
    return None
