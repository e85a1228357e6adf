"""Which toolsets one session has on, until when (S6), and the seamless substitution (S8).

One ToolsetActivity per session, in memory only: a restart forgets it, by design. A toolset stays
active `ttl` seconds (default 600) after its enable or the last call of any of its tools. Expiry
is checked only when the prompt is built (`purge_expired`), never by a timer: between two prompt
builds the model may keep using the tools it was shown. Every text is for the model and forgiving
(S3): repeating enable or disable is never an error.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from core.toolsets import Invalid, ToolsetRegistry
from protocol.tools import CallOutcome

DEFAULT_TTL_S = 600.0
DEFAULT_MAX_TOOLS = 24  # session.max_active_tools: pi-mcp-adapter keeps as many
ENABLED_ON_THE_WAY = "was enabled on the way"  # the note a call that turned its toolset on (S8) starts with


@dataclass(frozen=True)
class CallDecision:
    """What to do with a model's call of a toolset tool; the caller carries it out.

    action "execute": run `tool` with `args` (reading a cut result on from `offset`); `note`
    (maybe "") goes before the tool's result.
    action "activated": the toolset was switched on instead; give the model `text`, run nothing.
    action "reject": run nothing; give the model `text` (unknown tool, invalid arguments).
    """

    action: Literal["execute", "activated", "reject"]
    tool: str
    toolset: str | None
    args: dict[str, str] = field(default_factory=dict)
    text: str = ""
    note: str = ""
    offset: int = 0

    def answer(self) -> CallOutcome:
        """What the model reads of a call not executed: S8's "NOT executed yet", or why it is invalid."""
        return CallOutcome(kind="not_executed" if self.action == "activated" else "invalid", text=self.text)


class ToolsetActivity:
    __slots__ = ("registry", "clock", "ttl", "max_tools", "_deadlines", "_tools")  # one per session

    def __init__(self, registry: ToolsetRegistry, clock: Callable[[], float] = time.monotonic,
                 ttl: float = DEFAULT_TTL_S, max_tools: int = DEFAULT_MAX_TOOLS):
        self.registry = registry
        self.clock = clock
        self.ttl = ttl
        self.max_tools = max_tools
        self._deadlines: dict[str, float] = {}
        # tools of big toolsets (more than max_tools) made active by a discovery or a call, the least
        # recently used first: the prompt shows these of such a toolset, not all (issue 53)
        self._tools: OrderedDict[str, None] = OrderedDict()

    def big(self, toolset: str) -> bool:
        """A toolset with more tools than the prompt shows at once."""
        spec = self.registry.toolset(toolset)
        return spec is not None and len(spec.tools) > self.max_tools

    def made_active(self) -> tuple[str, ...]:
        """Tools of big toolsets made active, least recently used first."""
        return tuple(self._tools)

    def make_active(self, tool: str) -> None:
        """A tool of a big toolset discovered or called: shown from now on; past max_tools the
        least recently used one goes (it stays callable by its name, and discoverable)."""
        toolset = self.registry.toolset_of(tool)
        if toolset is None or not self.big(toolset):
            return
        self._tools.pop(tool, None)
        self._tools[tool] = None
        while len(self._tools) > self.max_tools:
            self._tools.popitem(last=False)

    def active(self) -> list[str]:
        """Sorted names of the toolsets on now (as of the last purge)."""
        return sorted(self._deadlines)

    def deadlines(self) -> dict[str, float]:
        """toolset -> deadline, in the clock's time (for SessionInfo)."""
        return dict(self._deadlines)

    def purge_expired(self) -> list[str]:
        """Drop toolsets whose deadline has passed (now > deadline); return their names.
        Call it when building the prompt, and only then."""
        now = self.clock()
        expired = sorted(name for name, deadline in self._deadlines.items() if now > deadline)
        for name in expired:
            del self._deadlines[name]
        return expired

    def touch(self, toolset: str) -> None:
        """A tool of the set was called: the deadline moves to now + ttl. No-op if not active."""
        if toolset in self._deadlines:
            self._deadlines[toolset] = self.clock() + self.ttl

    def enable(self, name: str) -> str:
        name = _clean(name)
        if self.registry.toolset(name) is None:
            return self.registry.unknown_toolset_text(name)
        already = name in self._deadlines
        self._deadlines[name] = self.clock() + self.ttl
        if already:
            return f"toolset {name} already active, timeout extended"
        return f"Toolset {name} activated: its tools are listed under Active toolsets. Call the one you need now."

    def disable(self, name: str = "") -> str:
        """Turn one toolset off, or (empty name) all of them."""
        name = _clean(name)
        if name and self.registry.toolset(name) is None:
            return self.registry.unknown_toolset_text(name)
        if not self._deadlines:
            return "no active toolsets"
        if not name:
            names = self.active()
            self._deadlines.clear()
            return f"toolset{'s' if len(names) > 1 else ''} {', '.join(names)} disabled"
        if name not in self._deadlines:
            return f"toolset {name} is not active; active toolsets: {', '.join(self.active())}"
        del self._deadlines[name]
        return f"toolset {name} disabled"

    def substitute(self, tool: str, raw_args: str, execute_if_valid: bool = False) -> CallDecision:
        """Decide a call of a toolset tool (S8). Active set: validate, touch, execute. Inactive set:
        activate it and either answer with the registry, saying the call was NOT executed, or, when
        `execute_if_valid` and the arguments fit, execute now with a note. Core tools are the
        caller's business (ValueError)."""
        if self.registry.is_core(tool):
            raise ValueError(f"{tool} is a core tool; substitute() handles toolset tools only")
        toolset = self.registry.toolset_of(tool)
        if toolset is None or self.registry.spec(tool) is None:
            return CallDecision("reject", tool, toolset, text=self.registry.unknown_tool_text(tool))
        bound = self.registry.validate(tool, raw_args)
        self.make_active(tool)
        if toolset in self._deadlines:
            self.touch(toolset)
            if isinstance(bound, Invalid):
                return CallDecision("reject", tool, toolset, text=bound.text)
            return CallDecision("execute", tool, toolset, args=bound.args, offset=bound.offset)
        self._deadlines[toolset] = self.clock() + self.ttl
        if execute_if_valid and not isinstance(bound, Invalid):
            return CallDecision("execute", tool, toolset, args=bound.args, offset=bound.offset,
                                note=f"toolset {toolset} {ENABLED_ON_THE_WAY}")
        return CallDecision("activated", tool, toolset, text=self._not_executed_text(tool, toolset))

    def _not_executed_text(self, tool: str, toolset: str) -> str:
        spec = self.registry.spec(tool)
        placeholders = "; ".join(f"<{arg.name}>" for arg in spec.args if arg.required)
        example = f"TOOL_CALL: {tool}|{placeholders}" if placeholders else f"TOOL_CALL: {tool}"
        return (f"Toolset {toolset} activated. Registry: {self.registry.terse_registry(toolset)}. "
                f"The call {tool} {NOT_EXECUTED} yet. To run it, call {example}.")


NOT_EXECUTED = "has NOT been executed"


def _clean(name: str) -> str:
    """Forgive `Notes`, ` notes ` and quotes around the name."""
    return name.strip().strip("\"'`").strip().lower()
