"""S5, S11: the catalog checked at start-up, prefix routing, terse signatures, argument checks."""
import pytest

from core.loading import load_toolsets
from core.toolsets import CORE_TOOL_NAMES, Bound, ExecutorToolset, Invalid, SessionToolset, ToolsetRegistry
from protocol.tools import ArgSpec, ToolsetSpec, ToolSpec
from toolset_examples import example_registry, media_toolset, timers_toolset


def test_a_tool_without_its_toolset_prefix_is_refused_at_start_up():
    bad = ToolsetSpec(name="media", summary="films", tools=[ToolSpec(name="search", summary="find")])
    with pytest.raises(ValueError, match="tool 'search' of toolset media lacks the prefix media_"):
        ToolsetRegistry([bad])


def test_where_a_toolsets_tools_run_is_its_records_type_and_the_catalog_says_the_same():
    spec = ToolsetSpec(name="toy", summary="toys", tools=[ToolSpec(name="toy_echo", summary="say")])
    here = SessionToolset(spec=spec, handler=lambda context, tool, args: "")
    there = ExecutorToolset(spec=spec, factory=lambda host: None)
    assert (here.spec.runs, there.spec.runs) == ("session", "executor")
    assert ToolsetRegistry([here.spec]).runs_in_session("toy") and not ToolsetRegistry([there.spec]).runs_in_session("toy")
    assert ToolsetRegistry([there.spec]).pages("toy_echo") and not ToolsetRegistry([here.spec]).pages("toy_echo")
    assert {r.spec.name: r.spec.runs for r in load_toolsets()} == {
        "media": "executor", "timers": "session", "channels": "session", "notify": "session", "tasks": "session",
        "monitors": "session", "units": "session"}


def test_a_tool_named_after_another_toolset_is_refused():
    bad = ToolsetSpec(name="media", summary="films", tools=[ToolSpec(name="timers_set", summary="x")])
    with pytest.raises(ValueError, match="lacks the prefix media_"):
        ToolsetRegistry([bad, timers_toolset()])


@pytest.mark.parametrize("toolsets,problem", [
    ([media_toolset(), media_toolset()], "toolset media is declared twice"),
    ([ToolsetSpec(name="smart_home", summary="lights")], "no '_'"),
    ([ToolsetSpec(name="media", summary="two\nlines")], "one-line summary"),
    ([ToolsetSpec(name="media", summary="films", tools=[ToolSpec(name="media_", summary="x")])],
     "lacks the prefix"),
    ([ToolsetSpec(name="media", summary="films", tools=[
        ToolSpec(name="media_play", summary="x", args=[ArgSpec(name="id"), ArgSpec(name="id")])])],
     "argument id of media_play is declared twice"),
    ([ToolsetSpec(name="media", summary="films", tools=[
        ToolSpec(name="media_play", summary="x",
                 args=[ArgSpec(name="action", required=False), ArgSpec(name="id")])])],
     "required argument id of media_play follows an optional one"),
    ([ToolsetSpec(name="show", summary="x", tools=[ToolSpec(name="show_text", summary="x")])],
     "tool show_text is declared twice"),
])
def test_catalog_problems_are_named_at_start_up(toolsets, problem):
    with pytest.raises(ValueError, match=problem):
        ToolsetRegistry(toolsets)


def test_all_problems_are_reported_together():
    bad = ToolsetSpec(name="media", summary="films",
                      tools=[ToolSpec(name="search", summary="x"), ToolSpec(name="play", summary="y")])
    with pytest.raises(ValueError) as caught:
        ToolsetRegistry([bad])
    assert "'search'" in str(caught.value) and "'play'" in str(caught.value)


@pytest.mark.parametrize("tool,toolset", [
    ("media_search", "media"), ("media_play", "media"), ("timers_cancel", "timers"),
    ("media_rewind", "media"),  # routed by prefix even though media has no such tool
    ("show_text", None), ("get_current_time", None), ("weather_now", None), ("media", None),
])
def test_prefix_routes_a_tool_to_its_toolset(tool, toolset):
    assert example_registry().toolset_of(tool) == toolset


def test_terse_signatures_mark_optional_arguments():
    registry = example_registry()
    assert registry.terse_signature("media_search") == "media_search|query; page?"
    assert registry.terse_signature("media_info") == "media_info|id"
    assert registry.terse_signature("timers_set") == "timers_set|when; text"
    assert registry.terse_signature("timers_list") == "timers_list"
    assert registry.terse_signature("show_text") == "show_text|text"
    assert registry.terse_registry("media") == "media_search|query; page?, media_info|id, media_play|id; action?"


def test_catalog_has_one_line_per_toolset():
    assert example_registry().catalog_lines() == [
        "media — films: search, details, playback", "timers — reminders and timers"]


def test_spec_and_callable_tools():
    registry = example_registry()
    assert registry.spec("media_info").summary == "details of one film"
    assert registry.spec("media_rewind") is None
    assert registry.callable_tools([]) == list(CORE_TOOL_NAMES)
    assert registry.callable_tools(["timers"])[-3:] == ["timers_set", "timers_list", "timers_cancel"]


def test_validate_returns_arguments_by_name():
    registry = example_registry()
    assert registry.validate("media_search", "dune; page=2") == Bound(args={"query": "dune", "page": "2"})
    assert registry.validate("media_play", "tt42") == Bound(args={"id": "tt42"})
    assert registry.validate("show_text", "a; b=c") == Bound(args={"text": "a; b=c"})
    assert registry.validate("get_current_time", "") == Bound(args={})


def test_a_paging_call_binds_its_offset_apart_from_the_tools_arguments():
    registry = example_registry()
    assert registry.validate("media_search", "dune; offset=4000") == Bound(args={"query": "dune"}, offset=4000)
    assert registry.validate("media_search", "dune") == Bound(args={"query": "dune"}, offset=0)
    # a session tool's results are never cut: `offset=` is an ordinary part of its text
    assert registry.validate("show_text", "a; offset=5") == Bound(args={"text": "a; offset=5"})


def test_the_arguments_validate_returns_are_the_callers_own():
    registry = example_registry()
    first = registry.validate("media_search", "dune; page=2")
    first.args["query"] = "changed by a handler"
    assert registry.validate("media_search", "dune; page=2").args == {"query": "dune", "page": "2"}


@pytest.mark.parametrize("tool,raw,text", [
    ("media_info", "", "arguments invalid for media_info; expected: media_info|id"),
    ("media_search", "a; 1; extra", "arguments invalid for media_search; expected: media_search|query; page?"),
    ("timers_set", "10:00", "arguments invalid for timers_set; expected: timers_set|when; text"),
    ("read_skill", "  ", "arguments invalid for read_skill; expected: read_skill|name"),
])
def test_invalid_arguments_answer_with_the_schema(tool, raw, text):
    assert example_registry().validate(tool, raw) == Invalid(text=text)


def test_unknown_tools_list_what_exists():
    registry = example_registry()
    assert registry.validate("weather_now", "") == Invalid(text=(
        "tool weather_now does not exist; core tools: get_current_time, show_text, read_skill, history_search, "
        "enable_toolset, disable_toolset; toolsets: media, timers"))
    assert registry.validate("media_rewind", "") == Invalid(text=(
        "tool media_rewind does not exist; toolset media has: media_search, media_info, media_play"))


def test_a_candidate_toolset_that_collides_is_refused_alone():
    fixed = [media_toolset()]
    read = ToolsetSpec(name="read", summary="x", tools=[ToolSpec(name="read_skill", summary="x")])
    twice = ToolsetSpec(name="twice", summary="x", tools=[ToolSpec(name="twice_a", summary="x")] * 2)
    again = ToolsetSpec(name="media", summary="x", tools=[ToolSpec(name="media_x", summary="x")])
    registry, refused = ToolsetRegistry.admitting(fixed, [read, timers_toolset(), twice, again])
    assert registry.toolset_names() == ["media", "timers"]
    assert refused == {"read": "tool read_skill is declared twice (a core tool has that name)",
                       "twice": "tool twice_a is declared twice", "media": "toolset media is declared twice"}
    assert registry.spec("read_skill").summary != "x" and registry.toolset_of("read_skill") is None


def test_kept_results_are_bounded_by_bytes_and_count_least_recently_used_first():
    import sys

    from core.toolsets import KeptResults
    size = sys.getsizeof("x" * 1000)
    kept = KeptResults(max_count=3, max_bytes=2 * size)
    kept.keep("a", "x" * 1000)
    kept.keep("b", "y" * 1000)
    assert kept["a"] == "x" * 1000  # used: b is now the oldest
    kept.keep("c", "z" * 1000)
    assert ("a" in kept, "b" in kept, "c" in kept) == (True, False, True) and kept.bytes == 2 * size
    kept.keep("huge", "h" * 5000)  # larger than the whole budget: not kept, nothing evicted for it
    assert "huge" not in kept and len(kept) == 2
    by_count = KeptResults(max_count=1, max_bytes=10 * size)
    by_count.keep("a", "x")
    by_count.keep("b", "y")
    assert "a" not in by_count and by_count["b"] == "y"
    assert "a" not in KeptResults(max_count=0, max_bytes=10 * size)
