"""core.resume: how a turn the crash cut goes on. Told of the restart only when a call was cut
(its result is lost: the model must make it again); else the lost step is simply taken again;
either way the cut turn is the current turn of the next request."""
import protocol as p
from core.config import load_config
from core.conversation import Conversation, SessionSettings
from core.resume import RESTART_NOTICE, RESUME_KIND, resume
from core.toolsets import ToolsetRegistry
from core.trajectory import CUT_BY_RESTART, Trajectory


def _event(event_id: str, text: str) -> p.Event:
    return p.Event(event_id=event_id, kind="user_text", source="user", channel="speech", content=text)


def _recorded(*, answered: bool) -> list:
    """An earlier turn, then a media search the crash cut (running, or answered)."""
    entries = []
    trajectory = Trajectory(sink=entries.append)
    trajectory.record_events([_event("e0", "hello")])
    trajectory.record_assistant("Hi!")
    trajectory.record_events([_event("e1", "find inception")])
    trajectory.record_assistant("TOOL_CALL: media_search|inception", call_id="c1", tool="media_search")
    if answered:
        trajectory.record_result("c1", p.CallOutcome(kind="ok", text="inception-2010 — Inception (2010)"))
    return entries


def _session(entries):
    """A conversation restored from `entries`, as the SessionActor builds it; its loop only noted."""
    started = []
    settings = SessionSettings(registry=ToolsetRegistry([]), ports=None, config=load_config(None, env={}).session,
                               spawn=lambda task, *args, **kwargs: started.append(task), session_toolsets={})
    conversation = Conversation("s", settings)
    conversation.trajectory = Trajectory.restore(entries, entries.append)
    return conversation, started


def test_a_cut_call_gets_its_lost_result_and_the_turn_a_notice_of_the_restart():
    entries = _recorded(answered=False)
    session, started = _session(entries)
    point = resume(session.trajectory, entries, [_event("e1", "find inception"), _event("e2", "and its year")], now=5.0)
    assert len(session.trajectory) == 4 and not session.queue, "resume only says where to go on"
    assert (point.cut, [e.event_id for e in point.waiting]) == (("e1",), ["e2"])
    session.resume_at(point)
    assert session.trajectory.messages()[-1].content == CUT_BY_RESTART.format(tool="media_search")
    assert [e.kind for e in session.view().queue] == ["system", "user_text"] and session.queue[0] is point.event
    assert point.event.content == RESTART_NOTICE
    assert session.resumed_turn_start == 2  # "find inception": the turn the crash cut
    assert len(started) == 1 and session.running  # the cut turn goes on at once


def test_a_turn_cut_with_its_results_intact_goes_on_with_an_event_the_history_never_records():
    entries = _recorded(answered=True)
    session, _started = _session(entries)
    point = resume(session.trajectory, entries, [_event("e1", "find inception")], now=5.0)
    session.resume_at(point)
    assert point.event.kind == RESUME_KIND and session.queue == [point.event]
    assert len(session.trajectory) == 5 and session.resumed_turn_start == 2
    nothing, started = _session([])
    point = resume(nothing.trajectory, [], [], now=5.0)
    nothing.resume_at(point)
    assert point.event is None and nothing.resumed_turn_start is None and not started
