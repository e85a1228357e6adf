"""Toolsets: the catalog, tool invocation, and cancellation (S5, S11, E7)."""
from typing import Annotated, Literal

import msgspec

from protocol.base import Msg
from protocol.results import ToolData

# What a call does, for the session's guard (core.intent): a tool declares it in its spec, so no
# code names a tool. "" derives it: nothing for a read-only tool, else "change".
CallAction = Literal["", "timer_set", "timer_cancel", "play", "playback", "show", "watch", "task_cancel", "notify",
                     "change", "none"]

# What a tool is to the runtime itself, beyond the model's use of it: the plain request the fast
# path (core.reflex_steps) carries out with it, or the part it plays in a turn nobody asked for
# (core.event_turn). A toolset declares it, as Home Assistant's integrations declare the intents
# they handle, so the runtime asks for "the tool that plays a title", never for a tool's name; a
# request no toolset here serves is the model's. "": none.
Serves = Literal["", "title_search", "title_info", "title_play", "timer_set", "timer_list", "timer_cancel",
                 "watch_set", "watch_list", "watch_end", "task_list", "event_silent"]


class ArgSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    required: bool = True


class ToolSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """name carries the toolset prefix (media_search); summary is one terse line.
    long_running: a call answers at once with a task id, the result comes later as an event (E7).
    read_only: changes nothing, so a parallel side run (E5) may call it.
    idempotent: a second call with the same arguments changes nothing more (a play of what
    already plays). A read-only or idempotent call lost with the toolset executor's process is
    made again by the session; any other is answered as lost.

    Guards, declared here and read by the session (core.intent), never by the tool's name:
    action: the kind of change a call makes ("" derived: none when read_only, else "change";
    "none": a lookup or a switch that changes nothing of the user's). action_arg/arg_actions: an
    argument whose value, when given and not in arg_actions' "" entry, makes the call that kind
    (media_play's `action=pause` is a "playback"). asks: the words a call needs even as a lookup
    ("clock": words about the time or the date). grounded_args: arguments whose text must come
    from the user's words or a result shown (a reminder's text). seen_args: arguments that must
    be an id a result of the conversation showed, read from the results' typed payloads
    (protocol.results). id_args: arguments naming an id whose id-like value must appear in the
    text of a result or of the user's side of the conversation (an MCP tool's: its results are
    text, with no payload to read ids from, and the user may dictate one: core.intent.unshown_id).
    said_number_args: arguments whose whole number must be one the user said or a result showed,
    as said ("пятьдесят пять" is 55, not 50): an amount the model may not change (a conversion's).
    destructive: MCP's destructiveHint.
    serves: what the tool is to the runtime itself (Serves above).
    progress: the line the glasses show while a call runs, by language ("ru", "en"; {arg}: its
    first argument), e.g. {"en": "searching for “{arg}”…"}; none: no line."""

    name: str
    summary: str
    args: list[ArgSpec] = []
    long_running: bool = False
    timeout_s: float = 0.0  # one call's bound when it is the tool's own (a long_running MCP tool); 0: the toolset's
    read_only: bool = False
    idempotent: bool = False
    action: CallAction = ""
    action_arg: str = ""
    arg_actions: dict[str, CallAction] = {}
    asks: Literal["", "clock"] = ""
    grounded_args: list[str] = []
    seen_args: list[str] = []
    id_args: list[str] = []
    said_number_args: list[str] = []
    destructive: bool = False
    progress: dict[str, str] = {}
    serves: Serves = ""


class ToolsetSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """runs: "session" (the SessionActor runs its tools) or "executor" (the toolsets actor does);
    a toolset record's type sets it (core.toolsets.SessionToolset, ExecutorToolset), never its
    declaration, and the Catalog carries it to the session. origin: where it comes from (the
    registry's built-in toolsets, `toolsets.extra`, an MCP server): the fast path (core.reflex)
    leaves to the model what its own toolsets have nothing for when any other is there. timeout_s: how long one call may take (0: session.tool_timeout_s). example: worked examples
    for the prompt, one per line, `"what the user says" -> TOOL_CALL: … -> the answer` ("": none).
    offered_for / offered_for_verbs: a toolset that serves few requests and tempts a small model on
    many (the world's: "start my morning workout" -> the tasks' list) is offered to turn on (or its
    skill to read) only when the turn's words hold one of these word starts (ru and en; a start
    ending in a space is a whole word) or a verb of one of these kinds (core.intent); none: always."""

    name: str
    summary: str
    tools: list[ToolSpec] = []
    runs: Literal["session", "executor"] = "executor"
    timeout_s: float = 0.0
    example: str = ""
    origin: Literal["builtin", "extra", "mcp"] = "builtin"
    offered_for: list[str] = []
    offered_for_verbs: list[Literal["cancel", "watch", "notify"]] = []


class CatalogRequest(Msg):
    pass


class Catalog(Msg):
    toolsets: list[ToolsetSpec]
    starting: list[str] = []  # MCP toolsets whose server has not listed its tools yet (the model is told so)


class ToolInvoke(Msg):
    """Run one toolset tool for the session in the envelope. args are by argument name, bound and
    checked against the spec. offset > 0: the call reads a cut result on from there (the model's
    `; offset=4000`, core.toolsets.cap_result), never an argument of the tool itself."""

    call_id: str
    tool: str
    args: dict[str, str] = {}
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0


OutcomeKind = Literal["ok", "error", "invalid", "not_executed", "placeholder", "cancelled", "refused"]
FAILED_KINDS: frozenset[str] = frozenset({"error", "invalid", "not_executed", "refused"})
RAN_KINDS: frozenset[str] = frozenset({"ok", "placeholder"})


class CallOutcome(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What became of one tool call, from whoever answered it to the prompt and the journal: the
    runtime reads `kind` and `data`, the model reads `text` (exactly as written, never parsed back).
    data: what the call found or did, as fields (protocol.results), when its tool gives them.

    ok: the tool ran and `text` is its result. error: it was asked to run and failed (a tool error,
    a lost call, a timeout, a timer that could not be set). invalid: no such tool, or arguments
    that do not fit its spec: nothing ran. not_executed: S8 turned its toolset on instead of
    running it (to be made again). placeholder: still running, its result comes later (E6 rule 3).
    cancelled: stopped by the user or an interrupt before it finished. refused: the session's guard
    did not make it (core.intent)."""

    kind: OutcomeKind
    text: str
    data: ToolData | None = None

    @property
    def failed(self) -> bool:
        """Nothing was done, and the model is to know it (a call to make again, or to explain)."""
        return self.kind in FAILED_KINDS

    @property
    def ran(self) -> bool:
        """The tool ran, or runs on in the background: what it does is done (or under way)."""
        return self.kind in RAN_KINDS


class ToolOutcome(Msg):
    """ok=False is a tool error the model should read. A non-empty task_id means the tool
    started asynchronously (E7): the outcome arrives later as a tool_result event. data: the
    result's typed payload (protocol.results), beside the text the model reads."""

    call_id: str
    ok: bool
    text: str
    task_id: str = ""
    data: ToolData | None = None


class ToolCancel(Msg):
    call_id: str


NOT_RUNNING = "not_running"  # ErrorReply.code: the call asked about by ToolRunning is not running


class ToolRunning(Msg):
    """Is this call of the envelope's session still running? Ok(detail="running"), or
    ErrorReply(code="not_running"): a caller silent that long learns a call lost with a killed
    executor process (or dropped as stale) at once, not at its timeout."""

    call_id: str


class ToolsetsChanged(Msg):
    """To the SessionActor: the catalog changed (an MCP server listed other tools, started or
    died); sessions ask for it again, as for SkillsChanged."""


class ToolsetsRequest(Msg):
    pass


class ToolsetState(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    runs: Literal["session", "executor", "mcp"]
    state: Literal["available", "starting", "unavailable", "disabled"]
    tools: int
    error: str = ""


class ToolsetsReport(Msg):
    toolsets: list[ToolsetState]
