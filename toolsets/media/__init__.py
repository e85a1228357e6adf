"""The media toolset: an embedded film/series catalog and the `media_*` tools over it (S5, S11).

Swap the catalog for a real media server by implementing `MediaProvider` (toolsets.media.provider).
"""
from typing import Annotated

import msgspec

from core.toolsets import Toolset
from toolsets.media.tools import MEDIA_TOOLSET


class MediaSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`[toolsets.media]` (`[media]` is read as the same): where the embedded catalog's files are."""

    catalog_path: str = ""  # the catalog TSV; empty: the one shipped in toolsets/media/data
    db_path: str = "var/media.sqlite3"  # the SQLite/FTS5 index built from it
    # Searches whose running average costs more run in a worker thread, not on the executor's loop.
    loop_search_ms: Annotated[float, msgspec.Meta(ge=0)] = 1.0


def _executor(host, settings: MediaSettings):
    from toolsets.media.executor import MediaTools

    return MediaTools(host, settings=settings)


TOOLSET = Toolset(spec=MEDIA_TOOLSET, runs="executor", handler=_executor, settings=MediaSettings)
