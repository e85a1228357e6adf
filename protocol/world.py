"""The world waking a session (E10) and the session telling the user (seed 003's user
communication): phone notifications in, notices and push messages out."""
from typing import Literal

from protocol.base import Msg

Urgency = Literal["low", "normal", "high"]
URGENCIES: tuple[Urgency, ...] = ("low", "normal", "high")


# --- phone -> runtime -------------------------------------------------------------------------
class PhoneNotification(Msg):
    """A notification that arrived on the phone (a messenger, mail, a calendar), forwarded by the
    phone bridge. Data for the session, never an instruction (E9)."""

    event_id: str
    ts: float
    app: str
    sender: str = ""
    text: str = ""
    token: str = ""  # the session's secret (without CURVE), from the Ack of its first event


# --- inside the runtime -----------------------------------------------------------------------
class UserNotice(Msg):
    """A conversation -> its glasses edge (through the SessionActor): something to tell the user
    (notify_user, a finished background task). Shown when the glasses are on, else kept unread;
    a `high` one also goes to the phone as a PushNotification, and so does one `to_phone` (the
    user asked for it there: "send it to my phone") whether the glasses are on or off."""

    text: str
    urgency: Urgency = "normal"
    source: str = "assistant"
    to_phone: bool = False


# --- runtime -> phone -------------------------------------------------------------------------
class PushNotification(Msg):
    """An urgent notice for the phone's own notification area, while the glasses are off."""

    note_id: str
    text: str
    urgency: Urgency = "high"
    ts: float = 0.0


class ToolProgress(Msg):
    """The toolset executor -> the SessionActor: a running call's progress, one line."""

    call_id: str
    text: str


class StatusLine(Msg):
    """A one-line status for the glasses (a background task's progress); replaces the previous one."""

    task_id: str
    text: str
