"""In-process llama.cpp behind the same Backend interface: the embedded Qwen2.5 instruct
(`local`), the packaged Gemma 3 270M (`gemma`), or any chat GGUF a profile's `model_path` names.

Requests are served one at a time, in arrival order (a FIFO lock: trio's Lock
is fair, and anyio's asyncio Lock queues waiters in a deque and hands over in order). Each token
is computed in a worker thread by advancing llama-cpp-python's completion iterator one step,
so a cancelled consumer stops generation between two tokens and the model is free at once.
The conversation is rendered with the chat template the GGUF carries (`tokenizer.chat_template`,
a Jinja template) and sent as a raw completion; a GGUF without one (the base Gemma) gets the
Gemma 3 turn format by hand. Identical histories render identically, so a context's
longest-common-prefix reuse skips re-evaluating everything its previous request already saw;
up to `profile.contexts` contexts (`Llama` instances) are kept, and a prompt runs in the one that
holds most of it, so the turn's prompt and core.frame's question keep their prefixes apart.
With `grammar` on, the reply is constrained per request (llm/grammar.py) to plain text or one
call of a tool the prompt offers, with the argument of `read_skill`/`enable_toolset` limited to
names that exist.
"""
from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import anyio

from llm.adapt import render_gemma_prompt, to_openai_messages
from llm.base import Generation, LLMError
from llm.grammar import tool_call_grammar
from llm.profiles import ProfileConfig
from protocol import ChatMessage

_log = logging.getLogger(__name__)
GEMMA_STOP_TEXTS = ["<end_of_turn>", "<start_of_turn>"]
_FINISHED = object()


class ChatRenderer:
    """Messages -> the raw prompt text of one model: its GGUF chat template when it has one."""

    def __init__(self, llama: Any):
        self.template = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template", "")
        self.stop: list[str] = list(GEMMA_STOP_TEXTS)
        self._formatter = None
        if self.template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def token_text(token: int) -> str:
                return llama._model.token_get_text(token) if token != -1 else ""

            eos, bos = token_text(llama.token_eos()), token_text(llama.token_bos())
            self._formatter = Jinja2ChatFormatter(template=self.template, eos_token=eos, bos_token=bos)
            self.stop = [text for text in (eos, "<|im_end|>", "<|endoftext|>") if text]

    def render(self, messages: list[ChatMessage]) -> str:
        if self._formatter is None:
            return render_gemma_prompt(messages)
        rendered = self._formatter(messages=to_openai_messages(messages))
        self.stop = sorted(set(self.stop) | set(_as_list(rendered.stop)))
        prompt = rendered.prompt
        bos = self._formatter.bos_token
        # llama.cpp adds the BOS itself when the model wants one: do not send it twice
        return prompt[len(bos):] if bos and prompt.startswith(bos) else prompt


def _as_list(stop: Any) -> list[str]:
    if not stop:
        return []
    return [stop] if isinstance(stop, str) else list(stop)


class LlamaCppBackend:
    def __init__(self, profile: ProfileConfig, *, name: str = "llamacpp", llama: Any = None):
        """`llama`: an already loaded llama_cpp.Llama (tests share one); otherwise loaded on first use."""
        self.name = name
        self.profile = profile
        self._llama = llama
        self._own = llama is None  # a shared instance (tests) gets no spare contexts
        self._path = ""
        self._spares: list[Any] = []  # more contexts, up to profile.contexts in all
        self._recent: list[Any] = []  # contexts, least recently used first
        self._renderer: ChatRenderer | None = None
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
                self._load_error = "llama-cpp-python is not installed: pip install -e '.[local]'"
                raise LLMError(self._load_error) from None
            from llm.model_files import resolve_model_path
            from llm.packaged_models import ModelMissing

            path = self.profile.model_path or self.profile.model or "the packaged model"
            try:
                path = str(resolve_model_path(self.profile.model_path, self.profile.model))
                self._path = path
                self._llama = self._new_context(path)
            except (ValueError, RuntimeError, OSError, ModelMissing) as problem:
                self._load_error = f"cannot load {path}: {problem}"
                raise LLMError(self._load_error) from None
        if self._renderer is None:
            self._renderer = ChatRenderer(self._llama)
        return self._llama

    def _new_context(self, path: str) -> Any:
        import llama_cpp

        return llama_cpp.Llama(model_path=path, n_ctx=self.profile.n_ctx, verbose=False, seed=self.profile.seed,
                               n_threads=self.profile.n_threads or os.cpu_count() or 1)

    def _context_for(self, llama: Any, tokens: list[int]) -> Any:
        """The context that holds the longest prefix of `tokens`, so two kinds of prompt (the
        turn's and core.frame's question) each keep theirs instead of evicting each other's: a new
        one while fewer than `profile.contexts` exist and none holds half the prompt; else the
        least recently used. A context that cannot be made (memory) leaves the ones there are."""
        pool = [llama, *self._spares]
        best = max(pool, key=lambda context: _held(context, tokens))
        unused = [context for context in pool if not getattr(context, "n_tokens", 0)]
        if _held(best, tokens) * 2 >= len(tokens):
            pass
        elif unused:
            best = unused[0]
        elif self._own and len(pool) < self.profile.contexts and (spare := self._spare_context()) is not None:
            best = spare
        else:
            best = min(pool, key=lambda context: self._recent.index(context) if context in self._recent else -1)
        self._recent = [context for context in self._recent if context is not best] + [best]
        return best

    def _spare_context(self) -> Any:
        try:
            spare = self._new_context(self._path)
        except (ValueError, RuntimeError, OSError, MemoryError) as problem:
            _log.warning("a second llama.cpp context could not be made (%s): one context serves every prompt", problem)
            self._own = False  # not tried again
            return None
        self._spares.append(spare)
        return spare

    def stream(self, messages: list[ChatMessage], *, tools: list[str], max_tokens: int,
               arg_choices: Mapping[str, list[str]] | None = None) -> Generation:
        grammar_text = tool_call_grammar(tools, arg_choices) if self.profile.grammar else None
        return Generation(lambda generation: self._produce(generation, list(messages), grammar_text, max_tokens))

    async def _produce(self, generation: Generation, messages: list[ChatMessage], grammar_text: str | None,
                       max_tokens: int) -> AsyncIterator[str]:
        self._waiting += 1
        try:
            async with self._lock:
                llama = await anyio.to_thread.run_sync(self._load)
                try:
                    prompt = self._renderer.render(messages)
                except Exception as problem:  # noqa: BLE001 - a template error is the request's, not the worker's
                    raise LLMError(f"cannot render the prompt with the model's chat template: {problem}") from None
                steps, generation.prompt_tokens, generation.reused_tokens = await anyio.to_thread.run_sync(
                    self._start, llama, prompt, grammar_text, max_tokens
                )
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
    ) -> tuple[Iterator[dict[str, Any]], int, int]:
        """Check the prompt fits and set up the completion iterator (runs in a worker thread).
        Also says how many prompt tokens the model already holds from the previous request."""
        tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        prompt_tokens = len(tokens)
        if prompt_tokens + max_tokens > llama.n_ctx():
            raise LLMError(
                f"prompt of {prompt_tokens} tokens plus {max_tokens} to generate exceeds the context of {llama.n_ctx()}"
            )
        llama = self._context_for(llama, tokens)
        grammar = None
        if grammar_text:
            import llama_cpp

            grammar = llama_cpp.LlamaGrammar.from_string(grammar_text, verbose=False)
        # llama-cpp-python keeps the longest common prefix with what it evaluated last (and always
        # re-evaluates the final prompt token for its logits)
        reused = min(_held(llama, tokens), prompt_tokens - 1) if getattr(llama, "_input_ids", None) is not None else -1
        steps = llama.create_completion(
            prompt, max_tokens=max_tokens, stream=True, stop=self._renderer.stop, grammar=grammar,
            temperature=self.profile.temperature if self.profile.temperature is not None else 0.0,
            seed=self.profile.seed,
        )
        return steps, prompt_tokens, reused

    def tokenize(self, text: str) -> list[int]:
        """The model's own tokens for a rendered prompt (loads the model on first use)."""
        return self._load().tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def render(self, messages: list[ChatMessage]) -> str:
        self._load()
        return self._renderer.render(messages)

    async def health(self) -> tuple[bool, str]:
        if self._load_error:
            return False, self._load_error
        if self._llama is None:
            return True, "model not loaded yet (loads on first request)"
        return True, f"{self.profile.model or 'local model'} loaded, {self._waiting} request(s) queued or running"

    async def aclose(self) -> None:
        async with self._lock:
            contexts, self._llama, self._spares, self._recent = [self._llama, *self._spares], None, [], []
            for llama in contexts:
                if llama is not None and hasattr(llama, "close"):
                    await anyio.to_thread.run_sync(llama.close)


def _held(llama: Any, tokens: list[int]) -> int:
    """How many leading tokens of `tokens` the context already holds evaluated."""
    held = getattr(llama, "_input_ids", None)
    return common_prefix_len(list(held[: llama.n_tokens]), tokens) if held is not None else 0


def common_prefix_len(a, b) -> int:
    """How many leading tokens two token lists share."""
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return length
