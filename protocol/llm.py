"""SessionActor <-> LLMWorker: generation requests, streamed chunks, cancellation, profile swap."""
from typing import Literal

import msgspec

from protocol.base import Msg


class ChatMessage(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One turn of the model-neutral history. role: system | user | assistant | tool.

    Backends adapt it per model family (Gemma has no system or tool role, OpenAI has no
    tool role without native tool calls); `name` names the tool for role "tool".
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    name: str = ""


class Generate(Msg):
    request_id: str
    messages: list[ChatMessage]
    tools: list[str] = []  # tool names valid in this prompt, for constrained decoding
    arg_choices: dict[str, list[str]] = {}  # tool -> the only arguments it takes now (read_skill: visible skills)
    max_tokens: int = 256
    profile: str = ""  # empty: the worker's active profile


class LLMChunk(Msg):
    request_id: str
    text: str


class LLMDone(Msg):
    request_id: str
    text: str
    profile: str
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_tokens: int = -1  # prompt tokens taken from the backend's prefix cache; -1: unknown
    tail: str = ""  # the last streamed piece(s), not sent as an LLMChunk: part of the stream, before the end


class LLMFailed(Msg):
    request_id: str
    error: str


class CancelGenerate(Msg):
    request_id: str


class UseProfile(Msg):
    profile: str


class LLMStatusRequest(Msg):
    pass


class LLMStatus(Msg):
    active: str
    profiles: list[str]
    healthy: bool
    detail: str = ""
    in_flight: int = 0
    context_tokens: int = 0  # of the active profile
    frame: bool = True  # of the active profile: core.frame before the model's own turn
    # the start's warm-up (llm.warmup): "none" when there is none to do (not llamacpp, or off)
    warm: Literal["none", "warming", "warm", "failed"] = "none"
    warm_s: float = 0.0  # how long it took, or has taken so far
    warm_detail: str = ""  # why it failed


class ModelInfo(Msg):
    """LLMWorker -> SessionActor when it starts and on every profile swap: the active profile's
    context, so sessions keep their prompts inside it. `worker_started` changes when the worker
    restarted: requests it was serving are gone."""

    profile: str
    context_tokens: int
    worker_started: float = 0.0
    frame: bool = True  # the profile's own choice of core.frame (llm.profiles.ProfileConfig.frames)
