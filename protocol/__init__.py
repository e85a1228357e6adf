"""Every message Porfiry exchanges, as msgspec Structs in one tagged union, and the one codec.

Actors, the phone bridge and the CLI all speak `Envelope` encoded with `protocol.codec`.
"""
from protocol.codec import Codec, DecodeError, PROTOCOL_VERSION, DEFAULT_MAX_MESSAGE_BYTES
from protocol.envelope import Envelope, new_id
from protocol.messages import *  # noqa: F401,F403  (the message catalogue is the public surface)
from protocol.messages import __all__ as _messages_all
from protocol import bridge  # noqa: F401  (the phone's side, for docs/protocol.md and `run.py protocol schema`)

__all__ = ["Codec", "DecodeError", "PROTOCOL_VERSION", "DEFAULT_MAX_MESSAGE_BYTES", "Envelope", "new_id", *_messages_all]
