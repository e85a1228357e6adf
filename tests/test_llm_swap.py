"""Swapping the model at runtime (S13): an HTTP model and the on-device Gemma, sessions mid-conversation."""
import pytest

import protocol as p
from harness import inproc_system, make_config, override
from llm.profiles import ProfileConfig
from scripted_openai_server import Reply, ScriptedOpenAIServer


def _final(shown):
    return [m.text for m in shown if isinstance(m, p.Display) and m.final][-1]


@pytest.mark.gemma
async def test_swap_from_http_model_to_gemma_keeps_both_sessions(tmp_path):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by `make test`")
    async with ScriptedOpenAIServer([Reply(chunks=["Hello ", "from the endpoint"])]) as server:
        config = make_config(tmp_path, max_tokens=6, max_steps=2, llm_timeout_s=120)
        profiles = dict(config.llm.profiles)
        profiles["qwen"] = ProfileConfig(kind="openai", base_url=server.base_url, model="qwen-test", retries=0)
        config = override(config, llm={"profiles": profiles, "profile": "qwen"})
        async with inproc_system(tmp_path, config=config) as system:
            for session in ("a", "b"):
                assert _final(await system.turn(session, "hi")) == "Hello from the endpoint"
            reply = await system.client.ask("llm", p.UseProfile(profile="gemma"))
            assert isinstance(reply, p.Ok) and "gemma" in reply.detail
            for session in ("a", "b"):
                assert _final(await system.turn(session, "and now?", timeout=120))
            assert len(server.requests) == 2, "requests after the swap must go to Gemma"
            for session in ("a", "b"):
                history = await system.history(session)
                said = [m["content"] for m in history if m["role"] == "user"]
                assert any("hi" in s for s in said) and any("and now?" in s for s in said)
                assert history[1] == {"role": "assistant", "content": "Hello from the endpoint", "name": ""}
            status = await system.client.ask("llm", p.LLMStatusRequest(), timeout=30)
            assert status.active == "gemma" and status.healthy
            # And back, without a restart.
            await system.client.ask("llm", p.UseProfile(profile="qwen"))
            assert _final(await system.turn("a", "back?")) == "Hello from the endpoint"
