"""The media toolset: an embedded film/series catalog and the `media_*` tools over it (S5, S11).

Swap the catalog for a real media server by implementing `MediaProvider` (toolsets.media.provider).
"""
from core.toolsets import Toolset
from toolsets.media.tools import MEDIA_TOOLSET


def _executor(host):
    from toolsets.media.executor import MediaTools

    return MediaTools(host)


TOOLSET = Toolset(spec=MEDIA_TOOLSET, runs="executor", handler=_executor)
