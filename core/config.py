"""Typed settings: one TOML file decoded by msgspec, defaults that work out of the box, and the
few environment variables a deployment must set.

Lookup: `--config PATH` (TOML; a `.json` file is read as JSON with the same keys), else `PORFIRY_CONFIG`, else `porfiry.toml` in the current directory if
present, else defaults. Every key is documented in README.md.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, TypeVar

import msgspec

from core import config_checks
from core.urgency import DEFAULT_INTERRUPT_PHRASES, DEFAULT_STOP_PHRASES
from llm.profiles import ProfileConfig, default_profiles

REPO_ROOT = Path(__file__).resolve().parent.parent
MIN_WEB_TOKEN_CHARS = 16
T = TypeVar("T")
Meta = msgspec.Meta  # each key's bounds and its one line for an operator (docs/configuration.md is made from them)
TUNING = {"tuning": True}  # a knob measured for this runtime that an operator should not need to turn


class _Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class TopologyConfig(_Section):
    """Where each actor's inbox lives. mode: inproc (one process), ipc (a process per actor, the
    default of `run.py serve`) or tcp (across hosts). `addresses` overrides single actors."""

    mode: Annotated[Literal["inproc", "ipc", "tcp"], Meta(description="inproc (one process), ipc (a process per actor), tcp (across hosts)")] = "ipc"
    ipc_dir: Annotated[str, Meta(min_length=1, description="directory of the ipc:// sockets")] = "/tmp/porfiry"
    tcp_host: Annotated[str, Meta(min_length=1, description="tcp mode: the host every actor binds and is reached at")] = "127.0.0.1"
    tcp_base_port: Annotated[int, Meta(ge=1, le=65535 - 6, description="tcp mode: the supervisor's port; each actor at base + its port in actors/topology.py")] = 7700
    addresses: Annotated[dict[str, str], Meta(description="per-actor address overrides (tcp://HOST:PORT, ipc://PATH, inproc://NAME)")] = {}
    # ipc/tcp: actors listed together share one OS process and talk over inproc:// (the others
    # still reach them over ipc/tcp). Fewer hops between processes, less isolation: a crash
    # restarts the whole group. E.g. [["glasses", "session"]]. Default: a process per actor.
    groups: Annotated[list[list[str]], Meta(description="ipc/tcp: actors listed together share one OS process; a crash restarts the whole group")] = []
    # CURVE between the actors and the CLI (transport/bus.py); keys: bus.key_secret in phone.keys_dir
    bus_curve: Annotated[Literal["auto", "on", "off"], Meta(description="internal bus authenticated with CURVE: auto = tcp mode (loopback too), on = ipc too, off = never")] = "auto"


class SupervisorConfig(_Section):
    """OTP-style: more than `intensity` restarts within `period_s` stops the system."""

    intensity: Annotated[int, Meta(ge=0, description="more than this many restarts within period_s stops the system (exit 2)")] = 5
    period_s: Annotated[float, Meta(gt=0, description="the window of supervisor.intensity, seconds")] = 30.0
    ask_timeout_s: Annotated[float, Meta(ge=0.1, le=3600, description="default request/reply timeout between actors, seconds")] = 2.0
    # an actor process whose actors answer no Ping for this long is hung (a blocked loop, a
    # handler that never returns): killed, so it restarts; 0: never
    hung_after_s: Annotated[float, Meta(ge=0, description="an actor process answering no Ping this long is killed and restarted; 0: never")] = 60.0
    watchdog_every_s: Annotated[float, Meta(ge=0.1, le=3600, description="how often each actor is pinged for supervisor.hung_after_s", extra=TUNING)] = 5.0


class ProtocolConfig(_Section):
    max_message_bytes: Annotated[int, Meta(ge=4096, le=1 << 30, description="larger messages are refused (also ZMQ_MAXMSGSIZE on the phone endpoint)")] = 1 << 20


class PhoneConfig(_Section):
    endpoint: Annotated[str, Meta(min_length=1, description="where phones connect (tcp://HOST:PORT or ipc://PATH)")] = "tcp://127.0.0.1:7600"
    curve: Annotated[bool, Meta(description="CURVE encryption and a key allow-list on the phone endpoint")] = False
    keys_dir: Annotated[str, Meta(min_length=1, description="server.key_secret, authorized/*.key (allowed phones), phones/")] = "var/keys"
    playback_wait_s: Annotated[float, Meta(ge=0, le=60, description="how long a play (the media toolset) waits for the phone before answering \"requested\", seconds")] = 1.0
    pending_per_session: Annotated[int, Meta(ge=1, description="events of one session waiting at the bridge before the phone gets Busy")] = 16
    max_text_chars: Annotated[int, Meta(ge=1, description="a longer UserText (or notification text) is refused with ErrorReply too_long")] = 4000
    max_sender_chars: Annotated[int, Meta(ge=1, description="a phone notification whose sender is longer is refused with ErrorReply too_long")] = 200
    max_app_chars: Annotated[int, Meta(ge=1, description="a phone notification whose app name is longer is refused with ErrorReply too_long")] = 64
    max_session_id_chars: Annotated[int, Meta(ge=8, le=1024, description="a longer session id (or one with a space or a control character) is refused with ErrorReply bad_session (the console and webhooks too)")] = 128
    events_per_s: Annotated[float, Meta(ge=1, description="events per connection per second (burst: 2 s worth); past it: RateLimited")] = 50.0
    sessions_per_connection: Annotated[int, Meta(ge=1, description="sessions one connection may address; past it: ErrorReply too_many_sessions")] = 64
    pending_per_connection: Annotated[int, Meta(ge=1, description="events of one connection waiting at the bridge before Busy")] = 256
    send_queue_per_peer: Annotated[int, Meta(ge=1, description="replies held for a phone that does not read; past it the phone is cut off")] = 2000
    garbage_log_interval_s: Annotated[float, Meta(ge=0, description="undecodable input and storage failures: one log line per peer per interval, with a count", extra=TUNING)] = 10.0
    max_connections: Annotated[int, Meta(ge=1, description="phone connections at once, all phones together; past it: ErrorReply too_many_connections")] = 20_000
    max_sessions: Annotated[int, Meta(ge=1, description="sessions in the bridge's memory, all phones together; past it a new one: ErrorReply runtime_full")] = 50_000
    max_follow_s: Annotated[float, Meta(gt=0, description="the longest `run.py say --follow SECONDS` (listening for late results after the turn); more: a clear error, nothing sent")] = 3600.0


class SessionConfig(_Section):
    toolset_ttl_s: Annotated[float, Meta(gt=0, description="a toolset goes inactive this long after its last call (S6), seconds")] = 600.0
    timezone: Annotated[str, Meta(description="time zone of get_current_time and timers (IANA name)")] = "Europe/Moscow"
    execute_substituted_calls: Annotated[bool, Meta(description="a valid call to an inactive toolset turns it on and runs at once (S8)")] = True
    enable_on_skill_read: Annotated[bool, Meta(description="reading a toolset's own skill turns it on: one model step fewer (issue 33)")] = True
    progress_lines: Annotated[bool, Meta(description="a first line on the glasses as soon as a call is parsed, e.g. 'ищу «Матрица»…' (issue 33)")] = True
    first_feedback_ms: Annotated[float, Meta(ge=0, le=60_000, description="a turn that has shown nothing this long after it started (the model still silent) shows 'думаю…'/'thinking…', so the user sees within a second that the event was taken; 0: never (issue 54)")] = 400.0
    small_talk_plain: Annotated[bool, Meta(description="small talk (core.intent.small_talk) is offered no tool: a plain answer (issue 33)")] = True
    reflexes: Annotated[bool, Meta(description="plain requests (the time, a timer, play or find a title, a follow-up about it) are carried out by the session without the model (core.reflex)")] = True
    frame: Annotated[bool, Meta(description="words no reflex recognises are first put by the model as one command of a short list, carried out by a reflex when every name and number in it is the user's (core.frame); off: the model takes such turns")] = True
    frame_examples: Annotated[int, Meta(ge=0, le=32, description="requests of the frame bank most like the user's words shown to the frame after its fixed examples (core.frame_bank); each costs the local model about 0.6 s of prompt; 0: the fixed examples alone")] = 4
    queue_limit: Annotated[int, Meta(ge=1, description="events waiting in a session before it answers Busy (timer firings excepted)")] = 32
    index_budget_tokens: Annotated[int, Meta(ge=0, description="the toolsets catalog and the skills index together, in the embedded model's tokens: past it the prompt lists what is most relevant to the conversation and says how many more discover_tools finds (issue 53); 0: no bound")] = 400
    discover_rewording: Annotated[bool, Meta(description="discover_tools also searches by the model's short English rewording of the need (one short model call, REWORDING_MAX_TOKENS tokens): words no word list knows find their tool; off: the need's own words alone")] = True
    discover_first: Annotated[bool, Meta(description="where tools are left out of the prompt (the budget, a big toolset), a user's request that reaches the model is first searched as discover_tools would search it, and the tools found are made callable before the model's first step (issue 53); not for small talk, a remark or an event with no user words; off: the model calls discover_tools itself")] = True
    max_active_tools: Annotated[int, Meta(ge=1, description="a toolset with more tools shows only some (discovered, called, relevant); the tools made active per session, the least recently used dropped first")] = 24
    toolset_first_tools: Annotated[int, Meta(ge=1, description="tools of a toolset bigger than max_active_tools shown when it is turned on: those most like the conversation's words")] = 8
    max_steps: Annotated[int, Meta(ge=1, le=1000, description="model calls per turn before giving up politely")] = 8
    max_tokens: Annotated[int, Meta(ge=1, description="tokens per model call")] = 256
    llm_timeout_s: Annotated[float, Meta(gt=0, description="silence from the model before a clear error, seconds")] = 60.0
    tool_timeout_s: Annotated[float, Meta(gt=0, description="silence from a tool (a background tool: its whole run) before a clear error, seconds")] = 10.0
    urgent_words: Annotated[list[str], Meta(description="stop phrases: an utterance that starts with one cancels (E3)")] = msgspec.field(default_factory=lambda: list(DEFAULT_STOP_PHRASES))
    parallel_patterns: Annotated[list[str], Meta(description="regexes of light requests answered in parallel (E5); empty: the built-in ones")] = []
    interrupt_phrases: Annotated[list[str], Meta(description="while busy, an utterance that starts with one interrupts")] = msgspec.field(default_factory=lambda: list(DEFAULT_INTERRUPT_PHRASES))
    router: Annotated[Literal["rules", "model"], Meta(description="rules, or model: a classifier model judges user text the rules would queue")] = "rules"
    router_profile: Annotated[str, Meta(description="the model router's LLM profile; empty: the active profile")] = ""
    router_timeout_s: Annotated[float, Meta(gt=0, description="no usable answer from the model router by then: the rules decide, seconds")] = 1.5
    router_classifier: Annotated[bool, Meta(description="the shipped classifier judges user text said while busy (docs/interruptions.md)")] = True
    tool_background_after_s: Annotated[float, Meta(ge=0, description="0: a slow call keeps its turn waiting and events said meanwhile join its batch (seed 003); > 0: a call still running after this moves to the background with a task id", extra=TUNING)] = 0.0
    tool_progress_after_s: Annotated[float, Meta(ge=0, description="a call running this long shows a progress line on the glasses, seconds; 0: none")] = 3.0
    idle_session_ttl_s: Annotated[float, Meta(ge=1, description="a session idle this long leaves memory (its journal keeps it), seconds")] = 3600.0
    llm_turn_timeout_s: Annotated[float, Meta(gt=0, description="one whole generation, however steadily it streams, seconds")] = 120.0
    probe_s: Annotated[float, Meta(ge=0.1, description="a model or tool call silent this long: is its process still there? seconds", extra=TUNING)] = 2.0
    # turn admission (core/admission.py): past this standing queueing delay (a phone event's ack,
    # a model reply), fewer new turns start at once; the rest wait, accepted and acked; 0: never
    admission_delay_ms: Annotated[float, Meta(ge=0, description="turn admission: past this standing queueing delay fewer new turns start at once; 0: never", extra=TUNING)] = 50.0
    admission_min_turns: Annotated[int, Meta(ge=1, description="turn admission: the limit never drops below this; a restart's slow start begins here", extra=TUNING)] = 8
    admission_max_turns: Annotated[int, Meta(ge=1, description="turn admission: turns running at once, at most", extra=TUNING)] = 4096


class SkillsConfig(_Section):
    builtin_dir: Annotated[str, Meta(min_length=1, description="built-in skills of no toolset: NAME/SKILL.md")] = "skills"
    toolsets_dir: Annotated[str, Meta(min_length=1, description="a toolset folder's SKILL.md is a built-in skill too")] = "toolsets"
    user_dir: Annotated[str, Meta(min_length=1, description="the user's skills, re-read when they change")] = "var/user-skills"
    exclusions: Annotated[dict[str, list[str]], Meta(description="{ skill = [\"session-id\", \"phone-key\"] }: closed for those (V3)")] = {}
    max_skill_bytes: Annotated[int, Meta(ge=1, description="a larger SKILL.md is rejected before it is read")] = 64 * 1024
    read_timeout_s: Annotated[float, Meta(gt=0, description="a SKILL.md slower to read is rejected, seconds")] = 2.0


class StorageConfig(_Section):
    """The database: session journals, dedup ids, session ownership. "sqlite": embedded (WAL, at
    `path`); "postgres": a server at `url`, shared by several nodes (docs/several-nodes.md)."""

    path: Annotated[str, Meta(min_length=1, description="the embedded database (SQLite, WAL): session ownership and journals; one runtime per file")] = "var/porfiry.sqlite3"
    backend: Annotated[Literal["sqlite", "postgres"], Meta(description="sqlite: the embedded file at path; postgres: a server at url, shared by several nodes (docs/several-nodes.md)")] = "sqlite"
    url: Annotated[str, Meta(description="postgres: a libpq URL, e.g. postgresql://porfiry@/porfiry?host=/run/postgresql; env PORFIRY_STORAGE_URL")] = ""
    retention_days: Annotated[float, Meta(ge=0, description="entries and answered events older than this are deleted; 0: keep forever")] = 0.0
    journal: Annotated[bool, Meta(description="false: sessions in memory only (a restart forgets them); to measure the journal's cost")] = True


class NodeConfig(_Section):
    """One of several runtime nodes sharing storage.backend = "postgres" (docs/several-nodes.md).
    A session is served by one node at a time: the node holding its lease in the database."""

    name: Annotated[str, Meta(description="this node's name; empty: the only node, no leases; run.py serve --node NAME, env PORFIRY_NODE_NAME")] = ""
    lease_s: Annotated[float, Meta(gt=0, description="a node that has not renewed its lease this long is dead: its sessions move")] = 10.0
    heartbeat_s: Annotated[float, Meta(gt=0, description="how often a node renews its lease and adopts a dead node's sessions (below lease_s)")] = 2.0
    adopt_batch: Annotated[int, Meta(ge=1, description="a dead node's sessions claimed per heartbeat")] = 64
    handover_poll_s: Annotated[float, Meta(gt=0, description="how often a node looks for its sessions another node asked for")] = 0.2
    handover_wait_s: Annotated[float, Meta(gt=0, description="how long a node waits for a live holder to hand a session over; then the event is refused")] = 30.0


class LLMConfig(_Section):
    profile: Annotated[str, Meta(min_length=1, description="the active LLM profile at start")] = "local"
    profiles: Annotated[dict[str, ProfileConfig], Meta(description="LLM profiles by name (kind, model, base_url, ...)")] = {}
    stream_interval_ms: Annotated[float, Meta(ge=0, le=10_000, description="streamed text leaves the worker at most this often (first piece at once)", extra=TUNING)] = 30.0
    warmup: Annotated[bool, Meta(description="at start the LLM worker loads the active llamacpp profile's model and evaluates the static prompt (and the frame's), so the first answer costs what any answer costs (issue 54)")] = True
    warmup_wait_s: Annotated[float, Meta(ge=0, le=3600, description="how long `run.py up` and the supervisor's ready line wait for that warm-up, seconds; past it they go on (the model keeps warming, the first answer waits for it)")] = 600.0


class WebConfig(_Section):
    """The web console and /metrics (`run.py web`). Any host but loopback requires the token;
    empty: one is generated into `token_path` on first use."""

    host: Annotated[str, Meta(min_length=1, description="where run.py web (and up) listens")] = "127.0.0.1"
    port: Annotated[int, Meta(ge=1, le=65535, description="the web console's port")] = 8780
    token: Annotated[str, Meta(description="any host but loopback requires this token; empty: one is generated into token_path")] = ""
    token_path: Annotated[str, Meta(min_length=1, description="where a generated web token is kept")] = "var/web-token"
    max_subscribers: Annotated[int, Meta(ge=1, description="Observe subscriptions the session actor serves at once")] = 8
    max_clients: Annotated[int, Meta(ge=1, description="browser pages streaming at once (HTTP 503 beyond)")] = 32
    timeline_facts: Annotated[int, Meta(ge=1, description="per session: events, turns, model and tool calls the console keeps")] = 1000
    sessions_kept: Annotated[int, Meta(ge=1, description="sessions the console remembers (least recently active dropped)")] = 200
    max_text_chars: Annotated[int, Meta(ge=1, description="a message typed in the page (HTTP 400 beyond)")] = 2000
    allowed_hosts: Annotated[list[str], Meta(description="Host names (or name:port) the console answers to besides its address and loopback")] = []
    token_guesses_per_min: Annotated[int, Meta(ge=1, description="wrong tokens per client address a minute; past it: HTTP 429")] = 10
    stream_max_bytes: Annotated[int, Meta(ge=4096, description="facts waiting for one page's event stream, bytes; past it the oldest are dropped (a marker says how many)")] = 1 << 20
    max_body_bytes: Annotated[int, Meta(ge=1024, le=1 << 26, description="a larger command body (POST /api/...) is refused (413) before it is read whole, bytes")] = 64 * 1024
    max_json_depth: Annotated[int, Meta(ge=2, le=512, description="JSON nested deeper (a command or a webhook body) is refused (400) before it is decoded")] = 32

    def __post_init__(self) -> None:
        if self.token and len(self.token) < MIN_WEB_TOKEN_CHARS:
            raise ValueError(f"web.token must be at least {MIN_WEB_TOKEN_CHARS} characters (it has {len(self.token)}); "
                             "leave it empty and one is drawn into web.token_path")


class ToolsetsConfig(_Section):
    """Toolsets beyond the built-in registry (`toolsets/__init__.py`), the bound on results, and
    each toolset's own section. Any other key of `[toolsets]` names a toolset, so a key added here
    needs a `_` (toolset names have none)."""

    extra: Annotated[list[str], Meta(description="module:ATTRIBUTE of further toolset records, e.g. mytools.weather:TOOLSET")] = []
    max_result_chars: Annotated[int, Meta(ge=200, description="longer results are cut, with an offset= call for the rest")] = 4000
    results_kept: Annotated[int, Meta(ge=0, description="full cut results kept for offset= calls (all sessions)")] = 64
    results_kept_bytes: Annotated[int, Meta(ge=0, description="memory those kept results may take together, bytes: the least recently used go first; a larger one is not kept")] = 4 * 1024 * 1024
    # The raw `[toolsets.NAME]` tables, filled by load_config: the toolset decodes its own against
    # the settings Struct its record declares (core.toolsets.Toolset.settings).
    sections: Annotated[dict[str, dict[str, Any]], Meta(description="each toolset's own [toolsets.NAME] section, decoded by that toolset")] = {}


class McpServerConfig(_Section):
    """One MCP server, a toolset named after its key: `command` (stdio) or `url` (streamable HTTP)."""

    command: Annotated[list[str], Meta(description="a stdio server's command line")] = []
    url: Annotated[str, Meta(description="a streamable-HTTP server's URL (http:// or https://)")] = ""
    env: Annotated[dict[str, str], Meta(description="the only environment a stdio server gets (plus PATH)")] = {}
    cwd: Annotated[str, Meta(description="a stdio server's working directory")] = ""
    timeout_s: Annotated[float, Meta(gt=0, description="one call, and the server's start, seconds")] = 10.0
    long_running: Annotated[list[str], Meta(description="the server's tools whose calls answer with a task id at once")] = []
    long_running_timeout_s: Annotated[float, Meta(gt=0, description="a long_running call's whole run (not timeout_s), seconds; past it: \"timed out\"")] = 3600.0
    long_running_timeouts: Annotated[dict[str, float], Meta(description="per long_running tool (its name as the server lists it): its own long_running_timeout_s")] = {}
    long_running_stall_s: Annotated[float, Meta(ge=0, description="a long_running call with no progress (notifications/progress) for this long since its start or its last progress is stopped as stalled, seconds; 0: never")] = 300.0
    summary: Annotated[str, Meta(description="the catalog line; empty: the server's instructions, first sentence")] = ""
    intents: Annotated[str, Meta(description="custom sentences for this server's tools, answered without the model: an intents.yaml in the Home Assistant Intent Language, as a toolset folder's (ARCHITECTURE.md, Adding a toolset); relative to the repository root; empty: none")] = ""
    enabled: Annotated[bool, Meta(description="false keeps the server configured but off")] = True


class McpConfig(_Section):
    servers: Annotated[dict[str, McpServerConfig], Meta(description="MCP servers, each a toolset named after its key")] = {}
    restart_backoff_s: Annotated[float, Meta(ge=0.01, description="first wait before restarting a dead server, doubling, seconds", extra=TUNING)] = 1.0
    restart_backoff_max_s: Annotated[float, Meta(gt=0, description="the longest wait between restarts of a dead server, seconds", extra=TUNING)] = 60.0
    max_tools: Annotated[int, Meta(ge=1, le=10_000, description="tools per server, a hard cap: those past it are refused (one log line, shown by toolsets list); those within it but past session.max_active_tools are found with discover_tools. The catalog message must fit protocol.max_message_bytes (about 300 bytes a tool)")] = 2000
    max_description_chars: Annotated[int, Meta(ge=20, description="a tool's one-liner in the prompt is cut to this")] = 120
    check_interval_s: Annotated[float, Meta(ge=0.1, description="tools are listed again this often: a dead idle server is restarted, seconds", extra=TUNING)] = 10.0
    start_wait_s: Annotated[float, Meta(ge=0, le=50, description="at start the runtime is ready only once every server has listed its tools or failed, waiting at most this long, seconds")] = 15.0
    warning_interval_s: Annotated[float, Meta(ge=1, description="a server's repeated warning (refused tools) is logged once per interval, seconds", extra=TUNING)] = 300.0


class ChannelConfig(_Section):
    """One channel, `[channels.NAME]`: a webhook (needs `secret` or `secret_env`) or the name of a
    phone app whose notifications it describes. See docs/world-events.md."""

    secret: Annotated[str, Meta(description="the HMAC-SHA256 key of POST /channels/NAME (or secret_env); none: no webhook")] = ""
    secret_env: Annotated[str, Meta(description="the environment variable that holds the secret")] = ""
    sessions: Annotated[list[str], Meta(description="the sessions this webhook may feed; another is refused (403)")] = []
    urgency: Annotated[Literal["low", "normal", "high"], Meta(description="an event's urgency when it does not say; high interrupts")] = "normal"
    wake: Annotated[Literal["always", "watched"], Meta(description="always: every event is shown; watched: only what a watch the model set matches")] = "always"


class ChannelsConfig(_Section):
    """Events from outside (E10): phone notifications and signed webhooks, with their bounds.
    Any other key of `[channels]` is a channel (`[channels.NAME]`)."""

    max_body_bytes: Annotated[int, Meta(ge=64, le=1 << 24, description="a larger webhook body is refused (413) before it is read whole")] = 16 * 1024
    max_text_chars: Annotated[int, Meta(ge=1, description="a longer webhook text is refused (413)")] = 2000
    max_sender_chars: Annotated[int, Meta(ge=1, description="a longer webhook sender is refused (413)")] = 200
    replay_window_s: Annotated[float, Meta(gt=0, description="X-Porfiry-Timestamp farther than this from now is refused (401), seconds")] = 300.0
    posts_per_min: Annotated[float, Meta(gt=0, description="valid posts per channel a minute (burst: a minute's worth); past it: 429")] = 60.0
    log_interval_s: Annotated[float, Meta(gt=0, description="refused posts: one log line per channel per interval, with a count", extra=TUNING)] = 10.0
    phone_wake: Annotated[Literal["always", "watched"], Meta(description="phone notifications of an app with no [channels.APP]: shown always or only when watched")] = "watched"
    max_watches: Annotated[int, Meta(ge=1, description="watches of channels per session")] = 20
    min_secret_chars: Annotated[int, Meta(ge=16, description="a webhook secret (secret, or the value of secret_env) shorter than this is refused at start")] = 16
    named: Annotated[dict[str, ChannelConfig], Meta(description="the channels, each [channels.NAME]")] = {}


class MonitorConfig(_Section):
    """One monitor the model may start by name, `[monitors.NAME]`: a `command` (argv, no shell)
    or a `url`, checked every `interval_s`. The model never gives the command."""

    command: Annotated[list[str], Meta(description="what it runs, as argv (no shell); or url")] = []
    url: Annotated[str, Meta(description="what it GETs (its status and body are checked); or command")] = ""
    interval_s: Annotated[float, Meta(ge=0.05, description="between runs or requests, seconds")] = 60.0
    timeout_s: Annotated[float, Meta(gt=0, description="one run or request; past it the process is killed (\"timed out\"), seconds")] = 10.0
    summary: Annotated[str, Meta(description="what it watches, for the model (the monitors' list)")] = ""


class MonitorsConfig(_Section):
    """Monitors: the operator's allow-list (`[monitors.NAME]`) and their bounds."""

    max_per_session: Annotated[int, Meta(ge=1, description="monitors running at once in one session")] = 5
    max_total: Annotated[int, Meta(ge=1, description="monitors running at once in the whole runtime (every session); past it one is refused")] = 50
    max_output_chars: Annotated[int, Meta(ge=100, description="output kept of a run, and shown when it fires")] = 2000
    named: Annotated[dict[str, MonitorConfig], Meta(description="the allowed monitors, each [monitors.NAME]")] = {}


class NotifyConfig(_Section):
    """Notices to the user and displays kept while the glasses are off."""

    max_kept: Annotated[int, Meta(ge=1, description="notifications kept per session (the oldest read one goes first)")] = 100
    max_text_chars: Annotated[int, Meta(ge=20, description="a longer notice is cut")] = 1000
    status_interval_s: Annotated[float, Meta(ge=0, description="a background task's progress reaches the glasses at most this often, seconds", extra=TUNING)] = 0.5


class TracingConfig(_Section):
    """OpenTelemetry spans of turns, model calls and tool calls, exported over OTLP/HTTP
    (docs/tracing.md). Off, nothing of the OpenTelemetry SDK is imported."""

    enabled: Annotated[bool, Meta(description="spans of every turn, model call and tool call, across the actor processes, exported over OTLP/HTTP; needs the tracing extra (pip install -e '.[tracing]')")] = False
    otlp_endpoint: Annotated[str, Meta(description="the collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 (/v1/traces is added); empty: env OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318")] = ""
    service_name: Annotated[str, Meta(min_length=1, description="service.name of every span's resource")] = "porfiry"
    sample_ratio: Annotated[float, Meta(ge=0, le=1, description="the share of turns traced (their model and tool calls with them, in every process)")] = 1.0


class Config(_Section):
    topology: Annotated[TopologyConfig, Meta(description="where each actor's inbox lives, and which actors share a process")] = msgspec.field(default_factory=TopologyConfig)
    supervisor: Annotated[SupervisorConfig, Meta(description="restarts of crashed or hung actor processes")] = msgspec.field(default_factory=SupervisorConfig)
    protocol: Annotated[ProtocolConfig, Meta(description="the message format's bounds")] = msgspec.field(default_factory=ProtocolConfig)
    phone: Annotated[PhoneConfig, Meta(description="the phone endpoint and its bounds")] = msgspec.field(default_factory=PhoneConfig)
    session: Annotated[SessionConfig, Meta(description="sessions: timeouts, queues, routing, turn admission")] = msgspec.field(default_factory=SessionConfig)
    skills: Annotated[SkillsConfig, Meta(description="where skills live and their bounds")] = msgspec.field(default_factory=SkillsConfig)
    toolsets: Annotated[ToolsetsConfig, Meta(description="further toolsets, the bound on results, each toolset's own section")] = msgspec.field(default_factory=ToolsetsConfig)
    mcp: Annotated[McpConfig, Meta(description="MCP servers as toolsets")] = msgspec.field(default_factory=McpConfig)
    llm: Annotated[LLMConfig, Meta(description="LLM profiles and the active one")] = msgspec.field(default_factory=LLMConfig)
    web: Annotated[WebConfig, Meta(description="the web console and /metrics")] = msgspec.field(default_factory=WebConfig)
    storage: Annotated[StorageConfig, Meta(description="the database: embedded SQLite, or PostgreSQL shared by several nodes")] = msgspec.field(default_factory=StorageConfig)
    channels: Annotated[ChannelsConfig, Meta(description="events from outside: phone notifications and signed webhooks (docs/world-events.md)")] = msgspec.field(default_factory=ChannelsConfig)
    monitors: Annotated[MonitorsConfig, Meta(description="the commands and URLs the model may watch, and their bounds")] = msgspec.field(default_factory=MonitorsConfig)
    notify: Annotated[NotifyConfig, Meta(description="notices to the user and what waits while the glasses are off")] = msgspec.field(default_factory=NotifyConfig)
    node: Annotated[NodeConfig, Meta(description="one of several runtime nodes on one PostgreSQL: its name and its lease (docs/several-nodes.md)")] = msgspec.field(default_factory=NodeConfig)
    tracing: Annotated[TracingConfig, Meta(description="OpenTelemetry spans over OTLP/HTTP, off by default (docs/tracing.md)")] = msgspec.field(default_factory=TracingConfig)

    def path(self, value: str) -> Path:
        """Resolve a configured path: relative paths are relative to the repository root."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else REPO_ROOT / p

    def builtin_skill_dirs(self) -> list[Path]:
        """Where built-in skills live: `skills.builtin_dir`, then each toolset folder's SKILL.md."""
        return [self.path(self.skills.builtin_dir), self.path(self.skills.toolsets_dir)]

    def with_section(self, toolset: str, **values: Any) -> Config:
        """A copy with these keys set in a toolset's section: scratch paths for a test or a benchmark."""
        sections = {**self.toolsets.sections, toolset: {**self.toolsets.sections.get(toolset, {}), **values}}
        return msgspec.structs.replace(self, toolsets=msgspec.structs.replace(self.toolsets, sections=sections))


class ConfigError(Exception):
    pass


def load_config(path: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    path = path or env.get("PORFIRY_CONFIG")
    if path is None and Path("porfiry.toml").exists():
        path = "porfiry.toml"
    where = f"config {path}" if path else "config"
    tables: Any = {}
    try:
        if path:
            decode = msgspec.json.decode if str(path).endswith(".json") else msgspec.toml.decode
            tables = decode(Path(path).read_bytes())
            config = _from_tables(tables)  # each toolset's section: core.loading.load_config
        else:
            config = Config()
        return check(apply_env(config, env))
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {config_checks.explain(exc, Config, tables)}") from None
    except (OSError, msgspec.DecodeError, ConfigError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def check(config: Config) -> Config:
    """Every value within its bounds (again, after the environment's overrides), every regex
    compiled, every endpoint parsed, no file path empty or a directory, the time zone known.
    Raises ValueError, one line naming the key (`serve` then checks the database can be written)."""
    tables = msgspec.json.decode(to_json(config))
    try:
        _from_tables(tables)
    except msgspec.ValidationError as exc:  # a value from the environment (the file's were decoded already)
        raise ValueError(config_checks.explain(exc, Config, tables)) from None
    checks = config_checks
    checks.check_endpoint("phone.endpoint", config.phone.endpoint, ("tcp", "ipc"))
    for actor, address in config.topology.addresses.items():
        checks.check_endpoint(f"topology.addresses.{actor}", address)
    if config.topology.mode == "ipc":
        checks.check_endpoint("topology.ipc_dir", f"ipc://{Path(config.topology.ipc_dir) / 'toolsets.sock'}", ("ipc",))
    checks.check_regexes("session.parallel_patterns", config.session.parallel_patterns)
    checks.check_timezone("session.timezone", config.session.timezone)
    checks.check_file_path("storage.path", config.path(config.storage.path))
    checks.check_file_path("web.token_path", config.path(config.web.token_path))
    for name, server in config.mcp.servers.items():
        checks.check_url(f"mcp.servers.{name}.url", server.url)
        if server.intents:
            checks.check_readable_file(f"mcp.servers.{name}.intents", config.path(server.intents))
    checks.check_url("tracing.otlp_endpoint", config.tracing.otlp_endpoint)
    for name, monitor in config.monitors.named.items():
        checks.check_name(f"monitors.{name}", name, "monitor")
        checks.check_monitor(f"monitors.{name}", monitor.command, monitor.url)
    for name, channel in config.channels.named.items():
        checks.check_name(f"channels.{name}", name, "channel")
        if channel.secret:
            checks.check_secret(f"channels.{name}.secret", channel.secret, config.channels.min_secret_chars)
    supervisor = config.supervisor
    if 0 < supervisor.hung_after_s < 2 * supervisor.watchdog_every_s:  # a Ping a little late is not a hang
        raise ValueError(f"supervisor.hung_after_s must be 0 (never) or at least 2 x supervisor.watchdog_every_s "
                         f"({2 * supervisor.watchdog_every_s:g}) (got {supervisor.hung_after_s:g})")
    if config.mcp.restart_backoff_s > config.mcp.restart_backoff_max_s:
        raise ValueError(f"mcp.restart_backoff_s ({config.mcp.restart_backoff_s:g}) exceeds mcp.restart_backoff_max_s "
                         f"({config.mcp.restart_backoff_max_s:g})")
    return config


_CORE_SECTIONS = frozenset(Config.__struct_fields__)
_TOOLSETS_KEYS = frozenset(ToolsetsConfig.__struct_fields__) - {"sections"}


def _from_tables(tables: dict[str, Any]) -> Config:
    """The config of a decoded file. A toolset's section is kept raw in `toolsets.sections`: it is
    `[toolsets.NAME]`, or (the older spelling) a top-level `[NAME]` that is not a core section."""
    tables = dict(tables)
    toolsets = tables.get("toolsets", {})
    if isinstance(toolsets, dict):
        toolsets = dict(toolsets)
        sections = {key: toolsets.pop(key) for key in list(toolsets)
                    if key not in _TOOLSETS_KEYS and isinstance(toolsets[key], dict)}
        for key in [key for key, value in tables.items() if key not in _CORE_SECTIONS and isinstance(value, dict)]:
            if key in sections:
                raise ConfigError(f"section {key} is given twice: as [toolsets.{key}] and as [{key}]")
            sections[key] = tables.pop(key)
        tables["toolsets"] = {**toolsets, "sections": sections}
    for name, section in (("channels", ChannelsConfig), ("monitors", MonitorsConfig)):
        tables[name] = _named_tables(tables.get(name), section)
    return msgspec.convert(tables, Config)


def _named_tables(table: Any, section: type) -> Any:
    """`[channels.NAME]` / `[monitors.NAME]`: the sub-tables that are not keys of the section go
    under `named` (as files spell them; `to_json` spells them the same way)."""
    if not isinstance(table, dict):
        return {} if table is None else table
    table = dict(table)
    named = dict(table.pop("named", {}) or {})
    for key in [k for k, v in table.items() if k not in section.__struct_fields__ and isinstance(v, dict)]:
        named[key] = table.pop(key)
    return {**table, "named": named}


def decode_section(raw: Mapping[str, Any], settings: type[T], where: str) -> T:
    """A toolset's raw section as its `settings` Struct (defaults for absent keys). A wrong value is
    a ConfigError naming the key as the file does: `... - at `$.toolsets.NAME.key``."""
    try:
        return msgspec.convert(raw, settings)
    except msgspec.ValidationError as exc:
        text = str(exc)
        text = text.replace(" - at `$", f" - at `$.{where}", 1) if " - at `$" in text else f"{text} - at `$.{where}`"
        raise ConfigError(text) from None


def apply_env(config: Config, env: Mapping[str, str]) -> Config:
    profiles = default_profiles(env)
    profiles.update(config.llm.profiles)
    llm = msgspec.structs.replace(config.llm, profiles=profiles, profile=env.get("PORFIRY_LLM_PROFILE", config.llm.profile))
    if llm.profile not in llm.profiles:
        raise ConfigError(f"LLM profile {llm.profile!r} is not defined; profiles: {', '.join(sorted(llm.profiles))}")
    topology = config.topology
    if "PORFIRY_TOPOLOGY" in env or "PORFIRY_IPC_DIR" in env:
        topology = msgspec.structs.replace(
            topology, mode=env.get("PORFIRY_TOPOLOGY", topology.mode), ipc_dir=env.get("PORFIRY_IPC_DIR", topology.ipc_dir)
        )
    if config.session.router_profile and config.session.router_profile not in llm.profiles:
        raise ConfigError(f"session.router_profile {config.session.router_profile!r} is not defined; "
                          f"profiles: {', '.join(sorted(llm.profiles))}")
    if config.session.admission_min_turns > config.session.admission_max_turns:
        raise ConfigError(f"session.admission_min_turns ({config.session.admission_min_turns}) exceeds "
                          f"session.admission_max_turns ({config.session.admission_max_turns})")
    phone = msgspec.structs.replace(config.phone, endpoint=env.get("PORFIRY_PHONE_ENDPOINT", config.phone.endpoint))
    skills = msgspec.structs.replace(config.skills, user_dir=env.get("PORFIRY_USER_SKILLS_DIR", config.skills.user_dir))
    storage = msgspec.structs.replace(config.storage, path=env.get("PORFIRY_STORAGE_PATH", config.storage.path),
                                      backend=env.get("PORFIRY_STORAGE_BACKEND", config.storage.backend),
                                      url=env.get("PORFIRY_STORAGE_URL", config.storage.url))
    if storage.backend not in ("sqlite", "postgres"):
        raise ConfigError(f"storage.backend {storage.backend!r} is neither 'sqlite' nor 'postgres'")
    if storage.backend == "postgres" and not storage.url:
        raise ConfigError("storage.backend = 'postgres' needs storage.url (or PORFIRY_STORAGE_URL), "
                          "e.g. postgresql://porfiry@/porfiry?host=/run/postgresql")
    node = msgspec.structs.replace(config.node, name=env.get("PORFIRY_NODE_NAME", config.node.name))
    if node.name and storage.backend != "postgres":
        raise ConfigError(f"node.name {node.name!r}: several nodes share storage.backend = 'postgres', not {storage.backend!r}")
    if node.heartbeat_s >= node.lease_s:
        raise ConfigError(f"node.heartbeat_s ({node.heartbeat_s}) must be shorter than node.lease_s ({node.lease_s})")
    return msgspec.structs.replace(config, llm=llm, topology=topology, phone=phone, skills=skills, storage=storage, node=node)


def channel_secrets(channels: ChannelsConfig, env: Mapping[str, str]) -> dict[str, str]:
    """Each webhook channel's secret (`secret`, or the variable `secret_env` names). A `secret_env`
    that is unset, or a secret too short, is a ValueError naming the key: the console that serves
    the webhooks does not start with a channel that could never be posted to, or one easy to forge."""
    secrets = {}
    for name, channel in channels.named.items():
        if channel.secret:
            secrets[name] = channel.secret
        elif channel.secret_env:
            value = env.get(channel.secret_env, "")
            if not value:
                raise ValueError(f"channels.{name}.secret_env names {channel.secret_env}, which is not set (or empty) "
                                 "in this environment; set it, or remove secret_env")
            config_checks.check_secret(f"channels.{name}.secret_env ({channel.secret_env})", value, channels.min_secret_chars)
            secrets[name] = value
    return secrets


def to_json(config: Config) -> bytes:
    """The config as a file spells it (each toolset's section inside `toolsets`), so that both
    from_json and load_config of a `.json` file read it back."""
    tables = msgspec.to_builtins(config)
    tables["toolsets"].update(tables["toolsets"].pop("sections"))
    for name in ("channels", "monitors"):
        tables[name].update(tables[name].pop("named"))
    return msgspec.json.encode(tables)


def from_json(data: bytes | str) -> Config:
    return _from_tables(msgspec.json.decode(data))
