"""A phone's session tokens: without CURVE a session belongs to whoever holds the token the
runtime handed out in the Ack of the session's first event. `run.py say` and `run.py phone` keep
them per `--client-id` in a file under var/ (mode 0600), so the same user resumes her sessions
from a new process, while anyone else - the same client id included - is refused."""
from __future__ import annotations

import json
import os
from pathlib import Path


class SessionTokens:
    """session id -> token; in memory, or kept in `path` (JSON) when given."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self._tokens: dict[str, str] = {}
        if self.path is not None and self.path.exists():
            try:
                data = json.loads(self.path.read_text())
                self._tokens = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self._tokens = {}

    def get(self, session: str) -> str:
        return self._tokens.get(session, "")

    def __contains__(self, session: str) -> bool:
        return session in self._tokens

    def set(self, session: str, token: str) -> None:
        if self._tokens.get(session) == token:
            return
        self._tokens[session] = token
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(self._tokens, f)
            os.replace(tmp, self.path)


def tokens_file(var_dir: Path, client_id: str) -> Path:
    return var_dir / "phone-credentials" / f"{client_id}.json"
