"""Supervision and operations: status, the phone-command relay."""
from typing import Literal

import msgspec

from protocol.base import Msg
from protocol.phone import PlaybackCommand


class ActorStatus(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    alive: bool
    pid: int = 0
    restarts: int = 0
    inbox_depth: int = 0
    detail: str = ""


class StatusRequest(Msg):
    pass


class SystemStatus(Msg):
    mode: Literal["inproc", "ipc", "tcp"]
    actors: list[ActorStatus]


class Shutdown(Msg):
    reason: str = ""


class PhoneCommand(Msg):
    """An executor -> GlassesBridge: send a command to the phone owning the envelope's session.

    Answered with the phone's PlaybackStatus if it replies within wait_s, else Ok("pending");
    a later PlaybackStatus reaches the session as a playback event (E7)."""

    command: PlaybackCommand
    wait_s: float = 1.0
