"""Each session's journal in SQLite (WAL): what a session needs to continue after a restart.

Tables: `sessions` (phone key, last activity, a snapshot of timers and what the session knows of
skills), `entries` (every history entry as the Trajectory recorded it, in order), `events`
(every accepted event: its id dedups resends across restarts, `done` says a TurnDone covered
it), `entries_fts` (FTS5 over the entries' text, for `history_search`).

Callers queue operations; one writer task runs everything queued so far as one transaction, so
a burst of entries costs one commit. A batch of small writes to SQLite runs on the event loop
when the write lock is free at once (a few tens of µs: handing it to a worker thread and waking
the loop again costs three times the transaction, measured in issue 54); a batch with a read, a
store behind a network (PostgreSQL) or a lock held by another writer goes to a worker thread
(`anyio.to_thread`), as does the WAL's checkpoint (its fsync), every `CHECKPOINT_EVERY` batches. Appends are fire-and-forget (order is kept: one queue, one writer)
and wait up to `COALESCE_S` for company; `accept_event` and reads are waited for, so they go at
once (taking everything queued before them along), because the phone's ack must mean "on disk". WAL with
synchronous=NORMAL survives the death of any process (what restarts are about); only a power
loss may take the last commits.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import anyio
import msgspec

import protocol as p
from core.trajectory import Recorded
from core.world import WorldState
from protocol.results import ToolData
from storage import sqlite_file

_log = logging.getLogger("porfiry.journal")

COALESCE_S = 0.005  # an append waits this long for others to share its transaction
INLINE_MAX = 64  # a batch of at most this many small writes may run on the event loop
CHECKPOINT_EVERY = 128  # batches between two WAL checkpoints in the worker thread (none on the loop)
DEDUP_KEPT = 256  # event ids loaded back per session (the in-memory dedup window)

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY,
    phone_key TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    last_active REAL NOT NULL,
    next_due REAL,
    state BLOB
);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    ts REAL NOT NULL,
    role TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL DEFAULT '',
    call_id TEXT NOT NULL DEFAULT '',
    call_state TEXT NOT NULL DEFAULT '',
    tool TEXT NOT NULL DEFAULT '',
    event_ids TEXT NOT NULL DEFAULT '',
    outcome TEXT NOT NULL DEFAULT '',
    data BLOB
);
CREATE INDEX IF NOT EXISTS entries_by_session ON entries (session, id);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL,
    event_id TEXT NOT NULL,
    ts REAL NOT NULL,
    event BLOB NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session, event_id)
);
CREATE INDEX IF NOT EXISTS events_open ON events (session) WHERE done = 0;
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5 (sk, content, tokenize = 'unicode61 remove_diacritics 2');
"""


class JournalError(Exception):
    """The journal could not store or read something; the message says what and why."""


class Fenced(JournalError):
    """A session's write refused: its lease's fencing token is no longer the one this node holds
    it with (another node took it, or it was deleted). Nothing is lost: it is another node's."""


Fence = tuple[str, str, int]  # what a session's write carries with several nodes: (session, node, epoch)


class TimerRow(msgspec.Struct, array_like=True):
    timer_id: str
    due: float
    text: str
    every: float | None = None
    days: int = 0  # a repeat on days of the week (core.timers.parse_days); rows written before it read 0


class SessionState(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a session knows besides its history: timers, and the skills it saw and read (V4).
    Toolset activity is deliberately not here (seed 000 §5: a restart resets toolsets)."""

    timers: list[TimerRow] = []
    next_timer: int = 1
    skills_version: str | None = None
    skills_names: list[str] = []
    skills_read: dict[str, str] = {}
    world: WorldState = msgspec.field(default_factory=WorldState)  # glasses, notes, watches, monitors (core/world.py)


class StoredSession(msgspec.Struct, kw_only=True):
    """A session as the journal holds it: enough to rebuild its Conversation."""

    session: str
    phone_key: str
    entries: list[Recorded]
    seen: list[str]  # the latest event ids, oldest first (dedup window)
    open_events: list[p.Event]  # accepted, not yet covered by a TurnDone, in order
    state: SessionState
    last_active: float


class SearchHit(msgspec.Struct, kw_only=True):
    ts: float
    role: str
    content: str
    reply: str = ""  # for a user entry: the assistant's answer that followed


_EVENT = msgspec.msgpack.Encoder()
_EVENT_DECODER = msgspec.msgpack.Decoder(p.Event)
_STATE_DECODER = msgspec.msgpack.Decoder(SessionState)
_DATA_DECODER = msgspec.msgpack.Decoder(ToolData)


def encoded_data(entry: Recorded) -> bytes | None:
    """A result's typed payload as stored (msgpack); None when it has none."""
    return None if entry.data is None else _EVENT.encode(entry.data)


def decoded_data(blob: bytes | None) -> ToolData | None:
    """A stored payload; None for none, and for one this runtime cannot read (a kind it does not
    know): the result's text is still there, the session only forgets what it showed."""
    if blob is None:
        return None
    try:
        return _DATA_DECODER.decode(bytes(blob))
    except msgspec.DecodeError as exc:
        _log.warning("journal: a result's payload is not readable, kept without it: %s", exc)
        return None


def session_key(session: str) -> str:
    """One FTS token per session, so a search is restricted to its session inside the index."""
    return "k" + hashlib.blake2b(session.encode(), digest_size=8).hexdigest()


def fts_query(words: str) -> str:
    """A forgiving FTS5 query: any of the words, each also matching its other endings (a crude
    stem for Russian and English: "Аглаю" finds "Аглая"). Empty when there is no word."""
    terms = []
    for word in re.findall(r"\w+", words.casefold()):
        if len(word) >= 5:
            terms.append(f'"{word[:max(4, len(word) - 2)]}"*')
        elif len(word) >= 2 or word.isdigit():
            terms.append(f'"{word}"')
    return " OR ".join(dict.fromkeys(terms))


def connect(path: str | Path, *, hold_lock: bool = False) -> sqlite3.Connection:
    """The database at `path`, created with its schema if new (WAL, NORMAL sync); checked and
    locked by storage/sqlite_file.py (raises its StorageError)."""
    return sqlite_file.open_database(path, _prepare, hold_lock=hold_lock)


def _prepare(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA cache_size=-1024")  # 1 MB: writes append, reads are one session at a time
    conn.executescript(SCHEMA)
    if _missing_columns(conn):
        _add_columns(conn)


# Columns a journal written by an older runtime lacks: a result's outcome kind ('': read from the
# result's text on load, core.trajectory.journaled_kind) and its typed payload (NULL: none kept).
_ADDED_COLUMNS = (("outcome", "TEXT NOT NULL DEFAULT ''"), ("data", "BLOB"))


def _missing_columns(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    present = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
    return [(name, kind) for name, kind in _ADDED_COLUMNS if name not in present]


def _add_columns(conn: sqlite3.Connection) -> None:
    """An older journal gets the columns it lacks. Under the write lock: a reader opening the
    file at the same moment must not add them twice."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for name, kind in _missing_columns(conn):
            conn.execute(f"ALTER TABLE entries ADD COLUMN {name} {kind}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# ---- synchronous operations (the worker thread, and `run.py sessions`) ---------------------------
def _touch(conn: sqlite3.Connection, session: str, ts: float, phone_key: str = "") -> None:
    conn.execute(
        "INSERT INTO sessions (session, phone_key, created, last_active) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session) DO UPDATE SET last_active = excluded.last_active, "
        "phone_key = CASE WHEN excluded.phone_key != '' THEN excluded.phone_key ELSE phone_key END",
        (session, phone_key, ts, ts))


def insert_entry(conn: sqlite3.Connection, session: str, ts: float, entry: Recorded) -> None:
    cursor = conn.execute(
        "INSERT INTO entries (session, ts, role, name, content, call_id, call_state, tool, event_ids, outcome, data) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (session, ts, entry.role, entry.name, entry.content, entry.call_id, entry.call_state, entry.tool,
         " ".join(entry.event_ids), entry.outcome or "", encoded_data(entry)))
    if entry.role and entry.content:
        conn.execute("INSERT INTO entries_fts (rowid, sk, content) VALUES (?, ?, ?)",
                     (cursor.lastrowid, session_key(session), entry.content))


def insert_event(conn: sqlite3.Connection, session: str, phone_key: str, event: p.Event, ts: float) -> None:
    conn.execute("INSERT OR IGNORE INTO events (session, event_id, ts, event) VALUES (?, ?, ?, ?)",
                 (session, event.event_id, ts, _EVENT.encode(event)))
    _touch(conn, session, ts, phone_key)


def mark_done(conn: sqlite3.Connection, session: str, event_ids: Iterable[str]) -> None:
    conn.executemany("UPDATE events SET done = 1 WHERE session = ? AND event_id = ? AND done = 0",
                     [(session, event_id) for event_id in event_ids])


def next_due(state: SessionState, ts: float) -> float | None:
    """When a restart must bring the session back: its first timer, or at once for a running
    monitor (to run it again); None: only when its phone speaks. Both backends store this."""
    due = min((t.due for t in state.timers), default=None)
    if due is None and any(m.state == "running" for m in state.world.monitors):
        due = ts
    return due


def stored_session(session: str, head: tuple, entry_rows: Iterable[tuple], seen: list[str],
                   open_events: list[bytes]) -> StoredSession:
    """A session as read back by either backend: its row (phone key, last active, state), its
    entries in order, the latest dedup ids (oldest first), the encoded events not yet answered."""
    phone_key, last_active, state = head
    entries = [Recorded(role=role, name=name, content=content, call_id=call_id, call_state=call_state, tool=tool,
                        event_ids=ids.split() if ids else [], outcome=outcome or None, data=decoded_data(data))
               for role, name, content, call_id, call_state, tool, ids, outcome, data in entry_rows]
    return StoredSession(session=session, phone_key=phone_key, entries=entries, seen=seen,
                         open_events=[_EVENT_DECODER.decode(blob) for blob in open_events],
                         state=_STATE_DECODER.decode(state) if state else SessionState(), last_active=last_active)


def save_state(conn: sqlite3.Connection, session: str, state: SessionState, ts: float) -> None:
    _touch(conn, session, ts)
    conn.execute("UPDATE sessions SET state = ?, next_due = ? WHERE session = ?",
                 (msgspec.msgpack.encode(state), next_due(state, ts), session))


def load_session(conn: sqlite3.Connection, session: str) -> StoredSession | None:
    row = conn.execute("SELECT phone_key, last_active, state FROM sessions WHERE session = ?", (session,)).fetchone()
    if row is None:
        return None
    entries = conn.execute("SELECT role, name, content, call_id, call_state, tool, event_ids, outcome, data FROM entries "
                           "WHERE session = ? ORDER BY id", (session,))
    seen = [r[0] for r in conn.execute(
        "SELECT event_id FROM events WHERE session = ? ORDER BY rowid DESC LIMIT ?", (session, DEDUP_KEPT))][::-1]
    open_events = [r[0] for r in conn.execute("SELECT event FROM events WHERE session = ? AND done = 0 ORDER BY rowid", (session,))]
    return stored_session(session, row, entries, seen, open_events)


def unfinished_sessions(conn: sqlite3.Connection) -> list[str]:
    """Sessions a restart must bring back at once: events not yet answered, or timers set."""
    rows = conn.execute("SELECT DISTINCT session FROM events WHERE done = 0 "
                        "UNION SELECT session FROM sessions WHERE next_due IS NOT NULL")
    return sorted(r[0] for r in rows)


def search(conn: sqlite3.Connection, session: str, words: str, limit: int = 5) -> list[SearchHit]:
    query = fts_query(words)
    if not query:
        return []
    try:
        rows = conn.execute(
            "SELECT e.id, e.ts, e.role, e.content FROM entries_fts f JOIN entries e ON e.id = f.rowid "
            "WHERE entries_fts MATCH ? ORDER BY bm25(entries_fts) LIMIT ?",
            (f"sk : {session_key(session)} AND content : ({query})", limit)).fetchall()
    except sqlite3.OperationalError as exc:
        raise JournalError(f"cannot search for {words!r}: {exc}") from None
    hits = []
    for entry_id, ts, role, content in sorted(rows):
        reply = ""
        if role == "user":
            after = conn.execute("SELECT content FROM entries WHERE session = ? AND id > ? AND role = 'assistant' "
                                 "ORDER BY id LIMIT 1", (session, entry_id)).fetchone()
            reply = after[0] if after else ""
        hits.append(SearchHit(ts=ts, role=role, content=content, reply=reply))
    return hits


def list_sessions(conn: sqlite3.Connection) -> list[tuple[str, str, float, float, int]]:
    """(session, phone_key, created, last_active, entries), most recently active first."""
    return conn.execute(
        "SELECT s.session, s.phone_key, s.created, s.last_active, "
        "(SELECT count(*) FROM entries e WHERE e.session = s.session AND e.role != '') "
        "FROM sessions s ORDER BY s.last_active DESC").fetchall()


def session_entries(conn: sqlite3.Connection, session: str) -> list[dict[str, Any]]:
    """The session's history as recorded, with the time of each entry (export, show)."""
    return [
        {"ts": ts, "role": role, "content": content, **({"name": name} if name else {})}
        for ts, role, name, content in conn.execute(
            "SELECT ts, role, name, content FROM entries WHERE session = ? AND role != '' ORDER BY id", (session,))
    ]


def delete_session(conn: sqlite3.Connection, session: str, *, transaction: bool = True) -> bool:
    """Everything the journal holds about the session; False when it held nothing.
    `transaction=False`: the caller's transaction (the Journal's batch) holds it."""
    if transaction:
        conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM entries_fts WHERE rowid IN (SELECT id FROM entries WHERE session = ?)", (session,))
        conn.execute("DELETE FROM entries WHERE session = ?", (session,))
        conn.execute("DELETE FROM events WHERE session = ?", (session,))
        gone = conn.execute("DELETE FROM sessions WHERE session = ?", (session,)).rowcount
        if transaction:
            conn.execute("COMMIT")
    except BaseException:
        if transaction:
            conn.execute("ROLLBACK")
        raise
    return bool(gone)


def purge_older_than(conn: sqlite3.Connection, cutoff: float) -> int:
    """storage.retention_days: entries and answered events older than `cutoff` (epoch) go, and
    sessions idle since then go whole. Returns the number of entries deleted."""
    conn.execute("DELETE FROM entries_fts WHERE rowid IN (SELECT id FROM entries WHERE ts < ?)", (cutoff,))
    deleted = conn.execute("DELETE FROM entries WHERE ts < ?", (cutoff,)).rowcount
    conn.execute("DELETE FROM events WHERE ts < ? AND done = 1", (cutoff,))
    conn.execute("DELETE FROM sessions WHERE last_active < ? AND next_due IS NULL "
                 "AND session NOT IN (SELECT session FROM events WHERE done = 0)", (cutoff,))
    return deleted


class JournalStore(Protocol):
    """The database behind the Journal (SqliteStore here, storage/postgres.py's PostgresStore;
    storage/store.py picks one). Every call but `connect` gets the connection `connect` made; all
    run in one thread."""

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
    def fence(self, conn: Any, session: str, node: str, epoch: int) -> bool:
        """Several nodes: does `node` still hold the session with token `epoch` (kept so until
        the batch commits)? False: the batch's writes of it are refused."""
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


class SqliteStore:
    """The journal's SQL on a SQLite file (storage.backend = "sqlite"): the functions above."""

    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def __init__(self, path: str | Path, *, hold_lock: bool = False):
        self.path = Path(path)
        self.where = str(path)
        self.hold_lock = hold_lock  # the runtime's journal: storage/sqlite_file.py's lock, and a FileWatch
        self._watch: sqlite_file.FileWatch | None = None

    def connect(self) -> sqlite3.Connection:
        conn = connect(self.path, hold_lock=self.hold_lock)
        if self.hold_lock:
            self._watch = sqlite_file.FileWatch(self.path)  # a file deleted under us: no more acks
        return conn

    def close(self, conn: sqlite3.Connection) -> None:
        conn.close()
        if self.hold_lock:
            sqlite_file.release(self.path)

    @staticmethod
    def reopen(conn: sqlite3.Connection) -> sqlite3.Connection:
        return conn  # a file does not hang up

    @staticmethod
    def begin(conn: sqlite3.Connection) -> None:
        # IMMEDIATE: take the write lock now, waiting (busy timeout) for another process's
        # writer (the bridge's ownership table shares the file); a deferred transaction that
        # reads first fails with "database is locked" instead of waiting
        conn.execute("BEGIN IMMEDIATE")

    def commit(self, conn: sqlite3.Connection) -> None:
        conn.execute("COMMIT")
        if self._watch is not None:
            self._watch.check()

    @staticmethod
    def try_begin(conn: sqlite3.Connection) -> bool:
        """BEGIN IMMEDIATE without waiting: False when another writer holds the lock (the caller
        then runs the batch in a worker thread, where waiting blocks nobody)."""
        timeout = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("BEGIN IMMEDIATE")
            return True
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False
            raise
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(timeout)}")

    @staticmethod
    def no_checkpoint_on_commit(conn: sqlite3.Connection) -> None:
        """A commit on the event loop must never run the WAL's checkpoint (it fsyncs):
        `checkpoint` does it in the worker thread."""
        conn.execute("PRAGMA wal_autocheckpoint=0")

    @staticmethod
    def checkpoint(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    @staticmethod
    def rollback(conn: sqlite3.Connection) -> None:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass

    @staticmethod
    def guarded(conn: sqlite3.Connection) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()  # a failed statement leaves SQLite's transaction usable

    @staticmethod
    def fence(conn: sqlite3.Connection, session: str, node: str, epoch: int) -> bool:
        return True  # one runtime owns the file (storage/sqlite_file.py's lock)

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


# ---- the asynchronous journal -----------------------------------------------------------------
def _finish(waiter: "_Waiter") -> None:
    waiter.done.set()
    for then in waiter.then:
        try:
            then()
        except Exception:  # noqa: BLE001 - one faulty callback must not stop the writer
            _log.exception("journal: a callback on a stored write failed")
    waiter.then.clear()


class _Waiter:
    __slots__ = ("done", "result", "error", "then")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.then: list[Callable[[], None]] = []  # called once done (`Journal.on_stored`)


class Journal:
    """The runtime's journal: queue operations from the event loop, one writer runs them in a
    worker thread, a batch per transaction. Start `run` in a task group before using it."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time, store: JournalStore | None = None):
        self.path = Path(path)
        self.clock = clock
        self.store: JournalStore = store if store is not None else SqliteStore(path, hold_lock=True)
        self._conn: Any = None  # the store's connection, used by the worker thread only
        self._queue: list[tuple[Callable[[Any], Any], _Waiter | None, Fence | None]] = []
        # several nodes (storage/leases.py): the token a write of a session carries, taken when it
        # is queued; and who is told of the sessions whose writes were refused (Fenced)
        self.fence_of: Callable[[str], tuple[str, int]] | None = None
        self.on_fenced: Callable[[list[Fence]], None] = lambda fences: None
        self._wake = anyio.Event()
        self._now = anyio.Event()  # set when something waits on the queue: flush without delay
        self._heavy = False  # the queue holds a read or another operation of unknown length
        self._inline = hasattr(self.store, "try_begin")  # SQLite: small batches may run on the loop
        self.failure = ""  # the last failed write nobody waited for, until a write succeeds
        self.batches = 0

    async def run(self, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        try:
            self._conn = await anyio.to_thread.run_sync(self.store.connect)
            if self._inline:
                self.store.no_checkpoint_on_commit(self._conn)
        except (*self.store.errors, OSError) as exc:
            raise JournalError(f"cannot open the journal {self.store.where}: {exc}") from None
        task_status.started()
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                with anyio.move_on_after(COALESCE_S):
                    await self._now.wait()
                self._now = anyio.Event()
                await self._flush()
        finally:
            with anyio.CancelScope(shield=True):
                if self._queue:
                    await self._flush()  # what was queued before a stop still lands
                conn, self._conn = self._conn, None
                await anyio.to_thread.run_sync(self.store.close, conn)

    async def _flush(self) -> None:
        batch, self._queue = self._queue, []
        heavy, self._heavy = self._heavy, False
        if not batch:
            return
        if heavy or not self._inline or len(batch) > INLINE_MAX or not self._begin_now():
            fenced = await anyio.to_thread.run_sync(self._run_batch, batch)
        else:
            fenced = self._run_batch(batch, begun=True)
        self.batches += 1
        if self._inline and self.batches % CHECKPOINT_EVERY == 0:
            await anyio.to_thread.run_sync(self._checkpoint)
        for _, waiter, _ in batch:
            if waiter is not None:
                _finish(waiter)
        if fenced:
            self.on_fenced(fenced)

    def _holds(self, conn: Any, fence: Fence, checked: dict[Fence, bool]) -> None:
        """Raises Fenced unless the session's lease still carries `fence`'s token (once a batch)."""
        if fence not in checked:
            with self.store.guarded(conn):
                checked[fence] = self.store.fence(conn, *fence)
        if not checked[fence]:
            session, node, epoch = fence
            raise Fenced(f"session {session} is no longer node {node}'s (its lease moved on from token {epoch}): "
                         "the write is refused")

    def _begin_now(self) -> bool:
        """A transaction begun on the loop, if the write lock is free now."""
        try:
            return self.store.try_begin(self._conn)
        except self.store.errors as exc:
            _log.warning("journal: cannot begin on the loop (%s); the worker thread will", exc)
            return False

    def _checkpoint(self) -> None:
        try:
            self.store.checkpoint(self._conn)
        except self.store.errors as exc:  # a reader holding the WAL: the next one catches up
            _log.warning("journal: WAL checkpoint failed: %s", exc)

    def _run_batch(self, batch: list[tuple[Callable[[Any], Any], _Waiter | None, Fence | None]],
                   begun: bool = False) -> list[Fence]:
        conn, store = self._conn, self.store
        assert conn is not None
        failed = ""
        checked: dict[Fence, bool] = {}
        try:
            if not begun:
                conn = self._conn = store.reopen(conn)
                store.begin(conn)
            for operation, waiter, fence in batch:
                try:
                    if fence is not None:
                        self._holds(conn, fence, checked)
                    with store.guarded(conn):
                        result = operation(conn)
                except Fenced as exc:  # another node's session now: not a lost write
                    if waiter is not None:
                        waiter.error = exc
                except Exception as exc:  # noqa: BLE001 - one bad operation fails alone
                    failed = f"{type(exc).__name__}: {exc}"
                    if waiter is not None:
                        waiter.error = JournalError(f"journal write failed: {failed}")
                    else:
                        _log.error("journal write failed: %s", failed)
                else:
                    if waiter is not None:
                        waiter.result = result
            store.commit(conn)
        except store.errors as exc:
            failed = f"{type(exc).__name__}: {exc}"
            _log.error("journal commit failed (%d operations): %s", len(batch), failed)
            store.rollback(conn)
            for _, waiter, _ in batch:
                if waiter is not None:
                    waiter.error = JournalError(f"journal write failed: {failed}")
            checked.clear()
        self.failure = failed
        return [fence for fence, holds in checked.items() if not holds]

    def _submit(self, operation: Callable[[sqlite3.Connection], Any], waiter: _Waiter | None = None,
                session: str | None = None, *, urgent: bool = True) -> None:
        """`session`: a write of that session's, carrying its fencing token with several nodes.
        A waited operation goes at once unless not `urgent`."""
        fence = None if session is None or self.fence_of is None else (session, *self.fence_of(session))
        self._queue.append((operation, waiter, fence))
        self._wake.set()
        if waiter is not None and urgent:
            self._now.set()

    async def _call(self, operation: Callable[[sqlite3.Connection], Any]) -> Any:
        self._heavy = True  # a read (a session's history, a search) may take long: not on the loop
        return await self.wait(self._queue_waited(operation))

    def _queue_waited(self, operation: Callable[[sqlite3.Connection], Any], session: str | None = None) -> _Waiter:
        waiter = _Waiter()
        if self._conn is None:
            waiter.error = JournalError(f"the journal {self.store.where} is not open")
            waiter.done.set()
        else:
            self._submit(operation, waiter, session)
        return waiter

    @staticmethod
    async def wait(waiter: _Waiter) -> Any:
        """The result of a queued operation once its transaction committed; raises JournalError."""
        await waiter.done.wait()
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def call(self, operation: Callable[[Any], Any]) -> Any:
        """Runs `operation(conn)` in the writer's next transaction, after everything queued
        before it; its result. Raises JournalError."""
        return await self._call(operation)

    # ---- what sessions write ----------------------------------------------------------------
    def append(self, session: str, entry: Recorded) -> None:
        """A history entry, in order; not waited for (a restart replays what reached the disk)."""
        ts = self.clock()
        self._submit(lambda conn: self.store.insert_entry(conn, session, ts, entry), session=session)

    def accept_event(self, session: str, phone_key: str, event: p.Event) -> _Waiter:
        """An event the session accepted, queued now (before anything it causes, so the disk
        never holds an effect without its cause); `await stored(waiter)` before acking it."""
        ts = self.clock()
        return self._queue_waited(lambda conn: self.store.insert_event(conn, session, phone_key, event, ts), session)

    async def stored(self, waiter: _Waiter) -> None:
        """Raises JournalError when the event could not be stored, or an earlier write was lost."""
        await self.wait(waiter)
        self._raise_lost()

    def on_stored(self, waiter: _Waiter, callback: Callable[[JournalError | None], None]) -> None:
        """`stored` without a task per event: `callback(None)` once the event is stored, or
        `callback(error)`; called by the writer (at once if that is already known)."""
        def then() -> None:
            try:
                if waiter.error is not None:
                    raise waiter.error
                self._raise_lost()
            except JournalError as exc:
                callback(exc)
            else:
                callback(None)

        if waiter.done.is_set():
            then()
        else:
            waiter.then.append(then)

    def _raise_lost(self) -> None:
        if self.failure:
            raise JournalError(f"the journal lost a write: {self.failure}")

    def note_event(self, session: str, event: p.Event) -> _Waiter:
        """An event from inside the runtime (a timer): recorded for dedup. With several nodes its
        firing waits for `on_stored` (a write refused by the fence means another node fires it)."""
        ts = self.clock()
        waiter = _Waiter()
        self._submit(lambda conn: self.store.insert_event(conn, session, "", event, ts), waiter, session)
        return waiter

    def barrier(self, session: str) -> _Waiter:
        """Done once everything queued so far is committed, carrying the session's fencing token
        (Fenced when the session is no longer this node's); for `on_stored`. It waits for company
        (COALESCE_S) like an append: under load, turns' ends share their commits."""
        waiter = _Waiter()
        self._submit(lambda conn: None, waiter, session, urgent=False)
        return waiter

    def events_done(self, session: str, event_ids: list[str]) -> None:
        self._submit(lambda conn: self.store.mark_done(conn, session, event_ids), session=session)

    def save_state(self, session: str, state: SessionState) -> None:
        ts = self.clock()
        self._submit(lambda conn: self.store.save_state(conn, session, state, ts), session=session)

    # ---- what sessions read -----------------------------------------------------------------
    async def load(self, session: str) -> StoredSession | None:
        return await self._call(lambda conn: self.store.load_session(conn, session))

    async def unfinished(self) -> list[str]:
        return await self._call(self.store.unfinished_sessions)

    async def search(self, session: str, words: str, limit: int = 5) -> list[SearchHit]:
        return await self._call(lambda conn: self.store.search(conn, session, words, limit))

    async def delete(self, session: str) -> bool:
        return await self._call(lambda conn: self.store.delete_session(conn, session, transaction=False))

    async def purge(self, cutoff: float) -> int:
        return await self._call(lambda conn: self.store.purge_older_than(conn, cutoff))


class NoJournal(Journal):
    """`storage.journal = false`: nothing reaches the disk. Sessions live in memory only (a
    restart forgets them, idle ones are never evicted); for measuring what the journal costs."""

    def __init__(self, clock: Callable[[], float] = time.time):
        super().__init__("", clock)

    async def run(self, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await anyio.sleep_forever()

    def _submit(self, operation: Callable[[sqlite3.Connection], Any], waiter: _Waiter | None = None,
                session: str | None = None, *, urgent: bool = True) -> None:
        if waiter is not None:
            waiter.done.set()

    def _queue_waited(self, operation: Callable[[sqlite3.Connection], Any], session: str | None = None) -> _Waiter:
        waiter = _Waiter()
        waiter.done.set()
        return waiter

    async def load(self, session: str) -> StoredSession | None:
        return None

    async def unfinished(self) -> list[str]:
        return []

    async def search(self, session: str, words: str, limit: int = 5) -> list[SearchHit]:
        return []

    async def delete(self, session: str) -> bool:
        return False

    async def purge(self, cutoff: float) -> int:
        return 0
