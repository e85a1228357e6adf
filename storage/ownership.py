"""Who owns each phone session, durably (SQLite, WAL, at `storage.path`).

Ownership lived in the GlassesBridge's memory, so a restarted bridge let whoever came first take
over a live session. Here it survives restarts, and a claim is bound to something a phone must
prove, never to a name it merely declares:

- with CURVE, the phone's public key (our ZAP handler vouches for it on every connection);
- without CURVE, a secret token the bridge draws when the session is opened and returns in the
  Ack of that first event; every later event of the session must carry it.

The route (the ROUTER identity of the owner's latest connection) is kept too, so a restarted
bridge can still deliver a session's displays before its phone speaks again.
"""
from __future__ import annotations

import hmac
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from storage import sqlite_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS session_owner (
    session     TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,      -- 'key' (CURVE public key, z85) or 'token'
    proof       TEXT NOT NULL,      -- that key, or the session's secret token
    claim_event TEXT NOT NULL,      -- the event that opened the session: its resend gets the token again
    route       BLOB NOT NULL,      -- ROUTER identity of the owner's latest connection
    created     REAL NOT NULL
);
"""


@dataclass
class Owner:
    kind: str
    proof: str
    claim_event: str
    route: bytes


def new_token() -> str:
    return secrets.token_urlsafe(24)


class OwnershipStore:
    """The table, with a write-through cache (one read of the table at start)."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time):
        self.path = Path(path)
        self.clock = clock
        self._db = (_prepare(sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False))
                    if str(path) == ":memory:" else sqlite_file.open_database(path, _prepare, hold_lock=True, timeout=2.0))
        self._owners: dict[str, Owner] = {
            row[0]: Owner(row[1], row[2], row[3], bytes(row[4]))
            for row in self._db.execute("SELECT session, kind, proof, claim_event, route FROM session_owner")
        }

    def get(self, session: str) -> Owner | None:
        return self._owners.get(session)

    def claim(self, session: str, kind: str, proof: str, claim_event: str, route: bytes) -> Owner:
        owner = Owner(kind, proof, claim_event, route)
        self._db.execute("INSERT OR REPLACE INTO session_owner VALUES (?, ?, ?, ?, ?, ?)",
                         (session, kind, proof, claim_event, route, self.clock()))
        self._owners[session] = owner
        return owner

    def set_route(self, session: str, route: bytes) -> None:
        owner = self._owners[session]
        if owner.route != route:
            owner.route = route
            self._db.execute("UPDATE session_owner SET route = ? WHERE session = ?", (route, session))

    def forget(self, sessions: list[str]) -> None:
        gone = [s for s in sessions if self._owners.pop(s, None) is not None]
        if gone:
            self._db.executemany("DELETE FROM session_owner WHERE session = ?", [(s,) for s in gone])

    def sessions_of(self, kind: str, proof: str) -> list[str]:
        return [s for s, o in self._owners.items() if o.kind == kind and o.proof == proof]

    def close(self) -> None:
        self._db.close()
        if str(self.path) != ":memory:":
            sqlite_file.release(self.path)

    def __len__(self) -> int:
        return len(self._owners)


def _prepare(db: sqlite3.Connection) -> sqlite3.Connection:
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


def proves(owner: Owner, kind: str, proof: str) -> bool:
    """Constant-time: does (kind, proof) match the owner's?"""
    return owner.kind == kind and hmac.compare_digest(owner.proof.encode(), proof.encode())
