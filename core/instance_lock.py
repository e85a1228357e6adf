"""One runtime per config: an exclusive `flock` on `<topology.ipc_dir>/porfiry.lock`, taken
before any socket binds. A second `serve` with the same config would otherwise re-bind the first
one's ipc:// socket files and leave it deaf; with the lock it stops at once, naming the pid that
holds it. The kernel drops the lock when the holder dies, even by SIGKILL, so no stale lock."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "porfiry.lock"


class AlreadyRunning(RuntimeError):
    """Another runtime holds the lock of this ipc_dir."""


class InstanceLock:
    def __init__(self, ipc_dir: str | Path):
        self.path = Path(ipc_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> "InstanceLock":
        """Take the lock or raise AlreadyRunning with the holder's pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise AlreadyRunning(
                f"another Porfiry runtime is running here (pid {holder}); stop it or set topology.ipc_dir") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> "InstanceLock":
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()
