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

A lease is a fence (issue 51): each take of a session (acquire, hand-over, adoption) draws a new
fencing token from the `lease_epoch` sequence into its row, and every journal write of the
session carries the token its node took it with (`fence_of`); PostgreSQL refuses a write whose
token is not the row's (storage/postgres.py `fence`). A node frozen past its lease, whose
sessions another node took meanwhile, cannot write a thing for them when it thaws; and before
acting at all it asks `serving` (its own monotonic clock), so it drops what it queued instead.
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
    sessions this node still holds in memory)."""
    before = conn.execute(
        "WITH old AS (SELECT expires FROM nodes WHERE node = %s) INSERT INTO nodes (node, started, expires) "
        "VALUES (%s, %s, %s) ON CONFLICT (node) DO UPDATE SET expires = excluded.expires RETURNING (SELECT expires FROM old)",
        (node, node, now, now + lease_s)).fetchone()[0]
    return before is not None and before <= now


def acquire(conn: psycopg.Connection, session: str, node: str, now: float) -> tuple[str, int]:
    """Takes the session for `node` unless a live other node serves it: ("", the new fencing
    token) when taken (or already ours: a new token all the same, the session is read anew),
    else (the node that serves it, 0). Another node's wish for the session stays (`want`)."""
    taken = conn.execute(
        "INSERT INTO session_lease (session, node, since) VALUES (%s, %s, %s) ON CONFLICT (session) DO UPDATE "
        "SET node = excluded.node, since = excluded.since, wanted_by = NULLIF(session_lease.wanted_by, excluded.node), "
        "epoch = nextval('lease_epoch') WHERE session_lease.node = excluded.node OR NOT EXISTS "
        "(SELECT 1 FROM nodes n WHERE n.node = session_lease.node AND n.expires > %s) RETURNING epoch",
        (session, node, now, now)).fetchone()
    if taken is not None:
        return "", taken[0]
    row = conn.execute("SELECT node FROM session_lease WHERE session = %s", (session,)).fetchone()
    return (row[0], 0) if row else ("", 0)


def want(conn: psycopg.Connection, session: str, node: str) -> None:
    conn.execute("UPDATE session_lease SET wanted_by = %s WHERE session = %s AND node <> %s", (node, session, node))


def wanted(conn: psycopg.Connection, node: str) -> list[tuple[str, str]]:
    """(session, the node that wants it) for the sessions `node` holds and another asked for."""
    return conn.execute("SELECT session, wanted_by FROM session_lease WHERE node = %s AND wanted_by IS NOT NULL",
                        (node,)).fetchall()


def hand_over(conn: psycopg.Connection, session: str, node: str, to: str, now: float) -> None:
    conn.execute("UPDATE session_lease SET node = %s, since = %s, wanted_by = NULL, epoch = nextval('lease_epoch') "
                 "WHERE session = %s AND node = %s", (to, now, session, node))


def release(conn: psycopg.Connection, held: dict[str, int], node: str) -> None:
    """The leases of `held` (session -> token) that are still these: one taken again since (a new
    token) stays."""
    conn.execute("DELETE FROM session_lease l USING unnest(%s::text[], %s::bigint[]) AS r(session, epoch) "
                 "WHERE l.session = r.session AND l.epoch = r.epoch AND l.node = %s",
                 (list(held), list(held.values()), node))


def adopt(conn: psycopg.Connection, node: str, now: float, limit: int, *, due_only: bool) -> dict[str, int]:
    """Claims for `node` the sessions no live node serves that need a node: accepted events not
    yet answered in the journal (the dead node's turn runs again here), and a timer due
    (`due_only`, every heartbeat: other nodes' sessions only) or set at all (a node's start: its
    own from before too). SKIP LOCKED: a session another node is claiming at this moment, or
    whose holder is writing it (storage/postgres.py `fence`), is left for later. Session -> its
    new fencing token."""
    timers = "s.next_due <= %(now)s" if due_only else "s.next_due IS NOT NULL"
    work = f"({timers} OR EXISTS (SELECT 1 FROM events e WHERE e.session = s.session AND NOT e.done))"
    own = "" if due_only else "l.node = %(node)s OR "
    rows = conn.execute(
        "WITH orphans AS (SELECT s.session FROM sessions s LEFT JOIN session_lease l ON l.session = s.session "
        f"WHERE {work} AND (l.node IS NULL OR {own}NOT EXISTS "
        "(SELECT 1 FROM nodes n WHERE n.node = l.node AND n.expires > %(now)s)) "
        "ORDER BY s.next_due NULLS LAST LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED) "
        "INSERT INTO session_lease (session, node, since) SELECT session, %(node)s, %(now)s FROM orphans "
        "ON CONFLICT (session) DO UPDATE SET node = excluded.node, since = excluded.since, "
        "wanted_by = NULLIF(session_lease.wanted_by, excluded.node), epoch = nextval('lease_epoch') RETURNING session, epoch",
        {"node": node, "now": now, "limit": limit}).fetchall()
    return dict(sorted(rows))


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

    def __init__(self, settings: NodeConfig, journal: Journal, url: str, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic):
        self.settings = settings
        self.node = settings.name
        self.journal = journal
        self.store = PostgresStore(url)
        self.clock = clock  # the database's time (leases expire by it): every node's wall clock
        self.monotonic = monotonic  # this node's own, for `serving`: a jump of the wall clock cannot fool it
        self.epochs: dict[str, int] = {}  # session -> the fencing token this node holds it with
        self._valid_until = 0.0  # `monotonic` time until which the lease is surely alive
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

    async def beat(self) -> None:
        """Renews the lease now (at start, before the renewing thread)."""
        now, started = self.clock(), self.monotonic()
        await self._run(lambda conn: beat(conn, self.node, now, self.settings.lease_s))
        self._valid_until = started + self.settings.lease_s

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
                started = self.monotonic()
                if beat(conn, self.node, self.clock(), self.settings.lease_s):
                    self._lapsed.set()  # before the new validity: `serving` is never true in between
                self._valid_until = started + self.settings.lease_s
            except psycopg.Error as exc:
                _log.error("node %s could not renew its lease: %s", self.node, exc)
        if conn is not None:
            conn.close()

    def serving(self) -> bool:
        """May this node act for its sessions now? Only while its lease is alive by its own
        monotonic clock (renewed less than `node.lease_s` ago, counted from before the renewal
        was sent) and did not lapse since: a node frozen or cut off longer than that (SIGSTOP, a
        partition) must assume other nodes took its sessions, whatever it had queued meanwhile."""
        return self.monotonic() < self._valid_until and not self._lapsed.is_set()

    def recovered(self) -> bool:
        """Called once the node let go of everything it held when `serving` turned false: serving
        again once the lease was renewed since."""
        if self.monotonic() < self._valid_until:
            self._lapsed.clear()
        return self.serving()

    def fence_of(self, session: str) -> tuple[str, int]:
        """The fencing token a write of `session` carries (storage/journal.py): this node and the
        lease's epoch it took the session with; -1 (refused) for a session it does not hold."""
        return self.node, self.epochs.get(session, -1)

    def forget(self, sessions: list[str]) -> dict[str, int]:
        """The node no longer holds these (let go, deleted): their tokens, for `release`."""
        return {sid: self.epochs.pop(sid) for sid in sessions if sid in self.epochs}

    async def acquire(self, session: str) -> str:
        now = self.clock()
        holder, epoch = await self._run(lambda conn: acquire(conn, session, self.node, now))
        if not holder:
            self.epochs[session] = epoch
        return holder

    async def take(self, session: str) -> str:
        """`acquire`, asking a live holder to hand the session over and waiting up to
        `node.handover_wait_s` for it: "" when taken, else the node that kept it."""
        holder = await self.acquire(session)
        if not holder:
            return ""
        with anyio.move_on_after(self.settings.handover_wait_s):
            while holder:
                # asked again each time: the holder may have changed (a dead node's session adopted)
                await self._run(lambda conn: want(conn, session, self.node))
                await anyio.sleep(self.settings.handover_poll_s)
                holder = await self.acquire(session)
        return holder

    async def wanted(self) -> list[tuple[str, str]]:
        return await self._run(lambda conn: wanted(conn, self.node))

    async def hand_over(self, moves: list[tuple[str, str]]) -> None:
        """(session, to): once the sessions' queued journal writes are committed."""
        self.forget([session for session, _ in moves])
        await self.journal.call(lambda conn: None)
        now = self.clock()

        def hand(conn: psycopg.Connection) -> None:
            for session, to in moves:
                hand_over(conn, session, self.node, to, now)

        await self._run(hand)

    async def release(self, held: dict[str, int]) -> None:
        """The leases of sessions that left memory (`forget`'s tokens), once their queued writes
        are committed: the next node a phone reaches takes them at once. Not waited for by anyone:
        a failure only logs; the lease stays, and a node that asks for the session gets it handed
        over."""
        try:
            await self.journal.call(lambda conn: None)
            await self._run(lambda conn: release(conn, held, self.node))
        except JournalError as exc:
            _log.warning("node %s could not release %d lease(s): %s", self.node, len(held), exc)

    async def adopt(self, *, due_only: bool) -> list[str]:
        now, limit = self.clock(), self.settings.adopt_batch
        adopted = await self._run(lambda conn: adopt(conn, self.node, now, limit, due_only=due_only))
        self.epochs.update(adopted)
        return list(adopted)
