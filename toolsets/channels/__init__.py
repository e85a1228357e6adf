"""The channels toolset (E10, seed 003's `connect_channel`): the model says once which messages
matter ("tell me when Anna writes"); the runtime matches every later message of the channel
(core.channels) and wakes the session only for those. Runs in the session; its state is the
session's world (actors/world.py), journaled with it."""
from __future__ import annotations

from collections.abc import Mapping

from core.channels import ANY_CHANNEL, Watch, channel_name, interest_words
from core.toolsets import SessionContext, SessionToolset
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec
from protocol.results import ToolData, WatchEnded, Watching, WatchesListed, WatchRef
from toolsets.channels.local import STEPS
from toolsets.channels.phrasing import PHRASING

UNAVAILABLE = "channels are not available in this runtime (no session actor)"
# h84: "keep an eye on my website, tell me when it's back up" set a watch on every message of every app
EVERYTHING_EVERYWHERE = ("not watched: no app and nothing to wait for, so every message of every app would wake the user. "
                         "Ask the user which app or whose message to watch for.")

CHANNELS_TOOLSET = ToolsetSpec(
    example=("\"скажи, когда напишет Анна\" -> TOOL_CALL: channels_watch|any; Анна -> \"Скажу, когда Анна напишет.\""),
    name="channels",
    summary="messages from outside (phone notifications, webhooks): watch for what matters",
    # offered only for words about it ("who are you?" is no watch): protocol.ToolsetSpec
    offered_for=["сообщ", "напис", "пишет", "написал", "уведомл", "вебхук", "телеграм", "почт", "письм", "чат",
                 "канал", "звон", "message", "wrote", "writes", "write", "notification", "webhook", "telegram",
                 "mail", "email", "chat", "channel", "call"],
    offered_for_verbs=["watch"],
    tools=[
        ToolSpec(name="channels_watch",
                 summary="wake me when a message on a channel (an app like telegram, a webhook name, or any) matches what matters",
                 args=[ArgSpec(name="channel"), ArgSpec(name="what", required=False)], idempotent=True, action="watch",
                 serves="watch_set"),
        ToolSpec(name="channels_unwatch", summary="stop watching (a watch id from channels_list)", args=[ArgSpec(name="id")],
                 action="task_cancel", serves="watch_end"),
        ToolSpec(name="channels_list", summary="the watches that are set", read_only=True, serves="watch_list"),
    ],
)


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    world = context.world
    if world is None:
        return CallOutcome(kind="error", text=UNAVAILABLE)
    watches = world.of(context.sid).watches
    if tool == "channels_list":
        return CallOutcome(kind="ok", text=watches.list(), data=WatchesListed(watches=[_ref(w) for w in watches.watches]))
    if tool == "channels_watch" and channel_name(args["channel"]) in ANY_CHANNEL and not interest_words(args.get("what") or ""):
        return CallOutcome(kind="error", text=EVERYTHING_EVERYWHERE)
    before = {w.watch_id: w for w in watches.watches}
    text = (watches.add(args["channel"], args.get("what") or "", asked=context.asked) if tool == "channels_watch"
            else watches.remove(args["id"]))
    world.save(context.sid)
    return CallOutcome(kind="ok", text=text, data=_changed(before, watches.watches, tool, args))


def _ref(watch: Watch) -> WatchRef:
    return WatchRef(id=watch.watch_id, channel=watch.channel, what=watch.what)


def _changed(before: dict[str, Watch], after: list[Watch], tool: str, args: Mapping[str, str]) -> ToolData | None:
    """What a watch or an unwatch did, as fields, from the table before and after it (None: nothing)."""
    if tool == "channels_unwatch":
        kept = {w.watch_id for w in after}
        ended = [w for watch_id, w in before.items() if watch_id not in kept]
        return WatchEnded(watch=_ref(ended[0])) if ended else None
    added = [w for w in after if w.watch_id not in before]
    if added:
        return Watching(watch=_ref(added[0]))
    same = [w for w in after if w.channel == channel_name(args["channel"]) and w.words == interest_words(args.get("what") or "")]
    return Watching(watch=_ref(same[0]), already=True) if same else None


# the plain requests the session carries out itself (local.py) and how they are said (phrasing.py)
TOOLSET = SessionToolset(spec=CHANNELS_TOOLSET, handler=_run, steps=STEPS, phrasing=PHRASING)
