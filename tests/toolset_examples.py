"""The two toolsets the core tests use (media, timers), as protocol.ToolsetSpec."""
from core.toolsets import ToolsetRegistry
from protocol.skills import SkillEntry
from protocol.tools import ArgSpec, ToolsetSpec, ToolSpec


def media_toolset() -> ToolsetSpec:
    return ToolsetSpec(name="media", summary="films: search, details, playback", tools=[
        ToolSpec(name="media_search", summary="find films by title",
                 args=[ArgSpec(name="query"), ArgSpec(name="page", required=False)]),
        ToolSpec(name="media_info", summary="details of one film", args=[ArgSpec(name="id")]),
        ToolSpec(name="media_play", summary="play, pause, resume or stop a film",
                 args=[ArgSpec(name="id"), ArgSpec(name="action", required=False)]),
    ])


def timers_toolset() -> ToolsetSpec:
    return ToolsetSpec(name="timers", summary="reminders and timers", tools=[
        ToolSpec(name="timers_set", summary="set a reminder",
                 args=[ArgSpec(name="when"), ArgSpec(name="text")]),
        ToolSpec(name="timers_list", summary="list reminders"),
        ToolSpec(name="timers_cancel", summary="cancel a reminder", args=[ArgSpec(name="id")]),
    ])


def example_registry() -> ToolsetRegistry:
    return ToolsetRegistry([media_toolset(), timers_toolset()])


MEDIA_SKILL = SkillEntry(name="media", builtin=True,
                         description="Films: search, details, playback (play, pause, resume, stop).")
COOKING_SKILL = SkillEntry(name="cooking", description="recipes step by step; read before cooking")
