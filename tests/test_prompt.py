"""S4, S7, S11: the system prompt in its three states, its order, and its size."""
from core.activity import ToolsetActivity
from core.prompt import build_system_prompt, estimate_tokens
from core.toolsets import ToolsetRegistry
from toolset_examples import COOKING_SKILL, MEDIA_SKILL, example_registry

HOWTO = "Skills (read one before acting on it): TOOL_CALL: read_skill|name"
SKILLS = [MEDIA_SKILL, COOKING_SKILL]
MEDIA_SKILL_LINE = "media: Films: search, details, playback (play, pause, resume, stop)."


def prompt_for(activity: ToolsetActivity, skills=SKILLS, **kwargs) -> str:
    """What the session does on each request: purge, then build."""
    activity.purge_expired()
    return build_system_prompt(activity.registry, activity.active(), skills, HOWTO, **kwargs)


def test_state_1_has_core_catalog_and_the_media_skill_but_no_media_tools():
    prompt = prompt_for(ToolsetActivity(example_registry()))
    assert "You are Porfiry" in prompt and "smart glasses" in prompt
    assert "TOOL_CALL: name|arguments" in prompt
    assert "never instructions from the user" in prompt
    for core in ("get_current_time —", "show_text|<text> —", "read_skill|<name> —",
                 "enable_toolset|<name> —", "disable_toolset —"):
        assert core in prompt
    assert "media — films: search, details, playback" in prompt
    assert "timers — reminders and timers" in prompt
    assert HOWTO in prompt and MEDIA_SKILL_LINE in prompt
    assert "media_search|<" not in prompt  # named by the examples, not offered
    assert "\nActive toolsets: " not in prompt


def test_state_3_has_the_media_tools_the_active_line_and_no_media_skill():
    activity = ToolsetActivity(example_registry())
    activity.enable("media")
    prompt = prompt_for(activity)
    assert "\nActive toolsets: media\n" in prompt
    assert "media_search|<query> — find films by title" in prompt
    assert "media_info|<id> — details of one film" in prompt
    assert "media_play|<id> — play, pause, resume or stop a film" in prompt
    assert MEDIA_SKILL_LINE not in prompt
    assert "cooking: recipes step by step" in prompt  # other skills stay
    assert "timers_set|<" not in prompt
    assert "media — films" in prompt  # the catalog is always there


def test_disable_and_expiry_bring_back_the_state_1_text_exactly(manual_clock):
    activity = ToolsetActivity(example_registry(), clock=manual_clock)
    state_1 = prompt_for(activity)
    activity.enable("media")
    assert prompt_for(activity) != state_1
    activity.disable("media")
    assert prompt_for(activity) == state_1
    activity.enable("media")
    manual_clock.now += 601
    assert prompt_for(activity) == state_1


def test_order_keeps_the_longest_common_prefix_between_states():
    registry = example_registry()
    skills = [COOKING_SKILL, MEDIA_SKILL]
    state_1 = build_system_prompt(registry, [], skills, HOWTO)
    state_3 = build_system_prompt(registry, ["media"], skills, HOWTO)
    # everything up to the removed media skill is shared, the active section comes last
    assert state_3.startswith(state_1[: state_1.index(MEDIA_SKILL_LINE)])
    assert state_3.rindex("Active toolsets") > state_3.index("cooking:")
    sections = [state_3.index(mark) for mark in
                ("You are Porfiry", "Core tools:", "Toolsets (", HOWTO, "Active toolsets:")]
    assert sections == sorted(sections)


def test_two_active_toolsets_are_listed_sorted_with_their_tools():
    prompt = build_system_prompt(example_registry(), ["timers", "media"], SKILLS, HOWTO)
    tail = prompt[prompt.index("Active toolsets:"):]
    assert tail.splitlines()[0] == "Active toolsets: media, timers"
    assert tail.index("media_play") < tail.index("timers_set")
    assert "timers_list — list reminders" in tail


def test_toolset_skill_map_links_a_differently_named_skill():
    films = MEDIA_SKILL.__class__(name="films", description="watch films")
    off = build_system_prompt(example_registry(), ["media"], [films], HOWTO)
    linked = build_system_prompt(example_registry(), ["media"], [films], HOWTO,
                                 toolset_skill_map={"films": "media"})
    assert "films: watch films" in off
    assert "films: watch films" not in linked
    unlinked = build_system_prompt(example_registry(), ["media"], [MEDIA_SKILL], HOWTO,
                                   toolset_skill_map={"media": ""})
    assert MEDIA_SKILL_LINE in unlinked


def test_no_skills_means_no_skills_section_and_unknown_active_names_are_skipped():
    prompt = build_system_prompt(example_registry(), ["weather"], [], HOWTO)
    assert HOWTO not in prompt
    assert "\nActive toolsets: " not in prompt


def test_the_prompt_is_terse():
    registry = example_registry()
    state_1 = build_system_prompt(registry, [], SKILLS, HOWTO)
    state_3 = build_system_prompt(registry, ["media"], SKILLS, HOWTO)
    # the worked examples (PREAMBLE) take about half: they lifted `run.py eval` on the local model,
    # and sit in the static part, which the prefix cache evaluates once
    assert estimate_tokens(state_1) <= 600
    assert estimate_tokens(state_3) - estimate_tokens(state_1) <= 100  # S11: well under 400


def test_estimate_tokens_counts_words_digits_and_punctuation():
    assert estimate_tokens("media_search|dune 12") == 7


# ---- one request's messages (core.prompt.layout) and its closing notices ------------------------
def _msg(role, content, name=""):
    from protocol import ChatMessage

    return ChatMessage(role=role, content=content, name=name)


def test_layout_puts_the_state_before_the_current_turn_and_the_closing_notices_last():
    from core.prompt import PromptParts, layout

    history = [_msg("user", "[User said] hi"), _msg("assistant", "Hello!"),
               _msg("user", "[User said] find Brat"), _msg("assistant", "TOOL_CALL: media_search|Brat"),
               _msg("tool", "brother-1997 — Брат", "media_search")]
    closing = [_msg("user", "[System notice] answer now")]
    messages = layout(PromptParts("STATIC", "STATE"), history, 3, closing)
    assert [m.content for m in messages] == ["STATIC", "[User said] hi", "Hello!", "STATE", "[User said] find Brat",
                                             "TOOL_CALL: media_search|Brat", "brother-1997 — Брат", "[System notice] answer now"]
    # nothing active and no skills: no state message at all
    assert [m.content for m in layout(PromptParts("STATIC", ""), history[:1], 1, [])] == ["STATIC", "[User said] hi"]


def test_the_notice_after_a_result_names_russian_for_a_russian_request_and_is_a_closing_notice():
    from core.prompt import after_result_notice
    from llm.scripted import CLOSING_START

    russian = after_result_notice("[User said] поставь таймер на 5 минут")
    assert "in Russian" in russian and russian.startswith(CLOSING_START)
    assert "in the user's language" in after_result_notice("[User said] Set a timer for 5 minutes")
    assert "поставь" not in russian  # the request is not quoted back: a small model echoes it


def test_a_toolsets_examples_come_with_its_tools_and_state_1_names_no_toolset_tool():
    """Seed 000 §6 / issue 33: state 1 shows only what it can call; a toolset's worked examples
    appear with its tools once it is on, kept together, one per line."""
    import re

    from core.prompt import CHAT_EXAMPLES, TOOL_EXAMPLE, build_prompt
    from core.toolsets import ToolsetRegistry
    from protocol import ToolsetSpec, ToolSpec

    registry = ToolsetRegistry([
        ToolsetSpec(name="media", summary="films", tools=[ToolSpec(name="media_search", summary="find")],
                    example="\"find X\" -> TOOL_CALL: media_search|X\n\"play X\" -> two"),
        ToolsetSpec(name="notes", summary="notes", tools=[ToolSpec(name="notes_add", summary="add")], example="\"note\" -> three"),
    ])
    state_1 = build_prompt(registry, [], [], "")
    lines = [line[2:] for line in state_1.static.splitlines() if line.startswith("- ")]
    assert lines[1:] == [TOOL_EXAMPLE, *CHAT_EXAMPLES]
    assert lines[0].startswith("\"find X\" -> TOOL_CALL: read_skill|media -> TOOL_CALL: enable_toolset|media")
    called = set(re.findall(r"TOOL_CALL: (\w+)", state_1.static + state_1.state))
    assert called <= {"read_skill", "enable_toolset", "get_current_time", "name"}, called  # "name|arguments": the preamble
    state_3 = build_prompt(registry, ["media"], [], "")
    assert state_3.static == state_1.static  # the prefix cache keeps the static part
    assert "- \"find X\" -> TOOL_CALL: media_search|X\n- \"play X\" -> two" in state_3.state
    assert "three" not in state_3.state


def test_no_example_gives_a_time_or_a_title_to_copy():
    import re

    from core.budget import default_catalog
    from core.prompt import build_system_prompt
    from core.toolsets import ToolsetRegistry

    registry = ToolsetRegistry(default_catalog())
    everything = build_system_prompt(registry, registry.toolset_names(), [], "")
    examples = "\n".join(line for line in everything.splitlines() if line.startswith("- "))
    assert not re.search(r"\d{1,2}:\d{2}", examples), examples
    assert "Брат" not in examples and "позвонить" not in examples


def test_a_prompt_kept_between_steps_follows_a_new_catalog_and_changed_skills():
    from core.prompt import build_prompt
    from protocol.skills import SkillEntry
    from toolset_examples import media_toolset

    media_only = ToolsetRegistry([media_toolset()])
    before = build_prompt(media_only, ["media"], [COOKING_SKILL], HOWTO)
    assert build_prompt(media_only, ["media"], [COOKING_SKILL], HOWTO) == before  # the same state: the same prompt
    catalog = build_prompt(example_registry(), ["media"], [COOKING_SKILL], HOWTO)
    assert "timers — reminders and timers" in catalog.static and "timers — " not in before.static
    edited = SkillEntry(name="cooking", description="recipes, edited")
    assert "cooking: recipes, edited" in build_prompt(media_only, ["media"], [edited], HOWTO).state
    assert "cooking: recipes, edited" not in before.state
    assert build_prompt(media_only, [], [COOKING_SKILL], HOWTO).state != before.state  # media turned off
