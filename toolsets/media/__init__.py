"""The media toolset: an embedded film/series catalog and the `media_*` tools over it (S5, S11).

Swap the catalog for a real media server by implementing `MediaProvider` (toolsets.media.provider).
"""
from core.toolsets import ExecutorToolset
from toolsets.media.settings import MediaSettings
from toolsets.media.tools import MEDIA_TOOLSET


def _executor(host, settings: MediaSettings):
    from toolsets.media.executor import MediaTools

    return MediaTools(host, settings=settings)


TOOLSET = ExecutorToolset(spec=MEDIA_TOOLSET, factory=_executor, settings=MediaSettings)
