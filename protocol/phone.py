"""The edge: what a phone bridge process and the runtime (GlassesBridge) say to each other.

Every phone -> runtime event carries a client-generated `event_id` (for at-least-once delivery and
dedup) and the client's timestamp `ts` (seconds since the epoch). The session id travels in the
envelope.
"""
from typing import Literal

from protocol.base import Msg

# How a turn ended for its events: answered; cut by a stop (the answer was discarded and the
# glasses cleared); cut by an interrupt (the task goes on in the background, its result comes
# later as a new turn).
TurnOutcome = Literal["done", "cancelled", "interrupted"]
PlaybackState = Literal["started", "paused", "resumed", "stopped", "failed"]
PlayAction = Literal["play", "pause", "resume", "stop"]
GlassesOnOff = Literal["on", "off"]


# --- phone -> runtime -------------------------------------------------------------------------
class SessionStart(Msg):
    event_id: str
    ts: float
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


class SessionEnd(Msg):
    event_id: str
    ts: float
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


class GlassesState(Msg):
    """The glasses were put on or taken off (or the app's view shown or hidden). While "off" what
    the assistant says is kept unread (an urgent one also comes as a PushNotification); "on"
    delivers what was kept, once, oldest first, in one display. Costs no model turn. Another
    state is a decode error (ErrorReply "decode:invalid"): nothing changes."""

    event_id: str
    ts: float
    state: GlassesOnOff
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


class UserText(Msg):
    """Recognised speech (or typed text)."""

    event_id: str
    ts: float
    text: str
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


class UserInterrupt(Msg):
    """The user pressed "stop" (or said it): an urgent event."""

    event_id: str
    ts: float
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


class ButtonPress(Msg):
    event_id: str
    ts: float
    button: str
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


class PlaybackStatus(Msg):
    """The phone's answer to a PlaybackCommand."""

    event_id: str
    ts: float
    task_id: str
    state: PlaybackState
    detail: str = ""
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


# --- runtime -> phone -------------------------------------------------------------------------
class Ack(Msg):
    """The session has the event; the phone may forget it."""

    event_id: str
    duplicate: bool = False
    token: str = ""  # without CURVE, on the Ack of a session's first event: present it from now on


class Busy(Msg):
    """The session's queue is full; the phone should retry later. Nothing was taken."""

    event_id: str
    detail: str


class RateLimited(Msg):
    """This connection sends faster than phone.events_per_s: nothing was taken; resend after
    `retry_after_s`."""

    event_id: str
    detail: str
    retry_after_s: float = 1.0


class Display(Msg):
    """Text for the glasses. Partial displays replace each other; `final` closes the answer.

    An empty partial text with `clear=True` wipes what the glasses show (after an interrupt).
    A `progress` display is a status line while a slow tool runs ("search: still working (6 s)…"):
    not the answer; the answer's displays replace it.
    """

    turn_id: str
    text: str
    final: bool = False
    clear: bool = False
    kind: Literal["answer", "progress"] = "answer"


class TurnDone(Msg):
    """The session finished handling the events listed; it is idle until the next event."""

    turn_id: str
    event_ids: list[str] = []
    model_calls: int = 0  # generations the turn needed: lets a client subtract model time (bench)
    final: str = ""  # the turn's final display ("": none): a phone that missed it (it died in a restarted bridge) still shows it
    outcome: TurnOutcome = "done"
    going_on: list[str] = []  # "interrupted": the background tasks that go on (their results come later); []: nothing does


class PlaybackCommand(Msg):
    """Ask the phone to play, pause, resume or stop a title. Answered by PlaybackStatus."""

    task_id: str
    action: PlayAction
    media_id: str = ""
    title: str = ""


class Hello(Msg):
    """Phone -> runtime on connect; the runtime answers Ok. Lets a client verify the link."""

    client: str = ""
