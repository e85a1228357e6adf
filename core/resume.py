"""A session continued after a restart: what the journal kept in, the conversation set to go on.
Pure; the SessionActor runs it on every session it reads back, `run.py eval` on the scenarios
that crash mid-turn (so the texts a model reads after a crash are measured, not assumed)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, NamedTuple, Sequence

import protocol as p
from core.trajectory import CUT_BY_RESTART, Recorded

if TYPE_CHECKING:
    from core.conversation import Conversation

RESUME_KIND = "resume"  # an event that only makes a cut turn go on: the model never sees it
RESTART_NOTICE = "The runtime restarted while this turn was in progress; continue it where it stopped."


class Resumed(NamedTuple):
    event: p.Event | None  # what continues the cut turn (its TurnDone covers `cut` too); None: nothing was cut
    cut: list[str]  # accepted events already in the history: the turn the crash cut
    waiting: list[p.Event]  # accepted events that never reached the history: queued again


def resume(conversation: Conversation, entries: Sequence[Recorded], open_events: Iterable[p.Event],
           now: float) -> Resumed:
    """`conversation` restored from `entries`; `open_events`: the accepted events no TurnDone
    closed. A call the crash cut gets a result saying so; a call answered "still running" gets
    that as its late result (the task that waited for it died); a cut turn goes on as the current
    turn - after a notice of the restart when a call was cut, else as if the lost step were
    simply taken again (a `resume` event, never recorded) -; the waiting events follow it."""
    open_events = list(open_events)
    taken = {event_id for entry in entries for event_id in entry.event_ids}
    cut = [e.event_id for e in open_events if e.event_id in taken]
    waiting = [e for e in open_events if e.event_id not in taken]
    trajectory = conversation.trajectory
    calls = trajectory.pending_calls()
    for call_id, _tool in calls:
        trajectory.record_cut(call_id)
    for call_id, tool in trajectory.placeholder_calls():
        trajectory.record_late_result(call_id, CUT_BY_RESTART.format(tool=tool))
    event = None
    if cut or calls:
        # run.py eval's restart scenarios: told of the restart after a cut call, the model makes
        # it again (not told, it does not); with the turn's results intact, a notice made it play
        # the film it was asked to find, where the turn simply going on, as if the step had not
        # been lost, answers
        event = p.Event(event_id=f"restart-{p.new_id()}", kind="system" if calls else RESUME_KIND,
                        source="runtime", channel="system", content=RESTART_NOTICE, ts=now)
        conversation.queue.append(event)
        conversation.resumed_turn_start = _turn_start(entries, set(cut))
        conversation.resuming = (event.event_id, cut)
    conversation.open_events.update(cut)
    conversation.open_events.update(e.event_id for e in waiting)
    conversation.queue.extend(waiting)
    return Resumed(event, cut, waiting)


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
