"""Profile -> live backend: the one module that knows every backend (each imports only the
profile data it reads, llm.profiles)."""
from __future__ import annotations

from llm.base import Backend
from llm.profiles import ProfileConfig


def make_backend(profile: ProfileConfig, *, name: str = "") -> Backend:
    """A live backend for `profile`; `name` (the profile's name) is what it reports as `backend.name`."""
    if profile.kind == "openai":
        from llm.openai_backend import OpenAIBackend

        return OpenAIBackend(profile, name=name or "openai")
    if profile.kind == "llamacpp":
        from llm.llamacpp_backend import LlamaCppBackend

        return LlamaCppBackend(profile, name=name or "llamacpp")
    if profile.kind == "scripted":
        from llm.scripted import ScriptedBackend

        return ScriptedBackend(
            name=name or "scripted",
            first_token_delay_s=profile.first_token_delay_s,
            token_delay_s=profile.token_delay_s,
            context_tokens=profile.context_tokens,
            # served, nobody reads what it was asked: kept, the last 1,000 prompts of long
            # conversations made the stand-in the LLM worker's largest user of memory
            keep_calls=0,
        )
    raise ValueError(f"unknown profile kind {profile.kind!r}")
