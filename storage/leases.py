"""Which node serves each session, when several runtime nodes share one PostgreSQL (node.name;
docs/several-nodes.md).

A node holds one lease, its row in `nodes`, renewed every `node.heartbeat_s` until `expires`
(`node.lease_s` ahead). A session is served by the node named in its `session_lease` row, and
only while that node's lease is alive: renewing one row keeps all of a node's sessions. A node
takes a session when it has no row, when the row is already its own, or when the row's node has
expired (died, or was cut off); `release` hands a session back (an idle session leaving memory),
so the next node a phone reaches takes it at once. A session a live node holds is asked for:
the taker marks it `wanted_by` itself; the holder, polling every `node.handover_poll_s`, lets an
idle session go at once (one mid-turn after its turn), naming the taker in the row, after the
session's last writes (one journal queue). Sessions of a dead node with a timer due (or,
at a node's start, with any unfinished work) are adopted by a live node: claimed with
`FOR UPDATE SKIP LOCKED`, so two live nodes never claim the same one and its timer fires once.

"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio
import psycopg

from core.config import NodeConfig
from storage.journal import Journal, JournalError
from storage.postgres import DELETED_CHANNEL, PostgresStore

T = TypeVar("T")
_log = logging.getLogger("porfiry.leases")


def beat(conn: psycopg.Connection, node: str, now: float, lease_s: float) -> bool:
    """Renews the node's lease; True when it had lapsed meanwhile (other nodes may have taken
    sessions this node still holds in memory: `taken_from`)."""
    before = conn.execute(
        "WITH old AS (SELECT expires FROM nodes WHERE node = %s) INSERT INTO nodes (node, started, expires) "
        "VALUES (%s, %s, %s) ON CONFLICT (node) DO UPDATE SET expires = excluded.expires RETURNING (SELECT expires FROM old)",
        (node, node, now, now + lease_s)).fetchone()[0]
    return before is not None and before <= now


def taken_from(conn: psycopg.Connection, node: str, sessions: list[str]) -> list[str]:
    """Of `sessions` (in `node`'s memory), those another node serves now."""
    return [r[0] for r in conn.execute("SELECT session FROM session_lease WHERE session = ANY(%s) AND node <> %s",
                                       (sessions, node))]


def acquire(conn: psycopg.Connection, session: str, node: str, now: float) -> str:
    """Takes the session for `node` unless a live other node serves it: "" when taken (or
    already ours), else the node that serves it."""
    taken = conn.execute(
        "INSERT INTO session_lease (session, node, since) VALUES (%s, %s, %s) ON CONFLICT (session) DO UPDATE "
        "SET node = excluded.node, since = excluded.since, wanted_by = NULL WHERE session_lease.node = excluded.node OR NOT EXISTS "
        "(SELECT 1 FROM nodes n WHERE n.node = session_lease.node AND n.expires > %s) RETURNING node",
        (session, node, now, now)).fetchone()
    if taken is not None:
        return ""
    row = conn.execute("SELECT node FROM session_lease WHERE session = %s", (session,)).fetchone()
    return row[0] if row else ""


def want(conn: psycopg.Connection, session: str, node: str) -> None:
    conn.execute("UPDATE session_lease SET wanted_by = %s WHERE session = %s AND node <> %s", (node, session, node))


def wanted(conn: psycopg.Connection, node: str) -> list[tuple[str, str]]:
    """(session, the node that wants it) for the sessions `node` holds and another asked for."""
    return conn.execute("SELECT session, wanted_by FROM session_lease WHERE node = %s AND wanted_by IS NOT NULL",
                        (node,)).fetchall()


def hand_over(conn: psycopg.Connection, session: str, node: str, to: str, now: float) -> None:
    conn.execute("UPDATE session_lease SET node = %s, since = %s, wanted_by = NULL WHERE session = %s AND node = %s",
                 (to, now, session, node))


def release(conn: psycopg.Connection, sessions: list[str], node: str) -> None:
    conn.execute("DELETE FROM session_lease WHERE session = ANY(%s) AND node = %s", (sessions, node))


def adopt(conn: psycopg.Connection, node: str, now: float, limit: int, *, due_only: bool) -> list[str]:
    """Claims for `node` the sessions no live node serves that need a node: accepted events not
    yet answered in the journal (the dead node's turn runs again here), and a timer due
    (`due_only`) or set at all (a node's start). SKIP LOCKED: a session another node is claiming
    at this moment is left to it."""
    timers = "s.next_due <= %(now)s" if due_only else "s.next_due IS NOT NULL"
    work = f"({timers} OR EXISTS (SELECT 1 FROM events e WHERE e.session = s.session AND NOT e.done))"
    rows = conn.execute(
        "WITH orphans AS (SELECT s.session FROM sessions s LEFT JOIN session_lease l ON l.session = s.session "
        f"WHERE {work} AND (l.node IS NULL OR l.node = %(node)s OR NOT EXISTS "
        "(SELECT 1 FROM nodes n WHERE n.node = l.node AND n.expires > %(now)s)) "
        "ORDER BY s.next_due NULLS LAST LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED) "
        "INSERT INTO session_lease (session, node, since) SELECT session, %(node)s, %(now)s FROM orphans "
        "ON CONFLICT (session) DO UPDATE SET node = excluded.node, since = excluded.since RETURNING session",
        {"node": node, "now": now, "limit": limit}).fetchall()
    return sorted(r[0] for r in rows)


def node_table(conn: psycopg.Connection, now: float) -> list[tuple[str, bool, int]]:
    """(node, alive, sessions it serves) for `run.py cluster status`."""
    return conn.execute(
        "SELECT n.node, n.expires > %s, (SELECT count(*) FROM session_lease l WHERE l.node = n.node) "
        "FROM nodes n ORDER BY n.node", (now,)).fetchall()


class NodeLeases:
    """A session actor's side of it. The lease statements run on a connection of their own, each
    its own short transaction (autocommit), in a worker thread: inside the journal's batches they
    would hold lease rows until a whole batch commits, and two nodes' batches deadlock. A
    hand-over waits for the journal's queued writes first, so the taker reads all of them."""

    def __init__(self, settings: NodeConfig, journal: Journal, url: str, clock: Callable[[], float] = time.time):
        self.settings = settings
        self.node = settings.name
        self.journal = journal
        self.store = PostgresStore(url)
        self.clock = clock
        self._conn: psycopg.Connection | None = None
        self._lock = anyio.Lock()
        self._renewer: threading.Thread | None = None
        self._stop = threading.Event()
        self._lapsed = threading.Event()  # the renewing thread found the lease had lapsed
        self._deleted: list[str] = []  # sessions deleted anywhere, as NOTIFY told (`deleted`)

    def _connection(self) -> psycopg.Connection:
        """The lease statements' connection, which also LISTENs for deleted sessions: the
        notifications arrive with the statements' results (every `node.handover_poll_s`)."""
        conn = self._conn
        if conn is not None and not conn.broken and not conn.closed:
            return conn
        if conn is not None:
            conn = self.store.reopen(conn)
        else:
            conn = self.store.connect()
        conn.add_notify_handler(lambda notify: self._deleted.append(notify.payload))
        conn.execute(f"LISTEN {DELETED_CHANNEL}")
        self._conn = conn
        return conn

    def deleted(self) -> list[str]:
        """The sessions deleted (`run.py sessions delete`, any node) since the last call."""
        deleted, self._deleted = self._deleted, []
        return deleted

    async def _run(self, statement: Callable[[psycopg.Connection], T]) -> T:
        def run() -> T:
            return statement(self._connection())

        async with self._lock:
            try:
                return await anyio.to_thread.run_sync(run)
            except psycopg.Error as exc:
                raise JournalError(f"node {self.node}: a lease statement failed on {self.store.where}: {exc}") from None

    async def close(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            await anyio.to_thread.run_sync(self._renewer.join)
            self._renewer = None
        async with self._lock:
            if self._conn is not None:
                await anyio.to_thread.run_sync(self._conn.close)
                self._conn = None

    async def beat(self, in_memory: list[str] | None = None) -> list[str]:
        """Renews the lease now; returns the sessions of `in_memory` that other nodes took while it
        had lapsed (the caller must let them go: they are served elsewhere now)."""
        now, lease_s = self.clock(), self.settings.lease_s

        def renew(conn: psycopg.Connection) -> list[str]:
            lapsed = beat(conn, self.node, now, lease_s)
            return taken_from(conn, self.node, in_memory) if lapsed and in_memory else []

        return await self._run(renew)

    def renew_in_thread(self) -> None:
        """From now on the lease is renewed every `node.heartbeat_s` by a thread of its own, with
        a connection of its own: a node whose event loop is slow under load is alive all the
        same, and must not lose its sessions for that (until `close`)."""
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew_forever, name=f"lease-{self.node}", daemon=True)
        self._renewer.start()

    def _renew_forever(self) -> None:
        conn: psycopg.Connection | None = None
        while not self._stop.wait(self.settings.heartbeat_s):
            try:
                conn = self.store.connect() if conn is None else self.store.reopen(conn)
                if beat(conn, self.node, self.clock(), self.settings.lease_s):
                    self._lapsed.set()
            except psycopg.Error as exc:
                _log.error("node %s could not renew its lease: %s", self.node, exc)
        if conn is not None:
            conn.close()

    async def lapsed_sessions(self, in_memory: list[str]) -> list[str]:
        """Once the renewing thread found the lease had lapsed: those of `in_memory` that other
        nodes took meanwhile (cheap otherwise: a flag)."""
        if not self._lapsed.is_set() or not in_memory:
            return []
        self._lapsed.clear()
        return await self._run(lambda conn: taken_from(conn, self.node, in_memory))

    async def acquire(self, session: str) -> str:
        now = self.clock()
        return await self._run(lambda conn: acquire(conn, session, self.node, now))

    async def take(self, session: str) -> str:
        """`acquire`, asking a live holder to hand the session over and waiting up to
        `node.handover_wait_s` for it: "" when taken, else the node that kept it."""
        holder = await self.acquire(session)
        if not holder:
            return ""
        await self._run(lambda conn: want(conn, session, self.node))
        with anyio.move_on_after(self.settings.handover_wait_s):
            while holder:
                await anyio.sleep(self.settings.handover_poll_s)
                holder = await self.acquire(session)
        return holder

    async def wanted(self) -> list[tuple[str, str]]:
        return await self._run(lambda conn: wanted(conn, self.node))

    async def hand_over(self, moves: list[tuple[str, str]]) -> None:
        """(session, to): once the sessions' queued journal writes are committed."""
        await self.journal.call(lambda conn: None)
        now = self.clock()

        def hand(conn: psycopg.Connection) -> None:
            for session, to in moves:
                hand_over(conn, session, self.node, to, now)

        await self._run(hand)

    async def release(self, sessions: list[str]) -> None:
        """Not waited for by anyone (an idle session left memory): a failure only logs; the lease
        stays, and a node that asks for the session gets it handed over."""
        try:
            await self.journal.call(lambda conn: None)
            await self._run(lambda conn: release(conn, sessions, self.node))
        except JournalError as exc:
            _log.warning("node %s could not release %d lease(s): %s", self.node, len(sessions), exc)

    async def adopt(self, *, due_only: bool) -> list[str]:
        now, limit = self.clock(), self.settings.adopt_batch
        return await self._run(lambda conn: adopt(conn, self.node, now, limit, due_only=due_only))
