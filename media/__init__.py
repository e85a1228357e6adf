"""The media toolset: an embedded film/series catalog and the `media_*` tools over it (S5, S11).

Swap the catalog for a real media server by implementing `MediaProvider` (see media.provider).
"""
from media.catalog import DEFAULT_SOURCE, EmbeddedCatalog, normalize
from media.provider import MediaProvider, ProviderError, SearchPage, Title
from media.tools import (
    MEDIA_TOOLSET, PlayRequest, ToolReply, format_info, format_search, play_command,
    play_started_text, play_status_text, play_timeout_text, run_info, run_search, signature,
    validate_play,
)

__all__ = [
    "DEFAULT_SOURCE", "EmbeddedCatalog", "normalize", "MediaProvider", "ProviderError", "SearchPage",
    "Title", "MEDIA_TOOLSET", "PlayRequest", "ToolReply", "format_info", "format_search",
    "play_command", "play_started_text", "play_status_text", "play_timeout_text", "run_info",
    "run_search", "signature", "validate_play",
]
