"""`[toolsets.media]` (`[media]` is read as the same): where the embedded catalog's files are."""
from __future__ import annotations

from typing import Annotated

import msgspec

from core.config import Config, decode_section


class MediaSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`[toolsets.media]` (`[media]` is read as the same): where the embedded catalog's files are."""

    catalog_path: str = ""  # the catalog TSV; empty: the one shipped in toolsets/media/data
    db_path: str = "var/media.sqlite3"  # the SQLite/FTS5 index built from it
    # Searches whose running average costs more run in a worker thread, not on the executor's loop.
    loop_search_ms: Annotated[float, msgspec.Meta(ge=0)] = 1.0


def read_settings(config: Config) -> MediaSettings:
    """The media section of `config` (defaults for what it does not set)."""
    return decode_section(config.toolsets.sections.get("media") or {}, MediaSettings, "toolsets.media")
