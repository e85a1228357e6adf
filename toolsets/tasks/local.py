"""The tasks toolset's fast path (issue 50): "what's running?" and "which messages are you
watching for?" answered by the session itself when nothing runs or from the watches' list, through
the tools that serve "task_list" and "watch_list" (core.fastpath), worded by the toolsets'
responses. A list of running tasks is the model's to word (it names the tools).
"""
from __future__ import annotations

from core.fastpath import FastPath, Intent
from core.local_intents import Say
from core.turn import TurnState
from protocol.results import TasksListed, WatchesListed


def tasks_answer(say: Say, listed: TasksListed) -> str | None:
    """Nothing running, said plainly; a list is worded by the model (it names the tools)."""
    return None if listed.tasks else say("nothing_running")


def watches_answer(say, listed: WatchesListed) -> str | None:
    """The watches the watches' list showed, said back: "Слежу: telegram — Dave texts me"."""
    lines = [f"{watch.channel} — {watch.what.strip()}" for watch in listed.watches]
    return say("watching", listed="; ".join(lines)) if lines else say("watching_nothing")


async def tasks(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    if intent.action == "watches":  # "which messages are you watching for?"
        listed = await fast.data(turn, fast.tool("watch_list"), "")
        return watches_answer(fast.speaker(intent.russian), listed) if isinstance(listed, WatchesListed) else None
    running = await fast.data(turn, fast.tool("task_list"), "")
    if not isinstance(running, TasksListed):
        return None
    if not running.tasks and fast.tool("watch_list"):  # "что у тебя в фоне крутится?" with a watch on: the watch
        watching = await fast.data(turn, fast.tool("watch_list"), "")
        if not isinstance(watching, WatchesListed):
            return None
        if watching.watches:
            return watches_answer(fast.speaker(intent.russian), watching)
    return tasks_answer(fast.speaker(intent.russian), running)


STEPS = {"tasks": tasks}
