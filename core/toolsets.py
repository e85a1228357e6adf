"""The tool catalog: the five core tools (S2) and the toolsets (S5), routed by name prefix.

A toolset tool is named `<toolset>_<verb>` (notes_add); the prefix alone says which toolset it
belongs to, so there are no side tables. The catalog is checked once at start-up: a bad name
raises ValueError there, never mid-conversation. Every tool has a terse signature, the one form
the prompt, the error texts and the activation texts all use (S11):

    notes_add|text; tags?         (`?` marks an optional argument)
    get_current_time|[place]      the user's clock, or a city's / an IANA zone's
"""
from __future__ import annotations

import collections
import logging
import re
import sys
from collections.abc import Callable, Iterable, KeysView, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, ClassVar, Literal, Protocol

import msgspec

from core import user_texts
from core.background import ToolRun
from core.config import Config, ConfigError, decode_section
from core.fastpath import Phrasing, Step
from core.timers import TimerTable
from core.toolcall import ArgumentError, bind_args
from core.world import WorldPort
from protocol.base import Msg
from protocol.results import ToolData
from protocol.tools import ArgSpec, CallOutcome, Serves, ToolOutcome, ToolsetSpec, ToolSpec

_log = logging.getLogger("porfiry.toolsets")
CORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(name="get_current_time", summary="current date, time, weekday and time zone; with a place, the time there",
             args=[ArgSpec(name="place", required=False)], action="none", asks="clock",
             progress=user_texts.by_language("clock_progress")),
    # the text shown is the user's or a result's words, never the model's own (h38: a question about subtitles shown)
    ToolSpec(name="show_text", summary="put a text on the glasses screen when the user asks to show it", args=[ArgSpec(name="text")],
             action="show", grounded_args=["text"]),
    ToolSpec(name="read_skill", summary="read a skill's recipe before following it", args=[ArgSpec(name="name")],
             action="none"),
    ToolSpec(name="history_search", summary="find earlier turns of this conversation", args=[ArgSpec(name="query")],
             action="none", progress=user_texts.by_language("history_progress")),
    # shown only while the catalog or a toolset is too big for the prompt (core.discovery, issue 53)
    ToolSpec(name="discover_tools", summary="find the toolsets, tools and skills for a need, said in any words; "
             "the tools found become callable", args=[ArgSpec(name="need")], read_only=True, action="none"),
    ToolSpec(name="enable_toolset", summary="turn a toolset on: its tools then appear under Active toolsets",
             args=[ArgSpec(name="name")], action="none"),
    # name optional: a bare disable_toolset turns every active toolset off (forgiving, S3)
    ToolSpec(name="disable_toolset", summary="turn a toolset off",
             args=[ArgSpec(name="name", required=False)], action="none"),
)
CORE_TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in CORE_TOOLS)
# the core tools whose results are the catalog's own words (a recipe, a toolset's tool lines with their
# example arguments: "every=1 day"), never a fact of the user's: no call may take its words or numbers from them
CATALOG_TOOL_NAMES = frozenset({"read_skill", "discover_tools", "enable_toolset", "disable_toolset"})
_NAMED_CORE = ", ".join(name for name in CORE_TOOL_NAMES if name != "discover_tools")  # the ones always offered

_TOOLSET_NAME = re.compile(r"[a-z][a-z0-9]*")  # no `_`: the first `_` of a tool name ends the prefix
_TOOL_NAME = re.compile(r"[a-z][a-z0-9_]*")
_ARG_NAME = re.compile(r"[a-z][a-z0-9_]*")


PAGE_ARG = "offset"
"""Every executor tool takes it, by name and last: where a long result continues (`cap_result`).
`validate` takes it off the arguments into `Bound.offset` (and so `ToolInvoke.offset`)."""
BOUND_KEPT = 256  # validate's answers kept per catalog
_PAGE_SUFFIX = re.compile(r"(?:^|[;|])\s*offset\s*=\s*(\d+)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool says back: ok=False is an error the model should read. A task_id means the tool
    started something that reports later (E7). data: what it found or did as fields
    (protocol.results), for the runtime; the model reads only `text`."""

    ok: bool
    text: str
    task_id: str = ""
    data: ToolData | None = None


class Bound(msgspec.Struct, frozen=True, kw_only=True):
    """A call's arguments by name, checked against its tool's spec (`ToolsetRegistry.validate`).
    offset > 0: a paging call (`; offset=4000`) reads a cut result on from there."""

    args: dict[str, str]
    offset: int = 0


class Invalid(msgspec.Struct, frozen=True, kw_only=True):
    """A call that cannot be bound: no such tool, or arguments that do not fit. `text` is what
    the model reads instead of a result."""

    text: str

    def outcome(self) -> CallOutcome:
        return CallOutcome(kind="invalid", text=self.text)


class ToolHost(Protocol):
    """What an executor toolset may use of the actor that hosts it."""

    config: Any  # core.config.Config
    log: Any

    async def ask(self, actor: str, body: Any, *, session: str = "", timeout: float | None = None) -> Any: ...


class Executor(Protocol):
    """An executor toolset, built once per host by its record's `ExecutorToolset.factory(host)`."""

    async def start(self) -> None: ...

    async def call(self, tool: str, args: dict[str, str], session: str) -> ToolResult: ...


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What a session toolset's handler gets of the session it runs in, and nothing more: built by
    the conversation for each call (`Conversation._run_here`)."""

    sid: str
    timers: TimerTable  # the session's own timers (the timers toolset)
    timer_set: Callable[[], None]  # a timer was set: the timer wheel wakes up for the soonest
    tell_user: Callable[[Msg], None]  # a message to this session's user (a UserNotice)
    background: tuple[ToolRun, ...]  # the session's toolset calls running in the background now
    cancel_task: Callable[[ToolRun], None]  # stops one of them; its call's result says so
    world: WorldPort | None  # the world around the sessions (None: no session actor, no world)
    asked: str = ""  # the user's words the call is made for (a watch keeps them: its match's turn may carry them out)
    ended: Mapping[str, str] = field(default_factory=dict)  # task id -> how a background task of the session ended


@dataclass(frozen=True, slots=True, kw_only=True)
class _Record:
    """What every toolset record has: its spec, its settings, and where it runs, which its type
    says (`runs`) and which the spec it carries says too (stamped here, never written by hand).
    steps: the plain requests it carries out for the session's fast path, by the kind core.reflex
    recognises ("play": a step, core.fastpath); phrasing: how they are said, read by core.reflex
    (core.fastpath.Phrasing); answer_check: the model's answers put right where they state a
    figure of its domain wrong."""

    runs: ClassVar[Literal["session", "executor"]]
    spec: ToolsetSpec
    settings: type | None = None
    steps: Mapping[str, Step] = field(default_factory=dict)
    phrasing: Phrasing | None = None
    # the model's answer with the figures of this toolset's domain it states put right ("80 kg is
    # about 35 lb": a conversion with no result behind it); the text itself when none is wrong
    answer_check: Callable[[str], str] | None = None

    def __post_init__(self) -> None:
        if self.spec.runs != self.runs:  # the catalog (protocol.Catalog) tells the session where it runs
            object.__setattr__(self, "spec", msgspec.structs.replace(self.spec, runs=self.runs))

    def read_settings(self, config: Config) -> Any:
        """Its section of `config` as `settings`; None when it takes none.
        Raises ConfigError naming a wrong key, or a section given to a toolset without settings."""
        name = self.spec.name
        raw = config.toolsets.sections.get(name)
        if self.settings is None:
            if raw is not None:
                raise ConfigError(f"toolset {name} takes no settings, so [toolsets.{name}] is unknown")
            return None
        return decode_section(raw or {}, self.settings, f"toolsets.{name}")

    def configured(self, config: Config) -> Toolset:
        """This record with its settings from `config` bound to its handler or factory (itself if it
        has none)."""
        settings = self.read_settings(config)
        return self if settings is None else self._bound(settings)

    def _bound(self, settings: Any) -> Toolset:
        raise NotImplementedError


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionToolset(_Record):
    """A toolset whose tools run in the session, on per-session state (timers, the world's
    watches): `handler(context, tool, args) -> CallOutcome`, `context` a SessionContext. With `settings`
    (a msgspec Struct with defaults: its config section `[toolsets.NAME]`) the handler also gets
    them, decoded, as `settings=`."""

    runs: ClassVar[Literal["session"]] = "session"
    handler: Callable[..., CallOutcome]

    def _bound(self, settings: Any) -> SessionToolset:
        return replace(self, handler=partial(self.handler, settings=settings))


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorToolset(_Record):
    """A toolset whose tools run in a toolset executor actor: `factory(host) -> Executor`, built
    once there (host: a ToolHost); each call runs in its own task. With `settings` the factory
    also gets them, decoded, as `settings=`, so no toolset's keys live in core.config."""

    runs: ClassVar[Literal["executor"]] = "executor"
    factory: Callable[..., Executor]

    def _bound(self, settings: Any) -> ExecutorToolset:
        return replace(self, factory=partial(self.factory, settings=settings))


Toolset = SessionToolset | ExecutorToolset


def phrasings_of(records: Iterable[Toolset]) -> tuple[Phrasing, ...]:
    """The phrasings the records declare (core.fastpath.Phrasing), in catalog order."""
    return tuple(record.phrasing for record in records if record.phrasing is not None)


def answer_checks_of(records: Iterable[Toolset]) -> tuple[Callable[[str], str], ...]:
    """The answer checks the records declare, in catalog order."""
    return tuple(record.answer_check for record in records if record.answer_check is not None)


def steps_of(records: Iterable[Toolset]) -> dict[str, Step]:
    """The fast path's steps the records declare, by kind; the first record in catalog order wins."""
    steps: dict[str, Step] = {}
    for record in records:
        for kind, step in record.steps.items():
            steps.setdefault(kind, step)
    return steps
"""One toolset, as `toolsets/NAME/__init__.py` exports it (`TOOLSET`) and the registry lists it. A
`SKILL.md` next to the record is the toolset's built-in skill (its "enable me" entry in the
skills index)."""


def invalid_args_text(tool: ToolSpec, reason: str = "") -> str:
    """The one wording of "these arguments do not fit", for every tool."""
    return f"arguments invalid for {tool.name}; expected: {terse(tool)}" + (f" ({reason})" if reason else "")


def failure_text(tool: str, why: str) -> str:
    """The one wording of a tool that could not run (the session prefixes `tool error: `)."""
    return f"tool {tool} failed: {why}; try again"


def repeatable(spec: ToolSpec | None) -> bool:
    """A call of this tool lost with the executor's process may be made again by the runtime: it
    changes nothing, or nothing more the second time. (The local model almost never makes a
    failed call again itself: `run.py eval --only restart`.)"""
    return spec is not None and (spec.read_only or spec.idempotent)


LOST_REASON = "the toolset executor restarted and lost this call before it finished"


def lost_text(tool: str) -> str:
    """A call the toolset executor's process died with, twice or of a tool not `repeatable`."""
    return failure_text(tool, LOST_REASON)


def error_result(text: str) -> str:
    """A failed call's result as the model reads it."""
    return f"tool error: {text}"


def error_outcome(text: str, data: ToolData | None = None) -> CallOutcome:
    """A call that failed: `text` says why (the model reads it after `tool error: `); `data`: what
    it showed all the same (an unknown id's close matches)."""
    return CallOutcome(kind="error", text=error_result(text), data=data)


def executed(reply: ToolOutcome) -> CallOutcome:
    """A toolset executor's answer as the model reads it (ok=False: a tool error), with its payload."""
    return CallOutcome(kind="ok", text=reply.text, data=reply.data) if reply.ok else error_outcome(reply.text, reply.data)


def args_text(args: Mapping[str, str]) -> str:
    """Arguments as a model writes them back: `id=3; query=abc`."""
    return "; ".join(f"{key}={value}" for key, value in args.items())


def cap_result(tool: str, args: Mapping[str, str], text: str, offset: int, limit: int) -> str:
    """`text` from `offset`, at most `limit` characters, and when that is not all of it a line
    that says so and how to read on (seed 003: truncation is visible, never silent)."""
    total = len(text)
    if offset <= 0 and total <= limit:
        return text
    if offset >= total:
        return f"offset={offset} is past the end: the result has {total} characters"
    end = min(total, offset + limit)
    if end < total and end - offset > 1 and text[end - 1] == "\\":
        end -= 1  # never part an escape (core.fence) from the label it escapes: it would read as one
    shown = f"{end - offset}" if offset == 0 else f"{offset + 1}\u2013{end}"
    line = f"showing {shown} of {total} characters"
    if end < total:
        more = args_text({**args, PAGE_ARG: str(end)})
        line += f"; TOOL_CALL: {tool}|{more}"
    else:
        line += "; that is all"
    return text[offset:end] + "\n" + line


class KeptResults:
    """The whole texts of cut results, for `offset=` calls, by (session, tool, arguments): at most
    `max_count` of them and `max_bytes` of memory together (sys.getsizeof); the least recently
    used go first, and a text larger than `max_bytes` alone is not kept."""

    def __init__(self, max_count: int, max_bytes: int):
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.bytes = 0
        self._texts: collections.OrderedDict[tuple, str] = collections.OrderedDict()

    def __contains__(self, key: tuple) -> bool:
        return key in self._texts

    def __getitem__(self, key: tuple) -> str:
        self._texts.move_to_end(key)
        return self._texts[key]

    def __len__(self) -> int:
        return len(self._texts)

    def keep(self, key: tuple, text: str) -> None:
        self._drop(key)
        size = sys.getsizeof(text)
        if size > self.max_bytes or not self.max_count:
            return
        while self._texts and (len(self._texts) >= self.max_count or self.bytes + size > self.max_bytes):
            self._drop(next(iter(self._texts)))
        self._texts[key] = text
        self.bytes += size

    def _drop(self, key: tuple) -> None:
        text = self._texts.pop(key, None)
        if text is not None:
            self.bytes -= sys.getsizeof(text)


def not_kept_text(tool: str, args: Mapping[str, str], max_bytes: int) -> str:
    """An `offset=` call whose whole result is no longer kept (KeptResults)."""
    call = f"{tool}|{args_text(args)}" if args else tool
    budget = f"{max_bytes / 1048576:.3g} MB" if max_bytes >= 1048576 else f"{max_bytes // 1024} KB"
    return (f"the result of {call} is no longer kept (the runtime keeps only the last {budget} of long "
            f"results); call the tool again without offset to read it from the start")


def toolsets_table(rows: Iterable[Any]) -> str:
    """`run.py toolsets list`: one line per toolset (protocol.ToolsetState)."""
    lines = [f"{'toolset':12} {'runs':9} {'state':12} {'tools':>5}  last error"]
    lines += [f"{row.name:12} {row.runs:9} {row.state:12} {row.tools:>5}  {row.error}".rstrip() for row in rows]
    return "\n".join(lines)


def terse(tool: ToolSpec) -> str:
    """`notes_add|text; tags?`: name, then the arguments in order, optional ones with `?`."""
    if not tool.args:
        return tool.name
    return tool.name + "|" + "; ".join(arg.name + ("" if arg.required else "?") for arg in tool.args)


class ToolsetRegistry:
    """The immutable catalog shared by all sessions: core tools plus the configured toolsets."""

    def __init__(self, toolsets: Iterable[ToolsetSpec], starting: Iterable[str] = ()):
        """`starting`: toolsets not in the catalog yet because their MCP server is starting; a
        call of one is told so, not that it does not exist."""
        self.starting = frozenset(starting)
        self._toolsets: dict[str, ToolsetSpec] = {}
        self._tools: dict[str, ToolSpec] = {tool.name: tool for tool in CORE_TOOLS}
        self._bound: dict[tuple[str, str], Bound | Invalid] = {}  # validate's answers (see there)
        self._serving: dict[str, str] = {}  # what a tool is to the runtime (ToolSpec.serves) -> that tool
        problems: list[str] = []
        for toolset in toolsets:
            problems += self._add(toolset)
        if problems:
            raise ValueError("invalid toolset catalog: " + "; ".join(problems))

    @classmethod
    def admitting(cls, fixed: Iterable[ToolsetSpec],
                  candidates: Iterable[ToolsetSpec]) -> tuple[ToolsetRegistry, dict[str, str]]:
        """The catalog of `fixed` (a bad one raises, as the constructor does) plus every candidate
        that fits beside them: a candidate whose names collide with a core tool or a toolset
        already in, or are otherwise invalid, is refused alone. Returns the registry and, by
        toolset name, why each refused candidate was (an untrusted MCP server never takes the
        others down with it)."""
        registry = cls(fixed)
        refused: dict[str, str] = {}
        for toolset in candidates:
            problems = registry._problems(toolset)
            if problems:
                refused[toolset.name] = "; ".join(problems)
            else:
                registry._add(toolset)
        return registry, refused

    def _add(self, toolset: ToolsetSpec) -> list[str]:
        self._bound.clear()
        problems = self._problems(toolset)
        for tool in toolset.tools:
            self._tools.setdefault(tool.name, tool)
            serving = self._serving.setdefault(tool.serves, tool.name) if tool.serves else tool.name
            if serving != tool.name:  # one tool per request, as one handler per intent: the first in catalog order
                _log.warning("tool %s serves %s, which %s serves already: the fast path keeps %s", tool.name,
                             tool.serves, serving, serving)
        self._toolsets.setdefault(toolset.name, toolset)
        return problems

    def _problems(self, toolset: ToolsetSpec) -> list[str]:
        """What keeps `toolset` out of this catalog as it stands (nothing is changed)."""
        problems = []
        name = toolset.name
        if not _TOOLSET_NAME.fullmatch(name):
            problems.append(f"toolset name {name!r} must be lower-case letters and digits, no '_'")
        if name in self._toolsets:
            problems.append(f"toolset {name} is declared twice")
        if not _one_line(toolset.summary):
            problems.append(f"toolset {name} needs a one-line summary")
        seen: set[str] = set()
        for tool in toolset.tools:
            problems += self._tool_problems(name, tool)
            if tool.name in self._tools or tool.name in seen:
                core = " (a core tool has that name)" if tool.name in CORE_TOOL_NAMES else ""
                problems.append(f"tool {tool.name} is declared twice{core}")
            seen.add(tool.name)
        return problems

    def specs(self) -> list[ToolsetSpec]:
        """The toolsets in, in catalog order (what a Catalog message carries)."""
        return list(self._toolsets.values())

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

    @property
    def tool_names(self) -> KeysView[str]:
        """Every tool's name, the core tools' too (a view: `in` is a dict lookup)."""
        return self._tools.keys()

    def toolset_of(self, tool: str) -> str | None:
        """The toolset a tool name routes to, by prefix alone (notes_* -> notes), even for a tool
        the set does not have; None for core tools and unknown prefixes."""
        prefix, sep, rest = tool.partition("_")
        return prefix if sep and rest and prefix in self._toolsets else None

    def spec(self, tool: str) -> ToolSpec | None:
        return self._tools.get(tool)

    def serving(self, request: Serves) -> str:
        """The tool that carries out `request` for the runtime (ToolSpec.serves); "": none here."""
        return self._serving.get(request, "")

    def terse_signature(self, tool: str) -> str:
        """Raises KeyError for an unknown tool."""
        return terse(self._tools[tool])

    def tool_line(self, tool: str) -> str:
        """One prompt line: `notes_add|text — add a note` (optional arguments left out)."""
        spec = self._tools[tool]
        # Optional arguments stay out of the signature (the summary says how to use them): a
        # small model copies `; page?` into its call literally.
        required = "; ".join(f"<{arg.name}>" for arg in spec.args if arg.required)
        signature = f"{spec.name}|{required}" if required else spec.name
        return f"{signature} — {spec.summary}"

    def examples(self) -> list[list[str]]:
        """Each toolset's worked examples for the prompt (the lines of its `example`), one list per
        toolset that has any, in catalog order."""
        groups = ([line for line in ts.example.splitlines() if line.strip()] for ts in self._toolsets.values())
        return [group for group in groups if group]

    def catalog_lines(self) -> list[str]:
        """One line per toolset: `notes — notes kept on disk: add, list`."""
        return [f"{ts.name} — {ts.summary}" for ts in self._toolsets.values()]

    def terse_registry(self, toolset: str) -> str:
        """A toolset's tools in one line: `notes_add|text; tags?, notes_list, …`."""
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
        prefix, sep, _ = tool.partition("_")
        if sep and prefix in self.starting:
            return self.starting_text(prefix)
        toolset = self.toolset_of(tool)
        if toolset is not None:
            tools = ", ".join(t.name for t in self._toolsets[toolset].tools)
            return f"tool {tool} does not exist; toolset {toolset} has: {tools}"
        return (f"tool {tool} does not exist; core tools: {_NAMED_CORE}; "
                f"toolsets: {', '.join(self._toolsets) or '(none)'}")

    def unknown_toolset_text(self, name: str) -> str:
        available = ", ".join(self._toolsets) or "(none)"
        if not name:
            return f"say which toolset; available: {available}"
        if name in self.starting:
            return self.starting_text(name)
        return f"toolset {name} does not exist; available: {available}"

    @staticmethod
    def starting_text(name: str) -> str:
        return (f"toolset {name} is still starting (its server has not listed its tools yet); "
                "it will be available in a moment: try again shortly")

    def validate(self, tool: str, raw_args: str) -> Bound | Invalid:
        """The call's arguments by name (a dict of the caller's own), or why they cannot be (the
        text to give the model). A step asks it of one call several times (the guard, the run,
        the skill read, S8's substitution), so the answers of the latest calls are kept: the
        catalog they depend on never changes."""
        key = (tool, raw_args)
        bound = self._bound.get(key)
        if bound is None:
            if len(self._bound) >= BOUND_KEPT:
                self._bound.clear()
            bound = self._bound[key] = self._bind(tool, raw_args)
        return Bound(args=dict(bound.args), offset=bound.offset) if isinstance(bound, Bound) else bound

    def _bind(self, tool: str, raw_args: str) -> Bound | Invalid:
        spec = self._tools.get(tool)
        if spec is None:
            return Invalid(text=self.unknown_tool_text(tool))
        names = [arg.name for arg in spec.args]
        page = None
        if self.pages(tool) and PAGE_ARG not in names:
            page = _PAGE_SUFFIX.search(raw_args)  # `; offset=4000` reads on in a cut result (cap_result)
            if page is not None:
                raw_args = raw_args[:page.start()]
        try:
            bound = bind_args(raw_args, names, {arg.name for arg in spec.args if arg.required})
        except ArgumentError:
            return Invalid(text=invalid_args_text(spec))
        return Bound(args=bound, offset=int(page.group(1)) if page is not None else 0)

    def pages(self, tool: str) -> bool:
        """True for a tool whose long results the executor cuts (any executor toolset's)."""
        toolset = self._toolsets.get(self.toolset_of(tool) or "")
        return toolset is not None and toolset.runs == "executor"

    def runs_in_session(self, toolset: str) -> bool:
        spec = self._toolsets.get(toolset)
        return spec is not None and spec.runs == "session"


def _one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text
