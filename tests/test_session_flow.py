"""The S14 cycles through the real actors (inproc ZeroMQ), with a scripted model."""
import pytest

import protocol as p
from harness import inproc_system, until
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
        # read_skill (which turns media on: session.enable_on_skill_read), media_search, answer:
        # three model calls, which the phone learns from TurnDone (the benchmark subtracts the
        # model's time with it)
        assert [m.model_calls for m in shown if isinstance(m, p.TurnDone)] == [3]
        # and a copy of the final display, for a phone whose bridge lost it (killed between the two)
        assert [m.final for m in shown if isinstance(m, p.TurnDone)] == [answer]
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
        system_prompt = prompt_of(backend.calls[-1])
        assert "Active toolsets: media" in system_prompt
        assert "media_search" in system_prompt


def prompt_of(messages):
    """The prompt's parts: the static system message first, the state part before the current turn."""
    return "\n\n".join(m.content for m in messages if m.role == "system")


def _media_model(messages):
    """A model that follows the media skill: read it, enable, search, answer."""
    last = [m for m in messages if m.role != "system"][-1]
    system = prompt_of(messages)
    if last.role == "tool" and last.name == "media_search":
        return "Found: " + last.content.splitlines()[0]
    if last.role == "tool" and last.name == "read_skill":
        return "TOOL_CALL: media_search|terminator" if "Active toolsets: media" in system else "TOOL_CALL: enable_toolset|media"
    if last.role == "tool":
        return "ok: " + last.content.splitlines()[0]
    words = last.content.split("] ", 1)[-1]
    if words.startswith("call "):
        return "TOOL_CALL: " + words[len("call "):]
    if "film" in words:
        return "TOOL_CALL: read_skill|media"
    return "plain answer"


async def test_two_sessions_interleaved_have_their_own_toolsets(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_media_model)) as system:
        glasses = system.actors["glasses"]
        await system.deliver("a", "a film please")
        await system.deliver("b", "hello")
        await glasses.wait_turns("a", 1)
        await glasses.wait_turns("b", 1)
        assert list((await system.info("a")).active_toolsets) == ["media"]
        assert (await system.info("b")).active_toolsets == {}
        assert finals(glasses.shown["b"]) == ["plain answer"]


async def test_toolset_expires_after_ttl_on_the_test_clock(tmp_path, manual_clock):
    clock = manual_clock
    backend = ScriptedBackend(reply_fn=_media_model)
    async with inproc_system(tmp_path, backend=backend, clock=clock) as system:
        glasses = system.actors["glasses"]
        await system.turn("s", "call enable_toolset|media")
        await system.turn("s", "hello")
        assert "Active toolsets: media" in prompt_of(backend.calls[-1])
        clock.advance(599)
        await system.turn("s", "hello again")
        assert "Active toolsets: media" in prompt_of(backend.calls[-1])
        clock.advance(601)  # past the deadline, extended by nothing since
        await system.turn("s", "and now?")
        assert "\nActive toolsets: " not in prompt_of(backend.calls[-1])
        assert (await system.info("s")).active_toolsets == {}


@pytest.mark.parametrize("execute_at_once", [False, True])
async def test_substitution_when_inactive(tmp_path, execute_at_once):
    backend = ScriptedBackend(reply_fn=_media_model)
    async with inproc_system(tmp_path, backend=backend, execute_substituted_calls=execute_at_once) as system:
        await system.deliver("s", "call media_search|terminator")
        await system.actors["glasses"].wait_turns("s", 1)
        results = tool_results(await system.history("s"))
        assert results[0]["name"] == "media_search"
        if execute_at_once:
            assert "enabled on the way" in results[0]["content"]
            assert "Терминатор" in results[0]["content"] or "Terminator" in results[0]["content"]
        else:
            assert "has NOT been executed" in results[0]["content"]
            assert "media_search" in results[0]["content"]
        assert list((await system.info("s")).active_toolsets) == ["media"]


async def test_double_enable_and_double_disable_are_forgiving_and_invisible(tmp_path):
    backend = ScriptedBackend(reply_fn=_media_model)
    async with inproc_system(tmp_path, backend=backend) as system:
        glasses = system.actors["glasses"]
        for n, text in enumerate(["call enable_toolset|media", "call enable_toolset|media", "call disable_toolset|media",
                                  "call disable_toolset|media", "call enable_toolset|nosuch"], start=1):
            await system.turn("s", text)
        history = await system.history("s")
        assert not any("_toolset" in m["content"] for m in history if m["role"] in ("assistant", "tool"))
        assert (await system.info("s")).active_toolsets == {}
        # Every turn still ended with an answer on the glasses.
        assert len(finals(glasses.shown["s"])) == 5


async def test_skill_edited_mid_conversation_is_announced_in_the_next_tool_result(tmp_path):
    skill_dir = tmp_path / "user-skills" / "tea"
    skill_dir.mkdir(parents=True)
    skill_file = skill_dir / "SKILL.md"
    skill_file.write_text("---\nname: tea\ndescription: Brewing tea.\n---\nBoil water.\n")
    backend = ScriptedBackend(reply_fn=_media_model)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "call read_skill|tea")
        await system.turn("s", "call get_current_time")
        results = tool_results(await system.history("s"))
        assert "Boil water." in results[0]["content"]
        assert "skills_changed" not in results[1]["content"], "no notice while nothing changed"
        # The user edits the skill while the conversation goes on.
        settings = system.actors["session"].settings
        epoch = settings.skills_epoch
        skill_file.write_text("---\nname: tea\ndescription: Brewing tea.\n---\nBoil water, then wait 3 minutes.\n")
        await until(lambda: settings.skills_epoch > epoch)  # the store noticed and told the sessions
        await system.turn("s", "call get_current_time")
        notice = tool_results(await system.history("s"))[2]["content"]
        assert "skills_changed:" in notice and "tea" in notice
        assert "re-read" in notice
        # Re-reading gives the new body (bodies are shared between sessions per version, so a
        # stale one would show here), in this session and in another one.
        await system.turn("s", "call read_skill|tea")
        assert "wait 3 minutes" in tool_results(await system.history("s"))[3]["content"]
        await system.turn("s2", "call read_skill| Tea")
        assert "wait 3 minutes" in tool_results(await system.history("s2"))[0]["content"]
        # And a skill added meanwhile appears in the next prompt's index, after the built-ins.
        (tmp_path / "user-skills" / "coffee").mkdir()
        epoch = settings.skills_epoch
        (tmp_path / "user-skills" / "coffee" / "SKILL.md").write_text("---\nname: coffee\ndescription: Making coffee.\n---\nGrind.\n")
        await until(lambda: settings.skills_epoch > epoch)
        await system.turn("s", "hello")
        prompt = prompt_of(backend.calls[-1])
        assert prompt.index("coffee:") < prompt.index("tea:"), "user skills come newest first"
        # Exclusion hides a skill from one session and not another.
        await system.client.ask("skills", p.SkillsAdmin(op="exclude", name="coffee", target="other"))
        await system.turn("other", "hello")
        assert "coffee" not in prompt_of(backend.calls[-1])
        await system.turn("s", "hello")
        assert "coffee:" in prompt_of(backend.calls[-1])
