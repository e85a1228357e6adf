"""S3, S6, S8: per-session toolset activity, deadlines on an injected clock, substitution."""
import pytest

from core.activity import ToolsetActivity
from toolset_examples import example_registry


CLOCK_START = 1000.0  # the deadlines below are written out


@pytest.fixture
def activity(manual_clock):
    return ToolsetActivity(example_registry(), clock=manual_clock)


# --- enable / disable: idempotent and forgiving ------------------------------------------------------
def test_enable_lists_the_tools_then_repeats_are_no_error(activity):
    assert activity.enable("media") == (
        "Toolset media activated: its tools are listed under Active toolsets. Call the one you need now.")
    assert activity.enable("media") == "toolset media already active, timeout extended"
    assert activity.active() == ["media"]


def test_enable_forgives_case_spaces_and_quotes(activity):
    assert activity.enable(' "Media" ').startswith("Toolset media activated:")


def test_enable_of_an_unknown_toolset_names_the_available_ones(activity):
    assert activity.enable("weather") == "toolset weather does not exist; available: media, timers"
    assert activity.enable("") == "say which toolset; available: media, timers"
    assert activity.active() == []


def test_double_disable_is_no_error(activity):
    activity.enable("media")
    assert activity.disable("media") == "toolset media disabled"
    assert activity.disable("media") == "no active toolsets"
    assert activity.active() == []


def test_disable_without_a_name_turns_everything_off(activity):
    assert activity.disable("") == "no active toolsets"
    activity.enable("timers")
    activity.enable("media")
    assert activity.disable("") == "toolsets media, timers disabled"
    assert activity.active() == []


def test_disable_of_an_inactive_or_unknown_toolset(activity):
    activity.enable("timers")
    assert activity.disable("media") == "toolset media is not active; active toolsets: timers"
    assert activity.disable("weather") == "toolset weather does not exist; available: media, timers"
    assert activity.active() == ["timers"]


# --- deadlines ------------------------------------------------------------------------------------
def test_a_toolset_lives_600_seconds_after_enable(activity, manual_clock):
    activity.enable("media")
    manual_clock.now += 599.9
    assert activity.purge_expired() == []
    manual_clock.now = 1600.0  # exactly the deadline: still active (gone only when now > deadline)
    assert activity.purge_expired() == []
    assert activity.active() == ["media"]
    manual_clock.now += 0.1
    assert activity.purge_expired() == ["media"]
    assert activity.active() == []


def test_expiry_is_only_noticed_when_the_prompt_is_built(activity, manual_clock):
    activity.enable("media")
    manual_clock.now += 900
    assert activity.active() == ["media"]  # no timers: nothing happens until purge_expired
    assert activity.purge_expired() == ["media"]


def test_a_call_of_a_tool_of_the_set_extends_the_deadline(activity, manual_clock):
    activity.enable("media")
    manual_clock.now += 500
    assert activity.substitute("media_info", "tt42").action == "execute"
    manual_clock.now += 500  # 1000 s after enable, 500 s after the call
    assert activity.purge_expired() == []
    manual_clock.now += 100.1
    assert activity.purge_expired() == ["media"]


def test_touch_and_repeated_enable_extend(activity, manual_clock):
    activity.enable("media")
    activity.enable("timers")
    manual_clock.now += 400
    activity.touch("media")
    activity.enable("timers")
    manual_clock.now += 400
    assert activity.purge_expired() == []
    activity.touch("weather")  # unknown or inactive: nothing happens
    assert activity.active() == ["media", "timers"]


def test_touch_does_not_activate(activity):
    activity.touch("media")
    assert activity.active() == []


def test_custom_ttl(manual_clock):
    activity = ToolsetActivity(example_registry(), clock=manual_clock, ttl=5)
    activity.enable("timers")
    manual_clock.now += 5.5
    assert activity.purge_expired() == ["timers"]


def test_sessions_do_not_share_activity(manual_clock):
    registry = example_registry()
    first, second = ToolsetActivity(registry, clock=manual_clock), ToolsetActivity(registry, clock=manual_clock)
    first.enable("media")
    assert second.active() == []
    assert first.deadlines() == {"media": 1600.0}


# --- substitution (S8) ------------------------------------------------------------------------------
def test_a_call_to_an_inactive_toolset_activates_it_and_says_it_was_not_executed(activity):
    decision = activity.substitute("media_search", "dune", execute_if_valid=False)
    assert decision.action == "activated"
    assert decision.toolset == "media"
    assert decision.text == (
        "Toolset media activated. Registry: media_search|query; page?, media_info|id, "
        "media_play|id; action?. The call media_search has NOT been executed yet. "
        "To run it, call TOOL_CALL: media_search|<query>.")
    assert activity.active() == ["media"]


def test_with_the_option_on_valid_arguments_execute_at_once_with_a_note(activity):
    decision = activity.substitute("media_search", "dune; page=2", execute_if_valid=True)
    assert decision.action == "execute"
    assert decision.args == {"query": "dune", "page": "2"}
    assert decision.note == "toolset media was enabled on the way"
    assert activity.active() == ["media"]


def test_with_the_option_on_invalid_arguments_still_only_activate(activity):
    decision = activity.substitute("timers_set", "tomorrow", execute_if_valid=True)
    assert decision.action == "activated"
    assert "NOT been executed" in decision.text
    assert "TOOL_CALL: timers_set|<when>; <text>" in decision.text


def test_an_active_toolset_executes_without_a_note(activity):
    activity.enable("media")
    decision = activity.substitute("media_play", "tt42; pause")
    assert (decision.action, decision.args, decision.note) == ("execute", {"id": "tt42", "action": "pause"}, "")


def test_invalid_arguments_on_an_active_toolset_are_rejected_with_the_schema(activity):
    activity.enable("media")
    decision = activity.substitute("media_info", "")
    assert decision.action == "reject"
    assert decision.text == "arguments invalid for media_info; expected: media_info|id"


def test_an_unknown_tool_is_rejected_and_activates_nothing(activity):
    decision = activity.substitute("media_rewind", "10")
    assert decision.action == "reject"
    assert decision.text.startswith("tool media_rewind does not exist")
    assert activity.substitute("weather_now", "").action == "reject"
    assert activity.active() == []


def test_core_tools_are_not_substituted(activity):
    with pytest.raises(ValueError, match="core tool"):
        activity.substitute("show_text", "hi")
