"""Guards around the runtime's one SQLite file (`storage.path`), for everything that opens it
(the session journal, the ownership store, `run.py sessions`):

- one runtime per file: an exclusive `flock` on `<db>.lock`, taken by `run.py serve` before any
  actor starts and held for its life. Its actor processes (children of that process) and the
  process itself are let through; any other runtime is refused with one line. Without a `serve`
  (a test's in-process system) the first opener takes it. The kernel drops the lock when its
  holder dies, even by SIGKILL: a restart never finds a stale lock.
- a corrupt file (not SQLite, truncated, garbage inside) is found at open (the header, then
  `PRAGMA quick_check`) and is a DatabaseUnusable naming the file and the cause: a permanent
  failure, never a restart loop.
- a file deleted or replaced under a running runtime is noticed at the next commit
  (`FileWatch`): SQLite would go on writing to the unlinked inode and every ack would be a lie.
"""
from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from core.permanent import PermanentFailure

_log = logging.getLogger("porfiry.storage")

HEADER = b"SQLite format 3\x00"
HEADER_BYTES = 100  # an SQLite file starts with a 100-byte header


class StorageError(PermanentFailure):
    """The database cannot be used by this runtime; the message names the file and why."""


class DatabaseInUse(StorageError):
    pass


class DatabaseUnusable(StorageError):
    pass


class DatabaseGone(sqlite3.DatabaseError):
    """The database file was deleted or replaced while open: what is committed now is lost."""


def lock_path(db: str | Path) -> Path:
    db = Path(db)
    return db.with_name(db.name + ".lock")


_held: dict[Path, list[int]] = {}  # lock file -> [fd, users in this process]


def hold(db: str | Path) -> None:
    """Take the file's runtime lock for this process, or accept it when this process or its parent
    (the `serve` that started this actor process) holds it. Raises DatabaseInUse."""
    lock = lock_path(db).resolve()
    if lock in _held:
        _held[lock][1] += 1
        return
    _make_parent(Path(db))
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.read(fd, 32).decode("ascii", "replace").strip()
        os.close(fd)
        holder = int(text) if text.isdigit() else 0
        if holder in (os.getpid(), os.getppid()):
            return  # this runtime: its serve process holds the lock for all its actors
        raise DatabaseInUse(f"storage: {db} is in use by another runtime (pid {holder or '?'}, lock {lock}); "
                            "stop it or set storage.path") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    _held[lock] = [fd, 1]


def release(db: str | Path) -> None:
    lock = lock_path(db).resolve()
    entry = _held.get(lock)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _held[lock]
        os.close(entry[0])  # closing drops the flock


def _make_parent(db: Path) -> None:
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise DatabaseUnusable(f"storage: cannot use {db}: a part of its directory is a file; check storage.path") from None


def check_header(db: Path) -> None:
    """A file that exists is an SQLite database at least by its first bytes (empty: new)."""
    try:
        with open(db, "rb") as f:
            head = f.read(HEADER_BYTES)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DatabaseUnusable(f"storage: cannot read {db}: {exc.strerror or exc}") from None
    if not head:
        return
    if not head.startswith(HEADER[:len(head)]) or len(head) < len(HEADER):
        raise DatabaseUnusable(f"storage: {db} is not an SQLite database (it does not start with 'SQLite format 3'); "
                               "restore it from a backup or move it away")
    if len(head) < HEADER_BYTES:
        raise DatabaseUnusable(f"storage: {db} is truncated ({len(head)} bytes, less than an SQLite header); "
                               "restore it from a backup or move it away")


def open_database(db: str | Path, prepare: Callable[[sqlite3.Connection], None], *, hold_lock: bool,
                  timeout: float = 10.0) -> sqlite3.Connection:
    """The database at `db`, checked, with `prepare(conn)` run (pragmas, schema). `hold_lock`:
    the runtime's lock is taken (the journal, the ownership store), not by a CLI reader.
    Raises StorageError: in use by another runtime, corrupt, or not openable (with the cause)."""
    db = Path(db)
    held = False
    try:
        if hold_lock:
            hold(db)
            held = True
        check_header(db)
        _make_parent(db)
        conn = sqlite3.connect(str(db), isolation_level=None, check_same_thread=False, timeout=timeout)
        try:
            prepare(conn)
            problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
            if problem != "ok":
                problem = " ".join(problem.replace("*** in database main ***", "").split())
                raise sqlite3.DatabaseError(f"PRAGMA quick_check: {problem}")
        except BaseException:
            conn.close()
            raise
    except StorageError:
        if held:
            release(db)
        raise
    except (sqlite3.Error, OSError) as exc:
        if held:
            release(db)
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            raise DatabaseUnusable(f"storage: {db} is corrupt ({exc}); restore it from a backup or move it away") from None
        cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DatabaseUnusable(f"storage: cannot use {db}: {cause}; check storage.path and its directory") from None
    return conn


class FileWatch:
    """The file as it was at open (device, inode); `check()` after a commit raises DatabaseGone
    when it was deleted or replaced since (logged once, loudly)."""

    def __init__(self, db: str | Path):
        self.path = Path(db)
        st = os.stat(self.path)
        self.identity = (st.st_dev, st.st_ino)
        self.gone = ""

    def check(self) -> None:
        if not self.gone:
            try:
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) != self.identity:
                    self.gone = f"the database {self.path} was replaced while the runtime ran"
            except FileNotFoundError:
                self.gone = f"the database {self.path} was deleted while the runtime ran"
            if self.gone:
                _log.critical("storage: %s; nothing more is stored - restart the runtime (events are refused "
                              "with a storage error until then)", self.gone)
        if self.gone:
            raise DatabaseGone(self.gone)


def preflight(db: str | Path) -> None:
    """`run.py serve`, before any actor starts: take the runtime's lock (held until the process
    exits, for all its actor processes) and check the file. Raises StorageError."""
    open_database(db, lambda conn: conn.execute("PRAGMA journal_mode=WAL"), hold_lock=True).close()  # WAL: the directory is writable
