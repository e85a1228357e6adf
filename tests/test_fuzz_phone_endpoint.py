"""Issue 17: the phone endpoint of a real `run.py serve` (a process per actor) fuzzed with
hypothesis. Wire messages are built from the real protocol Structs (every phone -> runtime
message, envelope fields included), encoded by the real codec, then mutated: truncated, bytes
flipped or inserted, a field swapped for a value of another type, a frame split in two. After
each input a healthy phone must still be answered, every answer to the fuzzer must be a valid
envelope of a phone-bound message, and at the end no actor has restarted."""
import shutil
import signal
import subprocess
import sys
import tempfile

import msgspec
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import protocol as p
from core.config import load_config
from test_hardening_process import scripted
from harness import poll
from test_process_mode import REPO, _cli, _status, _write_config

ANSWERS = (p.Ok, p.ErrorReply, p.Ack, p.Busy, p.RateLimited, p.Display, p.TurnDone, p.PlaybackCommand)

texts = st.text(max_size=40)
ids = st.text(max_size=24)
floats = st.floats(allow_nan=True, allow_infinity=True)
bodies = st.one_of(
    st.builds(p.SessionStart, event_id=ids, ts=floats, token=texts),
    st.builds(p.SessionEnd, event_id=ids, ts=floats, token=texts),
    st.builds(p.UserText, event_id=ids, ts=floats, text=st.text(max_size=300), token=texts),
    st.builds(p.UserInterrupt, event_id=ids, ts=floats, token=texts),
    st.builds(p.ButtonPress, event_id=ids, ts=floats, button=texts, token=texts),
    st.builds(p.PlaybackStatus, event_id=ids, ts=floats, task_id=ids, state=texts, detail=texts, token=texts),
    st.builds(p.Hello, client=texts),
)
envelopes = st.builds(p.Envelope, body=bodies, id=ids, sender=texts, session=st.sampled_from(["", "f1", "f2"]) | ids,
                      corr=ids, v=st.sampled_from([1, 1, 1, 0, 2, -1, 2**40]), ts=floats)
odd_values = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), floats, texts, st.binary(max_size=20),
                       st.lists(st.integers(-2**63, 2**63 - 1), max_size=3), st.dictionaries(texts, st.integers(-2**63, 2**63 - 1), max_size=3))


@st.composite
def wire_messages(draw) -> list[bytes]:
    env = draw(envelopes)
    data = p.Codec().encode(env)
    how = draw(st.sampled_from(["as is", "truncate", "flip", "insert", "swap field", "drop field", "split", "huge string"]))
    if how == "truncate":
        data = data[: draw(st.integers(0, max(0, len(data) - 1)))]
    elif how == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    elif how == "insert":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    elif how in ("swap field", "drop field"):
        tree = msgspec.msgpack.decode(data)
        where = tree["body"] if draw(st.booleans()) else tree
        key = draw(st.sampled_from(sorted(where)))
        if how == "swap field":
            where[key] = draw(odd_values)
        else:
            del where[key]
        data = msgspec.msgpack.encode(tree)
    elif how == "split":
        at = draw(st.integers(0, len(data)))
        return [data[:at], data[at:]]
    elif how == "huge string":
        tree = msgspec.msgpack.decode(data)
        tree["body"]["text" if tree["body"].get("type") == "UserText" else "event_id"] = "x" * draw(st.sampled_from([5000, 2 << 20]))
        data = msgspec.msgpack.encode(tree)
    return [data]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One runtime for all the examples (module scope: its own ipc dir, not the fixture's)."""
    tmp = tmp_path_factory.mktemp("fuzz")
    ipc_dir = tempfile.mkdtemp(prefix="pf")
    config = _write_config(tmp, ipc_dir, phone="events_per_s = 100000.0", supervisor="intensity = 10", llm=scripted())
    endpoint = load_config(config, env={}).phone.endpoint
    log = open(tmp / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO,
                            stdout=log, stderr=subprocess.STDOUT)
    poll(lambda: (s := _status(config)) and len(s) == 6 and all(row[1] == "yes" for row in s.values()))
    ctx = zmq.Context()
    fuzzer, healthy = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
    for sock, name in ((fuzzer, b"fuzz/1"), (healthy, b"healthy/1")):
        sock.setsockopt(zmq.IDENTITY, name)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
    yield config, fuzzer, healthy
    ctx.destroy(linger=0)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    shutil.rmtree(ipc_dir, ignore_errors=True)


codec = p.Codec(4 << 20)


def _answers(sock: zmq.Socket) -> list[p.Envelope]:
    got = []
    while sock.poll(0):
        got.append(codec.decode(sock.recv()))  # raises if the runtime ever sends something invalid
    return got


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(frames=wire_messages())
def test_fuzzed_phone_messages_are_answered_or_dropped_and_nobody_else_notices(served, frames):
    config, fuzzer, healthy = served
    fuzzer.send_multipart(frames)
    hello = p.Envelope(body=p.Hello(client="healthy"))
    healthy.send(codec.encode(hello))
    assert healthy.poll(10_000), "the phone endpoint stopped answering"
    while True:
        env = codec.decode(healthy.recv())
        if env.corr == hello.id:
            assert isinstance(env.body, p.Ok)
            break
    for env in _answers(fuzzer):
        assert isinstance(env.body, ANSWERS), env
        if isinstance(env.body, p.ErrorReply):
            assert env.body.code and env.body.detail


def test_after_the_fuzzing_no_actor_restarted_and_the_runtime_serves(served):
    config, _, _ = served
    status = _status(config)
    assert len(status) == 6 and all(row[1] == "yes" and row[3] == "0" for row in status.values()), status
    said = _cli(config, "say", "--session", "after-fuzz", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
