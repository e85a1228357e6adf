"""The journal and the ownership table on PostgreSQL (storage.backend = "postgres"), shared by
several runtime nodes (docs/several-nodes.md).

The same content as SQLite's (storage/journal.py, storage/ownership.py): sessions, entries,
accepted events (dedup), timers and skills seen (the sessions' state), phone ownership. Search
is PostgreSQL's full-text search (a generated tsvector, 'simple' configuration, GIN index)
instead of FTS5. psycopg 3's synchronous API: the Journal calls it from its worker thread (its
async API is asyncio-only; the runtime is trio). The schema is the runtime's: `migrate` brings
any database to `SCHEMA_VERSION` under an advisory lock, so nodes starting together agree.
"""
from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import protocol as p
from core.trajectory import Recorded
from storage.journal import (DEDUP_KEPT, _EVENT, JournalError, SearchHit, SessionState,
                             StoredSession, encoded_data, next_due, stored_session)
from storage.ownership import Owner, OwnershipStore, hash_token

MIGRATION_LOCK = 0x706F7266  # pg_advisory_xact_lock key: one node migrates at a time
DELETED_CHANNEL = "porfiry_session_deleted"  # NOTIFY channel: a session deleted (its id), for every node
CONNECT_TIMEOUT_S = 10

# version -> statements; a new version is appended, never edited (databases hold the old ones)
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE sessions (
            session TEXT PRIMARY KEY,
            phone_key TEXT NOT NULL DEFAULT '',
            created DOUBLE PRECISION NOT NULL,
            last_active DOUBLE PRECISION NOT NULL,
            next_due DOUBLE PRECISION,
            state BYTEA)""",
        """CREATE TABLE entries (
            id BIGSERIAL PRIMARY KEY,
            session TEXT NOT NULL,
            ts DOUBLE PRECISION NOT NULL,
            role TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            content TEXT NOT NULL DEFAULT '',
            call_id TEXT NOT NULL DEFAULT '',
            call_state TEXT NOT NULL DEFAULT '',
            tool TEXT NOT NULL DEFAULT '',
            event_ids TEXT NOT NULL DEFAULT '',
            words TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED)""",
        "CREATE INDEX entries_by_session ON entries (session, id)",
        "CREATE INDEX entries_words ON entries USING GIN (words)",
        """CREATE TABLE events (
            seq BIGSERIAL,
            session TEXT NOT NULL,
            event_id TEXT NOT NULL,
            ts DOUBLE PRECISION NOT NULL,
            event BYTEA NOT NULL,
            done BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY (session, event_id))""",
        "CREATE INDEX events_by_session ON events (session, seq)",
        "CREATE INDEX events_open ON events (session) WHERE NOT done",
        "CREATE INDEX sessions_due ON sessions (next_due) WHERE next_due IS NOT NULL",
        """CREATE TABLE session_owner (
            session TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            proof TEXT NOT NULL,
            claim_event TEXT NOT NULL,
            route BYTEA NOT NULL,
            created DOUBLE PRECISION NOT NULL)""",
    ],
    2: [  # several nodes (storage/leases.py): a node's lease, and which node serves each session
        """CREATE TABLE nodes (
            node TEXT PRIMARY KEY,
            started DOUBLE PRECISION NOT NULL,
            expires DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE session_lease (
            session TEXT PRIMARY KEY,
            node TEXT NOT NULL,
            since DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX session_lease_by_node ON session_lease (node)",
    ],
    3: [  # a live node hands a session over to the node a phone reached (storage/leases.py)
        "ALTER TABLE session_lease ADD COLUMN wanted_by TEXT",
        "CREATE INDEX session_lease_wanted ON session_lease (node) WHERE wanted_by IS NOT NULL",
    ],
    4: [  # a result's outcome kind next to its text (protocol.CallOutcome); '': written before
        "ALTER TABLE entries ADD COLUMN outcome TEXT NOT NULL DEFAULT ''",
    ],
    5: [  # a lease is a fence: a fencing token per take of a session, never reused (storage/leases.py)
        "CREATE SEQUENCE lease_epoch",
        "ALTER TABLE session_lease ADD COLUMN epoch BIGINT NOT NULL DEFAULT nextval('lease_epoch')",
    ],
    6: [  # a result's typed payload next to its text (protocol.results); NULL: none, or written before
        "ALTER TABLE entries ADD COLUMN data BYTEA",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)


def redacted(url: str) -> str:
    """The URL for messages: without its password."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        return "(an unreadable storage.url)"
    params.pop("password", None)
    return make_conninfo(**params)


def connect(url: str) -> psycopg.Connection:
    """A connection in autocommit (transactions are explicit), the schema migrated."""
    conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
    try:
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def migrate(conn: psycopg.Connection) -> int:
    """Brings the database to SCHEMA_VERSION (idempotent); returns the version it found."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)")
        found = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            raise JournalError(f"the database's schema is version {found}, newer than this runtime's {SCHEMA_VERSION}: "
                               "upgrade the runtime")
        for version in sorted(v for v in MIGRATIONS if v > found):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version VALUES (%s, %s)", (version, time.time()))
    return found


def ts_query(words: str) -> str:
    """storage/journal.py's fts_query for PostgreSQL: any of the words, a long one also matching
    its other endings (a prefix). Empty when there is no word."""
    terms = []
    for word in re.findall(r"\w+", words.casefold()):
        if len(word) >= 5:
            terms.append(f"'{word[:max(4, len(word) - 2)]}':*")
        elif len(word) >= 2 or word.isdigit():
            terms.append(f"'{word}'")
    return " | ".join(dict.fromkeys(terms))


# ---- the journal's operations (the worker thread, and `run.py sessions`) -------------------------
def _touch(conn: psycopg.Connection, session: str, ts: float, phone_key: str = "") -> None:
    conn.execute(
        "INSERT INTO sessions (session, phone_key, created, last_active) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (session) DO UPDATE SET last_active = excluded.last_active, phone_key = "
        "CASE WHEN excluded.phone_key <> '' THEN excluded.phone_key ELSE sessions.phone_key END",
        (session, phone_key, ts, ts))


def insert_entry(conn: psycopg.Connection, session: str, ts: float, entry: Recorded) -> None:
    conn.execute(
        "INSERT INTO entries (session, ts, role, name, content, call_id, call_state, tool, event_ids, outcome, data) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (session, ts, entry.role, entry.name, entry.content, entry.call_id, entry.call_state, entry.tool,
         " ".join(entry.event_ids), entry.outcome or "", encoded_data(entry)))


def insert_event(conn: psycopg.Connection, session: str, phone_key: str, event: p.Event, ts: float) -> None:
    conn.execute("INSERT INTO events (session, event_id, ts, event) VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                 (session, event.event_id, ts, _EVENT.encode(event)))
    _touch(conn, session, ts, phone_key)


def mark_done(conn: psycopg.Connection, session: str, event_ids: Iterable[str]) -> None:
    ids = list(event_ids)
    if ids:
        conn.execute("UPDATE events SET done = true WHERE session = %s AND event_id = ANY(%s) AND NOT done", (session, ids))


def save_state(conn: psycopg.Connection, session: str, state: SessionState, ts: float) -> None:
    _touch(conn, session, ts)
    conn.execute("UPDATE sessions SET state = %s, next_due = %s WHERE session = %s",
                 (msgspec.msgpack.encode(state), next_due(state, ts), session))


def fence(conn: psycopg.Connection, session: str, node: str, epoch: int) -> bool:
    """Does `node` still hold `session` with the fencing token `epoch`? When it does, the lease
    row (and the session's row) stay share-locked until the batch commits: a node taking the
    session over waits for this batch and then reads all of it; adoption skips the session
    meanwhile. When it does not, the batch's writes of the session are refused (Fenced)."""
    return conn.execute(
        "WITH held AS (SELECT 1 FROM session_lease WHERE session = %(s)s AND node = %(n)s AND epoch = %(e)s FOR SHARE) "
        "SELECT EXISTS (SELECT 1 FROM held), (SELECT count(*) FROM (SELECT 1 FROM sessions WHERE session = %(s)s "
        "AND EXISTS (SELECT 1 FROM held) FOR SHARE) AS row)", {"s": session, "n": node, "e": epoch}).fetchone()[0]


def load_session(conn: psycopg.Connection, session: str) -> StoredSession | None:
    row = conn.execute("SELECT phone_key, last_active, state FROM sessions WHERE session = %s", (session,)).fetchone()
    if row is None:
        return None
    entries = conn.execute("SELECT role, name, content, call_id, call_state, tool, event_ids, outcome, data FROM entries "
                           "WHERE session = %s ORDER BY id", (session,))
    seen = [r[0] for r in conn.execute(
        "SELECT event_id FROM events WHERE session = %s ORDER BY seq DESC LIMIT %s", (session, DEDUP_KEPT))][::-1]
    open_events = [bytes(r[0]) for r in conn.execute(
        "SELECT event FROM events WHERE session = %s AND NOT done ORDER BY seq", (session,))]
    return stored_session(session, row, entries, seen, open_events)


def unfinished_sessions(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("SELECT DISTINCT session FROM events WHERE NOT done "
                        "UNION SELECT session FROM sessions WHERE next_due IS NOT NULL")
    return sorted(r[0] for r in rows)


def search(conn: psycopg.Connection, session: str, words: str, limit: int = 5) -> list[SearchHit]:
    query = ts_query(words)
    if not query:
        return []
    try:
        rows = conn.execute(
            "SELECT id, ts, role, content FROM entries, to_tsquery('simple', %s) q "
            "WHERE session = %s AND role <> '' AND content <> '' AND words @@ q "
            "ORDER BY ts_rank(words, q) DESC, id LIMIT %s", (query, session, limit)).fetchall()
    except psycopg.Error as exc:
        raise JournalError(f"cannot search for {words!r}: {exc}") from None
    hits = []
    for entry_id, ts, role, content in sorted(rows):
        reply = ""
        if role == "user":
            after = conn.execute("SELECT content FROM entries WHERE session = %s AND id > %s AND role = 'assistant' "
                                 "ORDER BY id LIMIT 1", (session, entry_id)).fetchone()
            reply = after[0] if after else ""
        hits.append(SearchHit(ts=ts, role=role, content=content, reply=reply))
    return hits


def list_sessions(conn: psycopg.Connection) -> list[tuple[str, str, float, float, int]]:
    return conn.execute(
        "SELECT s.session, s.phone_key, s.created, s.last_active, "
        "(SELECT count(*) FROM entries e WHERE e.session = s.session AND e.role <> '') "
        "FROM sessions s ORDER BY s.last_active DESC").fetchall()


def session_entries(conn: psycopg.Connection, session: str) -> list[dict[str, Any]]:
    return [
        {"ts": ts, "role": role, "content": content, **({"name": name} if name else {})}
        for ts, role, name, content in conn.execute(
            "SELECT ts, role, name, content FROM entries WHERE session = %s AND role <> '' ORDER BY id", (session,))
    ]


def delete_session(conn: psycopg.Connection, session: str, *, transaction: bool = True) -> bool:
    """Its lease goes too (whatever the node that served it still writes is refused) and every
    node is told at commit (DELETED_CHANNEL): the one serving it drops it from memory."""
    with conn.transaction() if transaction else contextlib.nullcontext():
        conn.execute("DELETE FROM entries WHERE session = %s", (session,))
        conn.execute("DELETE FROM events WHERE session = %s", (session,))
        gone = conn.execute("DELETE FROM sessions WHERE session = %s", (session,)).rowcount
        conn.execute("DELETE FROM session_lease WHERE session = %s", (session,))
        conn.execute("SELECT pg_notify(%s, %s)", (DELETED_CHANNEL, session))
    return bool(gone)


def purge_older_than(conn: psycopg.Connection, cutoff: float) -> int:
    deleted = conn.execute("DELETE FROM entries WHERE ts < %s", (cutoff,)).rowcount
    conn.execute("DELETE FROM events WHERE ts < %s AND done", (cutoff,))
    conn.execute("DELETE FROM sessions WHERE last_active < %s AND next_due IS NULL "
                 "AND session NOT IN (SELECT session FROM events WHERE NOT done)", (cutoff,))
    return deleted


class PostgresStore:
    """The journal's SQL on PostgreSQL (storage.backend = "postgres", storage.url)."""

    errors: tuple[type[BaseException], ...] = (psycopg.Error,)

    def __init__(self, url: str):
        self.url = url
        self.where = redacted(url)

    def connect(self) -> psycopg.Connection:
        return connect(self.url)

    @staticmethod
    def close(conn: psycopg.Connection) -> None:
        conn.close()

    def reopen(self, conn: psycopg.Connection) -> psycopg.Connection:
        """A connection the server hung up on (a restart, a failover) is replaced before the next
        batch; the batch it broke failed (nothing of it acked) and the phones resend."""
        if not conn.broken and not conn.closed:
            return conn
        with contextlib.suppress(psycopg.Error):
            conn.close()
        return connect(self.url)

    @staticmethod
    def begin(conn: psycopg.Connection) -> None:
        conn.execute("BEGIN")

    @staticmethod
    def commit(conn: psycopg.Connection) -> None:
        conn.execute("COMMIT")

    @staticmethod
    def rollback(conn: psycopg.Connection) -> None:
        with contextlib.suppress(psycopg.Error):
            conn.execute("ROLLBACK")

    @staticmethod
    @contextlib.contextmanager
    def guarded(conn: psycopg.Connection):
        # a failed statement aborts PostgreSQL's whole transaction: a savepoint per operation lets
        # the batch's others commit (the name is reused: each SAVEPOINT stacks a new one)
        conn.execute("SAVEPOINT operation")
        try:
            yield
        except Exception:
            conn.execute("ROLLBACK TO SAVEPOINT operation")
            raise

    fence = staticmethod(fence)
    insert_entry = staticmethod(insert_entry)
    insert_event = staticmethod(insert_event)
    mark_done = staticmethod(mark_done)
    save_state = staticmethod(save_state)
    load_session = staticmethod(load_session)
    unfinished_sessions = staticmethod(unfinished_sessions)
    search = staticmethod(search)
    list_sessions = staticmethod(list_sessions)
    session_entries = staticmethod(session_entries)
    delete_session = staticmethod(delete_session)
    purge_older_than = staticmethod(purge_older_than)


class PostgresOwnershipStore(OwnershipStore):
    """storage/ownership.py's table on PostgreSQL: the same write-through cache over it, the same
    proofs (a token kept salted and hashed); another node's claims are read on first use."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time):  # noqa: D107 - the parent's, on another database
        self.path = redacted(url)
        self.clock = clock
        self._db = connect(url)
        self._owners = {
            row[0]: Owner(row[1], row[2], row[3], bytes(row[4]))
            for row in self._db.execute("SELECT session, kind, proof, claim_event, route FROM session_owner")
        }

    def get(self, session: str) -> Owner | None:
        """From the cache, else from the table: another node may have opened the session."""
        owner = self._owners.get(session)
        if owner is None:
            row = self._db.execute("SELECT kind, proof, claim_event, route FROM session_owner WHERE session = %s",
                                   (session,)).fetchone()
            if row is not None:
                owner = self._owners[session] = Owner(row[0], row[1], row[2], bytes(row[3]))
        return owner

    def unclaimed_history(self, session: str) -> str | None:
        row = self._db.execute("SELECT phone_key FROM sessions WHERE session = %s", (session,)).fetchone()
        return None if row is None else str(row[0])

    def claim(self, session: str, kind: str, proof: str, claim_event: str, route: bytes) -> Owner:
        """Compare-and-set across nodes: two phones opening one session on two nodes at once,
        the first INSERT wins; the other gets the winner back (and `forbidden`). The cache holds
        only what the table holds."""
        hashed = hash_token(proof) if kind == "token" else proof
        self._db.execute("INSERT INTO session_owner VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session) DO NOTHING",
                         (session, kind, hashed, claim_event, route, self.clock()))
        self._owners.pop(session, None)
        owner = self.get(session)
        assert owner is not None
        return owner

    def set_route(self, session: str, route: bytes) -> None:
        owner = self._owners[session]
        if owner.route != route:
            owner.route = route
            self._db.execute("UPDATE session_owner SET route = %s WHERE session = %s", (route, session))

    def delete(self, sessions: list[str]) -> None:
        self.forget(sessions)
        self._db.execute("DELETE FROM session_owner WHERE session = ANY(%s)", (sessions,))
