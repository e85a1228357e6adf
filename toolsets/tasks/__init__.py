"""The tasks toolset (E7 in full): the background calls and monitors of this session, by id;
see one, stop one (the others keep running). Runs in the session (answers.py); what it answers without the model: local.py."""
from __future__ import annotations

from collections.abc import Mapping

from core.monitors import RUNNING
from core.toolsets import SessionContext, SessionToolset
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec
from protocol.results import TaskRef, TasksListed
from toolsets.tasks.answers import tasks_cancel, tasks_list, tasks_status
from toolsets.tasks.local import STEPS
from toolsets.tasks.phrasing import PHRASING

TASKS_TOOLSET = ToolsetSpec(
    name="tasks",
    summary="what runs in the background (tool calls, monitors): list, status, cancel one",
    # offered only for words about it ("start my morning workout" is no task): protocol.ToolsetSpec
    offered_for=["задач", "фон", "работает", "запущен", "статус", "монитор", "наблюд", "слежк", "task", "background",
                 "job", "running", "status", "monitor", "progress", "что ты сейчас делаешь", "what are you doing"],
    offered_for_verbs=["cancel"],
    tools=[
        ToolSpec(name="tasks_list", summary="the background tasks and monitors running now", read_only=True,
                 serves="task_list"),
        ToolSpec(name="tasks_status", summary="one task's state", args=[ArgSpec(name="id")], read_only=True),
        ToolSpec(name="tasks_cancel", summary="stop one task; the others keep running", args=[ArgSpec(name="id")],
                 action="task_cancel"),
    ],
)


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    world = context.world
    monitors = world.of(context.sid).monitors if world is not None else None
    if tool == "tasks_list":
        listed = [TaskRef(id=run.task_id, kind="call", name=run.tool) for run in context.background]
        listed += [TaskRef(id=row.monitor_id, kind="monitor", name=row.name)
                   for row in (monitors.rows if monitors is not None else ()) if row.state == RUNNING]
        return CallOutcome(kind="ok", text=tasks_list(context.background, monitors), data=TasksListed(tasks=listed))
    if tool == "tasks_status":
        return CallOutcome(kind="ok", text=tasks_status(context.background, monitors, args["id"],
                                                        world.latest if world is not None else None, context.ended))
    text, monitor_stopped = tasks_cancel(context.background, context.cancel_task, monitors, args["id"])
    if monitor_stopped and world is not None:
        world.stop_monitor(context.sid, args["id"].strip().casefold())
    return CallOutcome(kind="ok", text=text)


# the plain requests the session carries out itself (local.py) and how they are said (phrasing.py)
TOOLSET = SessionToolset(spec=TASKS_TOOLSET, handler=_run, steps=STEPS, phrasing=PHRASING)
