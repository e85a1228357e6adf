"""Progress of a running tool call (E7: "progress and completion come back as events").

An executor that learns of progress (an MCP server's `notifications/progress`) calls the
reporter the toolset executor actor set for the call (`REPORTER`, a context variable, so no
executor signature changes); the actor sends it to the session as `ToolProgress`. The session
shows it on the glasses as a status line and, while a turn runs, queues it as an event the model
sees at its next safe point (actors/world.py). An idle session is not woken by progress.
"""
from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

PROGRESS_KIND = "progress"

Reporter = Callable[[str], None]
REPORTER: ContextVar[Reporter | None] = ContextVar("porfiry_progress_reporter", default=None)


def progress_text(progress: float, total: float | None, message: str | None) -> str:
    """"3/10: copying photos", "40%", "step 2": one line for the glasses and the model."""
    if total:
        amount = f"{progress:g}/{total:g}" if total != 100 else f"{progress:g}%"
    else:
        amount = f"{progress:g}"
    said = " ".join((message or "").split())[:200]
    return f"{amount}: {said}" if said else amount
