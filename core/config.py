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

from core.urgency import DEFAULT_INTERRUPT_PHRASES, DEFAULT_STOP_PHRASES
from llm.profiles import ProfileConfig, default_profiles

REPO_ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


class _Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class TopologyConfig(_Section):
    """Where each actor's inbox lives. mode: inproc (one process), ipc (a process per actor, the
    default of `run.py serve`) or tcp (across hosts). `addresses` overrides single actors."""

    mode: str = "ipc"
    ipc_dir: str = "/tmp/porfiry"
    tcp_host: str = "127.0.0.1"
    tcp_base_port: int = 7700
    addresses: dict[str, str] = {}
    # ipc/tcp: actors listed together share one OS process and talk over inproc:// (the others
    # still reach them over ipc/tcp). Fewer hops between processes, less isolation: a crash
    # restarts the whole group. E.g. [["glasses", "session"]]. Default: a process per actor.
    groups: list[list[str]] = []


class SupervisorConfig(_Section):
    """OTP-style: more than `intensity` restarts within `period_s` stops the system."""

    intensity: int = 5
    period_s: float = 30.0
    ask_timeout_s: float = 2.0
    # an actor process whose actors answer no Ping for this long is hung (a blocked loop, a
    # handler that never returns): killed, so it restarts; 0: never
    hung_after_s: Annotated[float, msgspec.Meta(ge=0)] = 60.0
    watchdog_every_s: Annotated[float, msgspec.Meta(gt=0)] = 5.0  # how often each actor is pinged for that


class ProtocolConfig(_Section):
    max_message_bytes: int = 1 << 20


class PhoneConfig(_Section):
    endpoint: str = "tcp://127.0.0.1:7600"
    curve: bool = False
    keys_dir: str = "var/keys"  # server.key_secret + authorized/*.key (phone public keys)
    playback_wait_s: float = 1.0
    pending_per_session: int = 16  # events a session may have waiting in the bridge before Busy
    max_text_chars: int = 4000  # a longer UserText is refused with ErrorReply "too_long"
    events_per_s: float = 50.0  # per connection (token bucket, burst = 2 s worth); past it: RateLimited
    sessions_per_connection: int = 64  # sessions one connection may open; past it: ErrorReply "too_many_sessions"
    pending_per_connection: int = 256  # events of one connection waiting at the bridge before Busy
    send_queue_per_peer: int = 2000  # replies held for a phone that does not read; past it the phone is cut off
    garbage_log_interval_s: float = 10.0  # undecodable input: one log line per peer per interval, with a count


class SessionConfig(_Section):
    toolset_ttl_s: float = 600.0
    timezone: str = "Europe/Moscow"
    execute_substituted_calls: bool = True  # S8's extra: measured with run.py eval (issue 13)
    # reading a toolset's own skill turns the toolset on (its tools are the next step's): one model
    # step fewer per first use (issue 33; the enable_toolset call it saves)
    enable_on_skill_read: bool = True
    progress_lines: bool = True  # "ищу «Матрица»…" on the glasses as soon as a call is parsed (issue 33)
    small_talk_plain: bool = True  # small talk (core.intent.small_talk) is offered no tool: a plain answer (issue 33)
    queue_limit: int = 32
    max_steps: int = 8
    max_tokens: int = 256
    llm_timeout_s: float = 60.0
    tool_timeout_s: float = 10.0
    urgent_words: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_STOP_PHRASES))
    parallel_patterns: list[str] = []
    interrupt_phrases: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_INTERRUPT_PHRASES))
    router: Literal["rules", "model"] = "rules"  # rules | model: a classifier model judges user text the rules would queue
    router_profile: str = ""  # the model router's LLM profile; empty: the active profile
    router_timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 1.5  # no usable answer by then: the rules decide
    tool_background_after_s: Annotated[float, msgspec.Meta(ge=0)] = 3.0  # a slower tool call moves to the background (task id)
    idle_session_ttl_s: float = 3600.0  # forgotten this long after its last event (checked each minute)
    llm_turn_timeout_s: float = 120.0  # one whole generation, however steadily it streams
    probe_s: Annotated[float, msgspec.Meta(ge=0.1)] = 2.0  # a model or tool call silent this long: is its process still there?
    # turn admission (core/admission.py): past this standing queueing delay (a phone event's ack,
    # a model reply), fewer new turns start at once; the rest wait, accepted and acked; 0: never
    admission_delay_ms: Annotated[float, msgspec.Meta(ge=0)] = 50.0
    admission_min_turns: Annotated[int, msgspec.Meta(ge=1)] = 8  # the limit never drops below this; a restart's slow start begins here
    admission_max_turns: Annotated[int, msgspec.Meta(ge=1)] = 4096  # nor exceeds this: turns running at once


class SkillsConfig(_Section):
    builtin_dir: str = "skills"  # built-in skills of no toolset: NAME/SKILL.md
    toolsets_dir: str = "toolsets"  # a toolset folder's SKILL.md is a built-in skill too
    user_dir: str = "var/user-skills"
    exclusions: dict[str, list[str]] = {}
    max_skill_bytes: int = 64 * 1024  # a larger SKILL.md is rejected before it is read
    read_timeout_s: float = 2.0  # a SKILL.md that takes longer to read is rejected


class StorageConfig(_Section):
    """The embedded database: session journals, dedup ids, session ownership (SQLite, WAL)."""

    path: str = "var/porfiry.sqlite3"
    retention_days: float = 0.0  # 0: keep forever
    journal: bool = True  # false: sessions in memory only (a restart forgets them); to measure its cost


class LLMConfig(_Section):
    profile: str = "local"
    profiles: dict[str, ProfileConfig] = {}
    stream_interval_ms: float = 30.0  # streamed text leaves the worker at most this often (first piece at once)


class WebConfig(_Section):
    """The web console and /metrics (`run.py web`). Any host but loopback requires the token;
    empty: one is generated into `token_path` on first use."""

    host: str = "127.0.0.1"
    port: int = 8780
    token: str = ""
    token_path: str = "var/web-token"
    max_subscribers: int = 8  # Observe subscriptions the session actor serves at once
    max_clients: int = 32  # browser pages streaming at once
    timeline_facts: int = 1000  # per session: events, turns, model and tool calls the console keeps
    sessions_kept: int = 200  # sessions the console remembers (least recently active dropped)
    max_text_chars: int = 2000  # a message typed in the page


class ToolsetsConfig(_Section):
    """Toolsets beyond the built-in registry (`toolsets/__init__.py`), the bound on results, and
    each toolset's own section. Any other key of `[toolsets]` names a toolset, so a key added here
    needs a `_` (toolset names have none)."""

    extra: list[str] = []  # "module:ATTRIBUTE" of further toolset records, e.g. "mytools.weather:TOOLSET"
    max_result_chars: Annotated[int, msgspec.Meta(ge=200)] = 4000  # longer results are cut, with an offset= call for the rest
    results_kept: Annotated[int, msgspec.Meta(ge=0)] = 64  # full cut results kept for offset= calls (all sessions)
    # The raw `[toolsets.NAME]` tables, filled by load_config: the toolset decodes its own against
    # the settings Struct its record declares (core.toolsets.Toolset.settings).
    sections: dict[str, dict[str, Any]] = {}


class McpServerConfig(_Section):
    """One MCP server, a toolset named after its key: `command` (stdio) or `url` (streamable HTTP)."""

    command: list[str] = []
    url: str = ""
    env: dict[str, str] = {}  # the only environment a stdio server gets (plus PATH)
    cwd: str = ""
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 10.0  # one call, and the start
    long_running: list[str] = []  # the server's tool names whose calls answer with a task id at once
    summary: str = ""  # the catalog line; empty: the server's instructions, first sentence
    enabled: bool = True


class McpConfig(_Section):
    servers: dict[str, McpServerConfig] = {}
    restart_backoff_s: Annotated[float, msgspec.Meta(gt=0)] = 1.0  # first wait before restarting a dead server, doubling
    restart_backoff_max_s: Annotated[float, msgspec.Meta(gt=0)] = 60.0
    max_tools: Annotated[int, msgspec.Meta(ge=1)] = 64  # per server; tools past this are refused
    max_description_chars: Annotated[int, msgspec.Meta(ge=20)] = 120  # a tool's one-liner in the prompt
    check_interval_s: Annotated[float, msgspec.Meta(gt=0)] = 10.0  # tools listed again this often: a dead idle server is restarted


class Config(_Section):
    topology: TopologyConfig = msgspec.field(default_factory=TopologyConfig)
    supervisor: SupervisorConfig = msgspec.field(default_factory=SupervisorConfig)
    protocol: ProtocolConfig = msgspec.field(default_factory=ProtocolConfig)
    phone: PhoneConfig = msgspec.field(default_factory=PhoneConfig)
    session: SessionConfig = msgspec.field(default_factory=SessionConfig)
    skills: SkillsConfig = msgspec.field(default_factory=SkillsConfig)
    toolsets: ToolsetsConfig = msgspec.field(default_factory=ToolsetsConfig)
    mcp: McpConfig = msgspec.field(default_factory=McpConfig)
    llm: LLMConfig = msgspec.field(default_factory=LLMConfig)
    web: WebConfig = msgspec.field(default_factory=WebConfig)
    storage: StorageConfig = msgspec.field(default_factory=StorageConfig)

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


ENV_OVERRIDES = {
    "PORFIRY_PHONE_ENDPOINT": "phone endpoint (phone.endpoint)",
    "PORFIRY_LLM_PROFILE": "active LLM profile at start (llm.profile)",
    "PORFIRY_QWEN_BASE_URL": "base URL of the Qwen OpenAI-compatible endpoint",
    "PORFIRY_QWEN_API_KEY": "API key for the Qwen endpoint",
    "PORFIRY_QWEN_MODEL": "model name sent to the Qwen endpoint",
    "PORFIRY_USER_SKILLS_DIR": "user skills directory (skills.user_dir)",
    "PORFIRY_TOPOLOGY": "inproc | ipc | tcp (topology.mode)",
    "PORFIRY_IPC_DIR": "directory of ipc:// sockets (topology.ipc_dir)",
    "PORFIRY_STORAGE_PATH": "the session journal database (storage.path)",
    "PORFIRY_MODEL_CACHE": "where the packaged GGUF models are assembled (default ~/.cache/porfiry/models)",
}


class ConfigError(Exception):
    pass


def load_config(path: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    path = path or env.get("PORFIRY_CONFIG")
    if path is None and Path("porfiry.toml").exists():
        path = "porfiry.toml"
    if path:
        decode = msgspec.json.decode if str(path).endswith(".json") else msgspec.toml.decode
        try:
            config = _from_tables(decode(Path(path).read_bytes()))
            if config.toolsets.sections:
                import toolsets  # each toolset decodes its own section: a wrong value fails here, not in an actor

                toolsets.load(config)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError, ConfigError) as exc:
            raise ConfigError(f"config {path}: {exc}") from None
    else:
        config = Config()
    return apply_env(config, env)


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
    return msgspec.convert(tables, Config)


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
    storage = msgspec.structs.replace(config.storage, path=env.get("PORFIRY_STORAGE_PATH", config.storage.path))
    return msgspec.structs.replace(config, llm=llm, topology=topology, phone=phone, skills=skills, storage=storage)


def to_json(config: Config) -> bytes:
    """The config as a file spells it (each toolset's section inside `toolsets`), so that both
    from_json and load_config of a `.json` file read it back."""
    tables = msgspec.to_builtins(config)
    tables["toolsets"].update(tables["toolsets"].pop("sections"))
    return msgspec.json.encode(tables)


def from_json(data: bytes | str) -> Config:
    return _from_tables(msgspec.json.decode(data))
