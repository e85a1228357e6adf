"""The notify toolset (seed 003's user-communication tool): `notify_user|text; urgency` tells
the user: on the glasses when they are on, else kept unread until they come back, and a `high`
one also pushed to the phone (actors/world.py); its result says which happened.
`notify_nothing|reason` ends a turn nobody asked for (a channel message, a monitor) with nothing
for the user: the reason stays in the history and the journal (core.event_turn). Runs in the
session."""
from __future__ import annotations

from collections.abc import Mapping

import protocol as p
from core.notify import urgency_of
from core.toolsets import SessionContext, SessionToolset
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec
from protocol.results import TextSent

SILENT_TOOL = "notify_nothing"
NOTIFY_TOOLSET = ToolsetSpec(
    name="notify",
    summary="tell the user something now, even when the glasses are off",
    offered_for_verbs=["notify"],  # offered only for words asking to be told: protocol.ToolsetSpec
    tools=[
        ToolSpec(name="notify_user", summary="notify the user; urgency=low, normal or high (high also reaches the phone); "
                 "to=phone: sent to the phone now (the user asked for it there)",
                 args=[ArgSpec(name="text"), ArgSpec(name="urgency", required=False), ArgSpec(name="to", required=False)],
                 action="notify"),
        ToolSpec(name=SILENT_TOOL, summary="an event from outside needs nothing from the user: end the turn, show nothing; "
                 "say why (kept in the journal)", args=[ArgSpec(name="reason")], read_only=True, action="none",
                 serves="event_silent"),
    ],
)


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    if tool == SILENT_TOOL:
        reason = " ".join((args.get("reason") or "").split())
        if not reason:
            return CallOutcome(kind="error", text="Not recorded: say why the user need not hear about it.")
        return CallOutcome(kind="ok", text=f"Nothing shown to the user; recorded: {reason}")
    text = " ".join((args.get("text") or "").split())
    if not text:
        return CallOutcome(kind="error", text="Not sent: the text is empty; say what to tell the user.")
    urgency = urgency_of(args.get("urgency") or "")
    if urgency is None:
        return CallOutcome(kind="error", text=f"Not sent: urgency {args.get('urgency')!r} is not low, normal or high.")
    to = " ".join((args.get("to") or "").casefold().split())
    if to not in ("", "phone"):
        return CallOutcome(kind="error", text=f"Not sent: to={args.get('to')!r}; the only place is phone (or leave it out).")
    glasses_on = context.world is None or context.world.of(context.sid).glasses_on
    context.tell_user(p.UserNotice(text=text, urgency=urgency, to_phone=to == "phone"))
    return CallOutcome(kind="ok", text=delivered(urgency, text, glasses_on, to_phone=to == "phone"),
                       data=TextSent(text=text, to="phone" if to == "phone" else "glasses"))


def delivered(urgency: str, text: str, glasses_on: bool, *, to_phone: bool = False) -> str:
    """What happened to the notice, truthfully (actors/world.py delivers it so)."""
    if glasses_on:
        return f"Shown to the user now{'; pushed to the phone now' if to_phone else ''} ({urgency}): {text}"
    pushed = "; pushed to the phone now" if urgency == "high" or to_phone else ""
    return f"Kept unread: the glasses are off; shown when they are back{pushed} ({urgency}): {text}"


TOOLSET = SessionToolset(spec=NOTIFY_TOOLSET, handler=_run)
