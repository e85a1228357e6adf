"""The phone's side of the protocol, as another team's bridge (Kotlin, Swift) sees it: the
messages it sends and receives, and an envelope type that carries only those, from which
`run.py protocol schema` prints a JSON Schema (docs/protocol.md explains it in words).

`BridgeEnvelope` has exactly the fields of `Envelope` (a test checks it): a frame encoded with
either decodes with the other when its body is a phone message.
"""
from __future__ import annotations

import time
from typing import Any, Union

import msgspec

from protocol.common import ErrorReply, Ok
from protocol.envelope import PROTOCOL_VERSION, Envelope
from protocol.phone import (
    Ack, Busy, ButtonPress, Display, GlassesState, Hello, PlaybackCommand, PlaybackStatus, RateLimited, SessionEnd,
    SessionStart, TurnDone, UserInterrupt, UserText,
)
from protocol.world import PhoneNotification, PushNotification, StatusLine

PHONE_SENDS = (Hello, SessionStart, SessionEnd, GlassesState, UserText, UserInterrupt, ButtonPress, PlaybackStatus,
               PhoneNotification)
PHONE_RECEIVES = (Ok, Ack, Busy, RateLimited, ErrorReply, Display, TurnDone, PlaybackCommand, PushNotification, StatusLine)

BridgeMessage = Union[PHONE_SENDS + PHONE_RECEIVES]  # type: ignore[valid-type]


# the Envelope's own fields, its body narrowed to what a bridge sends and receives
class BridgeEnvelope(Envelope, kw_only=True, forbid_unknown_fields=True):
    """An Envelope whose body is a phone message: one msgpack map per ZeroMQ frame."""

    body: BridgeMessage


def bridge_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a frame between a phone bridge and the runtime."""
    schema = msgspec.json.schema(BridgeEnvelope)
    schema["$comment"] = (f"Porfiry phone protocol v{PROTOCOL_VERSION}: each ZeroMQ frame is one BridgeEnvelope encoded "
                          "as MessagePack (the schema describes its structure; `type` selects the body). "
                          "See docs/protocol.md.")
    return schema
