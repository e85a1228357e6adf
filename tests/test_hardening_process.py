"""Issue 17 against a real `run.py serve` (a process per actor over ipc://, the phone over tcp://):
the attacks that need whole processes."""
import os
import signal
import subprocess
import sys
import threading
import time

from harness import poll
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
        serving = lambda: (s := _status(config)) and len(s) == 6 and all(  # noqa: E731
            row[1] == "yes" and int(row[2]) not in pids.values() for row in s.values())
        poll(lambda: third.poll() is not None or serving())
        assert third.poll() is None, third.stderr.read().decode()
        assert serving(), "the third serve runs its own actors"
    finally:
        third.send_signal(signal.SIGTERM)
        third.wait(timeout=30)


# ---- a runtime whose config the test shapes ---------------------------------------------------
import anyio  # noqa: E402
import pytest  # noqa: E402
import zmq  # noqa: E402

import protocol as p  # noqa: E402
from core.config import load_config  # noqa: E402
from phone.client import EventRejected, PhoneClient  # noqa: E402


def scripted(first_token_delay_s: float = 0.0, token_delay_s: float = 0.0) -> str:
    """The [llm] lines of a scripted model that answers at once unless told to dawdle."""
    return f"""profile = "scripted"

[llm.profiles.scripted]
kind = "scripted"
model = "scripted"
first_token_delay_s = {first_token_delay_s}
token_delay_s = {token_delay_s}"""


@pytest.fixture
def runtime(served):
    """`served` with ten restarts allowed and `scripted(...)` as the model: (config, phone endpoint)."""
    def start(*, phone: str = "", **delays: float):
        config, _ = served(phone=phone, supervisor="intensity = 10", llm=scripted(**delays))
        return config, load_config(config, env={}).phone.endpoint

    return start


def _pids(config) -> dict[str, int]:
    return {name: int(row[2]) for name, row in _status(config).items()}


def _kill_and_wait_restart(config, actor: str, old: int | None = None) -> None:
    """SIGKILL `actor` (its pid `old`, read before the moment to kill it comes: a CLI `status` takes
    seconds on a loaded machine, past a window the test opened) and wait for its restart."""
    old = _pids(config)[actor] if old is None else old
    os.kill(old, signal.SIGKILL)
    poll(lambda: (row := _status(config).get(actor)) and row[1] == "yes" and int(row[2]) != old)


def _in_flight(config) -> int:
    """Model requests the LLM worker is working on (what `run.py llm status` tells an operator),
    asked from here: a CLI process per look would start slower than the model answers."""
    from actors.base import Endpoint

    async def ask() -> int:
        client = Endpoint(load_config(str(config), env={}), name="test")
        async with client.running():
            return (await client.ask("llm", p.LLMStatusRequest(), timeout=5)).in_flight

    return anyio.run(ask, backend="trio")


class _Say:
    """`run.py say` in the background; `lines`: what it has printed so far, read as it comes."""

    def __init__(self, config, session: str, text: str):
        self.proc = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "say", "--session", session,
                                      "--timeout", "40", text], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def finish(self) -> tuple[int, list[str], str]:
        """Its exit status, every line it printed and its stderr, once it has exited."""
        self.proc.wait(timeout=60)
        self._reader.join(timeout=10)
        return self.proc.returncode, self.lines, self.proc.stderr.read()


# ---- finding 1 through the CLI: a killed bridge comes back knowing who owns what ---------------
def test_no_takeover_after_the_bridge_process_is_killed(runtime):
    config, endpoint = runtime()
    said = _cli(config, "say", "--client-id", "alice", "--session", "s1", "--timeout", "20", "my secret is 1234")
    assert said.returncode == 0, said.stderr
    _kill_and_wait_restart(config, "glasses")
    intruder = _cli(config, "say", "--client-id", "mallory", "--session", "s1", "--timeout", "20", "what is my secret?")
    assert intruder.returncode == 1 and "forbidden" in intruder.stderr, intruder

    async def same_name_without_the_token():
        async with PhoneClient(endpoint, client_id="alice") as impostor:
            await impostor.send_text("s1", "I am alice, honest")

    with pytest.raises(EventRejected, match="forbidden"):
        anyio.run(same_name_without_the_token, backend="trio")
    again = _cli(config, "say", "--client-id", "alice", "--session", "s1", "--timeout", "20", "hello there")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines()[-1].startswith("Sure.")


# ---- finding 3: a flood of valid events from one connection does not crash the session actor ----
def test_twenty_thousand_session_starts_from_one_connection_crash_nothing(runtime, zmq_ctx):
    # the per-connection limits are lifted, so the flood reaches the session actor in full
    config, endpoint = runtime(phone="events_per_s = 1000000.0\nsessions_per_connection = 1000000\npending_per_connection = 1000000")
    before = _pids(config)
    flooder = zmq_ctx.socket(zmq.DEALER)
    flooder.setsockopt(zmq.IDENTITY, b"flood/1")
    flooder.setsockopt(zmq.SNDHWM, 0)
    flooder.setsockopt(zmq.LINGER, 0)
    flooder.connect(endpoint)
    codec = p.Codec()
    answers: dict[str, int] = {}
    errors: list[str] = []
    for i in range(20_000):
        env = p.Envelope(body=p.SessionStart(event_id=f"e{i}", ts=0.0), session=f"flood-{i}")
        flooder.send(codec.encode(env))
    # until the runtime has gone quiet: on a loaded CI machine the 20,000 turns take minutes, and a
    # turn asked for before they are done waits behind them (what is judged is that it is answered)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and flooder.poll(5000):
        body = codec.decode(flooder.recv()).body
        kind = type(body).__name__
        answers[kind] = answers.get(kind, 0) + 1
        if isinstance(body, p.ErrorReply):
            errors.append(f"{body.code}: {body.detail}")
    # an event not acked here (Busy, or the session actor behind) is one a real phone resends; how
    # many of the answers are acks depends on the machine's load (4,800 in one run, 960 in a loaded
    # CI, with all 20,000 turns done), so the flood is judged reached by the answers of either kind
    reached = answers.get("Ack", 0) + answers.get("TurnDone", 0)
    assert reached > 1000 and set(answers) <= {"Ack", "Busy", "TurnDone"}, (answers, errors[:3])
    status = _status(config)
    assert _pids(config) == before, "no actor was restarted"
    assert all(row[3] == "0" for row in status.values()), status
    said = _cli(config, "say", "--session", "after", "--timeout", "60", "hello there", timeout=90)
    assert said.returncode == 0, said.stderr


# ---- finding 8: SIGKILL under way loses nothing on our side ------------------------------------
def test_a_request_in_flight_to_a_killed_llm_worker_is_retried_on_the_restarted_one(runtime, tmp_path):
    config, _ = runtime(first_token_delay_s=6.0)
    worker = _pids(config)["llm"]
    say = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "say", "--session", "k1", "--timeout", "40",
                            "hello there"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    poll(lambda: _in_flight(config), every_s=0.05)  # the request is at the worker, which waits 6 s before its first token
    _kill_and_wait_restart(config, "llm", worker)
    out, err = say.communicate(timeout=60)
    assert say.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("Sure.")
    assert "model is unavailable" not in out
    assert "the LLM worker restarted during a request; sent it again" in (tmp_path / "serve.log").read_text()


def test_a_turn_under_way_reaches_its_phone_across_a_kill_of_the_bridge(runtime):
    config, _ = runtime(first_token_delay_s=6.0)
    bridge = _pids(config)["glasses"]
    say = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "say", "--session", "k2", "--timeout", "40",
                            "hello there"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    poll(lambda: _in_flight(config), every_s=0.05)  # acked; the model is thinking
    _kill_and_wait_restart(config, "glasses", bridge)
    out, err = say.communicate(timeout=60)
    assert say.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("Sure.")


def test_a_killed_llm_worker_mid_answer_is_asked_again_and_its_half_answer_wiped(runtime):
    config, _ = runtime(token_delay_s=0.5)  # "Sure. Here is a short answer to: ..." word by word
    worker = _pids(config)["llm"]
    started = time.monotonic()
    say = _Say(config, "k3", "hello there")
    poll(lambda: any(line.startswith("… ") for line in say.lines), every_s=0.05)  # part of the answer is on the glasses
    _kill_and_wait_restart(config, "llm", worker)
    returncode, printed, err = say.finish()
    out = "\n".join(printed).strip()
    lines = out.splitlines()
    assert returncode == 0, err
    assert any(line.startswith("… Sure.") for line in lines), out
    assert lines[-1] == "Sure. Here is a short answer to: hello there", out  # the restarted worker's whole answer
    assert time.monotonic() - started < 30, "not after llm_timeout_s (60 s)"
