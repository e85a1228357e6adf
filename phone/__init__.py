"""The phone side of the runtime's edge: the client a phone bridge process imports
(`phone.client.PhoneClient`), the `say` / `phone` / `keys` commands, and CURVE key files."""
from phone.client import (
    DeliveryFailed, EventRejected, PhoneClient, PhoneError, PhoneRefused, PhoneUnreachable, Turn, TurnTimeout,
)
from transport.keys import ClientKeys

__all__ = ["PhoneClient", "ClientKeys", "Turn", "PhoneError", "PhoneRefused", "PhoneUnreachable", "DeliveryFailed",
           "EventRejected", "TurnTimeout"]
