"""The monitors toolset (E10, seed 003's `monitor_shell` for this product): start, by name, a
check the operator allowed in the config, with a condition; one event when it holds. The model
never gives a command (core.monitors, actors/world.py). Runs in the session."""
from __future__ import annotations

from collections.abc import Mapping

from core.toolsets import SessionContext, SessionToolset
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec

MONITORS_TOOLSET = ToolsetSpec(
    example=("\"скажи, когда сборка закончится\" -> TOOL_CALL: monitors_start|build; exit 0 -> \"Скажу, когда сборка пройдёт.\""),
    name="monitors",
    summary="watch an allowed command or web page and wake me when a condition holds",
    # offered only for words about it: protocol.ToolsetSpec
    offered_for=["сборк", "деплой", "выкатк", "сайт", "страниц", "команд", "скрипт", "сервер", "build", "deploy",
                 "site", "page", "command", "script", "server", "job", "монитор", "monitor"],
    offered_for_verbs=["watch"],
    tools=[
        ToolSpec(name="monitors_start",
                 summary="start an allowed monitor until: contains WORDS, exit N, or status N",
                 args=[ArgSpec(name="name"), ArgSpec(name="condition")], action="watch"),
        ToolSpec(name="monitors_list", summary="the allowed monitors and those running", read_only=True),
    ],
)


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    world = context.world
    if world is None:
        return CallOutcome(kind="error", text="monitors are not available in this runtime (no session actor)")
    if tool == "monitors_start":
        return CallOutcome(kind="ok", text=world.start_monitor(context.sid, args["name"], args["condition"]))
    allowed = world.allowed_monitors()
    lines = [f"allowed: {', '.join(f'{n} ({c.summary})' if c.summary else n for n, c in sorted(allowed.items())) or 'none'}"]
    table = world.of(context.sid).monitors
    lines += [table.describe(row) for row in table.rows] or ["none started"]
    return CallOutcome(kind="ok", text="\n".join(lines))


TOOLSET = SessionToolset(spec=MONITORS_TOOLSET, handler=_run)
