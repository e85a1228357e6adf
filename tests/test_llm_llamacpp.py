"""LlamaCppBackend scheduling with a fake Llama (the real model is in test_llm_gemma.py)."""
import re
import threading
import time

import anyio
import pytest

from harness import until
from llm import LLMError, ProfileConfig
from llm.llamacpp_backend import LlamaCppBackend
from protocol import ChatMessage


class FakeLlama:
    """Streams the words of a fixed reply, one per `token_s`, and records what happened."""

    def __init__(self, reply="alpha beta gamma delta", token_s=0.02, n_ctx=512):
        self.reply, self.token_s, self._n_ctx = reply.split(), token_s, n_ctx
        self.prompts, self.tokens_made, self.active = [], 0, 0
        self.overlap = False
        self._guard = threading.Lock()

    def n_ctx(self):
        return self._n_ctx

    def tokenize(self, data, add_bos=True, special=True):
        return data.split()

    def create_completion(self, prompt, max_tokens, stream, stop, grammar, temperature, seed):
        self.prompts.append(prompt)

        def steps():
            with self._guard:
                self.active += 1
                self.overlap |= self.active > 1
            try:
                words = self.reply[:max_tokens]
                for index, word in enumerate(words):
                    time.sleep(self.token_s)  # the model's pace per token: what the tests cut into
                    self.tokens_made += 1
                    last = index == len(words) - 1
                    finish = ("stop" if len(words) == len(self.reply) else "length") if last else None
                    yield {"choices": [{"text": (" " if index else "") + word, "finish_reason": finish}]}
            finally:
                with self._guard:
                    self.active -= 1

        return steps()


def ask(text):
    return [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content=text)]


def backend_with(llama, **profile):
    return LlamaCppBackend(ProfileConfig(kind="llamacpp", **profile), llama=llama)


async def test_streams_tokens_and_counts_them():
    llama = FakeLlama()
    generation = backend_with(llama).stream(ask("hi"), tools=[], max_tokens=3)
    assert [piece async for piece in generation] == ["alpha", " beta", " gamma"]
    assert (generation.finish_reason, generation.completion_tokens) == ("length", 3)
    assert llama.prompts == ["<start_of_turn>user\nBe brief.\n\nhi<end_of_turn>\n<start_of_turn>model\n"]


async def test_requests_run_one_at_a_time_in_arrival_order():
    llama = FakeLlama(token_s=0.01)
    backend = backend_with(llama)
    finished = []

    async def one(label):
        await backend.stream(ask(label), tools=[], max_tokens=4).collect()
        finished.append(label)

    async with anyio.create_task_group() as group:
        for arrived, label in enumerate(["first", "second", "third", "fourth"], 1):
            group.start_soon(one, label)
            await until(lambda: backend.queued + len(finished) == arrived)  # it waits for the model: the arrival order is fixed
    assert finished == ["first", "second", "third", "fourth"]
    assert [re.search(r"\n\n(\w+)<end_of_turn>", p).group(1) for p in llama.prompts] == finished
    assert not llama.overlap


async def test_cancelling_mid_generation_stops_between_tokens_and_frees_the_model():
    llama = FakeLlama(reply=" ".join(f"w{i}" for i in range(100)), token_s=0.02)
    backend = backend_with(llama)
    async with anyio.create_task_group() as group:
        group.start_soon(backend.stream(ask("long"), tools=[], max_tokens=100).collect)
        await until(lambda: llama.tokens_made >= 2)
        made_before_cancel = llama.tokens_made
        group.cancel_scope.cancel()
    made_at_cancel = llama.tokens_made
    assert made_at_cancel <= made_before_cancel + 1, "the token being made is finished, no more"
    assert llama.active == 0  # the generator was closed, not left running
    llama.reply = ["next"]
    with anyio.fail_after(1):
        assert await backend.stream(ask("next"), tools=[], max_tokens=4).collect() == "next"
    assert llama.tokens_made == made_at_cancel + 1


async def test_a_waiting_request_can_be_cancelled_without_disturbing_the_queue():
    llama = FakeLlama(token_s=0.02)
    backend = backend_with(llama)
    results = {}

    async def one(label, cancel_after=None):
        with anyio.move_on_after(cancel_after or 10):
            results[label] = await backend.stream(ask(label), tools=[], max_tokens=4).collect()

    async with anyio.create_task_group() as group:
        group.start_soon(one, "running")
        await until(lambda: llama.active)  # it holds the model: the next ones wait
        group.start_soon(one, "gives up", 0.01)
        group.start_soon(one, "patient")
    assert set(results) == {"running", "patient"}
    assert len(llama.prompts) == 2


async def test_prompt_too_long_for_the_context_is_a_clear_error():
    backend = backend_with(FakeLlama(n_ctx=8))
    with pytest.raises(LLMError, match="exceeds the context of 8"):
        await backend.stream(ask("many words " * 10), tools=[], max_tokens=4).collect()


async def test_history_gemma_cannot_take_is_a_clear_error():
    backend = backend_with(FakeLlama())
    with pytest.raises(LLMError, match="cannot render the prompt.*ends with an assistant turn"):
        await backend.stream(ask("hi") + [ChatMessage(role="assistant", content="hello")], tools=[], max_tokens=4).collect()


async def test_health_before_and_after_loading():
    assert await LlamaCppBackend(ProfileConfig(kind="llamacpp")).health() == (
        True, "model not loaded yet (loads on first request)")
    broken = LlamaCppBackend(ProfileConfig(kind="llamacpp", model_path="/nonexistent/model.gguf"))
    with pytest.raises(LLMError):
        await broken.stream(ask("hi"), tools=[], max_tokens=2).collect()
    ok, detail = await broken.health()
    assert not ok and ("/nonexistent/model.gguf" in detail or "llama-cpp-python" in detail)


def test_arrival_order_holds_under_asyncio_too():
    # the actor runs under trio, but the backend only uses anyio: keep it honest on asyncio
    llama = FakeLlama(token_s=0.005)
    backend = backend_with(llama)
    finished = []

    async def main():
        async def one(label):
            await backend.stream(ask(label), tools=[], max_tokens=2).collect()
            finished.append(label)

        async with anyio.create_task_group() as group:
            for arrived, label in enumerate(["a", "b", "c", "d"], 1):
                group.start_soon(one, label)
                await until(lambda: backend.queued + len(finished) == arrived)

    anyio.run(main, backend="asyncio")
    assert finished == ["a", "b", "c", "d"] and not llama.overlap


class HeldLlama:
    """A context that holds the tokens of the last prompt it evaluated (what llama.cpp reuses)."""

    def __init__(self):
        self._input_ids, self.n_tokens = [], 0

    def run(self, tokens):
        self._input_ids, self.n_tokens = list(tokens), len(tokens)


def test_two_kinds_of_prompt_each_keep_their_prefix_in_a_context_of_their_own():
    made = []
    backend = LlamaCppBackend(ProfileConfig(kind="llamacpp", contexts=2))
    backend._new_context = lambda path: made.append(HeldLlama()) or made[-1]
    first = backend._new_context("")
    turn, frame = "system rules of the turn then the user".split(), "frame list and examples then words".split()
    backend._context_for(first, turn).run(turn)
    chosen = backend._context_for(first, frame)
    assert chosen is not first  # the frame's question would evict the turn's prefix: a second context
    chosen.run(frame)
    assert backend._context_for(first, turn + ["more"]) is first
    assert backend._context_for(first, frame[:-1] + ["other"]) is chosen
    assert len(made) == 2


def test_with_one_context_every_prompt_shares_it():
    backend = LlamaCppBackend(ProfileConfig(kind="llamacpp", contexts=1))
    only = HeldLlama()
    backend._new_context = lambda path: pytest.fail("no second context with contexts = 1")
    only.run("a b c d".split())
    assert backend._context_for(only, "x y z w".split()) is only


def test_a_context_that_cannot_be_made_leaves_the_one_there_is():
    backend = LlamaCppBackend(ProfileConfig(kind="llamacpp", contexts=2))
    only = HeldLlama()

    def no_memory(path):
        raise MemoryError("out of memory")
    backend._new_context = no_memory
    only.run("a b c d".split())
    assert backend._context_for(only, "x y z w".split()) is only
    assert backend._context_for(only, "p q r s".split()) is only  # not tried again


def test_contexts_below_one_is_a_clear_error():
    with pytest.raises(ValueError, match="contexts must be at least 1"):
        ProfileConfig(kind="llamacpp", contexts=0)
