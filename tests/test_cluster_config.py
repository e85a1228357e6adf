"""Issue 51, findings 2 and 6: `run.py --config FILE cluster up` runs every node on FILE (its
authentication, its model profile), and a --base-port whose derived ports do not fit is one clear
line, not a traceback."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from cluster.pgserver import find_bin, free_port
from phone.client import PhoneClient, PhoneError
from transport import keys as keyfiles

REPO = Path(__file__).resolve().parent.parent
needs_cluster = pytest.mark.skipif(
    not (find_bin("initdb") and (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists())),
    reason="needs PostgreSQL's initdb and HAProxy (`make test` installs Debian's postgresql and haproxy)")


def _run(*argv, env, timeout=180):
    return subprocess.run([sys.executable, str(REPO / "run.py"), *argv], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PORFIRY_")}  # the file alone says


@pytest.mark.parametrize("argv, says", [
    (["--base-port", "65534"], "--base-port 65534 with 3 node(s) needs ports 65534..65537; a port is 1..65535, "
                               "so --base-port must be 1..65532"),
    (["--base-port", "600000"], "--base-port 600000 with 3 node(s) needs ports 600000..600003"),
    (["--base-port", "0", "--nodes", "2"], "--base-port 0 with 2 node(s) needs ports 0..2"),
])
def test_a_base_port_whose_ports_do_not_fit_is_one_clear_line(tmp_path, argv, says):
    up = _run("cluster", "up", "--dir", str(tmp_path / "cluster"), *argv, env=_env(), timeout=60)
    assert up.returncode == 1 and "Traceback" not in up.stderr
    lines = up.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"porfiry: cluster: {says}"), lines
    assert not (tmp_path / "cluster").exists(), "nothing was started"
