"""Replies any actor may give."""
from protocol.base import Msg


class Ok(Msg):
    detail: str = ""


class ErrorReply(Msg):
    """A request could not be served. `code` is machine-readable, `detail` is for people and logs."""

    code: str
    detail: str


class Ping(Msg):
    pass


class Pong(Msg):
    actor: str
    pid: int
    inbox_depth: int = 0
    started_at: float = 0.0
