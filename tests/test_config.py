"""Config loading: a toolset's section is kept raw for the toolset to decode, in either spelling
(`[toolsets.NAME]`, or the older top-level `[NAME]`), and every mistake is one line naming it."""
import pytest

from core.config import ConfigError, from_json, to_json
from core.loading import load_config
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
    ('[session]\nmax_steps = "4"\n', "Expected `int`, got `str` - at `$.session.max_steps`"),
    ("[session]\nadmission_min_turns = 20\nadmission_max_turns = 10\n",
     "session.admission_min_turns (20) exceeds session.admission_max_turns (10)"),
    ("[session]\nadmission_delay_ms = -1\n", "Expected `float` >= 0.0 - at `$.session.admission_delay_ms`"),
    ("[session]\nadmission_min_turns = 0\n", "Expected `int` >= 1 - at `$.session.admission_min_turns`"),
])
def test_each_mistake_is_one_line_naming_it(tmp_path, text, complaint):
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    assert complaint in str(caught.value) and "\n" not in str(caught.value)
