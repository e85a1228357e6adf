"""Issue 38, finding 11: in tcp mode the internal bus is authenticated (ZeroMQ CURVE with the bus
key pair, transport/bus.py). Through the real deployment: `run.py serve` with each actor in its
own OS process over tcp://, a raw DEALER as the attacker, the CLI as the operator."""
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq
import zmq.auth
import zmq.utils.z85

import protocol as p
from core.config import TopologyConfig
from harness import free_port_block, poll
from transport.bus import bus_curve_on

REPO = Path(__file__).resolve().parent.parent
ACTOR_PORTS = {"supervisor": 0, "toolsets": 2, "llm": 3, "session": 5}


def _cli(config: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run.py", "--config", str(config), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _all_alive(config: Path) -> bool:
    status = _cli(config, "status")
    rows = [line.split() for line in status.stdout.splitlines()[2:] if line.strip()]
    return status.returncode == 0 and len(rows) == 6 and all(row[1] == "yes" for row in rows)


@pytest.fixture(params=["a process per actor", "glasses+session grouped, phone CURVE on"])
def tcp_runtime(tmp_path, request):
    """`run.py serve` in tcp mode on loopback (bus_curve "auto"): (config, keys_dir, base_port).
    The second shape has one process serve ZAP for two domains: the bus's and the phone's."""
    base = free_port_block(8)  # the actors' tcp ports
    keys = tmp_path / "keys"
    grouped = request.param.startswith("glasses")
    config = tmp_path / "porfiry.toml"
    config.write_text(f"""
[topology]
mode = "tcp"
tcp_host = "127.0.0.1"
tcp_base_port = {base}
ipc_dir = "{tmp_path / 'ipc'}"  # its instance lock: not the default one another test's runtime holds
groups = {'[["glasses", "session"]]' if grouped else '[]'}

[phone]
endpoint = "tcp://127.0.0.1:{base + 7}"
keys_dir = "{keys}"
curve = {'true' if grouped else 'false'}

[llm]
profile = "scripted"

[skills]
user_dir = "{tmp_path / 'user-skills'}"

[toolsets.media]
db_path = "{tmp_path / 'media.sqlite3'}"

[storage]
path = "{tmp_path / 'porfiry.sqlite3'}"
""")
    if grouped:
        assert _cli(config, "keys", "--name", "phone").returncode == 0
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        poll(lambda: _all_alive(config))
        yield config, keys, base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


class Peer:
    """A raw DEALER on an actor's tcp port, with or without CURVE keys."""

    def __init__(self, ctx: zmq.Context, address: str, keys: tuple[bytes, bytes, bytes] | None = None):
        self.codec = p.Codec(1 << 20)
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        if keys is not None:
            self.sock.curve_serverkey, self.sock.curve_publickey, self.sock.curve_secretkey = keys
        self.sock.connect(address)

    def ask(self, body: p.Msg, session: str = "", wait_ms: int = 3000) -> p.Msg | None:
        self.sock.send(self.codec.encode(p.Envelope(body=body, sender="intruder", session=session)))
        if not self.sock.poll(wait_ms):
            return None
        return self.codec.decode(self.sock.recv()).body


def _event(text: str) -> p.Event:
    return p.Event(event_id=p.new_id(), kind="user_text", source="user", channel="speech", content=text, ts=time.time())


def test_without_the_bus_key_nothing_reaches_an_actor_and_the_cli_still_works(tcp_runtime):
    config, keys, base = tcp_runtime
    secret = keys / "bus.key_secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600  # made at first start, the runtime's user only
    bus_public, bus_secret = zmq.auth.load_certificate(secret)
    stranger_public, stranger_secret = zmq.curve_keypair()
    address = {name: f"tcp://127.0.0.1:{base + port}" for name, port in ACTOR_PORTS.items()}
    ctx = zmq.Context()
    try:
        for keys_tried in (None, (bus_public, stranger_public, stranger_secret)):  # plain; CURVE, wrong key
            assert Peer(ctx, address["session"], keys_tried).ask(p.DeliverEvent(event=_event("delete all")),
                                                                 session="victim") is None
            assert Peer(ctx, address["llm"], keys_tried).ask(p.UseProfile(profile="scripted")) is None
            assert Peer(ctx, address["session"], keys_tried).ask(p.SessionDelete(), session="victim") is None
            assert Peer(ctx, address["supervisor"], keys_tried).ask(p.Ping(), wait_ms=1000) is None
        # the same raw peer holding the bus key is answered: what kept the others out is the key
        pong = Peer(ctx, address["toolsets"], (bus_public, bus_public, bus_secret)).ask(p.Ping())
        assert isinstance(pong, p.Pong) and pong.actor == "toolsets"
    finally:
        ctx.destroy(linger=0)
    assert _all_alive(config)  # the runtime kept serving, and the CLI (which reads the key) works
    said = _cli(config, "say", "--session", "owner", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    llm = _cli(config, "llm", "status")
    assert "active profile: scripted" in llm.stdout, llm.stderr
    assert _cli(config, "llm", "use", "scripted").returncode == 0
    listed = _cli(config, "toolsets", "list")
    assert "media" in listed.stdout, listed.stderr
    skills = _cli(config, "skills", "list")
    assert skills.returncode == 0 and "media" in skills.stdout, skills.stderr
    ctx = zmq.Context()
    try:  # SessionDelete from a holder of the bus key is served (the CLI's `sessions delete` sends it)
        deleted = Peer(ctx, address["session"], (bus_public, bus_public, bus_secret)).ask(p.SessionDelete(),
                                                                                           session="owner")
    finally:
        ctx.destroy(linger=0)
    assert isinstance(deleted, p.Ok) and deleted.detail == "deleted"


def test_a_cli_without_the_bus_key_says_so_in_one_line(tmp_path):
    config = tmp_path / "porfiry.toml"
    config.write_text(f'[topology]\nmode = "tcp"\n[phone]\nkeys_dir = "{tmp_path / "nokeys"}"\n')
    status = _cli(config, "status")
    assert status.returncode != 0
    assert status.stderr.strip().startswith("porfiry: cannot authenticate to the runtime's bus: cannot read ")
    assert "Traceback" not in status.stderr and len(status.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("mode,setting,on", [
    ("tcp", "auto", True), ("tcp", "on", True), ("tcp", "off", False), ("ipc", "auto", False),
    ("ipc", "on", True), ("inproc", "on", False)])
def test_bus_curve_is_on_by_default_in_tcp_mode_loopback_included(mode, setting, on):
    assert bus_curve_on(mode, setting) is on
    assert TopologyConfig().bus_curve == "auto"


def test_one_zap_service_per_context_answers_each_domain_by_its_own_check():
    from actors.glasses import ZAP_DOMAIN as PHONE_DOMAIN
    from transport.bus import ZAP_DOMAIN as BUS_DOMAIN
    from transport.bus import BusKeys, zap_answer
    from transport.zap import ZapService

    bus_public, bus_secret = zmq.curve_keypair()
    phone_public, _ = zmq.curve_keypair()
    service = ZapService(zmq.Context.instance())
    service.answers[BUS_DOMAIN] = lambda request: zap_answer(request, BusKeys(bus_public, bus_secret))
    service.answers[PHONE_DOMAIN] = lambda request: [request[0], b"", b"1.0", request[3], b"200", b"phone", b"", b""]

    def request(domain, key):
        return [b"peer", b"", b"1.0", b"1", domain, b"127.0.0.1", b"", b"CURVE", zmq.utils.z85.decode(key)]
    assert service.answer(request(BUS_DOMAIN, bus_public))[4:7] == [b"200", b"OK", b"bus"]
    assert service.answer(request(BUS_DOMAIN, phone_public))[4:6] == [b"400", b"not a bus key"]
    assert service.answer(request(PHONE_DOMAIN, phone_public))[4:6] == [b"200", b"phone"]
    assert service.answer(request(b"other", bus_public))[4:6] == [b"400", b"unknown ZAP domain"]
    assert service.answer([b"peer"])[4] == b"500"
    assert service.answer(request(BUS_DOMAIN, bus_public)[:8] + [])[4:6] == [b"400", b"CURVE required"]
