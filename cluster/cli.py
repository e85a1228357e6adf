"""`python run.py cluster up|status|down`: several runtime nodes on one PostgreSQL behind HAProxy,
on this machine (docs/several-nodes.md).

All state of one cluster lives under one directory (`--dir`, default var/cluster): the throwaway
PostgreSQL (when no storage.url is configured), each node's ipc_dir and log, HAProxy's config,
and `cluster.json` (what `status` and `down` read). Ports: HAProxy's phone endpoint is
`--base-port`, node i's phone endpoint `--base-port + 1 + i`; two clusters run side by side with
other directories and base ports.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from core.config import Config

STATE_FILE = "cluster.json"
NODE_START_TIMEOUT_S = 120.0  # the embedded model may take a while before a node binds its phone port
STOP_TIMEOUT_S = 15.0


@dataclass
class NodeState:
    name: str
    port: int
    pid: int
    dir: str


@dataclass
class ClusterState:
    endpoint: str
    storage_url: str
    pg_root: str = ""  # the throwaway PostgreSQL's directory; "" when storage.url is the user's
    haproxy_pid: int = 0
    nodes: list[NodeState] = field(default_factory=list)

    def save(self, root: Path) -> None:
        (root / STATE_FILE).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, root: Path) -> ClusterState | None:
        try:
            raw = json.loads((root / STATE_FILE).read_text())
        except (OSError, ValueError):
            return None
        return cls(**{**raw, "nodes": [NodeState(**n) for n in raw.get("nodes", [])]})


def register(subparsers, load_config: Callable[[argparse.Namespace], Config]) -> None:
    cluster = subparsers.add_parser("cluster", help="several nodes on one PostgreSQL behind HAProxy, on this machine",
                                    description="Start, inspect or stop a local cluster (docs/several-nodes.md).")
    action = cluster.add_subparsers(dest="action", required=True)
    up = action.add_parser("up", help="start PostgreSQL (unless storage.url is set), N nodes and HAProxy")
    up.add_argument("--nodes", type=int, default=3, help="runtime nodes (default 3)")
    up.add_argument("--base-port", type=int, default=7650, help="HAProxy's phone port; node i uses base+1+i (default 7650)")
    up.add_argument("--inproc", action="store_true", help="each node's actors in one process (lighter)")
    for sub in (up, action.add_parser("status", help="nodes, their sessions, PostgreSQL, HAProxy"),
                action.add_parser("down", help="stop HAProxy, the nodes and the throwaway PostgreSQL")):
        sub.add_argument("--dir", default="var/cluster", help="all of this cluster's state (default var/cluster)")
    cluster.set_defaults(func=lambda args: cmd_cluster(args, load_config(args)))


def cmd_cluster(args: argparse.Namespace, config: Config) -> int:
    root = Path(args.dir).resolve()
    if args.action == "up":
        config_path = str(Path(args.config).resolve()) if args.config else None
        return cluster_up(config, root, args.nodes, args.base_port, inproc=args.inproc, config_path=config_path)
    if args.action == "status":
        return cluster_status(root)
    return cluster_down(root)


def _fail(text: str) -> int:
    print(f"porfiry: cluster: {text}", file=sys.stderr)
    return 1


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child, not reaped yet) is dead
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def port_error(base_port: int, nodes: int) -> str:
    """Why the ports `cluster up` derives (HAProxy's at base, node i's at base+1+i) cannot be used,
    or "" when they all fit 1..65535."""
    if not 1 <= nodes <= 1000:
        return f"--nodes must be 1..1000 (got {nodes})"
    last = base_port + nodes
    if not 1 <= base_port or last > 65535:
        return (f"--base-port {base_port} with {nodes} node(s) needs ports {base_port}..{last}; a port is 1..65535, "
                f"so --base-port must be 1..{65535 - nodes}")
    return ""


def cluster_up(config: Config, root: Path, nodes: int, base_port: int, *, inproc: bool = False,
               config_path: str | None = None) -> int:
    """`config_path`: the file given with --config, passed on to every node (None: the nodes read
    $PORFIRY_CONFIG or ./porfiry.toml, as this process did)."""
    wrong = port_error(base_port, nodes)
    if wrong:
        return _fail(wrong)
    haproxy = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    if haproxy is None:
        return _fail("HAProxy is not installed (Debian: apt-get install haproxy; `make test` installs it)")
    previous = ClusterState.load(root)
    if previous is not None and (_alive(previous.haproxy_pid) or any(_alive(n.pid) for n in previous.nodes)):
        return _fail(f"a cluster is already up in {root} ({previous.endpoint}); `run.py cluster down --dir {root}` first")
    busy = [port for port in range(base_port, base_port + nodes + 1) if _listening(port)]
    if busy:
        return _fail(f"port(s) {', '.join(map(str, busy))} are taken; choose another --base-port")
    root.mkdir(parents=True, exist_ok=True)
    state = ClusterState(endpoint=f"tcp://127.0.0.1:{base_port}", storage_url=config.storage.url)
    try:
        if not state.storage_url:
            state.storage_url, state.pg_root = _start_postgres(root)
        state.save(root)
        for index in range(nodes):
            state.nodes.append(_start_node(root, f"n{index + 1}", base_port + 1 + index, state.storage_url, inproc,
                                           config_path))
            state.save(root)
        _wait_for_nodes(state)
        state.haproxy_pid = _start_haproxy(haproxy, root, base_port, state.nodes)
        state.save(root)
    except ClusterError as exc:
        cluster_down(root, quiet=True)
        return _fail(str(exc))
    print(f"cluster up in {root}: {nodes} node(s), PostgreSQL {'in ' + state.pg_root if state.pg_root else 'at storage.url'}")
    print(f"phone endpoint: {state.endpoint}   (PORFIRY_PHONE_ENDPOINT={state.endpoint} python run.py say --session x \"привет\")")
    return 0


class ClusterError(Exception):
    pass


def _start_postgres(root: Path) -> tuple[str, str]:
    from cluster.pgserver import PgServer, PgServerError

    pg_root = root / "pg"
    # the socket's name carries the port: any number works, the socket lives in our own directory
    server = PgServer(pg_root, 5432)
    try:
        if not server.running():
            server.start()
    except PgServerError as exc:
        raise ClusterError(str(exc)) from None
    return server.url(), str(pg_root)


def _start_node(root: Path, name: str, port: int, url: str, inproc: bool, config_path: str | None = None) -> NodeState:
    node_dir = root / name
    (node_dir / "ipc").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PORFIRY_NODE_NAME": name, "PORFIRY_STORAGE_BACKEND": "postgres", "PORFIRY_STORAGE_URL": url,
           "PORFIRY_IPC_DIR": str(node_dir / "ipc"), "PORFIRY_PHONE_ENDPOINT": f"tcp://127.0.0.1:{port}",
           "PORFIRY_STORAGE_PATH": str(node_dir / "porfiry.sqlite3"),
           "PORFIRY_TOPOLOGY": "ipc"}  # nodes on one host: tcp ports from a config would collide
    run_py = Path(__file__).resolve().parent.parent / "run.py"
    argv = [sys.executable, str(run_py), *(["--config", config_path] if config_path else []),
            "serve", "--node", name, *(["--inproc"] if inproc else [])]
    with open(node_dir / "node.log", "ab") as log:
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)  # its own process group: `down` stops its actors too
    return NodeState(name=name, port=port, pid=process.pid, dir=str(node_dir))


def _wait_for_nodes(state: ClusterState) -> None:
    deadline = time.monotonic() + NODE_START_TIMEOUT_S
    for node in state.nodes:
        while not _listening(node.port):
            if not _alive(node.pid):
                raise ClusterError(f"node {node.name} exited at start; see {node.dir}/node.log")
            if time.monotonic() > deadline:
                raise ClusterError(f"node {node.name} did not open its phone port {node.port} in "
                                   f"{NODE_START_TIMEOUT_S:g} s; see {node.dir}/node.log")
            time.sleep(0.2)


def haproxy_config(base_port: int, nodes: list[NodeState], pidfile: Path) -> str:
    """TCP mode, health-checked by the node's ZeroMQ greeting; a phone's connection lives as long
    as the phone keeps it. A node marked down has its connections cut, so its phones reconnect to
    a live node at once."""
    servers = "\n".join(f"    server {n.name} 127.0.0.1:{n.port} check" for n in nodes)
    import resource

    # two descriptors per phone (its side and the node's): what this process may open, halved
    maxconn = max(256, min(50000, (resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 200) // 2))
    return f"""global
    daemon
    pidfile {pidfile}
    maxconn {maxconn}

defaults
    mode tcp
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout tunnel 1h
    retries 3
    option redispatch

frontend phones
    bind 127.0.0.1:{base_port}
    default_backend nodes

backend nodes
    balance leastconn
    # a node is up when it greets: ZeroMQ's first byte (0xFF) comes from the node's own process,
    # so a frozen node (SIGSTOP: its kernel still accepts connections) is marked down too
    option tcp-check
    tcp-check connect
    tcp-check expect binary ff
    timeout check 1s
    default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
{servers}
"""


def _start_haproxy(haproxy: str, root: Path, base_port: int, nodes: list[NodeState]) -> int:
    cfg, pidfile = root / "haproxy.cfg", root / "haproxy.pid"
    cfg.write_text(haproxy_config(base_port, nodes, pidfile))
    done = subprocess.run([haproxy, "-f", str(cfg)], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise ClusterError(f"haproxy failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) or not _listening(base_port):
        if time.monotonic() > deadline:
            raise ClusterError(f"haproxy did not listen on {base_port}")
        time.sleep(0.1)
    return int(pidfile.read_text().split()[0])


def _stop(pid: int, group: bool) -> None:
    if not _alive(pid):
        return
    with_signal = (lambda sig: os.killpg(pid, sig)) if group else (lambda sig: os.kill(pid, sig))
    try:
        with_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            with_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass


def cluster_down(root: Path, *, quiet: bool = False) -> int:
    state = ClusterState.load(root)
    if state is None:
        return 0 if quiet else _fail(f"no cluster in {root}")
    _stop(state.haproxy_pid, group=False)
    for node in state.nodes:
        _stop(node.pid, group=True)
    if state.pg_root:
        from cluster.pgserver import PgServer

        PgServer(Path(state.pg_root), 5432).stop()
    state.haproxy_pid, state.nodes = 0, []
    state.save(root)
    if not quiet:
        print(f"cluster in {root} is down (its data stays: PostgreSQL in {state.pg_root or 'storage.url'})")
    return 0


def cluster_status(root: Path) -> int:
    state = ClusterState.load(root)
    if state is None:
        return _fail(f"no cluster in {root}")
    from storage.postgres import redacted

    print(f"phone endpoint {state.endpoint}: HAProxy {'up' if _alive(state.haproxy_pid) else 'DOWN'}")
    print(f"PostgreSQL {redacted(state.storage_url)}")
    leases = _lease_table(state.storage_url)
    if isinstance(leases, str):
        print(f"  unreachable: {leases}")
        leases = {}
    print(f"{'node':<8} {'process':<8} {'phone port':<11} {'lease':<7} sessions")
    for node in state.nodes:
        alive, sessions = leases.get(node.name, (False, 0))
        print(f"{node.name:<8} {'up' if _alive(node.pid) else 'DOWN':<8} {node.port:<11} "
              f"{'alive' if alive else 'expired':<7} {sessions}")
    return 0


def _lease_table(url: str) -> dict[str, tuple[bool, int]] | str:
    import psycopg

    from storage import leases

    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            return {node: (alive, count) for node, alive, count in leases.node_table(conn, time.time())}
    except psycopg.Error as exc:
        return str(exc).strip()
