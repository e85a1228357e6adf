"""The database behind the journal, as `storage.backend` picks it: the seam is
storage/journal.py's `JournalStore` (the SQL dialect and the connection, declared where the
journal's queueing uses it: one writer, one transaction per batch, in a worker thread), and its
two implementations are "sqlite" (storage/journal.py's SqliteStore, the embedded default) and
"postgres" (storage/postgres.py, shared by several nodes). The same for the phone ownership
table and, with several nodes, the leases.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.config import Config
    from storage.journal import Journal, JournalStore
    from storage.leases import NodeLeases
    from storage.ownership import OwnershipStore


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
