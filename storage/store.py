"""The seam between the journal's queueing (storage/journal.py's Journal: one writer, one
transaction per batch, in a worker thread) and the database behind it: a `JournalStore` holds
the SQL dialect and the connection. `storage.backend` picks one: "sqlite" (storage/journal.py's
SqliteStore, the embedded default) or "postgres" (storage/postgres.py, shared by several nodes).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import protocol as p
    from core.config import Config
    from core.trajectory import Recorded
    from storage.journal import Journal, SearchHit, SessionState, StoredSession
    from storage.leases import NodeLeases
    from storage.ownership import OwnershipStore


class JournalStore(Protocol):
    """Every call but `connect` gets the connection `connect` made; all run in one thread."""

    errors: tuple[type[BaseException], ...]  # what a failed statement or commit raises
    where: str  # the database, for messages (a path, or a URL without its password)

    def connect(self) -> Any: ...
    def close(self, conn: Any) -> None: ...
    def reopen(self, conn: Any) -> Any:
        """Before each batch: `conn`, or a new connection when the server hung up on it."""
    def begin(self, conn: Any) -> None: ...
    def commit(self, conn: Any) -> None: ...
    def rollback(self, conn: Any) -> None: ...
    def guarded(self, conn: Any) -> contextlib.AbstractContextManager:
        """Around one operation of a batch: when it fails, the batch's other operations still commit."""
    def insert_entry(self, conn: Any, session: str, ts: float, entry: Recorded) -> None: ...
    def insert_event(self, conn: Any, session: str, phone_key: str, event: p.Event, ts: float) -> None: ...
    def mark_done(self, conn: Any, session: str, event_ids: Iterable[str]) -> None: ...
    def save_state(self, conn: Any, session: str, state: SessionState, ts: float) -> None: ...
    def load_session(self, conn: Any, session: str) -> StoredSession | None: ...
    def unfinished_sessions(self, conn: Any) -> list[str]: ...
    def search(self, conn: Any, session: str, words: str, limit: int = 5) -> list[SearchHit]: ...
    def list_sessions(self, conn: Any) -> list[tuple[str, str, float, float, int]]: ...
    def session_entries(self, conn: Any, session: str) -> list[dict[str, Any]]: ...
    def delete_session(self, conn: Any, session: str, *, transaction: bool = True) -> bool: ...
    def purge_older_than(self, conn: Any, cutoff: float) -> int: ...


def journal_store(config: Config, *, hold_lock: bool = False) -> JournalStore:
    """The journal's database as `storage.backend` says; `hold_lock`: the runtime's own journal
    (SQLite: storage/sqlite_file.py's lock on the file, and a watch for it being deleted)."""
    if config.storage.backend == "postgres":
        from storage.postgres import PostgresStore

        return PostgresStore(config.storage.url)
    from storage.journal import SqliteStore

    return SqliteStore(config.path(config.storage.path), hold_lock=hold_lock)


def ownership_store(config: Config, clock: Callable[[], float] = time.time) -> OwnershipStore:
    """The phone ownership table (storage/ownership.py) as `storage.backend` says."""
    if config.storage.backend == "postgres":
        from storage.postgres import PostgresOwnershipStore

        return PostgresOwnershipStore(config.storage.url, clock)
    from storage.ownership import OwnershipStore

    return OwnershipStore(config.path(config.storage.path), clock)


def node_leases(config: Config, journal: Journal, clock: Callable[[], float] = time.time) -> NodeLeases | None:
    """This node's leases when it is one of several (node.name set), else None."""
    if not config.node.name or not config.storage.journal:
        return None
    from storage.leases import NodeLeases

    return NodeLeases(config.node, journal, config.storage.url, clock)
