"""A phone's session tokens: without CURVE a session belongs to whoever holds the token the
runtime handed out in the Ack of the session's first event. `run.py say` and `run.py phone` keep
them per `--client-id` in a file under var/ (mode 0600), so the same user resumes her sessions
from a new process, while anyone else - the same client id included - is refused. Two such
processes at once (two sessions) both keep their token: a write is a locked read-modify-write
and an atomic rename."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path


class SessionTokens:
    """session id -> token; in memory, or kept in `path` (JSON) when given."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self._tokens: dict[str, str] = self._read() if self.path is not None else {}

    def get(self, session: str) -> str:
        return self._tokens.get(session, "")

    def __contains__(self, session: str) -> bool:
        return session in self._tokens

    def set(self, session: str, token: str) -> None:
        if self._tokens.get(session) == token:
            return
        self._tokens[session] = token
        if self.path is not None:
            self._merge_into_file(session, token)

    def _merge_into_file(self, session: str, token: str) -> None:
        """Another process (a second `say` on another session) may write the same file: under an
        exclusive lock the file is read again, this one token set in it, and the whole written to a
        file of our own that then replaces it (a reader sees the old file or the new, never half).
        Tokens other processes added meanwhile are kept."""
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            self._tokens = {**self._tokens, **self._read(), session: token}  # what is on disk is newer
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")  # mode 0600
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(self._tokens, f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        finally:
            os.close(lock_fd)  # releases the lock

    def _read(self) -> dict[str, str]:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def tokens_file(var_dir: Path, client_id: str) -> Path:
    return var_dir / "phone-credentials" / f"{client_id}.json"
