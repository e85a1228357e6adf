"""The notify toolset (seed 003's user-communication tool): `notify_user|text; urgency` tells
the user: on the glasses when they are on, else kept unread until they come back, and a `high`
one also pushed to the phone (actors/world.py). Runs in the session."""
from __future__ import annotations

from collections.abc import Mapping

import protocol as p
from core.notify import urgency_of
from core.toolsets import SessionContext, SessionToolset
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec

NOTIFY_TOOLSET = ToolsetSpec(
    name="notify",
    summary="tell the user something now, even when the glasses are off",
    tools=[
        ToolSpec(name="notify_user", summary="notify the user; urgency=low, normal or high (high also reaches the phone)",
                 args=[ArgSpec(name="text"), ArgSpec(name="urgency", required=False)], action="notify"),
    ],
)


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    text = " ".join((args.get("text") or "").split())
    if not text:
        return CallOutcome(kind="error", text="Not sent: the text is empty; say what to tell the user.")
    urgency = urgency_of(args.get("urgency") or "")
    if urgency is None:
        return CallOutcome(kind="error", text=f"Not sent: urgency {args.get('urgency')!r} is not low, normal or high.")
    context.tell_user(p.UserNotice(text=text, urgency=urgency))
    return CallOutcome(kind="ok", text=f"Sent to the user ({urgency}): {text}")


TOOLSET = SessionToolset(spec=NOTIFY_TOOLSET, handler=_run)
