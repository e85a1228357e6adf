"""A call's outcome is a value (protocol.CallOutcome) from whoever answered the call to the prompt
and the journal: the session reads its kind, the model reads its text, byte for byte as before;
nothing parses a result's text to learn what became of the call (issue 37).

One conversation (core.conversation) on a scripted model, with toolset executors that answer as
the test says, for each kind: what the trajectory records, what the next request shows."""
from __future__ import annotations

import sqlite3
from contextlib import asynccontextmanager
from typing import Callable

import anyio
import msgspec
import pytest

import protocol as p
from core.background import CANCELLED_TEXT, STARTED_TEXT
from core.config import load_config
from core.conversation import Conversation, SessionSettings
from core.toolsets import ToolsetRegistry, executed
from core.trajectory import Recorded, Trajectory
from storage import journal
from toolsets.timers import TOOLSET as TIMERS

NOTES = p.ToolsetSpec(name="notes", summary="notes kept for the user", tools=[
    p.ToolSpec(name="notes_find", summary="find notes", args=[p.ArgSpec(name="query")], read_only=True),
    p.ToolSpec(name="notes_add", summary="add a note", args=[p.ArgSpec(name="text")]),
    p.ToolSpec(name="notes_sync", summary="sync the notes", long_running=True),
])
AFTER_RESULT = "[System notice] Above is the result of your last tool call."


class Ports:
    """The conversation's ports: a model that makes `call` and then says what it read, and
    executors that answer from `answers` (a tool missing there runs until cancelled)."""

    def __init__(self, call: str, answers: dict[str, p.ToolOutcome]):
        self.call, self.answers = call, answers
        self.requests: list[list[p.ChatMessage]] = []
        self.invoked: list[p.ToolInvoke] = []
        self.turns_done = 0
        self.entries: list[Recorded] = []  # what the journal would hold
        self.changed = anyio.Event()
        self.released = anyio.Event()

    def reply(self, messages: list[p.ChatMessage]) -> str:
        last = [m for m in messages if m.role != "system"][-1]
        if last.role == "tool" or last.content.startswith("[System notice]"):
            read = next((m.content for m in reversed(messages) if m.role == "tool"), "nothing\n").splitlines()[0]
            return "Answer: " + read.replace("TOOL_CALL:", "call")  # S8's text names the call to make
        if "стоп" in last.content or "Tool result" in last.content:
            return "Done."
        return f"TOOL_CALL: {self.call}"

    async def skills(self, session: str, phone_key: str) -> p.SkillIndex:
        return p.SkillIndex(version="v1", entries=[])

    async def read_skill(self, session: str, phone_key: str, name: str) -> p.SkillBody:
        return p.SkillBody(name=name, found=False, text=f"skill {name} not found", version="v1")

    @asynccontextmanager
    async def generate(self, session, messages, tools, max_tokens, arg_choices=None):
        self.requests.append(list(messages))
        reply = self.reply(messages)

        async def pieces():
            yield reply

        yield pieces()

    async def invoke(self, session: str, call: p.ToolInvoke) -> p.ToolOutcome:
        self.invoked.append(call)
        self._changed()
        if call.tool not in self.answers:
            await self.released.wait()
            return p.ToolOutcome(call_id=call.call_id, ok=True, text="synced")
        return self.answers[call.tool]

    def cancel_tool(self, session: str, call_id: str) -> None:
        self.released.set()

    def send(self, session: str, body: p.Msg) -> None:
        if isinstance(body, p.TurnDone):
            self.turns_done += 1
            self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        with anyio.fail_after(10):
            while not condition():
                await self.changed.wait()


def said(text: str, n: int = 1) -> p.Event:
    return p.Event(event_id=f"e{n}", kind="user_text", source="user", channel="speech", content=text)


@asynccontextmanager
async def conversation(call: str, answers: dict[str, p.ToolOutcome] | None = None, *, notes_on: bool = True):
    ports = Ports(call, answers or {})
    config = msgspec.structs.replace(load_config(None, env={}).session, frame=False)  # the model's own steps
    async with anyio.create_task_group() as tasks:
        settings = SessionSettings(registry=ToolsetRegistry([NOTES, TIMERS.spec]), ports=ports,
                                   spawn=tasks.start_soon, config=config)
        conv = Conversation("s1", settings)
        conv.trajectory.sink = ports.entries.append
        if notes_on:
            conv.activity.enable("notes")
        yield conv, ports
        tasks.cancel_scope.cancel()


async def one_turn(call: str, answers: dict[str, p.ToolOutcome] | None = None, words: str = "find and add milk",
                   **kwargs) -> tuple[Conversation, Ports]:
    async with conversation(call, answers, **kwargs) as (conv, ports):
        conv.submit(said(words))
        await ports.until(lambda: ports.turns_done == 1)
    return conv, ports


def the_result(conv: Conversation) -> tuple[p.ChatMessage, str]:
    messages = conv.trajectory.messages()
    index = next(i for i, m in enumerate(messages) if m.role == "tool")
    return messages[index], conv.trajectory.kind_at(index)


def after_the_call(ports: Ports) -> list[p.ChatMessage]:
    """The request that followed the call: from its result on."""
    request = ports.requests[1]
    return request[next(i for i, m in enumerate(request) if m.role == "tool"):]


def found(text: str) -> p.ToolOutcome:
    return p.ToolOutcome(call_id="x", ok=True, text=text)


# ---- each kind, from where the call is answered to the next request -----------------------------
async def test_a_result_that_worked_is_ok_and_the_model_is_asked_to_answer_from_it():
    conv, ports = await one_turn("notes_find|milk", {"notes_find": found("2 notes: milk, oat milk")})
    result, kind = the_result(conv)
    assert (kind, result.content) == ("ok", "2 notes: milk, oat milk")
    shown = after_the_call(ports)
    assert shown[0].content == "2 notes: milk, oat milk" and shown[1].content.startswith(AFTER_RESULT)
    assert [entry.outcome for entry in ports.entries if entry.role == "tool"] == ["ok"]


async def test_an_executor_failure_is_an_error_the_model_reads_after_tool_error():
    failed = p.ToolOutcome(call_id="x", ok=False, text="tool notes_add failed: disk full; try again")
    conv, ports = await one_turn("notes_add|milk", {"notes_add": failed})
    result, kind = the_result(conv)
    assert (kind, result.content) == ("error", "tool error: tool notes_add failed: disk full; try again")
    assert after_the_call(ports)[0].content == result.content


async def test_an_error_after_the_enabled_on_the_way_note_is_still_an_error():
    failed = p.ToolOutcome(call_id="x", ok=False, text="disk full")
    conv, ports = await one_turn("notes_add|milk", {"notes_add": failed}, notes_on=False)
    result, kind = the_result(conv)
    assert (kind, result.content) == ("error", "(toolset notes was enabled on the way)\ntool error: disk full")


@pytest.mark.parametrize("call,text", [
    ("notes_find|", "arguments invalid for notes_find; expected: notes_find|query"),
    ("notes_erase|all", "tool notes_erase does not exist; toolset notes has: notes_find, notes_add, notes_sync"),
])
async def test_a_call_that_cannot_be_bound_is_invalid_and_nothing_runs(call, text):
    conv, ports = await one_turn(call, {})
    result, kind = the_result(conv)
    assert (kind, result.content) == ("invalid", text)
    assert ports.invoked == []


async def test_a_call_s8_did_not_run_is_not_executed_and_gets_no_nudge_to_answer():
    conv, ports = await one_turn("notes_add", {}, notes_on=False)  # no text: invalid, so not run on the way
    result, kind = the_result(conv)
    assert kind == "not_executed" and "The call notes_add has NOT been executed yet" in result.content
    assert not any(m.content.startswith(AFTER_RESULT) for m in after_the_call(ports))
    assert ports.invoked == []


async def test_a_call_the_user_did_not_ask_for_is_refused():
    # (not small talk, which is offered no tool at all: the refusal is the guard's, not the grammar's)
    conv, ports = await one_turn("timers_set|in 5 minutes; позвонить", {}, words="что у меня в заметках?")
    result, kind = the_result(conv)
    assert kind == "refused" and result.content.startswith("not executed (not_requested): timers_set was not run")
    assert len(conv.timers) == 0


async def test_a_session_tool_that_fails_says_so_by_its_kind_not_its_words():
    conv, ports = await one_turn("timers_set|someday; чай", {}, words="поставь таймер на someday: чай")
    result, kind = the_result(conv)
    assert kind == "error" and "\nTimer not set: " in result.content  # after "(toolset timers was enabled …)"


async def test_a_long_running_call_is_answered_by_its_placeholder_then_its_result_comes_late():
    async with conversation("notes_sync", {}) as (conv, ports):
        conv.submit(said("sync my notes"))
        await ports.until(lambda: ports.turns_done == 1)
        result, kind = the_result(conv)
        task_id = conv.runs.in_background()[0].task_id
        assert (kind, result.content) == ("placeholder", STARTED_TEXT.format(tool="notes_sync", task_id=task_id))
        assert any(m.content.startswith(AFTER_RESULT) for m in after_the_call(ports))
        ports.released.set()
        await ports.until(lambda: ports.turns_done == 2)
        late = conv.trajectory.messages()[-2]  # the real result: an event, not a second answer to the call
        assert (late.role, "synced" in late.content, conv.trajectory.awaiting_late_results()) == ("user", True, False)


async def test_a_call_the_user_stops_is_cancelled():
    async with conversation("notes_sync", {}) as (conv, ports):
        conv.s.registry = ToolsetRegistry([p.ToolsetSpec(name="notes", summary="notes", tools=[
            p.ToolSpec(name="notes_sync", summary="sync the notes")]), TIMERS.spec])  # waited for, not long-running
        conv.submit(said("sync my notes"))
        await ports.until(lambda: len(ports.invoked) == 1)
        conv.submit(said("стоп", 2))
        await ports.until(lambda: ports.turns_done == 2)
        result, kind = the_result(conv)
        assert (kind, result.content) == ("cancelled", CANCELLED_TEXT)


def test_an_executors_answer_becomes_the_text_the_model_always_read():
    assert executed(found("3 films")) == p.CallOutcome(kind="ok", text="3 films")
    assert executed(p.ToolOutcome(call_id="x", ok=False, text="no title with id “x”")) == p.CallOutcome(
        kind="error", text="tool error: no title with id “x”")


async def test_a_cut_result_is_read_on_by_the_offset_of_the_invoke_not_an_argument():
    conv, ports = await one_turn("notes_find|milk; offset=4000", {"notes_find": found("…the rest")})
    assert [(call.args, call.offset) for call in ports.invoked] == [({"query": "milk"}, 4000)]


# ---- the journal ----------------------------------------------------------------------------
def test_the_kind_is_what_was_recorded_never_read_from_the_text():
    trajectory = Trajectory(sink=(entries := []).append)
    trajectory.record_assistant("TOOL_CALL: notes_find|tool error", call_id="c1", tool="notes_find")
    trajectory.record_result("c1", p.CallOutcome(kind="ok", text="tool error: a note titled so"))
    restored = Trajectory.restore(entries)
    assert restored.last_result() == (trajectory.messages()[-1], "ok")


OLD_ENTRIES = """CREATE TABLE sessions (session TEXT PRIMARY KEY, phone_key TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL, last_active REAL NOT NULL, next_due REAL, state BLOB);
CREATE TABLE entries (id INTEGER PRIMARY KEY, session TEXT NOT NULL, ts REAL NOT NULL, role TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '', content TEXT NOT NULL DEFAULT '', call_id TEXT NOT NULL DEFAULT '',
    call_state TEXT NOT NULL DEFAULT '', tool TEXT NOT NULL DEFAULT '', event_ids TEXT NOT NULL DEFAULT '');
"""
OLD_RESULTS = [  # (what an old runtime wrote, the kind it meant)
    ("3 films", "done", "ok"),
    ("tool error: tool media_info failed: timeout; try again", "done", "error"),
    ("(toolset media was enabled on the way)\ntool error: no title with id “x”", "done", "error"),
    ("arguments invalid for media_info; expected: media_info|id", "done", "invalid"),
    ("tool media_rewind does not exist; toolset media has: media_search", "done", "invalid"),
    ("Toolset media activated. Registry: media_search|query. The call media_search has NOT been executed yet.", "done",
     "not_executed"),
    ("not executed (not_requested): timers_set was not run: the user did not ask", "done", "refused"),
    ("Timer not set: cannot read 'someday'", "done", "error"),
    ("cancelled by the user", "done", "cancelled"),
    ("tool media_play was cut off by a runtime restart: its result is lost. Call it again if it is still needed.",
     "done", "error"),
    ("tool media_play started in the background as task ab12cd. Its result is NOT available yet", "placeholder",
     "placeholder"),
]


def test_a_journal_written_before_kinds_were_kept_loads_with_the_kinds_its_texts_meant(tmp_path):
    path = tmp_path / "journal.sqlite"
    old = sqlite3.connect(path)
    old.executescript(OLD_ENTRIES)
    old.execute("INSERT INTO sessions VALUES ('s1', '', 1, 1, NULL, NULL)")
    for n, (content, state, _kind) in enumerate(OLD_RESULTS):
        old.execute("INSERT INTO entries (session, ts, role, content, call_id, tool) VALUES ('s1', 1, 'assistant', "
                    "'TOOL_CALL: x', ?, 'media_info')", (f"c{n}",))
        old.execute("INSERT INTO entries (session, ts, role, name, content, call_id, call_state) "
                    "VALUES ('s1', 1, 'tool', 'media_info', ?, ?, ?)", (content, f"c{n}", state))
    old.commit()
    old.close()

    conn = journal.connect(path)
    try:
        stored = journal.load_session(conn, "s1")
        trajectory = Trajectory.restore(stored.entries)
        assert [trajectory.kind_at(2 * n + 1) for n in range(len(OLD_RESULTS))] == [k for _, _, k in OLD_RESULTS]
        # written on, the journal keeps the kind of what comes now
        journal.insert_entry(conn, "s1", 2, Recorded(role="tool", content="Timer not set", call_id="c99", outcome="ok"))
        assert journal.load_session(conn, "s1").entries[-1].outcome == "ok"
    finally:
        conn.close()
