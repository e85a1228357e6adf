"""The tasks toolset's results (E7 in full): every toolset call that went to the background and
every monitor has an id; `tasks_list`, `tasks_status|ID` and `tasks_cancel|ID` see and stop one
of them, leaving the others running. Runs in the session (the session's runs and monitors)."""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence

from core.background import ToolRun
from core.monitors import RUNNING, STOPPED, MonitorTable


_WORD = re.compile(r"[0-9a-z]+")


def tasks_list(runs: Sequence[ToolRun], monitors: MonitorTable | None) -> str:
    """`runs`: the session's calls in the background (ToolRuns.in_background)."""
    lines = [f"{run.task_id}: {run.tool} running in the background" for run in runs]
    if monitors is not None:
        lines += [monitors.describe(row) for row in monitors.rows if row.state == RUNNING]
    return "\n".join(lines) if lines else "No background tasks or monitors are running."


def _find_run(runs: Sequence[ToolRun], task_id: str) -> ToolRun | None:
    wanted = task_id.strip().casefold()
    return next((run for run in runs if run.task_id == wanted), None)


def tasks_status(runs: Sequence[ToolRun], monitors: MonitorTable | None, task_id: str,
                 latest: Mapping[str, str] | None = None, ended: Mapping[str, str] | None = None,
                 now: float | None = None) -> str:
    """One task's state: running (for how long, its latest progress), how it ended (finished,
    cancelled by the user, failed: timed out or stalled), or a monitor's state."""
    run = _find_run(runs, task_id)
    if run is not None:
        progress = (latest or {}).get(run.task_id)
        said = f" Latest progress: {progress}." if progress else " No progress reported yet."
        age = (time.monotonic() if now is None else now) - run.started
        return (f"{run.task_id}: {run.tool} is still running in the background (for {age:.0f} s); its result will "
                f"come as an event.{said}")
    how = (ended or {}).get(task_id.strip().casefold())
    if how is not None:
        return f"Task {task_id.strip().casefold()} is not running: {how}."
    row = monitors.get(task_id) if monitors is not None else None
    if row is not None:
        return monitors.describe(row)
    return _unknown(runs, monitors, task_id)


def tasks_cancel(runs: Sequence[ToolRun], cancel: Callable[[ToolRun], None], monitors: MonitorTable | None,
                 task_id: str) -> tuple[str, bool]:
    """(text for the model, whether a monitor was stopped: its state is to be saved). Only that
    task stops (`cancel`: the session's own way, its call's result "cancelled by the user")."""
    run = _find_run(runs, task_id)
    if run is not None:
        cancel(run)
        return f"Task {run.task_id} ({run.tool}) cancelled; other tasks keep running.", False
    row = monitors.get(task_id) if monitors is not None else None
    if row is not None and row.state == RUNNING:
        row.state = STOPPED
        return f"Monitor {row.monitor_id} ({row.name}) stopped; other tasks keep running.", True
    if row is not None:
        return f"Monitor {row.monitor_id} already {row.state}; nothing to cancel.", False
    return _unknown(runs, monitors, task_id), False


def _unknown(runs: Sequence[ToolRun], monitors: MonitorTable | None, task_id: str) -> str:
    ids = [run.task_id for run in runs]
    ids += [row.monitor_id for row in monitors.running()] if monitors is not None else []
    running = f"running: {', '.join(ids)}" if ids else "nothing is running"
    return f"No task {task_id.strip() or '(no id)'} (finished, cancelled or never started); {running}."


__all__ = ["tasks_list", "tasks_status", "tasks_cancel"]
