"""Issue 51, findings 1 and 10: what a runtime starts dies with it. `kill -9` of `run.py serve`
leaves no actor process (nor anything an actor started) running, and a new `serve` on the same
config starts; a monitor's run is a process group of its own, killed whole."""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from harness import poll
from test_process_mode import REPO, _status, served  # noqa: F401 - served is a fixture


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan is reaped by whoever adopted it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][:1]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _descendants(root: int) -> set[int]:
    """Every process below `root` now (children, their children ...), read from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


NOTES_SERVER = f"""
[mcp.servers.notes]
command = ["{sys.executable}", "{REPO / 'tests' / 'mcp_notes_server.py'}"]
env = {{ NOTES_DIR = "var/notes" }}
"""


def test_kill_9_of_serve_leaves_nothing_of_it_running_and_a_new_serve_starts(served):
    config, first = served(extra=NOTES_SERVER)
    actors = {int(row[2]) for row in _status(config).values()}
    poll(lambda: len(_descendants(first.pid) - actors) >= 1)  # the MCP server under the toolsets actor
    started = _descendants(first.pid)
    assert actors <= started and len(started) >= 7, started
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    try:
        poll(lambda: not any(_running(pid) for pid in started), timeout=30)
    finally:  # what a failure left behind: not for the next test to trip on
        for pid in started:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
    again = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        serving = lambda: (s := _status(config)) and len(s) == 6 and all(  # noqa: E731
            row[1] == "yes" and int(row[2]) not in actors for row in s.values())
        poll(lambda: again.poll() is not None or serving())
        assert again.poll() is None, again.stderr.read().decode()
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=30)


_MIDDLE = """
import subprocess, sys, time
from core.lifeline import Lifeline
line = Lifeline()
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], env={**__import__("os").environ, **line.env()},
                         pass_fds=(line.fd,), start_new_session=True, stdout=sys.stdout)
child.wait()
"""

_CHILD = """
import os, subprocess, sys, time
from core import lifeline
lifeline.watch_parent()
own = subprocess.Popen(["sleep", "600"])  # in its own group: killed with it
monitor = subprocess.Popen(["sleep", "600"], start_new_session=True)  # a group of its own, tracked
lifeline.track_group(monitor.pid)
print(os.getpid(), own.pid, monitor.pid, flush=True)
time.sleep(600)
"""


def test_a_child_on_a_lifeline_dies_with_its_parent_and_takes_its_process_groups_with_it():
    middle = subprocess.Popen([sys.executable, "-c", _MIDDLE, textwrap.dedent(_CHILD)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    pids = [int(pid) for pid in middle.stdout.readline().split()]
    assert len(pids) == 3 and all(_running(pid) for pid in pids)
    middle.kill()
    middle.wait(timeout=10)
    poll(lambda: not any(_running(pid) for pid in pids), timeout=30)


# ---- finding 10: a monitor's processes are a group of their own, killed whole -----------------
async def test_a_monitor_run_is_killed_whole_when_it_times_out_and_when_it_is_stopped(tmp_path):
    import anyio

    from core.monitors import Probe, run_command
    from harness import until

    # it backgrounds a process holding its output open, prints that process's pid, and would run on
    probe = await run_command(["sh", "-c", "sleep 600 & echo $!"], 0.5, 100)
    assert "timed out after 0.5 s; killed" in probe.output
    left = int(probe.output.split()[0])
    await until(lambda: not _running(left))
    # the same with nothing holding its output: the run ends at once, its background process with it
    probe = await run_command(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"], 30, 100)
    assert probe.code == 0
    await until(lambda: not _running(int(probe.output.split()[0])))
    # its exit as it was (the guard in between hides nothing)
    assert (await run_command(["sh", "-c", "echo done; exit 3"], 30, 100)) == Probe(3, "done\n", "exit")
    assert (await run_command(["sh", "-c", "kill -9 $$"], 30, 100)).code == -9
    assert (await run_command(["no-such-command"], 30, 100)) == Probe(
        None, "could not start no-such-command: not found or not executable", "exit")
    # stopped (its task cancelled) mid-run
    pid_file = tmp_path / "pid"
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_command, ["sh", "-c", f"sleep 600 & echo $! > {pid_file}; wait"], 600, 100)
        await until(lambda: pid_file.exists() and pid_file.read_text().strip())
        tg.cancel_scope.cancel()
    await until(lambda: not _running(int(pid_file.read_text())))


async def test_monitors_past_the_runtime_wide_bound_are_refused(tmp_path):
    import msgspec

    from core.config import MonitorConfig
    from harness import inproc_system, make_config, until
    from llm.scripted import ScriptedBackend
    from test_world import world_model

    config = make_config(tmp_path)
    config = msgspec.structs.replace(config, monitors=msgspec.structs.replace(config.monitors, max_per_session=5, max_total=2, named={
        "build": MonitorConfig(command=[sys.executable, "-c", "print('building')"], interval_s=60, timeout_s=5)}))
    calls: list[str] = []

    def model(messages):
        if messages[-1].role == "tool":
            calls.append(messages[-1].content)
        return world_model(messages)

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), config=config) as system:
        session = system.actors["session"]
        for sid in ("s1", "s2", "s3"):
            await system.turn(sid, "tell me when the build is ready")
        await until(lambda: len(calls) == 3)
        assert [len(session.world.of(sid).monitors.running()) for sid in ("s1", "s2", "s3")] == [1, 1, 0]
        assert "the runtime already runs 2 monitors, its limit (monitors.max_total)" in calls[2], calls


_RUNNER = """
import anyio, sys
from core.monitors import run_command
anyio.run(run_command, ["sh", "-c", f"sleep 600 & echo $! > {sys.argv[1]}; wait"], 600, 100, backend="trio")
"""


def test_a_monitor_run_dies_with_the_process_that_started_it_even_by_sigkill(tmp_path):
    # what `serve --inproc` (or a session actor process) is to its monitors: killed, it takes them along
    pid_file = tmp_path / "pid"
    runner = subprocess.Popen([sys.executable, "-c", _RUNNER, str(pid_file)], cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        left = int(poll(lambda: pid_file.exists() and pid_file.read_text().strip()))
        assert _running(left)
    finally:
        runner.kill()
        runner.wait(timeout=10)
    try:
        poll(lambda: not _running(left), timeout=30)
    finally:  # what a failure left behind
        if _running(left):
            os.killpg(os.getpgid(left), signal.SIGKILL)
