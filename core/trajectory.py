"""A session's history, kept in the synchronous shape a chat model was trained on (E6, S9).

Models expect every tool call to be followed at once by its result. Real sessions are
asynchronous: the user interrupts while a tool runs, results arrive late, light questions are
answered in parallel. The five rules of E6 reconcile the two:

1. `record_assistant` records the model's message (with its tool call) as soon as it returns.
2. `record_result` records the tool's result when the tool finishes, right after its call.
3. An interrupt while a tool runs: `record_placeholder` answers the call with "still running",
   then the interrupt is recorded and the model called again. The real result comes later as
   a new, labelled event (`record_late_result`, or a tool_result event in `record_events`),
   never as a second answer to the call.
4. An interrupt while the model generates: the partial generation is discarded. There is no
   method for it on purpose: the loop simply never records the cancelled text.
5. Non-interrupting events wait in the loop's queue; `record_events` appends a whole batch.

Nothing may come between a call and its result, so text that arrives while a call is open
(a parallel answer, a late result) is held back and appended right after the call is answered.
The history is never cleaned (S9).

Every result carries its outcome's kind (protocol.CallOutcome) next to its text: the runtime
asks `last_result`/`kind_at` what became of a call, never the text; and its typed payload when
its tool gave one (protocol.results): `data_at` says what a result showed (a search's titles, a
timer set), and the journal keeps it, so "the second one" still resolves after a restart.

Persistence: a `sink` (the session's journal) is told every message as it lands in the history
and every change of a call's state, as `Recorded` entries; `Trajectory.restore` rebuilds the
same history, calls, states and outcome kinds from them after a restart.
"""
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import msgspec

from core.activity import ENABLED_ON_THE_WAY, NOT_EXECUTED
from core.background import CANCELLED_TEXT, UNFINISHED_TEXT
from core.batching import format_batch
from core.fence import fence
from core.intent import REFUSED
from protocol import CallOutcome, ChatMessage, Event
from protocol.results import ToolData
from protocol.tools import OutcomeKind

PLACEHOLDER_TEMPLATE = (
    "tool {tool} is still running in the background; handling the new event first. "
    "Its result is NOT available yet: do not assume one. It will arrive later as a separate event."
)
PARALLEL_MARK = "[Handled in parallel with the main task]"
LATE_CONTEXT = "late result of an earlier call that was answered 'still running'"
CUT_BY_RESTART = ("tool {tool} was cut off by a runtime restart: its result is lost. "
                  "Call it again if it is still needed.")

CallState = Literal["pending", "done", "placeholder", "late"]
_PENDING, _DONE, _PLACEHOLDER, _LATE = "pending", "done", "placeholder", "late"


class TrajectoryError(ValueError):
    """The session loop broke an E6 rule (e.g. recorded an event between a call and its result)."""


class Recorded(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One journal entry: a message as it landed in the history (role set), or a call's new state
    (role empty). call_id/call_state pair calls with results; event_ids name the events a user
    batch holds (so a restart knows which accepted events were already taken); `outcome`: the
    kind of a result's outcome (None: not a result, or a journal written before kinds were kept);
    `data`: a result's typed payload (None: its tool gave none, or a journal written before)."""

    role: Literal["", "system", "user", "assistant", "tool"] = ""
    content: str = ""
    name: str = ""
    call_id: str = ""
    call_state: Literal["", "pending", "done", "placeholder", "late"] = ""
    tool: str = ""
    event_ids: list[str] = []
    outcome: OutcomeKind | None = None
    data: ToolData | None = None

    def message(self) -> ChatMessage:
        return ChatMessage(role=self.role, content=self.content, name=self.name)


class _Call:
    """Bookkeeping of one tool call: where it was asked, where it was answered, and how."""

    __slots__ = ("tool", "asked_at", "answered_at", "state")

    def __init__(self, tool: str, asked_at: int) -> None:
        self.tool = tool
        self.asked_at = asked_at
        self.answered_at = -1
        self.state: CallState = _PENDING


class Trajectory:
    """The list of ChatMessages the LLM sees (roles user / assistant / tool), with E6 rules."""

    __slots__ = ("_messages", "_chars", "_calls", "_called", "_open", "_held", "_taken_at", "_kinds", "_data", "sink")

    def __init__(self, sink: Callable[[Recorded], None] | None = None) -> None:
        self._messages: list[ChatMessage] = []
        self._chars: list[int] = [0]  # _chars[i]: the content length of _messages[:i] (the fold's sizes)
        self._calls: dict[str, _Call] = {}
        self._called: dict[str, None] = {}  # every tool name a call used (called_tools); a dict: an empty set is 216 bytes
        self._open: list[str] = []  # calls asked but not yet answered, in order
        self._held: list[ChatMessage] = []  # side messages waiting for the open call to close
        self._taken_at: dict[str, int] = {}  # event id -> the message that holds it (answer_to)
        self._kinds: dict[int, OutcomeKind] = {}  # a result's index -> its outcome's kind
        self._data: dict[int, ToolData] = {}  # a result's index -> its typed payload, when it has one
        self.sink = sink  # told every entry as it is recorded (the journal); None: memory only

    @classmethod
    def restore(cls, entries: Iterable[Recorded], sink: Callable[[Recorded], None] | None = None) -> "Trajectory":
        """The history a sink was told, with its calls and their states, as it was then."""
        trajectory = cls()
        for entry in entries:
            call = trajectory._calls.get(entry.call_id) if entry.call_id else None
            if not entry.role:
                if call is not None:
                    call.state = entry.call_state
                continue
            if entry.role == "assistant" and entry.call_id and entry.tool:
                trajectory._calls[entry.call_id] = _Call(entry.tool, len(trajectory._messages))
                trajectory._called[entry.tool] = None
                trajectory._open.append(entry.call_id)
            elif entry.role == "tool" and call is not None:
                call.state = entry.call_state or _DONE
                call.answered_at = len(trajectory._messages)
                if entry.call_id in trajectory._open:
                    trajectory._open.remove(entry.call_id)
                trajectory._kinds[call.answered_at] = entry.outcome or journaled_kind(entry.content, call.state)
                if entry.data is not None:
                    trajectory._data[call.answered_at] = entry.data
            for event_id in entry.event_ids:
                trajectory._taken_at[event_id] = len(trajectory._messages)
            trajectory._messages.append(message := entry.message())
            trajectory._chars.append(trajectory._chars[-1] + len(message.content))
        trajectory.sink = sink
        return trajectory

    # --- reading ---------------------------------------------------------------------------
    def messages(self) -> list[ChatMessage]:
        """The history for the next LLM request (a shallow copy; held-back text excluded)."""
        return list(self._messages)

    def results_since(self, start: int) -> list[tuple[str, str, OutcomeKind]]:
        """(tool, result, outcome kind) of the calls answered from `start` on (a turn's own)."""
        return [(m.name or "", m.content, self._kinds.get(start + i, "ok"))
                for i, m in enumerate(self._messages[start:]) if m.role == "tool"]

    def data_since(self, start: int) -> list[ToolData | None]:
        """The payloads of the results `results_since(start)` lists, in the same order."""
        return [self._data.get(start + i) for i, m in enumerate(self._messages[start:]) if m.role == "tool"]

    def chars(self) -> list[int]:
        """Running totals of the history's content lengths: [i] is that of messages()[:i], so the
        size of any run of it costs two lookups, not a pass (core/fold.py, every step). Read only."""
        return self._chars

    def as_dicts(self) -> list[dict[str, str]]:
        """The history as plain dicts, e.g. for `protocol.SessionInfo.history`."""
        return [msgspec.structs.asdict(m) for m in self._messages]

    def __len__(self) -> int:
        return len(self._messages)

    def last(self) -> ChatMessage | None:
        """The message the history ends with (no copy of the history)."""
        return self._messages[-1] if self._messages else None

    def answer_to(self, event_id: str) -> str | None:
        """The answer (an assistant message that is not a call) that followed the message that
        took `event_id`, before any later event was taken: what the glasses showed for it; None
        when there is none."""
        index = self._taken_at.get(event_id)
        if index is None:
            return None
        calls = {call.asked_at for call in self._calls.values()}
        taken = set(self._taken_at.values())
        for at in range(index + 1, len(self._messages)):
            if at in taken:
                return None
            message = self._messages[at]
            if message.role == "assistant" and at not in calls:
                return message.content
        return None

    def call_state(self, call_id: str) -> CallState | None:
        """pending | done | placeholder | late, or None for an unknown call id."""
        call = self._calls.get(call_id)
        return call.state if call else None

    def kind_at(self, index: int) -> OutcomeKind | None:
        """The outcome's kind of the result at `index` of messages(); None for any other message."""
        return self._kinds.get(index)

    def data_at(self, index: int) -> ToolData | None:
        """The typed payload of the result at `index` of messages(); None when it has none (its
        tool gives none, it failed, a journal written before payloads were kept) or is no result."""
        return self._data.get(index)

    def last_result(self) -> tuple[ChatMessage, OutcomeKind] | None:
        """The result the history ends with, and its outcome's kind; None when it ends otherwise."""
        kind = self._kinds.get(len(self._messages) - 1)
        return None if kind is None else (self._messages[-1], kind)

    def called_tools(self) -> frozenset[str]:
        """Every tool this conversation has called (restored ones included); kept as calls are
        recorded, not gathered per request (the history is never cleaned)."""
        return frozenset(self._called)

    def awaiting_late_results(self) -> bool:
        """A call answered by a placeholder still waits for its real result."""
        return any(call.state == _PLACEHOLDER for call in self._calls.values())

    def placeholder_calls(self) -> list[tuple[str, str]]:
        """(call_id, tool) of calls answered "still running" whose real result has not come."""
        return [(cid, call.tool) for cid, call in self._calls.items() if call.state == _PLACEHOLDER]

    def pending_calls(self) -> list[tuple[str, str]]:
        """(call_id, tool) of calls still waiting for a result: placeholder them on interrupt."""
        return [(cid, self._calls[cid].tool) for cid in self._open]

    # --- the E6 rules ----------------------------------------------------------------------
    def record_assistant(self, text: str, call_id: str | None = None, tool: str | None = None) -> ChatMessage:
        """Rule 1: the model's message, recorded as soon as it returns; call_id pairs its call."""
        self._require_no_open_call("record a new assistant message")
        if call_id is not None:
            if not call_id or not tool:
                raise TrajectoryError("a tool call needs both a call id and a tool name")
            if call_id in self._calls:
                raise TrajectoryError(f"call id {call_id!r} was already used")
            self._calls[call_id] = _Call(tool, len(self._messages))
            self._called[tool] = None
            self._open.append(call_id)
        return self._append(ChatMessage(role="assistant", content=text), call_id=call_id or "", tool=tool or "")

    def record_result(self, call_id: str, outcome: CallOutcome, notice: str = "") -> ChatMessage:
        """Rule 2: the tool's result (its text fenced: it is data, E9), paired with its call, then
        the runtime's own `notice` lines. A result for a call that was already answered by a
        placeholder is recorded as a late result instead (rule 3)."""
        call = self._known(call_id)
        if call.state == _PLACEHOLDER:
            return self.record_late_result(call_id, outcome.text + notice)
        if call.state != _PENDING:
            raise TrajectoryError(f"call {call_id!r} ({call.tool}) already has its result")
        return self._answer(call_id, fence(outcome.text) + notice, _DONE, outcome.kind, outcome.data)

    def record_placeholder(self, call_id: str, text: str | None = None) -> ChatMessage:
        """Rule 3: answer a still-running call with "still running" so the history stays paired
        (`text`: the runtime's own wording, e.g. with the background task id)."""
        call = self._known(call_id)
        if call.state != _PENDING:
            raise TrajectoryError(f"call {call_id!r} ({call.tool}) is already answered ({call.state})")
        return self._answer(call_id, text or PLACEHOLDER_TEMPLATE.format(tool=call.tool), _PLACEHOLDER, "placeholder")

    def record_cut(self, call_id: str) -> ChatMessage:
        """After a restart: a call that was running when the runtime died gets a result saying
        so (its real result is lost), so the history stays paired."""
        call = self._known(call_id)
        if call.state != _PENDING:
            raise TrajectoryError(f"call {call_id!r} ({call.tool}) is already answered ({call.state})")
        return self._answer(call_id, CUT_BY_RESTART.format(tool=call.tool), _DONE, "error")

    def record_late_result(self, call_id: str, text: str) -> ChatMessage:
        """The real result of a placeholder-answered call: a new labelled event (role user),
        not a second answer. Held back while another call is open."""
        call = self._known(call_id)
        if call.state != _PLACEHOLDER:
            raise TrajectoryError(
                f"call {call_id!r} ({call.tool}) is {call.state}: only a call answered by a "
                "placeholder can get a late result"
            )
        call.state = _LATE
        self._note_state(call_id, _LATE)
        event = Event(event_id=f"late-{call_id}", kind="tool_result", source=call.tool,
                      channel="tool", content=text, context=LATE_CONTEXT)
        return self._side(ChatMessage(role="user", content=format_batch([event])))

    def record_events(self, events: Event | Sequence[Event] | str) -> ChatMessage | None:
        """Rule 5 / rule 3: append events taken from the queue at a safe point as one user-side
        message labelled by source (E8, E9). A str is taken as already formatted text.

        A tool_result event whose data["call_id"] names a placeholder-answered call is marked
        as that call's late result. Returns None for an empty batch.
        """
        self._require_no_open_call("record events")
        event_ids: list[str] = []
        if isinstance(events, str):
            text = events
        else:
            batch = [events] if isinstance(events, Event) else list(events)
            if not batch:
                return None
            text = format_batch([self._mark_late(e) for e in batch])
            event_ids = [e.event_id for e in batch]
        return self._append(ChatMessage(role="user", content=text), event_ids=event_ids)

    def record_parallel(self, question: str, answer: str) -> ChatMessage:
        """E5: a light request answered by a separate run, recorded in the main history, marked
        so the model knows it is already handled. Held back while a call is open."""
        text = (f"{PARALLEL_MARK} The user asked: {fence(question.strip())}\n"
                f"It was already answered: {fence(answer.strip())}")
        return self._side(ChatMessage(role="user", content=text))

    # --- invariant -------------------------------------------------------------------------
    def unpaired_calls(self) -> list[str]:
        """Ids of calls that do not have exactly one result right after them."""
        counts = {cid: 0 for cid in self._calls}
        by_position = {c.asked_at: cid for cid, c in self._calls.items()}
        for i, message in enumerate(self._messages):
            if message.role == "tool" and (i - 1) in by_position:
                counts[by_position[i - 1]] += 1
        for cid, call in self._calls.items():
            if call.answered_at >= 0 and call.answered_at != call.asked_at + 1:
                counts[cid] = 0  # answered, but not adjacent: the model would not pair them
        return [cid for cid, n in counts.items() if n != 1]

    def check(self) -> None:
        """Raise TrajectoryError unless every call has exactly one result and no tool message
        is an orphan (the format every chat template requires)."""
        problems = [f"call {cid!r} ({self._calls[cid].tool}) has no single paired result"
                    for cid in self.unpaired_calls()]
        answered = {c.answered_at for c in self._calls.values()}
        problems += [f"message {i} is a tool result answering no call"
                     for i, m in enumerate(self._messages) if m.role == "tool" and i not in answered]
        if problems:
            raise TrajectoryError("; ".join(problems))

    # --- internals -------------------------------------------------------------------------
    def _append(self, message: ChatMessage, *, call_id: str = "", state: str = "", tool: str = "",
                event_ids: list[str] | None = None, outcome: OutcomeKind | None = None,
                data: ToolData | None = None) -> ChatMessage:
        for event_id in event_ids or ():
            self._taken_at[event_id] = len(self._messages)
        if outcome is not None:
            self._kinds[len(self._messages)] = outcome
        if data is not None:
            self._data[len(self._messages)] = data
        self._messages.append(message)
        self._chars.append(self._chars[-1] + len(message.content))
        if self.sink is not None:
            self.sink(Recorded(role=message.role, content=message.content, name=message.name, call_id=call_id,
                               call_state=state, tool=tool, event_ids=event_ids or [], outcome=outcome, data=data))
        return message

    def _note_state(self, call_id: str, state: CallState) -> None:
        if self.sink is not None:
            self.sink(Recorded(call_id=call_id, call_state=state))

    def _known(self, call_id: str) -> _Call:
        call = self._calls.get(call_id)
        if call is None:
            raise TrajectoryError(f"unknown call id {call_id!r}")
        return call

    def _require_no_open_call(self, action: str) -> None:
        if self._open:
            cid = self._open[0]
            raise TrajectoryError(
                f"cannot {action}: call {cid!r} ({self._calls[cid].tool}) has no result yet; "
                "record its result or a placeholder first (E6 rule 3)"
            )

    def _answer(self, call_id: str, text: str, state: CallState, outcome: OutcomeKind,
                data: ToolData | None = None) -> ChatMessage:
        call = self._calls[call_id]
        call.state = state
        call.answered_at = len(self._messages)
        self._open.remove(call_id)
        message = self._append(ChatMessage(role="tool", content=text, name=call.tool), call_id=call_id, state=state,
                               outcome=outcome, data=data)
        if not self._open and self._held:
            held, self._held = self._held, []
            for side in held:
                self._append(side)
        return message

    def _side(self, message: ChatMessage) -> ChatMessage:
        if self._open:
            self._held.append(message)
            return message
        return self._append(message)

    def _mark_late(self, event: Event) -> Event:
        if event.kind != "tool_result":
            return event
        call = self._calls.get(event.data.get("call_id", ""))
        if call is None or call.state != _PLACEHOLDER:
            return event
        call.state = _LATE
        self._note_state(event.data["call_id"], _LATE)
        return msgspec.structs.replace(
            event, context=event.context or LATE_CONTEXT,
            data={**event.data, "tool": event.data.get("tool") or call.tool},
        )


# The starts of results that did not run, as the runtime worded them before each result's kind
# was journaled next to it (`Recorded.outcome`); read once, when such a journal is loaded.
_OLD_FAILURES: tuple[tuple[str, OutcomeKind], ...] = (
    ("tool error", "error"), ("Timer not set", "error"), ("Not sent: ", "error"), ("arguments invalid", "invalid"),
    (REFUSED, "refused"),
    (CANCELLED_TEXT, "cancelled"), (UNFINISHED_TEXT, "cancelled"))


def journaled_kind(content: str, state: str) -> OutcomeKind:
    """The outcome's kind of a result a journal holds without one (written before kinds were
    kept), from its state and the runtime's own wording of each failure."""
    if state == _PLACEHOLDER:
        return "placeholder"
    first, _, rest = content.partition("\n")
    if first.startswith("(") and ENABLED_ON_THE_WAY in first:
        content = rest  # the note of a call that turned its toolset on (S8), then its result
    if NOT_EXECUTED in content:
        return "not_executed"
    kind = next((kind for start, kind in _OLD_FAILURES if content.startswith(start)), None)
    if kind is not None:
        return kind
    if content.startswith("tool ") and CUT_BY_RESTART.partition("{tool}")[2] in content:
        return "error"
    return "invalid" if content.startswith("tool ") and " does not exist; " in content else "ok"
