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

import hashlib
import hmac
import os
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
    proof       TEXT NOT NULL,      -- that key, or the session's secret token salted and hashed (hash_token)
    claim_event TEXT NOT NULL,      -- the event that opened the session
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


HASHED = "sha256$"  # a token's proof as stored: sha256$SALT$HEX(sha256(SALT + token))


def hash_token(token: str, salt: str | None = None) -> str:
    """What the table keeps of a token: salted, so the file never gives a session away (tokens
    are 24 random bytes: a fast hash is enough, there is nothing to guess by brute force)."""
    salt = secrets.token_hex(16) if salt is None else salt
    return f"{HASHED}{salt}${hashlib.sha256((salt + token).encode('utf-8', 'surrogatepass')).hexdigest()}"


def private(path: Path) -> None:
    """The database and its WAL readable by the runtime's user only (SQLite gives the WAL the
    database's mode; a file from an older version may be 0644)."""
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            os.chmod(name, 0o600)
        except FileNotFoundError:
            pass


class OwnershipStore:
    """The table, with a write-through cache of the sessions in use (one read of the table at
    start; a session forgotten from memory is read back on its next use)."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time):
        self.path = Path(path)
        self.clock = clock
        if str(path) == ":memory:":
            self._db = _prepare(sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False))
        else:
            self._db = sqlite_file.open_database(path, _prepare, hold_lock=True, timeout=2.0)
            private(self.path)
        self._hash_plain_tokens()
        self._owners: dict[str, Owner] = {
            row[0]: Owner(row[1], row[2], row[3], bytes(row[4]))
            for row in self._db.execute("SELECT session, kind, proof, claim_event, route FROM session_owner")
        }

    def _hash_plain_tokens(self) -> None:
        """Rows of an older version kept tokens as is: they are hashed in place, once."""
        plain = self._db.execute("SELECT session, proof FROM session_owner WHERE kind = 'token' AND proof NOT LIKE ?",
                                 (HASHED + "%",)).fetchall()
        if plain:
            self._db.executemany("UPDATE session_owner SET proof = ? WHERE session = ?",
                                 [(hash_token(proof), session) for session, proof in plain])

    def get(self, session: str) -> Owner | None:
        owner = self._owners.get(session)
        if owner is None:
            # forgotten from memory (idle), never from the table: its claim still holds
            row = self._db.execute("SELECT kind, proof, claim_event, route FROM session_owner WHERE session = ?", (session,)).fetchone()
            if row is not None:
                owner = self._owners[session] = Owner(row[0], row[1], row[2], bytes(row[3]))
        return owner

    def unclaimed_history(self, session: str) -> str | None:
        """The phone key the session journal (same file) recorded for `session`, when it holds the
        session while no claim does (a version before issue 38 dropped the claims of idle
        sessions); None when the journal does not know it, or there is no journal here."""
        try:
            row = self._db.execute("SELECT phone_key FROM sessions WHERE session = ?", (session,)).fetchone()
        except sqlite3.OperationalError:  # no journal in this file
            return None
        return None if row is None else str(row[0])

    def claim(self, session: str, kind: str, proof: str, claim_event: str, route: bytes) -> Owner:
        """Compare-and-set: the session's first claim wins and is returned; a later one changes
        nothing and gets the winner back (the caller checks `proves`). `proof`: the key, or the
        token (kept hashed)."""
        hashed = hash_token(proof) if kind == "token" else proof
        self._db.execute("INSERT OR IGNORE INTO session_owner VALUES (?, ?, ?, ?, ?, ?)",
                         (session, kind, hashed, claim_event, route, self.clock()))
        self._owners.pop(session, None)
        owner = self.get(session)
        assert owner is not None
        return owner

    def set_route(self, session: str, route: bytes) -> None:
        owner = self._owners[session]
        if owner.route != route:
            owner.route = route
            self._db.execute("UPDATE session_owner SET route = ? WHERE session = ?", (route, session))

    def forget(self, sessions: list[str]) -> None:
        """Drop idle sessions from memory. Their rows stay: the journal can bring a forgotten
        session back, so its id must not become free for anyone to claim (and read)."""
        for session in sessions:
            self._owners.pop(session, None)

    def delete(self, sessions: list[str]) -> None:
        """The sessions are gone for good (`run.py sessions delete`): their claims too."""
        self.forget(sessions)
        self._db.executemany("DELETE FROM session_owner WHERE session = ?", [(s,) for s in sessions])

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
    """Constant-time, any input: does (kind, proof) match the owner's?"""
    if owner.kind != kind:
        return False
    if kind == "token":
        salt = owner.proof[len(HASHED):].split("$", 1)[0]
        proof = hash_token(proof, salt)
    return hmac.compare_digest(owner.proof.encode("utf-8", "surrogatepass"), proof.encode("utf-8", "surrogatepass"))
