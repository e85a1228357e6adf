"""Named model profiles: which backend, which model, and how to talk to it.

A profile is plain data so config files and `UseProfile` can name it; `llm.backends.make_backend`
is the one place that turns it into a live backend (the backends import this module, never the
other way round).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

import msgspec


DEFAULT_QWEN_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_QWEN_MODEL = "Qwen3.8-27B-NVFP4"


class ProfileConfig(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Everything a backend needs. Fields a kind does not use are ignored by it."""

    def frames(self) -> bool:
        """Whether turns on this profile are framed first (core.frame): a capable server model
        reads the words itself; a 1.5B one on two cores is helped by the command list."""
        return self.frame if self.frame is not None else self.kind != "openai"

    kind: Literal["openai", "llamacpp", "scripted"]
    model: str = ""
    # openai: endpoint, auth, timeouts (seconds), retry policy and concurrency bound
    base_url: str = ""
    api_key: str = ""
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0  # longest silence between two streamed chunks
    max_concurrency: int = 8
    retries: int = 3  # extra attempts on connect errors, 429 and 5xx, only before any token
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 8.0
    backoff_jitter: float = 0.25  # fraction of each delay added at random
    enable_thinking: bool | None = None  # None: leave the server's default
    temperature: float | None = None
    # llamacpp: empty model_path means the packaged model `model` names (llm/packaged_models.py),
    # else the packaged Gemma 3 270M
    grammar: bool = False  # constrain output to one TOOL_CALL line or plain text (llm/grammar.py)
    # core.frame's one question more before a turn no sentence matched (words put as a command of
    # the loaded list): None means on for a small local model, off for a server (openai)
    frame: bool | None = None
    # openai with grammar on: how the server takes the GBNF. "grammar": llama.cpp's server and
    # llama-cpp-python's (a top-level `grammar` field); "guided_grammar": vLLM's extra parameter;
    # "structured_outputs": vLLM >= 0.10 (`structured_outputs: {grammar: …}`)
    grammar_field: Literal["grammar", "guided_grammar", "structured_outputs"] = "grammar"
    model_path: str = ""
    n_ctx: int = 4096
    # the model's context in tokens, which the session keeps every prompt inside (folding the
    # oldest turns); 0: n_ctx for llamacpp, 32768 otherwise
    context_tokens: int = 0
    n_threads: int = 0  # 0: every core
    # llamacpp: contexts kept, each holding the prompt it ran last, so the turn's prompt and
    # core.frame's question do not evict each other's prefix (each costs its KV cache: ~230 MB
    # for the 1.5B model at the local profile's n_ctx 8192)
    contexts: int = 2
    seed: int = 0
    # scripted: simulated latency
    first_token_delay_s: float = 0.0
    token_delay_s: float = 0.0

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {self.max_concurrency}")
        if self.contexts < 1:
            raise ValueError(f"contexts must be at least 1, got {self.contexts}")
        if self.retries < 0:
            raise ValueError(f"retries must not be negative, got {self.retries}")
        if self.context_tokens < 0:
            raise ValueError(f"context_tokens must not be negative, got {self.context_tokens}")
        if self.kind == "openai" and not self.base_url:
            raise ValueError("an openai profile needs base_url (e.g. http://127.0.0.1:8000/v1)")


def context_of(profile: ProfileConfig) -> int:
    """The profile's context in tokens: `context_tokens`, else llama.cpp's n_ctx, else 32768."""
    if profile.context_tokens:
        return profile.context_tokens
    return profile.n_ctx if profile.kind == "llamacpp" else 32768


def default_profiles(env: Mapping[str, str] = os.environ) -> dict[str, ProfileConfig]:
    """`local` (the embedded default: Qwen2.5-Coder-1.5B-Instruct in llama.cpp), `qwen` (vLLM over
    HTTP), `gemma` (the packaged Gemma 3 270M base model, a floor) and `scripted` (tests, bench)."""
    return {
        "local": ProfileConfig(kind="llamacpp", model="qwen2.5-coder-1.5b-instruct", grammar=True, n_ctx=8192),
        "qwen": ProfileConfig(
            kind="openai",
            model=env.get("PORFIRY_QWEN_MODEL") or DEFAULT_QWEN_MODEL,
            base_url=env.get("PORFIRY_QWEN_BASE_URL") or DEFAULT_QWEN_BASE_URL,
            api_key=env.get("PORFIRY_QWEN_API_KEY", ""),
            enable_thinking=False,
        ),
        "gemma": ProfileConfig(kind="llamacpp", model="gemma-3-270m-q4_k_m", grammar=True, n_ctx=4096),
        "scripted": ProfileConfig(kind="scripted", model="scripted"),
    }
