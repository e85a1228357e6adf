"""An OpenAI-compatible chat endpoint (vLLM serving Qwen3) streamed over SSE with httpx.

Retries cover only failures before the first token: once text reached the caller, a retry
would make the model say things twice, so a broken stream is reported instead.
"""
from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
import httpx

from llm.adapt import ThinkFilter, to_openai_messages
from llm.base import Generation, LLMError
from llm.grammar import tool_call_grammar
from llm.profiles import ProfileConfig
from protocol import ChatMessage

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class _Retryable(Exception):
    """Failed before any token was yielded; worth another attempt."""


def backoff_delay(attempt: int, profile: ProfileConfig, uniform: Callable[[], float] = random.random) -> float:
    """Exponential backoff for the n-th retry (0-based), capped, plus up to `backoff_jitter` extra."""
    base = min(profile.backoff_max_s, profile.backoff_initial_s * (2**attempt))
    return base * (1.0 + profile.backoff_jitter * uniform())


def parse_sse_line(line: str) -> dict[str, Any] | None:
    """One SSE line -> the decoded `data:` JSON, None for lines that carry nothing, or `DONE`.

    Raises LLMError for lines that are not SSE or whose data is not JSON.
    """
    if not line or line.startswith(":"):
        return None
    field, sep, value = line.partition(":")
    if not sep or field not in ("data", "event", "id", "retry"):
        raise LLMError(f"malformed SSE line from the model server: {line[:200]!r}")
    if field != "data":
        return None
    value = value[1:] if value.startswith(" ") else value
    if value.strip() == "[DONE]":
        return DONE
    try:
        decoded = json.loads(value)
    except ValueError:
        raise LLMError(f"malformed SSE data from the model server (not JSON): {value[:200]!r}") from None
    if not isinstance(decoded, dict):
        raise LLMError(f"malformed SSE data from the model server (not an object): {value[:200]!r}")
    return decoded


DONE: dict[str, Any] = {"[DONE]": True}


class OpenAIBackend:
    """Streams chat completions from `{base_url}/chat/completions`."""

    def __init__(
        self,
        profile: ProfileConfig,
        *,
        name: str = "openai",
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        uniform: Callable[[], float] = random.random,
    ):
        self.name = name
        self.profile = profile
        self._base_url = profile.base_url.rstrip("/")
        timeout = httpx.Timeout(
            connect=profile.connect_timeout_s, read=profile.read_timeout_s, write=profile.read_timeout_s, pool=None
        )
        headers = {"Authorization": f"Bearer {profile.api_key}"} if profile.api_key else {}
        self._client = client or httpx.AsyncClient(timeout=timeout, headers=headers)
        self._limiter = anyio.CapacityLimiter(profile.max_concurrency)
        self._sleep = sleep
        self._uniform = uniform

    @property
    def in_flight(self) -> int:
        """Requests holding a concurrency slot right now."""
        return self._limiter.borrowed_tokens

    def request_body(self, messages: list[ChatMessage], *, max_tokens: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.profile.model,
            "messages": to_openai_messages(messages),
            "max_tokens": max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.profile.enable_thinking is not None:
            body["chat_template_kwargs"] = {"enable_thinking": self.profile.enable_thinking}
        if self.profile.temperature is not None:
            body["temperature"] = self.profile.temperature
        return body

    def stream(self, messages: list[ChatMessage], *, tools: list[str], max_tokens: int,
               arg_choices: Mapping[str, list[str]] | None = None) -> Generation:
        # the tool protocol is plain text in the prompt (SPEC S12); with `grammar` on, the server
        # is sent the same constraint the embedded backend applies (tools and arguments that exist)
        body = self.request_body(messages, max_tokens=max_tokens)
        if self.profile.grammar:
            body.update(grammar_fields(self.profile.grammar_field, tool_call_grammar(tools, arg_choices)))
        return Generation(lambda generation: self._produce(generation, body))

    async def _produce(self, generation: Generation, body: dict[str, Any]) -> AsyncIterator[str]:
        url = f"{self._base_url}/chat/completions"
        attempts = self.profile.retries + 1
        last_problem = ""
        for attempt in range(attempts):
            if attempt:
                await self._sleep(backoff_delay(attempt - 1, self.profile, self._uniform))
            borrower = object()
            await self._limiter.acquire_on_behalf_of(borrower)
            try:
                yielded_any = False
                async for piece in self._attempt(generation, url, body):
                    yielded_any = True
                    yield piece
                return
            except _Retryable as problem:
                last_problem = str(problem)
            except httpx.TransportError as problem:
                if yielded_any:
                    raise LLMError(f"the stream from {url} broke after text was sent: {_describe(problem)}") from None
                last_problem = f"cannot reach {url}: {_describe(problem)}"
            finally:
                self._limiter.release_on_behalf_of(borrower)
        raise LLMError(f"{last_problem} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})")

    async def _attempt(self, generation: Generation, url: str, body: dict[str, Any]) -> AsyncIterator[str]:
        think = ThinkFilter()
        async with self._client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                detail = (await response.aread())[:300].decode("utf-8", "replace")
                problem = f"{url} answered HTTP {response.status_code}: {detail}"
                if response.status_code in RETRY_STATUSES:
                    raise _Retryable(problem)
                raise LLMError(problem)
            saw_done = False
            async for line in response.aiter_lines():
                event = parse_sse_line(line)
                if event is None:
                    continue
                if event is DONE:
                    saw_done = True
                    break
                visible = think.feed(_absorb_chunk(generation, event))
                if visible:
                    yield visible
            tail = think.finish()
            if tail:
                yield tail
            if not saw_done:
                raise LLMError(f"the stream from {url} ended without [DONE] (finish_reason={generation.finish_reason!r})")

    async def health(self) -> tuple[bool, str]:
        url = f"{self._base_url}/models"
        try:
            response = await self._client.get(url, timeout=self.profile.connect_timeout_s)
        except httpx.HTTPError as problem:
            return False, f"cannot reach {url}: {_describe(problem)}"
        if response.status_code != 200:
            return False, f"{url} answered HTTP {response.status_code}"
        try:
            served = [entry.get("id") for entry in response.json().get("data", [])]
        except (ValueError, AttributeError):
            return True, f"{url} is up (model list unreadable)"
        if self.profile.model and served and self.profile.model not in served:
            return False, f"{url} serves {', '.join(map(str, served))}, not {self.profile.model}"
        return True, f"{url} serves {self.profile.model or 'its default model'}"

    async def aclose(self) -> None:
        await self._client.aclose()


def grammar_fields(field: str, grammar: str) -> dict[str, Any]:
    """The request fields that carry a GBNF grammar, as the profile's server takes it."""
    if field == "structured_outputs":
        return {"structured_outputs": {"grammar": grammar}}
    return {field: grammar}  # "grammar" (llama.cpp) or "guided_grammar" (vLLM)


def _absorb_chunk(generation: Generation, event: dict[str, Any]) -> str:
    """Record usage / finish reason from one chunk and return its text."""
    if "error" in event:
        error = event["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise LLMError(f"the model server reported an error mid-stream: {message}")
    usage = event.get("usage")
    if isinstance(usage, dict):
        generation.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        generation.completion_tokens = int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            generation.reused_tokens = int(details["cached_tokens"])
    choices = event.get("choices") or []
    if not choices:
        return ""
    choice = choices[0] if isinstance(choices[0], dict) else {}
    if choice.get("finish_reason"):
        generation.finish_reason = str(choice["finish_reason"])
    delta = choice.get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


def _describe(problem: Exception) -> str:
    return f"{type(problem).__name__}: {problem}" if str(problem) else type(problem).__name__
