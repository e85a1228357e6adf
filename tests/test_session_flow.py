"""The S14 cycles through the real actors (inproc ZeroMQ), with a scripted model."""
import anyio
import pytest

import protocol as p
from core.clock import ManualClock
from harness import inproc_system
from llm.scripted import ScriptedBackend


def finals(shown):
    return [m.text for m in shown if isinstance(m, p.Display) and m.final]


def tool_results(history):
    return [m for m in history if m["role"] == "tool"]


async def test_question_read_skill_enable_search_answer(tmp_path):
    backend = ScriptedBackend()
    async with inproc_system(tmp_path, backend=backend) as system:
        reply = await system.deliver("s1", "lara croft film")
        assert isinstance(reply, p.EventAccepted)
        shown = await system.actors["glasses"].wait_turns("s1", 1)
        answer = finals(shown)[-1]
        assert answer.startswith("Here is what I found:")
        assert "Lara Croft" in answer or "Лара Крофт" in answer
        history = await system.history("s1")
        calls = [m["content"] for m in history if m["role"] == "assistant"]
        # read_skill and media_search are in the history; enable_toolset never is (S7).
        assert any("read_skill|media" in c for c in calls)
        assert any("media_search|" in c for c in calls)
        assert not any("enable_toolset" in c for c in calls)
        assert [m["name"] for m in tool_results(history)] == ["read_skill", "media_search"]
        info = await system.info("s1")
        assert list(info.active_toolsets) == ["media"]
        # The prompt of the last request was in state 3: media tools, no media skill in the index.
        system_prompt = backend.calls[-1][0].content
        assert "Active toolsets: media" in system_prompt
        assert "media_search" in system_prompt
