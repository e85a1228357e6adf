"""Issue 51, finding 15: `run.py say` runs at once on different sessions share one tokens file
(var/phone-credentials/CLIENT.json); none of them loses another's token."""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from harness import poll
from phone.credentials import SessionTokens

REPO = Path(__file__).resolve().parent.parent

_WRITER = """
import pathlib, sys, time
from phone.credentials import SessionTokens
path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4])
pathlib.Path(f"{go}-{name}").touch()
while not go.exists():  # all writers start together
    time.sleep(0.001)
for k in range(count):
    SessionTokens(path).set(f"{name}-{k}", f"token-{name}-{k}")  # what one `say` does: read, then set its own
"""


def test_writers_in_several_processes_at_once_lose_no_token(tmp_path):
    path = tmp_path / "phone-credentials" / "root.json"
    go = tmp_path / "go"
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"w{i}", "40", str(go)], cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.PIPE, text=True)
               for i in range(6)]
    poll(lambda: all(Path(f"{go}-w{i}").exists() or w.poll() is not None for i, w in enumerate(writers)), every_s=0.05)
    go.touch()
    for writer in writers:
        assert writer.wait(timeout=120) == 0, writer.stderr.read()
    kept = json.loads(path.read_text())
    assert kept == {f"w{i}-{k}": f"token-w{i}-{k}" for i in range(6) for k in range(40)}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert SessionTokens(path).get("w3-17") == "token-w3-17"
    assert sorted(p.name for p in path.parent.iterdir()) == ["root.json", "root.json.lock"], "no temporary file left"
