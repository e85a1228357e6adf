"""The envelope around every message: identity, routing, correlation, version."""
import os
import time

import msgspec

from protocol.messages import Message

PROTOCOL_VERSION = 1


def new_id() -> str:
    """A short unique id (96 random bits, hex). Cheap enough for every message."""
    return os.urandom(12).hex()


class Envelope(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`corr` links a reply (or a streamed chunk) to the request's `id`."""

    body: Message
    id: str = msgspec.field(default_factory=new_id)
    sender: str = ""
    session: str = ""
    corr: str = ""
    v: int = PROTOCOL_VERSION
    ts: float = msgspec.field(default_factory=time.time)
