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

from cluster.pgserver import find_bin
from phone.client import PhoneClient, PhoneError
from harness import free_port_block
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
    (["--nodes", "70000"], "--nodes must be 1..1000 (got 70000)"),
    (["--nodes", "0"], "--nodes must be 1..1000 (got 0)"),
])
def test_a_base_port_whose_ports_do_not_fit_is_one_clear_line(tmp_path, argv, says):
    up = _run("cluster", "up", "--dir", str(tmp_path / "cluster"), *argv, env=_env(), timeout=60)
    assert up.returncode == 1 and "Traceback" not in up.stderr
    lines = up.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"porfiry: cluster: {says}"), lines
    assert not (tmp_path / "cluster").exists(), "nothing was started"


@needs_cluster
async def test_every_node_runs_on_the_config_file_given_to_cluster_up(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="pfc"))  # short: the nodes' ipc sockets and PostgreSQL's live here
    root.chmod(0o755)  # PostgreSQL runs as another user when we are root
    keys = tmp_path / "keys"
    keyfiles.generate(keys, "pixel", authorize=True)
    config = tmp_path / "cluster.toml"
    # its own profile (the nodes would exit on one they do not know) and CURVE on the phone endpoint
    config.write_text(f'[llm]\nprofile = "mine"\n[llm.profiles.mine]\nkind = "scripted"\nmodel = "scripted"\n'
                      f'[phone]\ncurve = true\nkeys_dir = "{keys}"\n[node]\nlease_s = 2.0\nheartbeat_s = 0.3\n')
    env = _env()
    # below the ephemeral range, in this worker's own share: a port the system picked for
    # someone's outgoing connection was taken between our check and a node's bind (CI, stop 63)
    base = free_port_block(3)
    try:
        up = await anyio.to_thread.run_sync(lambda: _run("--config", str(config), "cluster", "up", "--nodes", "2",
                                                         "--dir", str(root), "--base-port", str(base), "--inproc", env=env))
        assert up.returncode == 0, up.stderr + "".join(p.read_text() for p in root.glob("n*/node.log"))
        endpoint = json.loads((root / "cluster.json").read_text())["endpoint"]
        with anyio.fail_after(60):
            for attempt in range(4):  # HAProxy spreads connections: no key is let in by any node
                with pytest.raises(PhoneError):
                    async with PhoneClient(endpoint, client_id=f"stranger{attempt}", connect_timeout_s=1.0):
                        pass
            async with PhoneClient(endpoint, client_id="pixel", curve=keyfiles.load_phone_keys(keys, "pixel")) as pixel:
                answer = await pixel.turn("s1", "hello there", timeout=20)
        assert "hello there" in answer.final_text  # the scripted profile "mine" answered
    finally:
        await anyio.to_thread.run_sync(lambda: _run("cluster", "down", "--dir", str(root), env=env))
        shutil.rmtree(root, ignore_errors=True)

