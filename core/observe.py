"""Facts about what a session does, for whoever observes (the web console, metrics).

The conversation calls one `Observer` method per fact; the observer builds the fact
(`protocol.observe`) and hands it to `publish` - the SessionActor streams it to its subscribers.
With nobody subscribed every method returns at once, so an unobserved runtime pays one bool check
per fact. Durations are measured with a monotonic counter (they describe, they decide nothing);
deadlines are given as seconds left by the session's own clock, so a page can count down without
sharing that clock.

The observer reads a conversation through values only: its id, a `ConversationView` it takes
when a fact needs the state, and whether a tool name is one the catalog knows (`Observed`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol

import protocol as p
from core.batching import event_label
from core.prompt import ACTIVE_HEADER
from core.skills_notice import SKILLS_HOWTO

EXCERPT_CHARS = 400  # of tool results and model replies in facts: a timeline, not a transcript
NOTICE_PREFIX = "[System notice]"


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def dynamic_sections(messages: list[p.ChatMessage]) -> list[p.PromptSection]:
    """Where a request differs from the last by design, not by history growing: the skills index
    and the active toolsets (the state part: a later system message, core.prompt.layout), and
    the system notices that close a request."""
    sections = []
    state_at = next((i for i, m in enumerate(messages) if i and m.role == "system"
                     and (m.content.startswith(SKILLS_HOWTO) or m.content.startswith(ACTIVE_HEADER))), -1)
    if state_at >= 0:
        text = messages[state_at].content
        active = text.find("\n\n" + ACTIVE_HEADER)
        active = active + 2 if active >= 0 else (0 if text.startswith(ACTIVE_HEADER) else -1)
        skills = text.find(SKILLS_HOWTO)
        if skills >= 0:
            sections.append(p.PromptSection(message=state_at, start=skills, end=active if active > skills else len(text), label="skills index"))
        if active >= 0:
            sections.append(p.PromptSection(message=state_at, start=active, end=len(text), label="active toolsets"))
    for index, message in enumerate(messages):
        if index and message.role == "user" and message.content.startswith(NOTICE_PREFIX):
            sections.append(p.PromptSection(message=index, start=0, end=len(message.content), label="notice"))
    return sections


def strategy_name(strategy: str, running: bool) -> str:
    """The router's decision as the console shows it: `now` for an event that starts an idle
    session, else the strategy (queue, cancel, interrupt, parallel)."""
    return strategy if running or strategy in ("cancel", "parallel") else "now"


@dataclass(frozen=True, slots=True)
class ConversationView:
    """A conversation's state at one moment, as facts show it (`Conversation.view`)."""

    now: float  # by the session's clock: deadlines and timers' due times are counted from it
    busy: bool  # its loop runs
    queue: tuple[p.Event, ...]  # events waiting for the next safe point
    toolset_deadlines: Mapping[str, float]  # active toolset -> when it expires
    running_tools: tuple[str, ...]  # tools whose calls wait for a result
    timers: tuple[tuple[str, float, str], ...]  # (timer id, when due, text), the soonest first
    skills_version: str  # of the skills index it last saw ("" if none yet)


class Observed(Protocol):
    """What the observer reads of a conversation (core.conversation.Conversation)."""

    sid: str

    def view(self) -> ConversationView: ...

    def knows_tool(self, tool: str) -> bool:
        """A core tool or one of a toolset of the catalog (not a name the model made up)."""


class ModelCallProbe:
    """Times one generation; publishes its ModelCallFact when the `with` block ends, however it ends."""

    __slots__ = ("observer", "session", "turn_id", "step", "ts", "started", "first", "text", "usage")

    def __init__(self, observer: "Observer", session: str, turn_id: str, step: int):
        self.observer = observer
        self.session = session
        self.turn_id = turn_id
        self.step = step
        self.ts = time.time()
        self.started = time.perf_counter()
        self.first = -1.0
        self.text = ""
        self.usage: Any = None

    def piece(self, text: str) -> None:
        if self.first < 0:
            self.first = time.perf_counter() - self.started
        self.text += text

    def done(self, pieces: object) -> None:
        """The stream ended: keep what the backend said about tokens (an LLMDone), if anything."""
        self.usage = getattr(pieces, "done", None)

    def __enter__(self) -> "ModelCallProbe":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        outcome = "ok" if kind is None else ("unavailable" if issubclass(kind, Exception) else "cancelled")
        usage = self.usage
        self.observer.publish(p.ModelCallFact(
            session=self.session, ts=self.ts, turn_id=self.turn_id, step=self.step,
            first_token_s=self.first, duration_s=time.perf_counter() - self.started,
            prompt_tokens=getattr(usage, "prompt_tokens", 0), completion_tokens=getattr(usage, "completion_tokens", 0),
            reused_tokens=getattr(usage, "reused_tokens", -1), profile=getattr(usage, "profile", ""),
            outcome=outcome, reply=excerpt(self.text),
        ))


class _Quiet:
    """What an unobserved call gets: the probe's interface, doing nothing."""

    def piece(self, text: str) -> None:
        pass

    def done(self, pieces: object) -> None:
        pass

    def __enter__(self) -> "_Quiet":
        return self

    def __exit__(self, *exc_info) -> None:
        pass


QUIET = _Quiet()


class Observer:
    """Builds facts for `publish` while `listening()` says someone subscribed."""

    def __init__(self, publish: Callable[[p.Msg], None] | None = None, listening: Callable[[], bool] = lambda: False,
                 wants_prompt: Callable[[str], bool] = lambda session: True):
        self.publish = publish or (lambda fact: None)
        self.listening = listening if publish else (lambda: False)
        self.wants_prompt = wants_prompt  # the whole prompt is most of the bytes: only for sessions watched
        self._tool_started: dict[str, tuple[float, float]] = {}  # call_id -> (ts, perf counter)

    # ---- intake and turns ---------------------------------------------------------------------
    def event(self, conv: "Observed", event: p.Event, strategy: str, verdict: str) -> None:
        if not self.listening():
            return
        self.publish(p.EventFact(session=conv.sid, ts=time.time(), event_id=event.event_id, kind=event.kind,
                                 content=excerpt(event.content), strategy=strategy, verdict=verdict))
        self.state(conv)

    def turn(self, conv: "Observed", turn_id: str, phase: str, event_ids: Iterable[str] = (),
             model_calls: int = 0, interrupted: bool = False, parallel: bool = False) -> None:
        if not self.listening():
            return
        self.publish(p.TurnFact(session=conv.sid, ts=time.time(), turn_id=turn_id, phase=phase, event_ids=list(event_ids),
                                model_calls=model_calls, interrupted=interrupted, parallel=parallel))
        if phase == "end" and not parallel:
            self.state(conv, ended=True)

    # ---- the model ------------------------------------------------------------------------------
    def model_call(self, conv: "Observed", turn_id: str, step: int, messages: list[p.ChatMessage],
                   tools: list[str]) -> ModelCallProbe | _Quiet:
        """Publishes the request's PromptFact now; the probe publishes the call when it ends."""
        if not self.listening():
            return QUIET
        self.state(conv)
        if self.wants_prompt(conv.sid):
            self.publish(p.PromptFact(session=conv.sid, ts=time.time(), turn_id=turn_id, step=step, messages=list(messages),
                                      tools=list(tools), dynamic=dynamic_sections(messages)))
        return ModelCallProbe(self, conv.sid, turn_id, step)

    # ---- tools ----------------------------------------------------------------------------------
    def tool_started(self, conv: "Observed", turn_id: str, call_id: str, tool: str, args: str) -> None:
        if not self.listening():
            return
        if len(self._tool_started) > 4096:  # calls whose end was never observed (a late result that never came)
            self._tool_started.clear()
        self._tool_started[call_id] = (time.time(), time.perf_counter())
        self.publish(p.ToolCallFact(session=conv.sid, ts=time.time(), turn_id=turn_id, call_id=call_id, tool=tool,
                                    args=excerpt(args), outcome="running"))
        self.state(conv)

    def tool_finished(self, conv: "Observed", turn_id: str, call_id: str, tool: str, args: str,
                      outcome: str, result: str) -> None:
        """outcome: ok | error | invisible | placeholder | late | unknown (see protocol.ToolCallFact)."""
        started = self._tool_started.pop(call_id, None) if outcome != "placeholder" else self._tool_started.get(call_id)
        if not self.listening():
            return
        if not conv.knows_tool(tool):
            outcome = "unknown"  # a name the model made up: it ran nothing, whatever the result text says
        ts, counter = started or (time.time(), time.perf_counter())
        self.publish(p.ToolCallFact(session=conv.sid, ts=ts, turn_id=turn_id, call_id=call_id, tool=tool, args=excerpt(args),
                                    duration_s=time.perf_counter() - counter, outcome=outcome, result=excerpt(result)))
        self.state(conv)

    # ---- state ----------------------------------------------------------------------------------
    def state(self, conv: "Observed", ended: bool = False) -> None:
        """`ended`: a turn just ended, so the loop goes on (busy) only if more is queued."""
        if not self.listening():
            return
        view = conv.view()
        now = view.now
        self.publish(p.StateFact(
            session=conv.sid, ts=time.time(), busy=bool(view.queue) if ended else view.busy,
            active_toolsets={name: max(0.0, deadline - now) for name, deadline in view.toolset_deadlines.items()},
            queue=[_queue_label(e) for e in view.queue],
            running_tools=list(view.running_tools),
            timers=[p.TimerView(timer_id=timer_id, due=max(0.0, due - now), text=text) for timer_id, due, text in view.timers],
            skills_version=view.skills_version,
        ))


def _queue_label(event: p.Event) -> str:
    label = event_label(event)
    return f"{label}: {excerpt(event.content, 80)}" if event.content else label
