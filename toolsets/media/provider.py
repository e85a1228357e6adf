"""What the media toolset needs from a catalog, so a real media server can replace the embedded one.

The media tools (`media.tools`) only ever talk to a `MediaProvider`: `search` and `info`. The
shipped `media.catalog.EmbeddedCatalog` is one; to plug in another (a Jellyfin/Plex server, a
catalog HTTP API, the user's own library):

1. Write a class with the two methods below returning `Title` / `SearchPage` (map the server's
   fields onto `Title`; leave unknown ones empty). Both methods are *blocking* and are called
   from a worker thread (`anyio.to_thread.run_sync`), so a synchronous HTTP client (httpx.Client)
   is fine; they must be safe to call from several threads at once. A provider that can tell
   when it answers at once (local data, nothing to build) may add `ready_now() -> bool`: while
   it is True, calls run on the event loop without the thread hand-offs.
2. Keep ids stable and short (they travel through the model: `media_info|<id>`, `media_play|<id>`)
   and make `info(id)` accept every id `search` returned.
3. Raise `ProviderError` with a short human sentence when the backend is down or answers
   nonsense; the tools turn it into a tool error the model can read instead of a crash.
4. Build the executor with it: in `toolsets/media/__init__.py`, `MediaTools(host, provider)`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable


class ProviderError(Exception):
    """The catalog cannot answer right now (backend down, data broken). The message is for people."""


@dataclass(frozen=True, slots=True)
class Title:
    """One film or series. `runtime_min` is for films, `episodes` for series (None when unknown)."""

    id: str
    kind: str  # "film" | "series"
    title_ru: str
    title_en: str
    year: int
    genres: tuple[str, ...] = ()
    runtime_min: int | None = None
    episodes: int | None = None
    director: str = ""
    description: str = ""


MatchedBy = Literal["title", "director", "genre"]


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of ranked results. `pages` is 0 when nothing matched; a page past the last one
    comes back with no items and the true total, so the caller can say so instead of staying silent."""

    items: list[Title]
    total: int
    page: int
    pages: int
    per_page: int = 5
    by: MatchedBy = "title"  # what named them: a title's words, its director's name alone, a genre's word

    @property
    def first_index(self) -> int:
        """1-based position of the first item on this page (0 when the page is empty)."""
        return (self.page - 1) * self.per_page + 1 if self.items else 0

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.items) - 1 if self.items else 0


@runtime_checkable
class MediaProvider(Protocol):
    """A catalog of films and series. Blocking; called from worker threads."""

    def search(self, query: str, page: int = 1, per_page: int = 5) -> SearchPage:
        """Titles matching `query` (any language, typos tolerated as far as the backend can), best first."""
        ...

    def info(self, media_id: str) -> Title | None:
        """The title with this id, or None when there is none."""
        ...
