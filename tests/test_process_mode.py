"""The real deployment shape: `run.py serve` with each actor in its own OS process over ipc://,
the phone over tcp://, driven by the CLI like an operator would."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness import free_port, poll, until

REPO = Path(__file__).resolve().parent.parent


MCP_SERVERS = f"""
[mcp.servers.notes]
command = ["{sys.executable}", "{REPO / 'tests' / 'mcp_notes_server.py'}"]
env = {{ NOTES_DIR = "var/notes" }}
timeout_s = 10.0
long_running = ["notes_export"]

[mcp.servers.ghost]
command = ["no-such-mcp-server-binary"]
"""


def _write_config(tmp: Path, ipc_dir: str, *, topology: str = "", phone: str = "", supervisor: str = "",
                  llm: str = 'profile = "scripted"', extra: str = "") -> Path:
    """The porfiry.toml of a `run.py serve` under test: a process per actor over ipc:// in `ipc_dir`,
    the phone on a free tcp:// port, every file under `tmp`. `topology`, `phone`, `supervisor`
    and `llm` are more lines of those tables; `extra` is more tables."""
    config = tmp / "porfiry.toml"
    config.write_text(f"""
[topology]
mode = "ipc"
ipc_dir = "{ipc_dir}"
{topology}

[phone]
endpoint = "tcp://127.0.0.1:{free_port()}"
{phone}

[supervisor]
period_s = 30
{supervisor}

[llm]
{llm}

[skills]
user_dir = "{tmp / 'user-skills'}"

[toolsets.media]
db_path = "{tmp / 'media.sqlite3'}"

[storage]
path = "{tmp / 'porfiry.sqlite3'}"
{extra}""")
    return config


def _cli(config: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run.py", "--config", str(config), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _status(config: Path) -> dict[str, list[str]]:
    """Each actor's row as `run.py status` prints it (name, alive, pid, restarts, inbox, last exit),
    {} while nothing answers. Asked from this process: tests poll it, and a CLI process per poll
    cost most of a CPU core while the runtime it waited for started (`status` itself: its own test)."""
    import concurrent.futures

    import anyio

    import protocol as p
    from actors.base import AskTimeout
    from core.loading import load_config
    from run import ask_runtime
    from transport.keys import KeyFileError

    def ask() -> p.SystemStatus | None:  # in a thread of its own: some tests call this from a trio task
        try:
            return anyio.run(ask_runtime, load_config(config), "supervisor", p.StatusRequest(), 2.0, backend="trio")
        except (AskTimeout, KeyFileError):  # the CLI prints nothing then
            return None

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        status = pool.submit(ask).result()
    if status is None:
        return {}
    return {row.name: [row.name, "yes" if row.alive else "NO", str(row.pid), str(row.restarts), str(row.inbox_depth),
                       *row.detail.split()] for row in status.actors}



@pytest.fixture
def served(tmp_path, ipc_dir):
    """Starts `run.py serve` on `_write_config(**tables)` and waits for its six actors: (config,
    process). Whatever is still running at the end is stopped."""
    started = []

    def start(**tables: str):
        config = _write_config(tmp_path, ipc_dir, **tables)
        log = open(tmp_path / "serve.log", "w")
        proc = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        started.append(proc)
        poll(lambda: (s := _status(config)) and len(s) == 6 and all(row[1] == "yes" for row in s.values()))
        return config, proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_serve_status_say_and_a_killed_actor_is_restarted(served):
    config, _ = served(extra=MCP_SERVERS)
    status = _status(config)
    printed = _cli(config, "status")
    assert printed.returncode == 0 and printed.stdout.splitlines()[2:] != [], printed
    assert {line.split()[0]: line.split()[:4] for line in printed.stdout.splitlines()[2:]} == \
        {name: row[:4] for name, row in status.items()}, "the CLI prints what the supervisor says"
    pids = {name: int(row[2]) for name, row in status.items()}
    assert len(set(pids.values())) == 6, "each actor runs in its own process"

    def toolsets():
        listed = _cli(config, "toolsets", "list")
        rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
        return "available" in rows.get("notes", "") and "start failed" in rows.get("ghost", "") and (listed, rows)
    listed, rows = poll(toolsets, timeout=30)
    assert listed.returncode == 1  # one toolset is unavailable
    assert rows["media"].split()[:4] == ["media", "executor", "available", "3"]
    assert rows["timers"].split()[:4] == ["timers", "session", "available", "3"]
    assert rows["notes"].split()[:3] == ["notes", "mcp", "available"] and int(rows["notes"].split()[3]) >= 10
    assert rows["ghost"].split()[:3] == ["ghost", "mcp", "unavailable"]
    assert rows["ghost"].endswith("start failed: FileNotFoundError: command not found: no-such-mcp-server-binary")

    said = _cli(config, "say", "--session", "p1", "--timeout", "20", "lara croft film")
    assert said.returncode == 0, said.stderr
    assert "Lara Croft" in said.stdout.splitlines()[-1]

    os.kill(pids["session"], signal.SIGKILL)
    restarted = poll(lambda: (row := _status(config).get("session")) and row[1] == "yes" and int(row[2]) != pids["session"] and row)
    assert restarted[3] == "1"
    # The system keeps serving: a message crosses ipc:// between the actor processes and back.
    said = _cli(config, "say", "--session", "p2", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip().splitlines()[-1].startswith("Sure.")


def test_a_hung_actor_process_is_killed_and_restarted(served, tmp_path):
    """A process that stops answering without dying (here SIGSTOP; a blocked loop or a handler
    that never returns looks the same) would leave every user waiting: the watchdog kills it."""
    config, _ = served(supervisor="hung_after_s = 3\nwatchdog_every_s = 0.5")
    pid = int(_status(config)["session"][2])
    os.kill(pid, signal.SIGSTOP)
    try:
        restarted = poll(lambda: (row := _status(config).get("session")) and row[1] == "yes" and int(row[2]) != pid and row, timeout=30)
    finally:
        try:
            os.kill(pid, signal.SIGCONT)  # the test's own process, if it is still there
        except ProcessLookupError:
            pass
    assert restarted[3] == "1" and "hung:" in " ".join(restarted[4:]), restarted  # `run.py status`: its last exit
    log = (tmp_path / "serve.log").read_text()
    assert "child=session is hung: session answered no Ping for" in log
    said = _cli(config, "say", "--session", "h1", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip().splitlines()[-1].startswith("Sure.")
    assert int(_status(config)["skills"][3]) == 0, "the others are left alone"


def test_restart_intensity_exceeded_stops_the_system_with_a_clear_message(served, tmp_path):
    config, proc = served(supervisor="intensity = 0")
    pid = int(_status(config)["toolsets"][2])
    os.kill(pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == 2
    log = (tmp_path / "serve.log").read_text()
    assert "more than 0 restarts within 30 s" in log


def test_a_process_group_shares_one_process_and_restarts_together(served):
    config, _ = served(topology='groups = [["glasses", "session", "llm"]]')
    pids = {name: int(row[2]) for name, row in _status(config).items()}
    assert pids["glasses"] == pids["session"] == pids["llm"], "the group is one process"
    assert len(set(pids.values())) == 4, "the other three actors run alone"
    said = _cli(config, "say", "--session", "g1", "--timeout", "20", "the matrix film")
    assert said.returncode == 0, said.stderr
    assert "Matrix" in said.stdout.splitlines()[-1]

    os.kill(pids["session"], signal.SIGKILL)
    def group_restarted():
        rows = _status(config)
        return all(rows[n][1] == "yes" and int(rows[n][2]) != pids[n] and rows[n][3] == "1"
                   for n in ("glasses", "session", "llm")) and rows
    rows = poll(group_restarted)
    assert int(rows["toolsets"][2]) == pids["toolsets"] and rows["toolsets"][3] == "0", "the others keep running"
    said = _cli(config, "say", "--session", "g2", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip().splitlines()[-1].startswith("Sure.")


async def _running(client, call_id: str) -> bool:
    import protocol as p

    return isinstance(await client.ask("toolsets", p.ToolRunning(call_id=call_id), session="s1"), p.Ok)


async def test_a_crashed_media_executor_is_restarted_alone_and_other_calls_are_untouched(served):
    """The MediaExecutor is a process of its own: killed while an MCP call runs in the
    ToolsetSupervisor, that call still answers, nothing else restarts, and media works again."""
    import anyio

    import protocol as p
    from actors.base import Endpoint
    from core.config import load_config

    config_path, _ = served(extra=MCP_SERVERS)
    pids = {name: int(row[2]) for name, row in _status(config_path).items()}
    poll(lambda: "available" in _cli(config_path, "toolsets", "list").stdout.split("notes")[-1].split("\n")[0])
    client = Endpoint(load_config(str(config_path)), name="test")
    async with client.running():
        first = await client.ask("media", p.ToolInvoke(call_id="m1", tool="media_search", args={"query": "alien"}),
                                 session="s1", timeout=10)
        answers = {}
        async with anyio.create_task_group() as tg:
            async def export():
                answers["export"] = await client.ask("toolsets", p.ToolInvoke(
                    call_id="n1", tool="notes_export", args={"seconds": "2"}), session="s1", timeout=10)
            tg.start_soon(export)
            await until(lambda: _running(client, "n1"))  # the MCP call runs in the ToolsetSupervisor's process
            os.kill(pids["media"], signal.SIGKILL)
        rows = await anyio.to_thread.run_sync(lambda: poll(
            lambda: (s := _status(config_path)) and s["media"][1] == "yes" and int(s["media"][2]) != pids["media"] and s))
        again = await client.ask("media", p.ToolInvoke(call_id="m2", tool="media_search", args={"query": "alien"}),
                                 session="s1", timeout=10)
    assert first.ok and "Alien" in first.text
    assert answers["export"].ok, answers["export"]
    assert rows["media"][3] == "1"
    assert all(int(rows[name][2]) == pids[name] and rows[name][3] == "0" for name in pids if name != "media"), rows
    assert again.ok and "Alien" in again.text
