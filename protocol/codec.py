"""The one codec: msgpack via msgspec, strict, with a size limit.

Every failure to decode becomes a `DecodeError` with a `kind` (oversized, malformed, unknown_type,
invalid, version) so a receiver can log it and answer instead of crashing.
"""
import re
import typing

import msgspec

from protocol.envelope import PROTOCOL_VERSION, Envelope
from protocol.messages import Message

DEFAULT_MAX_MESSAGE_BYTES = 1 << 20  # 1 MiB


class DecodeError(Exception):
    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class Codec:
    """Encode and strictly decode Envelopes. One instance per socket owner is fine (not shared
    across threads)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES):
        self.max_bytes = max_bytes
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(Envelope)

    def encode(self, envelope: Envelope) -> bytes:
        return self._encoder.encode(envelope)

    def decode(self, data: bytes) -> Envelope:
        if len(data) > self.max_bytes:
            raise DecodeError("oversized", f"{len(data)} bytes exceeds the limit of {self.max_bytes}")
        try:
            envelope = self._decoder.decode(data)
        except msgspec.ValidationError as exc:
            text = str(exc)
            kind = "unknown_type" if "Invalid value" in text and "`$.body.type`" in text else "invalid"
            raise DecodeError(kind, text + _allowed(data, text)) from None
        except msgspec.DecodeError as exc:
            raise DecodeError("malformed", str(exc)) from None
        if envelope.v != PROTOCOL_VERSION:
            raise DecodeError("version", f"protocol version {envelope.v} is not supported (this runtime speaks {PROTOCOL_VERSION})")
        return envelope


_BODIES = {cls.__name__: cls for cls in typing.get_args(Message)}
_ENUM_AT = re.compile(r"Invalid enum value .* - at `\$\.body\.(\w+)`")


def _allowed(data: bytes, text: str) -> str:
    """"; expected one of 'on', 'off'" for a field of few values given another (a GlassesState
    state "dim"): msgspec names the path, not what it takes."""
    match = _ENUM_AT.search(text)
    if match is None:
        return ""
    try:
        body = msgspec.msgpack.decode(data).get("body", {})
        hint = typing.get_type_hints(_BODIES[body["type"]])[match.group(1)]
    except Exception:  # noqa: BLE001 - only an explanation: without it the error stands as it is
        return ""
    values = typing.get_args(hint)
    return f"; expected one of {', '.join(map(repr, values))}" if values else ""
