"""Config loading: a toolset's section is kept raw for the toolset to decode, in either spelling
(`[toolsets.NAME]`, or the older top-level `[NAME]`), and every mistake is one line naming it."""
import pytest

from core.config import ConfigError, from_json, load_config, to_json
from toolsets.media import TOOLSET as MEDIA
from toolsets.media.executor import default_provider


def load(tmp_path, text, env=None):
    path = tmp_path / "porfiry.toml"
    path.write_text(text)
    return load_config(path, env=env or {})


def test_a_media_section_in_either_spelling_reaches_the_media_toolset(tmp_path):
    older = load(tmp_path, '[media]\ndb_path = "old.sqlite3"\n')
    documented = load(tmp_path, '[toolsets.media]\ndb_path = "new.sqlite3"\ncatalog_path = "films.tsv"\n')
    assert MEDIA.read_settings(older).db_path == "old.sqlite3"
    assert MEDIA.read_settings(documented).catalog_path == "films.tsv"
    provider = default_provider(documented)
    assert (provider.db_path, provider.source_path) == (str(documented.path("new.sqlite3")), documented.path("films.tsv"))


def test_sections_survive_the_trip_to_an_actor_process_and_env_overrides_still_apply(tmp_path):
    config = load(tmp_path, '[media]\ndb_path = "m.sqlite3"\n[toolsets]\nmax_result_chars = 500\n',
                  env={"PORFIRY_STORAGE_PATH": "elsewhere.sqlite3"})
    assert config.toolsets.sections == {"media": {"db_path": "m.sqlite3"}}
    assert config.toolsets.max_result_chars == 500 and config.storage.path == "elsewhere.sqlite3"
    assert from_json(to_json(config)) == config  # what actors/host.py decodes from PORFIRY_CONFIG_JSON
    written = tmp_path / "bench-config.json"  # what `run.py bench` hands its runtime
    written.write_bytes(to_json(config))
    assert load_config(written, env={}) == config


def test_absent_keys_take_the_toolsets_defaults(tmp_path):
    assert MEDIA.read_settings(load(tmp_path, "")).db_path == "var/media.sqlite3"


@pytest.mark.parametrize("text, complaint", [
    ('[media]\ndb_path = "a"\n[toolsets.media]\ndb_path = "b"\n',
     "section media is given twice: as [toolsets.media] and as [media]"),
    ("[sesion]\nmax_steps = 4\n", "unknown section sesion: neither a config section nor a toolset"),
    ("[toolsets.timers]\nevery = 4\n", "toolset timers takes no settings, so [toolsets.timers] is unknown"),
    ('[toolsets.media]\ndbpath = "a"\n', "Object contains unknown field `dbpath` - at `$.toolsets.media`"),
    ("[media]\ndb_path = 5\n", "Expected `str`, got `int` - at `$.toolsets.media.db_path`"),
    ('[session]\nmax_steps = "4"\n', 'session.max_steps must be int, not str (got "4")'),
    ("[session]\nmax_stepz = 4\n", "unknown key session.max_stepz"),
    ("[session]\nadmission_min_turns = 20\nadmission_max_turns = 10\n",
     "session.admission_min_turns (20) exceeds session.admission_max_turns (10)"),
    ("[session]\nadmission_delay_ms = -1\n", "session.admission_delay_ms must be >= 0 (got -1)"),
    ("[session]\nadmission_min_turns = 0\n", "session.admission_min_turns must be >= 1 (got 0)"),
    # issue 38, finding 12: each of these crashed, spun or silently disabled something
    ("[protocol]\nmax_message_bytes = 0\n", "protocol.max_message_bytes must be >= 4096 and <= 1073741824 (got 0)"),
    ("[protocol]\nmax_message_bytes = -1\n", "protocol.max_message_bytes must be >= 4096 and <= 1073741824 (got -1)"),
    ('[phone]\nendpoint = "tcp://127.0.0.1"\n', 'phone.endpoint must be tcp://HOST:PORT with PORT in 1..65535 (got "tcp://127.0.0.1")'),
    ('[phone]\nendpoint = "127.0.0.1:7600"\n', 'phone.endpoint must be tcp:// or ipc://... (got "127.0.0.1:7600")'),
    ('[topology.addresses]\nllm = "tcp://host:99999"\n', "topology.addresses.llm must be tcp://HOST:PORT with PORT in 1..65535"),
    ('[topology.addresses]\nllm = "ipc://"\n', "topology.addresses.llm must name a path after ipc://"),
    ('[session]\nparallel_patterns = ["time", "(unclosed"]\n', "session.parallel_patterns[1] is not a valid regular expression"),
    ('[storage]\npath = ""\n', 'storage.path must not be empty (got "")'),
    ('[storage]\npath = "."\n', "storage.path must name a file, not the directory"),
    ("[web]\nport = 70000\n", "web.port must be >= 1 and <= 65535 (got 70000)"),
    ("[web]\nport = -1\n", "web.port must be >= 1 and <= 65535 (got -1)"),
    ('[topology]\nmode = "bogus"\n', 'topology.mode must be one of inproc, ipc, tcp (got "bogus")'),
    ("[session]\nidle_session_ttl_s = 0\n", "session.idle_session_ttl_s must be >= 1 (got 0)"),
    ("[session]\nidle_session_ttl_s = -1\n", "session.idle_session_ttl_s must be >= 1 (got -1)"),
    ("[supervisor]\nwatchdog_every_s = 1e-6\n", "supervisor.watchdog_every_s must be >= 0.1 and <= 3600 (got 1e-6)"),
    ("[phone]\npending_per_session = 0\n", "phone.pending_per_session must be >= 1 (got 0)"),
    ("[phone]\nevents_per_s = 0\n", "phone.events_per_s must be >= 1 (got 0)"),
    ("[session]\nqueue_limit = -1\n", "session.queue_limit must be >= 1 (got -1)"),
    ("[supervisor]\nask_timeout_s = 0\n", "supervisor.ask_timeout_s must be >= 0.1 and <= 3600 (got 0)"),
    ("[web]\ntimeline_facts = -5\n", "web.timeline_facts must be >= 1 (got -5)"),
    ("[web]\nsessions_kept = -1\n", "web.sessions_kept must be >= 1 (got -1)"),
    ('[session]\ntimezone = "Mars/Olympus"\n', 'session.timezone is not a known time zone (got "Mars/Olympus")'),
    ("[supervisor]\nhung_after_s = 1e-6\n", "supervisor.hung_after_s must be 0 (never) or at least 2 x supervisor.watchdog_every_s (10) (got 1e-06)"),
    ("[mcp]\ncheck_interval_s = 1e-6\n", "mcp.check_interval_s must be >= 0.1 (got 1e-6)"),
    ("[mcp]\nrestart_backoff_s = 90\n", "mcp.restart_backoff_s (90) exceeds mcp.restart_backoff_max_s (60)"),
    ('[mcp.servers.x]\nurl = "localhost:9000/mcp"\n', 'mcp.servers.x.url must be an http:// or https:// URL'),
])
def test_each_mistake_is_one_line_naming_it(tmp_path, text, complaint):
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    assert complaint in str(caught.value) and "\n" not in str(caught.value)


def test_an_environment_override_is_checked_like_the_file():
    with pytest.raises(ConfigError, match='topology.mode must be one of inproc, ipc, tcp \\(got "bogus"\\)'):
        load_config(None, env={"PORFIRY_TOPOLOGY": "bogus"})
    with pytest.raises(ConfigError, match="phone.endpoint must be tcp://HOST:PORT"):
        load_config(None, env={"PORFIRY_PHONE_ENDPOINT": "tcp://nowhere"})


def test_every_key_says_what_it_is_for_and_each_bound_is_stated():
    """docs/configuration.md is made from these: a key without a description is a hole there."""
    import msgspec

    from core.config import Config

    missing, unbounded = [], []

    def walk(info, prefix):
        for field in info.fields:
            key = f"{prefix}{field.name}"
            meta = field.type
            if not isinstance(meta, msgspec.inspect.Metadata) or not (meta.extra_json_schema or {}).get("description"):
                missing.append(key)
                continue
            inner = meta.type
            if isinstance(inner, (msgspec.inspect.IntType, msgspec.inspect.FloatType)) and inner.ge is None and inner.gt is None:
                unbounded.append(key)
            if isinstance(inner, msgspec.inspect.StructType):
                walk(inner, key + ".")
            if isinstance(inner, msgspec.inspect.DictType) and isinstance(inner.value_type, msgspec.inspect.StructType) \
                    and inner.value_type.cls.__module__ == "core.config":
                walk(inner.value_type, key + ".NAME.")

    walk(msgspec.inspect.type_info(Config), "")
    assert missing == [] and unbounded == []
