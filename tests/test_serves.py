"""A tool declares what it is to the runtime (protocol.ToolSpec.serves), and the fast path asks
for that, never for a tool's name (issue 50): a films toolset with other names plays a title as
the media toolset does, and with no toolset serving a request the model answers it."""
from __future__ import annotations

import pytest

import core.loading
import protocol as p
from core.toolsets import ToolsetRegistry
from harness import call_what_is_said, inproc_system, override
from llm.scripted import ScriptedBackend
from protocol import ToolSpec, ToolsetSpec

WITHOUT_MEDIA = tuple(line for line in core.loading.REGISTRY if not line.startswith("toolsets.media:"))


def _final(shown: list[p.Msg]) -> str:
    return [m.text for m in shown if isinstance(m, p.Display) and m.final][-1]


@pytest.mark.parametrize("said, film", [("play Solaris", "solaris"), ("включи Сталкера", "stalker")])
async def test_a_films_toolset_with_other_tool_names_plays_a_title_without_the_model(
        tmp_path, inproc_config, monkeypatch, said, film):
    monkeypatch.setattr(core.loading, "REGISTRY", WITHOUT_MEDIA)
    backend = ScriptedBackend(reply_fn=call_what_is_said)
    config = override(inproc_config, toolsets={"extra": ["kino_toolset:TOOLSET"], "sections": {}})
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        shown = await system.turn("s1", said)
        history = await system.history("s1")
    calls = [m["content"] for m in history if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
    assert [call.partition("|")[0] for call in calls] == ["TOOL_CALL: kino_find", "TOOL_CALL: kino_start"]
    assert calls[-1] == f"TOOL_CALL: kino_start|k-{film}"
    # its own words (tests/kino_toolset/intents.yaml), not the media toolset's
    assert _final(shown).startswith("Показываю «Сталкер»" if film == "stalker" else "Now showing «Солярис»"), _final(shown)
    assert not backend.calls  # answered by the fast path: its own tools, the id its search showed


async def test_with_no_toolset_serving_a_play_the_model_answers_it(tmp_path, inproc_config, monkeypatch):
    monkeypatch.setattr(core.loading, "REGISTRY", WITHOUT_MEDIA)
    backend = ScriptedBackend(reply_fn=lambda messages: "There is no film catalog here.")
    config = override(inproc_config, toolsets={"sections": {}})
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        shown = await system.turn("s1", "play Solaris")
        history = await system.history("s1")
    assert _final(shown) == "There is no film catalog here." and backend.calls
    assert not [m for m in history if m["role"] == "tool"]  # the fast path called nothing


def test_of_two_tools_serving_one_request_the_first_serves_and_the_second_is_named(caplog):
    """A second films toolset beside the first (media and a user's own) starts: its tools are the
    model's, the fast path keeps the first's, and the log says which."""
    def films(name: str) -> ToolsetSpec:
        return ToolsetSpec(name=name, summary="films", tools=[ToolSpec(name=f"{name}_play", summary="play", serves="title_play")])

    registry = ToolsetRegistry([films("kinoa"), films("kinob")])
    assert registry.serving("title_play") == "kinoa_play" and registry.spec("kinob_play") is not None
    assert "kinob_play serves title_play, which kinoa_play serves already" in caplog.text
    assert ToolsetRegistry([films("kinoa")]).serving("timer_set") == ""


@pytest.mark.parametrize("extra, model_calls", [([], 2), (["kino_toolset:TOOLSET"], 1)])
async def test_words_no_sentence_knows_cost_one_model_call_when_another_toolset_could_serve_them(
        tmp_path, inproc_config, extra, model_calls):
    """The frame (the built-in commands asked of the model first) is one call more; with a toolset
    beyond the built-in ones the agent, which sees it, reads the words at once."""
    backend = ScriptedBackend(reply_fn=lambda messages: "-" if "command" in messages[0].content.casefold() else "Sure.")
    config = override(inproc_config, toolsets={"extra": extra, "sections": inproc_config.toolsets.sections},
                      session={"frame": True})
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        await system.turn("s1", "book me a table for two tonight")
    assert len(backend.calls) == model_calls


@pytest.mark.parametrize("registry, offered, not_offered", [
    (core.loading.REGISTRY, ["play <title>", "set a timer for"], []),
    (WITHOUT_MEDIA, ["set a timer for", "what time is it"], ["play <title>", "find <title>", "pause"]),
])
async def test_the_frame_offers_the_commands_of_the_loaded_toolsets_only(
        tmp_path, inproc_config, monkeypatch, registry, offered, not_offered):
    """The frame's commands and examples are the loaded intents files' (`frame:`): with the media
    toolset left out the model is never asked to put words as a play it has no tool for."""
    with_media = registry != WITHOUT_MEDIA
    monkeypatch.setattr(core.loading, "REGISTRY", registry)
    backend = ScriptedBackend(reply_fn=lambda messages: "-" if "command" in messages[0].content.casefold() else "Sure.")
    sections = inproc_config.toolsets.sections if with_media else {}
    config = override(inproc_config, toolsets={"sections": sections}, session={"frame": True})
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        await system.turn("s1", "book me a table for two tonight")
    frame = backend.calls[0]
    asked = frame[0].content + "\n".join(m.content for m in frame[1:])
    assert all(command in asked for command in offered), asked
    assert not any(command in frame[0].content for command in not_offered), frame[0].content
    assert ("Groundhog Day" in asked) == with_media  # the media toolset's examples go with it, the bank's too
    assert any(m.role == "assistant" and m.content.startswith(("play ", "find ")) for m in frame) == with_media
