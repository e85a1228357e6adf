"""The media toolset: an embedded film/series catalog and the `media_*` tools over it (S5, S11).

Swap the catalog for a real media server by implementing `MediaProvider` (toolsets.media.provider).
What it says and does without the model: intents.yaml (its sentences and responses) and local.py.
"""
from core.toolsets import ExecutorToolset
from toolsets.media.local import STEPS
from toolsets.media.phrasing import PHRASING
from toolsets.media.settings import MediaSettings
from toolsets.media.tools import MEDIA_TOOLSET


def _executor(host, settings: MediaSettings):
    from toolsets.media.executor import MediaTools

    return MediaTools(host, settings=settings)


# the plain requests about titles the session carries out itself (local.py) and how they are said (phrasing.py)
TOOLSET = ExecutorToolset(spec=MEDIA_TOOLSET, factory=_executor, settings=MediaSettings, steps=STEPS, phrasing=PHRASING)
