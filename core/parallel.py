"""The side run for light independent requests (E5): what it offers and what it says.

It answers "который час?" while the main task goes on, so it must not change the session: it
offers the core tools that change nothing (`get_current_time`, `show_text`, `read_skill`) and the
read-only tools (`ToolSpec.read_only`) of the toolsets active now, and only those. Offering a tool
it cannot run would make a model write a call line that then reaches the glasses as the answer.
"""
from __future__ import annotations

from collections.abc import Iterable

from core.prompt import ACTIVE_HEADER, CORE_HEADER, PREAMBLE
from core.toolsets import ToolsetRegistry

SIDE_CORE_TOOLS = ("get_current_time", "show_text", "read_skill")


def parallel_tools(registry: ToolsetRegistry, active: Iterable[str]) -> list[str]:
    """Tool names the side run may call: the safe core tools, then active read-only tools."""
    names = list(SIDE_CORE_TOOLS)
    for toolset in sorted(set(active)):
        spec = registry.toolset(toolset)
        if spec is not None:
            names += [tool.name for tool in spec.tools if tool.read_only]
    return names


def parallel_prompt(registry: ToolsetRegistry, tools: list[str]) -> str:
    """The side run's system prompt: the preamble and exactly the tools it offers."""
    core = [registry.tool_line(t) for t in tools if registry.is_core(t)]
    sections = [PREAMBLE, "\n".join([CORE_HEADER, *core])]
    toolset_tools = [t for t in tools if not registry.is_core(t)]
    if toolset_tools:
        names = sorted({registry.toolset_of(t) for t in toolset_tools})
        sections.append("\n".join([ACTIVE_HEADER + ", ".join(names), *(registry.tool_line(t) for t in toolset_tools)]))
    return "\n\n".join(sections)


def unavailable_text(tool: str, tools: list[str]) -> str:
    """The result of a call the side run does not offer (it is not run)."""
    return f"tool {tool} is not available for this quick answer (not run); available: {', '.join(tools)}"
