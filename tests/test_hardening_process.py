"""Issue 17 against a real `run.py serve` (a process per actor over ipc://, the phone over tcp://):
the attacks that need whole processes."""
import os
import signal
import subprocess
import sys
import time

from test_process_mode import REPO, _cli, _status, served  # noqa: F401 - served is a fixture


def test_a_second_serve_with_the_same_config_exits_at_once_and_leaves_the_first_untouched(served, tmp_path):
    config, first = served()
    pids = {name: int(row[2]) for name, row in _status(config).items()}
    started = time.monotonic()
    second = subprocess.run([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO,
                            capture_output=True, text=True, timeout=30)
    assert second.returncode == 1
    assert f"another Porfiry runtime is running here (pid {first.pid}); stop it or set topology.ipc_dir" in second.stderr
    assert "Traceback" not in second.stderr
    assert time.monotonic() - started < 15  # "at once": no actor was started
    assert first.poll() is None
    status = _status(config)
    assert {name: int(row[2]) for name, row in status.items()} == pids
    assert all(row[1] == "yes" for row in status.values())
    said = _cli(config, "say", "--session", "one", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    # After the first one stops, the lock is free again.
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=30) == 0
    third = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(3)
        assert third.poll() is None, third.stderr.read().decode()
    finally:
        third.send_signal(signal.SIGTERM)
        third.wait(timeout=30)
