"""Issue 52, item 3: a long_running MCP call is bounded by its own long_running_timeout_s, not the
server's timeout_s; progress keeps it alive, silence past long_running_stall_s stops it; the
session's tasks_status tells a running task's age and progress, and how an ended one ended
(finished, cancelled, timed out, stalled). Through the real actors with a real MCP server (stdio)
that reports progress as a script prints its lines."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import msgspec

from core.config import McpConfig, McpServerConfig
from harness import inproc_system, make_config, session_knows, until
from llm.scripted import ScriptedBackend
from tests.test_world import finals, world_model


def _task_of(history: list[dict], args: str) -> str:
    """The task id the placeholder of the call `jobs_count|ARGS` named."""
    text = "\n".join(m["content"] for m in history)
    calls = [m for m in re.finditer(r"TOOL_CALL: jobs_count\|([^\n]+)", text)]
    assert any(c.group(1) == args for c in calls), text
    starts = re.findall(r"tool jobs_count started in the background as task (\w+)", text)
    return starts[[c.group(1) for c in calls].index(args)]


# a job reporting every 0.2 s is not stalled when a loaded machine delays its reports a few seconds;
# the done job (5 s), the stall and the timeout end seconds apart, each told in its own turn
STALL_S, RUNS_OUT_S = 7.0, 11.0


async def test_a_long_task_runs_past_timeout_s_while_it_reports_and_stops_when_it_stalls_or_runs_out(tmp_path):
    server = str(Path(__file__).with_name("mcp_progress_server.py"))
    config = make_config(tmp_path)
    config = msgspec.structs.replace(config, mcp=McpConfig(servers={"jobs": McpServerConfig(
        command=[sys.executable, server], timeout_s=3.0, long_running=["jobs_count"], long_running_stall_s=STALL_S,
        long_running_timeouts={"count": RUNS_OUT_S})}))
    backend = ScriptedBackend(reply_fn=world_model)
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        glasses = system.actors["glasses"]
        await session_knows(system, "jobs")
        for args in ("5; 0.2", "60; 30", "60; 0.2", "60; 0.3"):  # done past timeout_s; stalls; runs out; cancelled
            # the turn is answered; under load an earlier task's progress report may join it at a safe
            # point and have the scripted model's last word ("Progress noted."), so the start is read
            # from the history below
            assert finals(await system.turn("s", f"call jobs_count|{args}"))
        history = await system.history("s")
        done, stalls, runs_out, cancelled = (_task_of(history, a) for a in ("5; 0.2", "60; 30", "60; 0.2", "60; 0.3"))

        await system.turn("s", f"call tasks_status|{runs_out}")
        status = [m for m in backend.calls[-1] if m.role == "tool"][-1].content
        assert re.search(r"still running in the background \(for \d+ s\)", status), status
        await system.turn("s", f"cancel task {cancelled}")

        def late(task_fragment: str) -> bool:
            return any(task_fragment in f for f in finals(glasses.shown["s"]))
        await until(lambda: late("counted "), timeout=30)
        assert "Finished: counted" in " ".join(finals(glasses.shown["s"])), "5 s of work with timeout_s = 3: it finished"
        await until(lambda: late(f"stalled: no progress for {STALL_S:g} s"), timeout=30)
        await until(lambda: late(f"timed out after {RUNS_OUT_S:g} s"), timeout=30)
        for task, said in ((done, "finished after"), (stalls, f"stalled: no progress for {STALL_S:g} s (mcp.servers.jobs.long_running_stall_s)"),
                           (runs_out, f"timed out after {RUNS_OUT_S:g} s (mcp.servers.jobs.long_running_timeout_s)"),
                           (cancelled, "cancelled by the user after")):
            await system.turn("s", f"call tasks_status|{task}")
            status = [m for m in backend.calls[-1] if m.role == "tool"][-1].content
            assert status.startswith(f"Task {task} is not running: ") and said in status, status


async def test_cancelling_one_task_while_a_progress_turn_runs_stops_that_task_alone(tmp_path):
    """"cancel task <id>" said while the session was busy with another task's progress report
    stopped every background task (CI: the job that was to finish never did): it names one task,
    so it waits for the turn and stops that task alone."""
    server = str(Path(__file__).with_name("mcp_progress_server.py"))
    config = msgspec.structs.replace(make_config(tmp_path), mcp=McpConfig(servers={"jobs": McpServerConfig(
        command=[sys.executable, server], timeout_s=3.0, long_running=["jobs_count"], long_running_stall_s=STALL_S,
        long_running_timeouts={"count": RUNS_OUT_S})}))
    backend = ScriptedBackend(reply_fn=_cancels_what_is_named, first_token_delay_s=0.2)  # every turn takes a while
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        glasses = system.actors["glasses"]
        await session_knows(system, "jobs")
        for args in ("60; 0.3", "8; 0.2"):  # to cancel; to finish
            await system.turn("s", f"call jobs_count|{args}", timeout=30)
        doomed = _task_of(await system.history("s"), "60; 0.3")
        await until(lambda: _busy(system), timeout=30)  # a progress report's turn runs
        await system.deliver("s", f"cancel task {doomed}")
        await until(lambda: any("counted " in f for f in finals(glasses.shown["s"])), timeout=60)
        await system.turn("s", f"call tasks_status|{doomed}", timeout=30)
        # the status's own result, once in the history (under load another turn may have had the model's last call)
        async def statuses():
            return [m["content"] for m in await system.history("s") if m["role"] == "tool" and m.get("name") == "tasks_status"]
        status = (await until(statuses, timeout=30))[-1]
        assert "cancelled by the user after" in status, status


def _cancels_what_is_named(messages) -> str:
    """world_model, which also reads a cancel, or a call asked, batched with a progress report (a
    report every 0.3 s may join the user's turn before the model is asked: a model covers both)."""
    trailing = []
    for message in reversed(messages):
        if message.role != "user":
            break
        trailing.insert(0, message.content)
    for said in trailing:
        named = re.search(r"cancel task (\w+)", said)
        if named:
            return f"TOOL_CALL: tasks_cancel|{named.group(1)}"
        asked = re.match(r"\[User said\] call (\S.*)", said)
        if asked and not any(m.role == "tool" for m in messages[len(messages) - len(trailing):]):
            return f"TOOL_CALL: {asked.group(1)}"
    return world_model(messages)


async def _busy(system) -> bool:
    return (await system.info("s")).busy
