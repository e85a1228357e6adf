"""E6 rules: the history stays in the paired, synchronous shape whatever happens."""
import pytest

from core.trajectory import PARALLEL_MARK, Trajectory, TrajectoryError
from protocol import CallOutcome, Event


def user(text: str) -> Event:
    return Event(event_id=f"u-{text}", kind="user_text", source="user", channel="voice", content=text)


def roles(t: Trajectory) -> list[str]:
    return [m.role for m in t.messages()]


def test_rule1_and_rule2_call_then_its_result():
    t = Trajectory()
    t.record_events(user("find Dune"))
    t.record_assistant("TOOL_CALL: media_search|Dune", call_id="c1", tool="media_search")
    assert t.unpaired_calls() == ["c1"]  # rule 2: partially complete while the tool runs
    with pytest.raises(TrajectoryError, match="c1"):
        t.check()
    t.record_result("c1", CallOutcome(kind="ok", text="3 films"))
    assert roles(t) == ["user", "assistant", "tool"]
    tool_msg = t.messages()[-1]
    assert (tool_msg.name, tool_msg.content) == ("media_search", "3 films")
    assert t.unpaired_calls() == []
    t.check()


def test_rule3_interrupt_placeholder_then_late_result_keeps_one_result_per_call():
    t = Trajectory()
    t.record_events(user("write to Anna"))
    t.record_assistant("TOOL_CALL: contacts_search|Anna", call_id="c1", tool="contacts_search")
    assert t.pending_calls() == [("c1", "contacts_search")]
    t.record_placeholder("c1")
    t.record_events(Event(event_id="i", kind="user_interrupt", source="user", channel="voice",
                          content="first the weather tomorrow"))
    t.record_assistant("Tomorrow: sunny.")
    t.record_result("c1", CallOutcome(kind="ok", text="anna@example.com"))  # the real result, late
    msgs = t.messages()
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "user", "assistant", "user"]
    assert "contacts_search is still running in the background; handling the new event first" in msgs[2].content
    assert msgs[3].content == "[User interrupted] first the weather tomorrow"
    assert msgs[5].content.startswith("[Tool result from contacts_search (late result")
    assert "anna@example.com" in msgs[5].content
    assert sum(m.role == "tool" for m in msgs) == 1
    assert t.call_state("c1") == "late"
    t.check()


def test_late_result_arriving_as_a_queued_event_is_labelled_late():
    t = Trajectory()
    t.record_assistant("TOOL_CALL: media_search|Dune", call_id="c1", tool="media_search")
    t.record_placeholder("c1")
    late = Event(event_id="r", kind="tool_result", source="media", channel="tool",
                 content="3 films", data={"call_id": "c1"})
    t.record_events([late, user("and the sequel?")])
    text = t.messages()[-1].content
    assert "[Unprocessed event 1/2] Tool result from media_search (late result" in text
    assert t.call_state("c1") == "late"
    t.check()


def test_rule4_discarded_generation_leaves_no_trace():
    t = Trajectory()
    t.record_events(user("play Dune"))
    # the loop cancels the stream and records nothing of it; the interrupt comes next
    t.record_events(Event(event_id="s", kind="user_interrupt", source="user", channel="voice", content="stop"))
    assert roles(t) == ["user", "user"]
    t.check()


def test_nothing_may_come_between_a_call_and_its_result():
    t = Trajectory()
    t.record_assistant("TOOL_CALL: media_search|Dune", call_id="c1", tool="media_search")
    with pytest.raises(TrajectoryError, match="placeholder"):
        t.record_events(user("hello"))
    with pytest.raises(TrajectoryError, match="c1"):
        t.record_assistant("again")
    t.record_parallel("what time is it?", "14:05")  # held back, not inserted
    assert roles(t) == ["assistant"]
    t.record_result("c1", CallOutcome(kind="ok", text="3 films"))
    assert roles(t) == ["assistant", "tool", "user"]
    t.check()


def test_parallel_answer_is_marked():
    t = Trajectory()
    message = t.record_parallel("what time is it?", "It is 14:05.")
    assert message.content.startswith(PARALLEL_MARK)
    assert "what time is it?" in message.content and "It is 14:05." in message.content
    assert PARALLEL_MARK == "[Handled in parallel with the main task]"


def test_misuse_gets_clear_errors():
    t = Trajectory()
    with pytest.raises(TrajectoryError, match="unknown call id 'zz'"):
        t.record_result("zz", CallOutcome(kind="ok", text="x"))
    t.record_assistant("TOOL_CALL: media_info|1", call_id="c1", tool="media_info")
    t.record_result("c1", CallOutcome(kind="ok", text="info"))
    with pytest.raises(TrajectoryError, match="already has its result"):
        t.record_result("c1", CallOutcome(kind="ok", text="info again"))
    with pytest.raises(TrajectoryError, match="already used"):
        t.record_assistant("x", call_id="c1", tool="media_info")
    with pytest.raises(TrajectoryError, match="only a call answered by a placeholder"):
        t.record_late_result("c1", "x")
    t.check()


def test_check_catches_a_tool_message_slipped_in_from_outside():
    t = Trajectory()
    t.record_assistant("TOOL_CALL: media_info|1", call_id="c1", tool="media_info")
    t.record_result("c1", CallOutcome(kind="ok", text="info"))
    from protocol import ChatMessage
    t._messages.append(ChatMessage(role="tool", content="forged", name="media_info"))
    with pytest.raises(TrajectoryError, match="answering no call"):
        t.check()


def test_history_is_plain_dicts_for_session_info():
    t = Trajectory()
    t.record_events(user("hi"))
    assert t.as_dicts() == [{"role": "user", "content": "[User said] hi", "name": ""}]
    assert len(t) == 1
