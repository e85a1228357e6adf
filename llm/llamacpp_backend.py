"""In-process llama.cpp (Gemma) behind the same Backend interface.

One `Llama` instance serves requests one at a time, in arrival order (a FIFO lock: trio's Lock
is fair, and anyio's asyncio Lock queues waiters in a deque and hands over in order). Each token
is computed in a worker thread by advancing llama-cpp-python's completion iterator one step,
so a cancelled consumer stops generation between two tokens and the model is free at once.
The prompt is rendered by hand in the Gemma 3 turn format (the GGUF of the base model has no
chat template, and llama-cpp-python's `chat_format="gemma"` drops the system message) and sent
as a raw completion; identical histories render identically, so the instance's longest-common-
prefix reuse skips re-evaluating everything the previous request already saw.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio

from llm.adapt import render_gemma_prompt
from llm.base import Generation, LLMError
from llm.grammar import tool_call_grammar
from llm.profiles import ProfileConfig
from protocol import ChatMessage

STOP_TEXTS = ["<end_of_turn>", "<start_of_turn>"]
_FINISHED = object()


class LlamaCppBackend:
    def __init__(self, profile: ProfileConfig, *, name: str = "llamacpp", llama: Any = None):
        """`llama`: an already loaded llama_cpp.Llama (tests share one); otherwise loaded on first use."""
        self.name = name
        self.profile = profile
        self._llama = llama
        self._lock = anyio.Lock()  # FIFO: one generation at a time, in arrival order
        self._load_error = ""
        self._waiting = 0

    @property
    def queued(self) -> int:
        """Requests waiting for or holding the model."""
        return self._waiting

    def _load(self) -> Any:
        if self._llama is None:
            try:
                import llama_cpp
            except ImportError:
                self._load_error = "llama-cpp-python is not installed: pip install 'porfiry[gemma]'"
                raise LLMError(self._load_error) from None
            from llm.gemma_model import model_path

            path = self.profile.model_path or "the packaged Gemma model"
            try:
                path = self.profile.model_path or str(model_path())
                self._llama = llama_cpp.Llama(
                    model_path=path,
                    n_ctx=self.profile.n_ctx,
                    n_threads=self.profile.n_threads or None,
                    seed=self.profile.seed,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as problem:
                self._load_error = f"cannot load {path}: {problem}"
                raise LLMError(self._load_error) from None
        return self._llama

    def stream(self, messages: list[ChatMessage], *, tools: list[str], max_tokens: int) -> Generation:
        try:
            prompt = render_gemma_prompt(messages)
        except ValueError as problem:
            raise LLMError(f"cannot build a Gemma prompt: {problem}") from None
        grammar_text = tool_call_grammar(tools) if self.profile.grammar else None
        return Generation(lambda generation: self._produce(generation, prompt, grammar_text, max_tokens))

    async def _produce(self, generation: Generation, prompt: str, grammar_text: str | None, max_tokens: int) -> AsyncIterator[str]:
        self._waiting += 1
        try:
            async with self._lock:
                llama = await anyio.to_thread.run_sync(self._load)
                steps, generation.prompt_tokens = await anyio.to_thread.run_sync(
                    self._start, llama, prompt, grammar_text, max_tokens
                )
                generation.reused_tokens = await anyio.to_thread.run_sync(cached_prefix, llama, prompt)
                try:
                    while True:
                        # not abandonable: a cancel waits for the current token, then stops
                        chunk = await anyio.to_thread.run_sync(next, steps, _FINISHED)
                        if chunk is _FINISHED:
                            break
                        choice = chunk["choices"][0]
                        if choice.get("finish_reason"):
                            generation.finish_reason = choice["finish_reason"]
                        text = choice.get("text") or ""
                        if text:
                            generation.completion_tokens += 1
                            yield text
                finally:
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(steps.close)
        finally:
            self._waiting -= 1

    def _start(
        self, llama: Any, prompt: str, grammar_text: str | None, max_tokens: int
    ) -> tuple[Iterator[dict[str, Any]], int]:
        """Check the prompt fits and set up the completion iterator (runs in a worker thread)."""
        prompt_tokens = len(llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))
        if prompt_tokens + max_tokens > llama.n_ctx():
            raise LLMError(
                f"prompt of {prompt_tokens} tokens plus {max_tokens} to generate exceeds the context of {llama.n_ctx()}"
            )
        grammar = None
        if grammar_text:
            import llama_cpp

            grammar = llama_cpp.LlamaGrammar.from_string(grammar_text, verbose=False)
        steps = llama.create_completion(
            prompt, max_tokens=max_tokens, stream=True, stop=STOP_TEXTS, grammar=grammar,
            temperature=self.profile.temperature if self.profile.temperature is not None else 0.0,
            seed=self.profile.seed,
        )
        return steps, prompt_tokens

    async def health(self) -> tuple[bool, str]:
        if self._load_error:
            return False, self._load_error
        if self._llama is None:
            return True, "model not loaded yet (loads on first request)"
        return True, f"{self.profile.model or 'local model'} loaded, {self._waiting} request(s) queued or running"

    async def aclose(self) -> None:
        async with self._lock:
            llama, self._llama = self._llama, None
            if llama is not None and hasattr(llama, "close"):
                await anyio.to_thread.run_sync(llama.close)


def cached_prefix(llama: Any, prompt: str) -> int:
    """Prompt tokens llama.cpp takes from its cache instead of evaluating: the prefix shared with
    the tokens it holds (the last one is evaluated again when the whole prompt matches). Read
    before the completion starts; -1 when the model does not expose what it holds."""
    held = getattr(llama, "_input_ids", None)
    if held is None:
        return -1
    tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    shared = 0
    for old, new in zip(held, tokens):
        if old != new:
            break
        shared += 1
    return shared - 1 if shared and shared == len(tokens) else shared
