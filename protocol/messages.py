"""The message catalogue: one tagged union, `Message`, of every body an Envelope may carry.

To add a message: define a `Msg` subclass in the module of its conversation and list it in
`_ALL` below. Tags are class names, so renaming a class is a protocol change (bump
PROTOCOL_VERSION).
"""
from typing import Union

from protocol.base import Msg
from protocol.common import ErrorReply, Ok, Ping, Pong
from protocol.control import ActorStatus, PhoneCommand, Shutdown, StatusRequest, SystemStatus
from protocol.observe import (
    AdmissionStats, AdmissionStatsRequest, DisplayFact, EdgeStats, EdgeStatsRequest, EventFact, ModelCallFact, Observe, ObserveRenew,
    ObserveStop, Observing, PromptFact, PromptSection, SessionGoneFact, SessionSummary, StateFact,
    TimerView, ToolCallFact, TurnFact,
)
from protocol.llm import (
    CancelGenerate, ChatMessage, Generate, LLMChunk, LLMDone, LLMFailed, LLMStatus,
    LLMStatusRequest, UseProfile,
)
from protocol.llm import ModelInfo
from protocol.session import SessionDelete
from protocol.phone import (
    Ack, Busy, ButtonPress, Display, GlassesState, Hello, PlaybackCommand, PlaybackStatus, RateLimited, SessionEnd,
    SessionStart, TurnDone, UserInterrupt, UserText,
)
from protocol.session import (
    DeliverEvent, Event, EventAccepted, SessionInfo, SessionInfoRequest, SessionsForgotten,
)
from protocol.world import PhoneNotification, PushNotification, StatusLine, ToolProgress, UserNotice
from protocol.skills import (
    SkillBody, SkillEntry, SkillIndex, SkillIndexRequest, SkillRead, SkillsAdmin, SkillsAdminReply,
    SkillsChanged,
)
from protocol.tools import (
    ArgSpec, CallOutcome, Catalog, CatalogRequest, ToolCancel, ToolInvoke, ToolRunning, ToolOutcome, ToolSpec, ToolsetSpec,
    ToolsetState, ToolsetsChanged, ToolsetsReport, ToolsetsRequest,
)

_ALL = (
    Ok, ErrorReply, Ping, Pong,
    StatusRequest, SystemStatus, Shutdown, PhoneCommand,
    Generate, LLMChunk, LLMDone, LLMFailed, CancelGenerate, UseProfile, LLMStatusRequest, LLMStatus,
    SessionStart, SessionEnd, GlassesState, UserText, UserInterrupt, ButtonPress, PlaybackStatus, Hello,
    Ack, Busy, Display, TurnDone, PlaybackCommand, RateLimited,
    DeliverEvent, EventAccepted, SessionInfoRequest, SessionInfo, SessionsForgotten,
    SkillIndexRequest, SkillIndex, SkillRead, SkillBody, SkillsAdmin, SkillsAdminReply, SkillsChanged,
    CatalogRequest, Catalog, ToolInvoke, ToolOutcome, ToolCancel, ToolRunning, ToolsetsChanged, ToolsetsRequest,
    ToolsetsReport,
    Observe, Observing, ObserveRenew, ObserveStop, EventFact, TurnFact, PromptFact, ModelCallFact,
    ToolCallFact, DisplayFact, StateFact, SessionGoneFact, EdgeStatsRequest, EdgeStats,
    ModelInfo, SessionDelete, AdmissionStatsRequest, AdmissionStats,
    PhoneNotification, UserNotice, PushNotification, StatusLine, ToolProgress,
)

Message = Union[_ALL]  # type: ignore[valid-type]

__all__ = [
    "Msg", "Message",
    "ActorStatus", "ChatMessage", "Event", "SkillEntry", "ArgSpec", "CallOutcome", "ToolSpec", "ToolsetSpec", "ToolsetState",
    "SessionSummary", "PromptSection", "TimerView",
    *[cls.__name__ for cls in _ALL],
]
