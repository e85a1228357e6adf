"""Tool calls that run in their own task, and the words the model reads about them (E6 rule 3, E7).

Every toolset call of a session runs in a task of its own (a `ToolRun`), so the session can stop
waiting for it without stopping it:

- a `long_running` tool (ToolSpec) is answered at once: started, task id, result later;
- any other call still running after `session.tool_background_after_s` moves to the background
  the same way, so the user is never left waiting in silence;
- an INTERRUPT while the call runs leaves it running (the call gets the rule-3 placeholder);
- a CANCEL stops it, and its call's result says "cancelled by the user".

A run that finishes after its call was answered by a placeholder reports back as a tool_result
event (`late_event`), which starts a turn when the session is idle or joins the next batch. A
cancelled run's outcome is dropped: the user already heard it was cancelled.
"""
from __future__ import annotations

import os
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import anyio

from protocol import CallOutcome, Event

RunState = Literal["running", "background", "cancelled", "finished"]
RUNNING, BACKGROUND, CANCELLED, FINISHED = "running", "background", "cancelled", "finished"

STARTED_TEXT = ("tool {tool} started in the background as task {task_id}. Its result is NOT available "
                "yet: do not assume one. It will arrive later as a separate event.")
SLOW_TEXT = ("tool {tool} is still running, now in the background as task {task_id}. Its result is "
             "NOT available yet: do not assume one. It will arrive later as a separate event.")
INTERRUPTED_TEXT = ("tool {tool} is still running in the background (task {task_id}); handling the new "
                    "event first. Its result is NOT available yet: do not assume one. It will arrive "
                    "later as a separate event.")
CANCELLED_TEXT = "cancelled by the user"
UNFINISHED_TEXT = "interrupted before it finished; call it again if it is still needed"
LATE_CONTEXT = "late result of task {task_id}, answered 'still running' before"
ASKED_KEY = "asked"  # Event.data: the user's words that set up what the event reports (a task's call)


@dataclass(eq=False)
class ToolRun:
    """One toolset call in its own task. `outcome` is its result once `done` is set."""

    call_id: str
    tool: str
    task_id: str = field(default_factory=lambda: os.urandom(3).hex())
    # the user's words that asked for the call: the turn its result starts may carry out what
    # they asked for (core.intent's guard reads them there), and nothing else
    asked: str = ""
    state: RunState = RUNNING
    outcome: CallOutcome | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    started: float = field(default_factory=time.monotonic)  # a task's status tells its age


class ToolRuns:
    """A session's calls in flight, by call id."""

    __slots__ = ("_runs", "ended")

    ENDED_KEPT = 64

    def __init__(self) -> None:
        self._runs: dict[str, ToolRun] = {}
        self.ended: OrderedDict[str, str] = OrderedDict()  # task id -> how a background task ended (a task's status)

    def start(self, call_id: str, tool: str, asked: str = "") -> ToolRun:
        run = self._runs[call_id] = ToolRun(call_id, tool, asked=asked)
        return run

    def get(self, call_id: str) -> ToolRun | None:
        return self._runs.get(call_id)

    def ids(self) -> list[str]:
        return list(self._runs)

    def in_background(self) -> list[ToolRun]:
        return [run for run in self._runs.values() if run.state == BACKGROUND]

    def finish(self, run: ToolRun, outcome: CallOutcome) -> RunState:
        """Record the outcome; returns the state the run was in (what to do with the outcome)."""
        self._runs.pop(run.call_id, None)
        previous, run.outcome = run.state, outcome
        if previous != CANCELLED:
            run.state = FINISHED
        if previous == BACKGROUND:
            self.record_end(run, "finished" if outcome.kind in ("ok", "placeholder") else
                            "failed: " + (outcome.text.strip().splitlines() or ["?"])[0])
        run.done.set()
        return previous

    def record_end(self, run: ToolRun, how: str) -> None:
        """How a background task ended ("finished", "cancelled by the user", "failed: … timed
        out …"), for a task's status asked later; the last ENDED_KEPT are kept."""
        self.ended[run.task_id] = f"{how} after {time.monotonic() - run.started:.0f} s"
        while len(self.ended) > self.ENDED_KEPT:
            self.ended.popitem(last=False)

    def __len__(self) -> int:
        return len(self._runs)


def late_event(run: ToolRun, text: str, ts: float) -> Event:
    """The real result of a call answered by a placeholder: a tool_result event (E6 rule 3, E7)."""
    return Event(
        event_id=f"late-{run.call_id}", kind="tool_result", source=run.tool, channel="tool",
        content=text, context=LATE_CONTEXT.format(task_id=run.task_id), ts=ts,
        data={"call_id": run.call_id, "tool": run.tool, "task_id": run.task_id,
              **({ASKED_KEY: run.asked} if run.asked else {})},
    )


_TASK_ID_WORD = re.compile(r"[0-9a-z]+")


def names_a_task(text: str, runs: Sequence[ToolRun]) -> bool:
    """The words name a task running in the background by its id ("cancel 3f2a9c"): a stop
    phrase saying so is about that task, which the tasks toolset stops alone, not about every task."""
    if not runs:
        return False  # nothing in the background (every idle turn asks): no words to read
    words = set(_TASK_ID_WORD.findall(text.casefold()))
    return any(run.task_id in words for run in runs)
