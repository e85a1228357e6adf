"""The backend contract every model family implements, and the stream object it returns.

The LLMWorker actor only sees this module: switching Qwen-over-HTTP for on-device Gemma is a
profile change, not a code change (SPEC S13).
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol, runtime_checkable

from protocol import ChatMessage


class LLMError(Exception):
    """A generation could not be served; the message is meant for people and logs."""


class Generation:
    """One streamed generation: an async iterator of text pieces plus what is known once it ends.

    Use it as `async with backend.stream(...) as pieces: async for piece in pieces: ...` so that
    leaving the block early (break, error, cancellation of the consuming task) closes the stream
    at once: the HTTP response is closed (the server sees the client go away) or the local model
    stops between two tokens and frees itself for the next request.
    """

    def __init__(self, produce: Callable[[Generation], AsyncIterator[str]]):
        """`produce(self)` is the backend's async generator; it fills the counters as it learns them."""
        self.finish_reason = ""  # "stop", "length", ... once the stream ended normally
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.reused_tokens = -1  # prompt tokens served from the backend's prefix cache; -1: unknown
        self.text = ""  # everything yielded so far, concatenated
        self._body = produce(self)

    def __aiter__(self) -> Generation:
        return self

    async def __anext__(self) -> str:
        piece = await self._body.__anext__()
        self.text += piece
        return piece

    async def aclose(self) -> None:
        aclose = getattr(self._body, "aclose", None)
        if aclose is not None:
            await aclose()

    async def __aenter__(self) -> Generation:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def collect(self) -> str:
        """Read the whole stream and return the full text (closing the stream either way)."""
        async with self:
            async for _ in self:
                pass
        return self.text


@runtime_checkable
class Backend(Protocol):
    """A model endpoint. `stream` returns at once; work starts on the first iteration."""

    name: str

    def stream(self, messages: list[ChatMessage], *, tools: list[str], max_tokens: int,
               arg_choices: Mapping[str, list[str]] | None = None) -> Generation:
        """Generate a reply to `messages`; `tools` are the tool names valid in this prompt and
        `arg_choices` the only arguments some of them accept (for constrained decoding)."""
        ...

    async def health(self) -> tuple[bool, str]:
        """(healthy, one line for people) without generating anything expensive."""
        ...

    async def aclose(self) -> None:
        """Release connections, threads and the model."""
        ...
