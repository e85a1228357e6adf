"""docs/configuration.md is generated from the Config struct: every key is there, and the file is
what the generator prints today (regenerate: `python -m tools.config_doc > docs/configuration.md`)."""
from pathlib import Path
from typing import Annotated

import msgspec

from tools.config_doc import keys, render

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def test_the_configuration_reference_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == render(), \
        "docs/configuration.md is out of date: python -m tools.config_doc > docs/configuration.md"


def test_every_key_of_every_section_is_listed_with_its_default():
    text = DOC.read_text(encoding="utf-8")
    for key in ("topology.mode", "session.admission_delay_ms", "mcp.servers.NAME.timeout_s",
                "llm.profiles.NAME.kind", "toolsets.media.db_path", "storage.journal"):
        assert f"| `{key}` |" in text, key
    assert "| `session.probe_s` | float | `2.0` | ≥ 0.1 |" in text


def test_a_description_and_a_tuning_mark_come_from_meta_and_a_comment_stands_in_for_a_missing_one():
    class Section(msgspec.Struct):
        knob: Annotated[float, msgspec.Meta(gt=0, description="how hard to turn", extra={"tuning": True})] = 1.5
        plain: int = 3  # what an operator sets

    found = {key.key: key for key in keys(Section, "s.")}
    assert found["s.knob"] == ("s.knob", "float", "`1.5`", "> 0", "how hard to turn", True)
    assert found["s.plain"].description == "what an operator sets" and not found["s.plain"].tuning
