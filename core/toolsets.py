"""The tool catalog: the five core tools (S2) and the toolsets (S5), routed by name prefix.

A toolset tool is named `<toolset>_<verb>` (media_search); the prefix alone says which toolset it
belongs to, so there are no side tables. The catalog is checked once at start-up: a bad name
raises ValueError there, never mid-conversation. Every tool has a terse signature, the one form
the prompt, the error texts and the activation texts all use (S11):

    media_search|query; page?     (`?` marks an optional argument)
    get_current_time              (no arguments)
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from core.toolcall import ArgumentError, bind_args
from protocol.tools import ArgSpec, ToolsetSpec, ToolSpec

CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(name="get_current_time", summary="current date, time, weekday and time zone"),
    ToolSpec(name="show_text", summary="put a text on the glasses screen when the user asks to show it", args=[ArgSpec(name="text")]),
    ToolSpec(name="read_skill", summary="read a skill's recipe before following it", args=[ArgSpec(name="name")]),
    ToolSpec(name="history_search", summary="find earlier turns of this conversation", args=[ArgSpec(name="query")]),
    ToolSpec(name="enable_toolset", summary="turn a toolset on: its tools then appear under Active toolsets",
             args=[ArgSpec(name="name")]),
    # name optional: a bare disable_toolset turns every active toolset off (forgiving, S3)
    ToolSpec(name="disable_toolset", summary="turn a toolset off",
             args=[ArgSpec(name="name", required=False)]),
)
CORE_TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in CORE_TOOLS)

_TOOLSET_NAME = re.compile(r"[a-z][a-z0-9]*")  # no `_`: the first `_` of a tool name ends the prefix
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]*")
_ARG_NAME = re.compile(r"[a-z][a-z0-9_]*")


def terse(tool: ToolSpec) -> str:
    """`media_search|query; page?`: name, then the arguments in order, optional ones with `?`."""
    if not tool.args:
        return tool.name
    return tool.name + "|" + "; ".join(arg.name + ("" if arg.required else "?") for arg in tool.args)


class ToolsetRegistry:
    """The immutable catalog shared by all sessions: core tools plus the configured toolsets."""

    def __init__(self, toolsets: Iterable[ToolsetSpec]):
        self._toolsets: dict[str, ToolsetSpec] = {}
        self._tools: dict[str, ToolSpec] = {tool.name: tool for tool in CORE_TOOLS}
        problems: list[str] = []
        for toolset in toolsets:
            problems += self._add(toolset)
        if problems:
            raise ValueError("invalid toolset catalog: " + "; ".join(problems))

    def _add(self, toolset: ToolsetSpec) -> list[str]:
        problems = []
        name = toolset.name
        if not _TOOLSET_NAME.fullmatch(name):
            problems.append(f"toolset name {name!r} must be lower-case letters and digits, no '_'")
        if name in self._toolsets:
            problems.append(f"toolset {name} is declared twice")
        if not _one_line(toolset.summary):
            problems.append(f"toolset {name} needs a one-line summary")
        for tool in toolset.tools:
            problems += self._tool_problems(name, tool)
            if tool.name in self._tools:
                problems.append(f"tool {tool.name} is declared twice")
            self._tools.setdefault(tool.name, tool)
        self._toolsets.setdefault(name, toolset)
        return problems

    @staticmethod
    def _tool_problems(toolset: str, tool: ToolSpec) -> list[str]:
        problems = []
        prefix = toolset + "_"
        if not tool.name.startswith(prefix) or len(tool.name) == len(prefix):
            problems.append(f"tool {tool.name!r} of toolset {toolset} lacks the prefix {prefix}")
        elif not _TOOL_NAME.fullmatch(tool.name):
            problems.append(f"tool name {tool.name!r} must be lower-case letters, digits and '_'")
        if not _one_line(tool.summary):
            problems.append(f"tool {tool.name} needs a one-line summary")
        seen: set[str] = set()
        optional_seen = False
        for arg in tool.args:
            if not _ARG_NAME.fullmatch(arg.name):
                problems.append(f"argument {arg.name!r} of {tool.name} must be lower-case letters, digits, '_'")
            if arg.name in seen:
                problems.append(f"argument {arg.name} of {tool.name} is declared twice")
            if arg.required and optional_seen:
                problems.append(f"required argument {arg.name} of {tool.name} follows an optional one")
            seen.add(arg.name)
            optional_seen = optional_seen or not arg.required
        return problems

    # --- lookups ---------------------------------------------------------------------------
    def toolset_names(self) -> list[str]:
        """In declaration order (the catalog's order)."""
        return list(self._toolsets)

    def toolset(self, name: str) -> ToolsetSpec | None:
        return self._toolsets.get(name)

    def is_core(self, tool: str) -> bool:
        return tool in CORE_TOOL_NAMES

    def toolset_of(self, tool: str) -> str | None:
        """The toolset a tool name routes to, by prefix alone (media_* -> media), even for a tool
        the set does not have; None for core tools and unknown prefixes."""
        prefix, sep, rest = tool.partition("_")
        return prefix if sep and rest and prefix in self._toolsets else None

    def spec(self, tool: str) -> ToolSpec | None:
        return self._tools.get(tool)

    def terse_signature(self, tool: str) -> str:
        """Raises KeyError for an unknown tool."""
        return terse(self._tools[tool])

    def tool_line(self, tool: str) -> str:
        """One prompt line: `media_search|query; page? — find films by title; e.g. TOOL_CALL: media_search|Stalker`."""
        spec = self._tools[tool]
        # Optional arguments stay out of the signature (the summary says how to use them): a
        # small model copies `; page?` into its call literally.
        required = "; ".join(f"<{arg.name}>" for arg in spec.args if arg.required)
        signature = f"{spec.name}|{required}" if required else spec.name
        return f"{signature} — {spec.summary}"

    def catalog_lines(self) -> list[str]:
        """One line per toolset: `media — films: search, details, playback`."""
        return [f"{ts.name} — {ts.summary}" for ts in self._toolsets.values()]

    def terse_registry(self, toolset: str) -> str:
        """A toolset's tools in one line: `media_search|query; page?, media_info|id, …`."""
        return ", ".join(terse(tool) for tool in self._toolsets[toolset].tools)

    def callable_tools(self, active: Iterable[str]) -> list[str]:
        """Tool names valid in a prompt with these toolsets active (for Generate.tools)."""
        names = list(CORE_TOOL_NAMES)
        for toolset in active:
            if toolset in self._toolsets:
                names += [tool.name for tool in self._toolsets[toolset].tools]
        return names

    # --- model-facing texts ----------------------------------------------------------------
    def unknown_tool_text(self, tool: str) -> str:
        toolset = self.toolset_of(tool)
        if toolset is not None:
            tools = ", ".join(t.name for t in self._toolsets[toolset].tools)
            return f"tool {tool} does not exist; toolset {toolset} has: {tools}"
        return (f"tool {tool} does not exist; core tools: {', '.join(CORE_TOOL_NAMES)}; "
                f"toolsets: {', '.join(self._toolsets) or '(none)'}")

    def unknown_toolset_text(self, name: str) -> str:
        available = ", ".join(self._toolsets) or "(none)"
        if not name:
            return f"say which toolset; available: {available}"
        return f"toolset {name} does not exist; available: {available}"

    def validate(self, tool: str, raw_args: str) -> dict[str, str] | str:
        """The call's arguments by name, or (a str) the text to give the model instead."""
        spec = self._tools.get(tool)
        if spec is None:
            return self.unknown_tool_text(tool)
        try:
            return bind_args(raw_args, [arg.name for arg in spec.args],
                             {arg.name for arg in spec.args if arg.required})
        except ArgumentError:
            return f"arguments invalid for {tool}; expected: {terse(spec)}"


def _one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text
