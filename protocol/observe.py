"""Observation: what a session does, as facts streamed to subscribers (the web console, metrics).

A subscriber asks the SessionActor `Observe` with `ask_stream`; the actor answers `Observing`
(the subscription id and a snapshot of the sessions in memory), then every fact as a reply
correlated with that request. The subscription lives `lease_s` seconds past its last
`ObserveRenew`; a renewal the actor does not know (it restarted) is answered ErrorReply
"unknown_subscription", and the subscriber subscribes again. Facts are best effort: a
subscriber that does not keep up loses facts, never slows a session.

Every fact names its session; times are seconds since the epoch (`ts`) or durations in seconds.
"""
from typing import Literal

import msgspec

from protocol.base import Msg
from protocol.llm import ChatMessage
from protocol.session import EventKind, Strategy
from protocol.tools import OutcomeKind


class SessionSummary(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    session: str
    busy: bool = False
    queued: int = 0
    last_active: float = 0.0


class Observe(Msg):
    """Subscribe to every session's facts. Answered by Observing, then a stream of facts.
    PromptFacts (the whole prompt, most of the bytes) only for the sessions in `prompt_sessions`."""

    lease_s: float = 30.0
    prompt_sessions: list[str] = []


class Observing(Msg):
    subscription_id: str
    sessions: list[SessionSummary] = []


class ObserveRenew(Msg):
    """Keep a subscription alive (and say again whose prompts it wants); answered Ok, or
    ErrorReply(code="unknown_subscription")."""

    subscription_id: str
    prompt_sessions: list[str] = []


class ObserveStop(Msg):
    subscription_id: str


class EventFact(Msg):
    """An event reached the session. strategy: now | queue | cancel | interrupt | parallel
    (interrupt: it cancelled a running step); verdict: accepted | duplicate | busy."""

    session: str
    ts: float
    event_id: str
    kind: EventKind
    content: str = ""
    strategy: Strategy | Literal[""] = ""
    verdict: Literal["accepted", "duplicate", "busy"] = "accepted"


class TurnFact(Msg):
    """phase "start": the loop took `event_ids` into the history; "end": the turn is over
    (`TurnDone` was sent). `interrupted`: an urgent event cancelled its step."""

    session: str
    ts: float
    turn_id: str
    phase: Literal["start", "end"]
    event_ids: list[str] = []
    model_calls: int = 0
    interrupted: bool = False
    parallel: bool = False


class PromptSection(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A span of one message that changes between requests (active toolsets, skills, a notice)."""

    message: int
    start: int
    end: int
    label: str


class PromptFact(Msg):
    """The exact messages of a request to the model, with the dynamic sections marked."""

    session: str
    ts: float
    turn_id: str
    step: int
    messages: list[ChatMessage]
    tools: list[str] = []
    dynamic: list[PromptSection] = []


class ModelCallFact(Msg):
    """One generation. Tokens are 0 where the backend does not say; `reused_tokens`: prompt tokens
    taken from the backend's prefix cache, `prompt_tokens - reused_tokens` were evaluated.
    outcome: ok | cancelled | unavailable."""

    session: str
    ts: float  # when the request left
    turn_id: str
    step: int
    first_token_s: float = -1.0  # -1: no token came
    duration_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_tokens: int = -1  # -1: the backend does not know
    profile: str = ""
    outcome: Literal["ok", "cancelled", "unavailable"] = "ok"
    reply: str = ""  # the start of the reply


class ToolCallFact(Msg):
    """A tool call the model made. outcome: running, then its CallOutcome's kind (ok, error,
    invalid, not_executed: S8 turned its toolset on instead, placeholder: interrupted, rule 3,
    cancelled, refused: the guard did not make it) | invisible (enable/disable_toolset) | late
    (the real result of an interrupted call, arriving after) | unknown (no such tool: nothing ran)."""

    session: str
    ts: float  # when the call started
    turn_id: str
    call_id: str
    tool: str
    args: str = ""
    duration_s: float = 0.0
    outcome: OutcomeKind | Literal["running", "invisible", "late", "unknown"] = "ok"
    result: str = ""  # the start of the result


class DisplayFact(Msg):
    """What the session sent to the glasses (a Display): the HUD as the user sees it."""

    session: str
    ts: float
    turn_id: str
    text: str
    final: bool = False
    clear: bool = False


class TimerView(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    timer_id: str
    due: float
    text: str = ""


class StateFact(Msg):
    """A session's state after a change: toolset deadlines (epoch seconds), the queue's labels,
    the tools the step waits for, timers (seconds left)"""

    session: str
    ts: float
    busy: bool = False
    active_toolsets: dict[str, float] = {}
    queue: list[str] = []
    running_tools: list[str] = []
    timers: list[TimerView] = []
    skills_version: str = ""


class SessionGoneFact(Msg):
    """These sessions were forgotten (idle past `session.idle_session_ttl_s`)."""

    ts: float
    sessions: list[str]


class EdgeStatsRequest(Msg):
    """Ask the GlassesBridge for its counters (metrics)."""


class EdgeStats(Msg):
    """Since the bridge started: `Busy` answers to phones, phone frames dropped (undecodable,
    malformed, or not sendable to a phone), sessions it routes."""

    busy: int = 0
    dropped_frames: int = 0
    sessions: int = 0


class AdmissionStatsRequest(Msg):
    """Ask the SessionActor how its turn admission stands (metrics, bench)."""


class AdmissionStats(Msg):
    """Turn admission (core/admission.py) now: turns running and waiting to start, the limit,
    the last interval's queueing delay; since the actor started: turns that waited, limit cuts."""

    running: int = 0
    waiting: int = 0
    limit: int = 0
    delay_ms: float = 0.0
    waited: int = 0
    cuts: int = 0
    lowest_limit: int = 0


FACTS = (EventFact, TurnFact, PromptFact, ModelCallFact, ToolCallFact, DisplayFact, StateFact, SessionGoneFact)
