"""Events delivered into a session (E1): one structured shape for everything that happens."""
from typing import Literal

import msgspec

from protocol.base import Msg

# channel: a message on a channel (core.channels), monitor: a monitor's condition held
# (core.monitors), glasses: the phone says the glasses are on or off (data["state"]), progress: a background task's progress (core.progress); resume: a turn a crash
# cut going on (core.resume: never recorded)
EventKind = Literal["user_text", "user_interrupt", "button", "tool_result", "timer", "playback", "system",
                    "session_start", "session_end", "glasses", "channel", "monitor", "progress", "resume"]
Strategy = Literal["cancel", "interrupt", "queue", "parallel", "now"]
"""How a session takes an event (core.urgency): now (idle), queue, cancel, interrupt, parallel."""


class Event(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Who (source), how (channel), what (content), and its relation to the task (context);
    `kind` is an EventKind."""

    event_id: str
    kind: EventKind
    source: str
    channel: str
    content: str = ""
    context: str = ""
    ts: float = 0.0
    data: dict[str, str] = {}


class DeliverEvent(Msg):
    """Bridge (or an executor with a late result) -> SessionActor. Answered by EventAccepted or Busy."""

    event: Event
    phone_key: str = ""


class EventAccepted(Msg):
    event_id: str
    duplicate: bool = False


class SessionsForgotten(Msg):
    """SessionActor -> GlassesBridge: these sessions were idle past `session.idle_session_ttl_s` and
    are forgotten; the bridge drops their owners from memory (not from its table) unless they came
    alive again meanwhile."""

    sessions: list[str]


class SessionDelete(Msg):
    """`run.py sessions delete` -> SessionActor: forget the session in memory and delete its
    journal (after anything still queued for it). Answered Ok, or ErrorReply while it is busy."""


class SessionInfoRequest(Msg):
    """Ask the SessionActor for one session's in-memory state (tests, debugging, `run.py`)."""


class SessionInfo(Msg):
    exists: bool
    history: list[dict[str, str]] = []
    active_toolsets: dict[str, float] = {}
    queued: int = 0
    busy: bool = False
    restored: bool = False  # this session's state in memory was loaded back from the journal
    resident: bool = False  # in memory now; else `history` was read from the journal
