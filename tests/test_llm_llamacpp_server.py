"""The OpenAI-compatible path against llama-cpp-python's own OpenAI-compatible server on
loopback (the `server` extra), serving the packaged Gemma 3 270M: with `grammar` on, the same
GBNF the embedded backend applies reaches the server and binds what the model may write."""
from __future__ import annotations

import subprocess
import sys

import anyio
import httpx
import pytest

from harness import free_port, until
from llm import ProfileConfig
from llm.openai_backend import OpenAIBackend
from protocol import ChatMessage

pytestmark = pytest.mark.llamacpp_server
pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is not installed")

# a pattern the model continues with a call of a tool that is not offered (unconstrained, Gemma
# writes "TOOL_CALL: media_search|dune")
PATTERN = [ChatMessage(role="user", content="TOOL_CALL: media_search|matrix\nTOOL_CALL: media_search|alien\n"
                                            "TOOL_CALL: media_search|dune\nTOOL_CALL: media_search|")]


def _model_path() -> str:
    from llm.model_files import resolve_model_path  # noqa: PLC0415 - only when the test runs

    try:
        return str(resolve_model_path("", "gemma-3-270m-q4_k_m"))
    except Exception as exc:  # noqa: BLE001 - no model here: nothing to test against
        pytest.skip(f"the packaged Gemma model is not available: {exc}")


@pytest.fixture
async def server():
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", _model_path(), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "512", "--n_threads", "1", "--model_alias", "gemma", "--chat_format", "gemma"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        async with httpx.AsyncClient() as client:
            async def up() -> bool:  # when it lists its model
                assert process.poll() is None, "the llama.cpp server exited at start"
                try:
                    return (await client.get(f"{base_url}/models")).status_code == 200
                except httpx.TransportError:
                    return False

            await until(up, timeout=120, every_s=0.2)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=10)


async def _reply(base_url: str, grammar: bool) -> str:
    backend = OpenAIBackend(ProfileConfig(kind="openai", model="gemma", base_url=base_url, grammar=grammar,
                                          temperature=0.0, read_timeout_s=120.0), name="llamacpp-server")
    try:
        return await backend.stream(PATTERN, tools=["get_current_time"], max_tokens=24,
                                    arg_choices={"get_current_time": [""]}).collect()
    finally:
        await backend.aclose()


async def test_the_servers_reply_keeps_to_the_grammar_it_was_sent(server):
    free = await _reply(server, grammar=False)
    assert free.startswith("TOOL_CALL: media_search"), free  # what the constraint is there to stop
    constrained = await _reply(server, grammar=True)
    # the grammar admits the one offered call (get_current_time, no arguments) or plain text
    first = constrained.splitlines()[0] if constrained else ""
    assert first == "TOOL_CALL: get_current_time" or not first.startswith("TOOL"), constrained
