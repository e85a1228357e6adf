"""The envelope around every message: identity, routing, correlation, version."""
import itertools
import os
import time

import msgspec

from protocol.messages import Message

PROTOCOL_VERSION = 1


_id_prefix = os.urandom(8).hex()
_id_counter = itertools.count()


def _reseed_ids() -> None:
    global _id_prefix, _id_counter
    _id_prefix, _id_counter = os.urandom(8).hex(), itertools.count()


os.register_at_fork(after_in_child=_reseed_ids)


def new_id() -> str:
    """A short unique id: 64 random bits per process (re-drawn in a forked child) and a counter.
    Made for every message, so it must be cheap: no system call per id."""
    return f"{_id_prefix}{next(_id_counter):x}"


class Envelope(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`corr` links a reply (or a streamed chunk) to the request's `id`. `trace`: the W3C
    traceparent of the span the request was made in (core/tracing.py), so the receiver's span is
    its child; unset (and then absent from the encoded message, which a receiver without the
    field still decodes) while tracing is off."""

    body: Message
    id: str = msgspec.field(default_factory=new_id)
    sender: str = ""
    session: str = ""
    corr: str = ""
    v: int = PROTOCOL_VERSION
    ts: float = msgspec.field(default_factory=time.time)
    trace: str | msgspec.UnsetType = msgspec.UNSET
