"""What closes a request, through the real session loop (core.conversation, core.prompt.layout):
after a tool result a notice to answer in the user's language; after a recipe skill's body a
notice to follow it, and after each of its calls one to go on with it; the state part right
before the current turn. A skill read in an earlier turn may be read again once its toolset is
off (the grammar offers it)."""
import msgspec

import protocol as p
from bench.conversation import Turn, record_conversation
from bench.runtime import scratch_config
from core.config import load_config
from core.prompt import RECIPE_NOTICE, after_result_notice
from llm.scripted import DEFAULT_RULES, Rule, ScriptedBackend
from harness import inproc_system

EXPIRED = 700.0  # past session.toolset_ttl_s (600 s)
TEA = """---
name: brew-tea
description: How to brew tea; use when the user wants tea.
---
1. Set a timer: TOOL_CALL: timers_set|in 4 minutes; tea is ready
2. Tell the user to pour water at 90 °C now.
"""


def _config(tmp_path):
    """These tests read what the model is asked: no reflex (core.reflex) takes a turn from it."""
    config = scratch_config(load_config(None, env={}), tmp_path)
    return msgspec.structs.replace(config, session=msgspec.structs.replace(config.session, reflexes=False))


async def test_a_toolset_skill_is_not_closed_by_a_notice_but_a_result_is(tmp_path):
    requests = await record_conversation(_config(tmp_path), [Turn("I want to watch a film tonight, find «Брат 2».")])
    replies = [r.reply for r in requests]
    # reading the media skill turned media on (session.enable_on_skill_read): no enable step
    assert replies[:2] == ["TOOL_CALL: read_skill|media", "TOOL_CALL: media_search|Брат 2"]
    after_skill, after_search = requests[1].messages, requests[2].messages
    assert after_skill[-1].name == "read_skill", "the media skill says how to use a toolset: no recipe to follow"
    assert after_search[-1].content == after_result_notice("[User said] I want to watch a film tonight")
    assert after_search[-2].name == "media_search"
    # the state part (a system message) sits right before the turn's first message, the user's words
    state_at = max(i for i, m in enumerate(after_search) if m.role == "system")
    assert after_search[state_at + 1].content.startswith("[User said] I want to watch a film")
    assert "Active toolsets: media" in after_search[state_at].content


async def test_a_recipe_is_followed_step_by_step_then_answered_in_the_users_language(tmp_path):
    config = _config(tmp_path)
    folder = tmp_path / "user-skills" / "brew-tea"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(TEA, encoding="utf-8")
    model = ScriptedBackend([
        Rule(r"", "TOOL_CALL: timers_set|in 4 minutes; tea is ready", role="tool", tool="read_skill"),
        Rule(r"", "Налейте воду 90 °C; таймер на 4 минуты.", role="tool", tool="timers_set"),
        Rule(r"", "TOOL_CALL: read_skill|brew-tea", role="user"),
    ])
    requests = await record_conversation(config, [Turn("завари чай по рецепту")], backend=model)
    assert [r.reply for r in requests] == ["TOOL_CALL: read_skill|brew-tea", "TOOL_CALL: timers_set|in 4 minutes; tea is ready",
                                           "Налейте воду 90 °C; таймер на 4 минуты."]
    assert requests[1].messages[-1].content == RECIPE_NOTICE
    step = requests[2].messages[-1].content
    assert step == after_result_notice("[User said] завари чай", following_recipe=True)
    assert "Go on with the recipe" in step and "in Russian" in step


async def test_a_skill_read_in_an_earlier_turn_is_offered_again_after_its_toolset_expired(tmp_path):
    requests = await record_conversation(_config(tmp_path),
                                         [Turn("find the film «Брат»"), Turn("find the film «Брат 2»", pause_s=EXPIRED)])
    first, second = [r for r in requests if r.step == 1]
    assert "media" in first.arg_choices["read_skill"]
    assert second.reply == "TOOL_CALL: read_skill|media"
    assert "media" in second.arg_choices["read_skill"], "read in turn 1, its toolset expired: readable again"
    within = next(r for r in requests if r.turn == 1 and r.step == 2)
    assert "media" not in within.arg_choices["read_skill"], "once per turn"


async def test_the_tools_of_a_toolset_used_earlier_stay_callable_after_it_expired(tmp_path):
    model = ScriptedBackend([
        Rule(r"", "Включаю «Брат».", role="tool", tool="media_play"),
        Rule(r"включи его", "TOOL_CALL: media_play|Брат", role="user"),  # a title: no id was shown
        *DEFAULT_RULES,
    ])
    requests = await record_conversation(_config(tmp_path), [Turn("find the film «Брат»"), Turn("включи его", pause_s=EXPIRED)],
                                         backend=model)
    fresh = requests[0]
    assert "media_play" not in fresh.tools, "a toolset never used is only in the catalog"
    again = next(r for r in requests if r.turn == 2 and r.step == 1)
    assert "Active toolsets" not in again.messages[-2].content, "expired: the prompt does not list media"
    assert {"media_search", "media_info", "media_play"} <= set(again.tools), "its calls in the history name them"
    assert [r.reply for r in requests if r.turn == 2] == ["TOOL_CALL: media_play|Брат", "Включаю «Брат»."]
    assert "sent to the phone" in requests[-1].messages[-2].content, "S8 ran the call and turned media on"


async def test_a_bare_ok_after_a_recipe_is_read_is_asked_again_until_its_calls_are_made(tmp_path):
    # the sixteenth blind block: "start the kids' bedtime routine" read the recipe and answered "OK"
    folder = tmp_path / "user-skills" / "brew-tea"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(TEA, encoding="utf-8")
    asked_again = []

    def model(messages):
        last = messages[-1]
        if last.role == "user" and "[User said]" in last.content:
            return "TOOL_CALL: read_skill|brew-tea"
        if "made none of its calls" in last.content:
            asked_again.append(True)
            return "TOOL_CALL: timers_set|in 4 minutes; tea is ready"
        if last.role == "tool" and last.name == "timers_set" or "Go on with the recipe" in last.content:
            return "Налейте воду 90 °C, таймер на 4 минуты."
        return "OK"
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), reflexes=False, frame=False) as system:
        shown = await system.turn("s", "завари чай по рецепту")
        answers = [m.text for m in shown if isinstance(m, p.Display) and m.final]
        assert asked_again and answers[-1].startswith("Налейте воду")
