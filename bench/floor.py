"""`run.py bench --floor`: what one hop cannot cost less than on this machine.

- msgspec encode/decode (the runtime's own `protocol.Codec`) of a typical Envelope of each kind
  that crosses the hot path: a Generate of a media turn's prompt, an LLMChunk, a ToolInvoke, a
  ToolOutcome, a Display;
- a ZeroMQ round trip (DEALER -> ROUTER -> DEALER) of one such message within one process
  (inproc://) and between two processes (ipc://, the default topology), plain blocking pyzmq:
  no event loop, no Python of ours in between;
- per hop: half an inter-process round trip plus one encode and one decode - the least a message
  from one actor process to another costs, wall and CPU;
- the same inter-process round trip with both processes on one CPU: the difference is the price of
  waking a thread on another CPU;
- with a config: the turn's own work, without any hop (`bench.logic_floor`), and from it and the
  hop the floor of the seed's media turn - the most media turns per second this machine could
  serve, and the least time one takes.

The runtime's own hop adds its event loop (a wake-up, the pump, the mailbox, the handler) to
this floor.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import anyio
import msgspec
import zmq

import protocol as p
from bench.logic_floor import LogicFloor, MediaTurnFloor, measure_logic_floor, media_turn_floor
from bench.runtime import read_cpu_s
from core.config import Config

ECHO_CHILD = r"""
import os, sys, zmq
if len(sys.argv) > 2:  # pinned: every thread started from here on (ZeroMQ's I/O thread) inherits it
    os.sched_setaffinity(0, {int(sys.argv[2])})
ctx = zmq.Context()
sock = ctx.socket(zmq.ROUTER)
sock.bind(sys.argv[1])
sys.stdout.write("ready\n"); sys.stdout.flush()
while True:
    frames = sock.recv_multipart()
    if frames[1] == b"stop":
        break
    sock.send_multipart(frames)
"""


class CodecFloor(msgspec.Struct, kw_only=True):
    message: str
    bytes: int
    encode_us: float
    decode_us: float


class ZmqFloor(msgspec.Struct, kw_only=True):
    transport: str
    round_trip_us: float  # wall, back to back
    cpu_us_per_round_trip: float  # CPU of both sides together


class FloorReport(msgspec.Struct, kw_only=True):
    codec: list[CodecFloor]
    zmq: list[ZmqFloor]
    hop_us: float  # inter-process: half a round trip + one encode + one decode (a Generate: see codec)
    hop_cpu_us: float  # the CPU of that hop (both processes)
    message_bytes: int  # the payload the round trips carried (a ToolInvoke envelope)
    logic: list[LogicFloor] = []  # the turn's own work by kind (measured with a config)
    media_turn: MediaTurnFloor | None = None


def typical_messages() -> dict[str, p.Envelope]:
    """One envelope of each kind on the hot path, with realistic sizes: a media turn's last prompt."""
    from core.budget import default_catalog
    from core.prompt import build_prompt
    from core.skills_notice import SKILLS_HOWTO
    from core.toolsets import ToolsetRegistry

    registry = ToolsetRegistry(default_catalog())
    skills = [p.SkillEntry(name="media", description="Films: search, details, playback.")]
    prompt = build_prompt(registry, ["media"], skills, SKILLS_HOWTO)
    history = [
        p.ChatMessage(role="user", content="[User said] the matrix film"),
        p.ChatMessage(role="assistant", content="TOOL_CALL: read_skill|media"),
        p.ChatMessage(role="tool", name="read_skill", content="1. TOOL_CALL: enable_toolset|media\n2. TOOL_CALL: media_search|the title\n" * 2),
        p.ChatMessage(role="assistant", content="TOOL_CALL: media_search|the matrix"),
        p.ChatMessage(role="tool", name="media_search", content="m0001 — The Matrix (1999), dir. Wachowski, 136 min\n" * 5),
    ]
    messages = [p.ChatMessage(role="system", content=prompt.static), *history, p.ChatMessage(role="system", content=prompt.state)]
    session = "bench-123"
    return {
        "Generate": p.Envelope(body=p.Generate(request_id=p.new_id(), messages=messages, tools=registry.callable_tools(["media"])),
                               sender="session", session=session),
        "LLMChunk": p.Envelope(body=p.LLMChunk(request_id=p.new_id(), text="Here is what I found: m0001"),
                               sender="llm", session=session, corr=p.new_id()),
        "ToolInvoke": p.Envelope(body=p.ToolInvoke(call_id="a1b2c3d4e5f6", tool="media_search", args={"query": "the matrix"}),
                                 sender="session", session=session),
        "ToolOutcome": p.Envelope(body=p.ToolOutcome(call_id="a1b2c3d4e5f6", ok=True, text=history[-1].content),
                                  sender="toolsets", session=session, corr=p.new_id()),
        "Display": p.Envelope(body=p.Display(turn_id="a1b2c3d4e5f6", text="Here is what I found: m0001 — The Matrix", final=True),
                              sender="session", session=session),
    }


def _per_op_us(fn: Callable[[], object], seconds: float = 0.3) -> float:
    """Mean microseconds per call, over about `seconds` (after a short warm-up)."""
    for _ in range(200):
        fn()
    count, started = 0, time.perf_counter()
    while True:
        for _ in range(500):
            fn()
        count += 500
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return elapsed * 1e6 / count


def codec_floor(seconds: float = 0.3) -> list[CodecFloor]:
    codec = p.Codec()
    rows = []
    for name, envelope in typical_messages().items():
        data = codec.encode(envelope)
        rows.append(CodecFloor(message=name, bytes=len(data), encode_us=round(_per_op_us(lambda: codec.encode(envelope), seconds), 2),
                               decode_us=round(_per_op_us(lambda: codec.decode(data), seconds), 2)))
    return rows


def _round_trips(dealer: zmq.Socket, payload: bytes, count: int) -> float:
    for _ in range(100):
        dealer.send(payload)
        dealer.recv()
    started = time.perf_counter()
    for _ in range(count):
        dealer.send(payload)
        dealer.recv()
    return (time.perf_counter() - started) * 1e6 / count


def zmq_inproc(payload: bytes, count: int) -> ZmqFloor:
    """Both ends in this thread: send, receive, send back, receive - no wake-up of anyone."""
    ctx = zmq.Context()
    try:
        router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
        router.bind("inproc://porfiry-floor")
        dealer.connect("inproc://porfiry-floor")
        for _ in range(100):
            dealer.send(payload)
            router.send_multipart(router.recv_multipart())
            dealer.recv()
        cpu, started = time.process_time(), time.perf_counter()
        for _ in range(count):
            dealer.send(payload)
            router.send_multipart(router.recv_multipart())
            dealer.recv()
        wall = (time.perf_counter() - started) * 1e6 / count
        cpu_us = (time.process_time() - cpu) * 1e6 / count
        return ZmqFloor(transport="inproc:// (one process)", round_trip_us=round(wall, 2), cpu_us_per_round_trip=round(cpu_us, 2))
    finally:
        ctx.destroy(linger=0)


def zmq_ipc(payload: bytes, count: int, on_cpu: int | None = None) -> ZmqFloor:
    """To an echo process over ipc:// and back, blocking: each side sleeps until the other's message
    arrives, as an idle actor process does. `on_cpu`: both processes, all their threads, on that one
    CPU - what is left of a round trip when no wake-up has to reach another CPU."""
    with tempfile.TemporaryDirectory(prefix="porfiry-floor-") as scratch, _pinned(on_cpu):
        address = f"ipc://{Path(scratch) / 'echo.sock'}"
        pin = [] if on_cpu is None else [str(on_cpu)]
        child = subprocess.Popen([sys.executable, "-c", ECHO_CHILD, address, *pin], stdout=subprocess.PIPE, text=True)
        ctx = zmq.Context()  # after _pinned: its I/O thread starts on that CPU too
        try:
            if child.stdout is None or child.stdout.readline().strip() != "ready":
                raise RuntimeError("the echo process did not start")
            dealer = ctx.socket(zmq.DEALER)
            dealer.setsockopt(zmq.LINGER, 0)
            dealer.connect(address)
            _round_trips(dealer, payload, 200)
            cpu_child, cpu = read_cpu_s(child.pid), time.process_time()
            wall = _round_trips(dealer, payload, count)
            cpu_us = ((time.process_time() - cpu) + (read_cpu_s(child.pid) - cpu_child)) * 1e6 / count
            dealer.send(b"stop")
            where = "ipc:// (two processes)" if on_cpu is None else "ipc://, both on one CPU"
            return ZmqFloor(transport=where, round_trip_us=round(wall, 2), cpu_us_per_round_trip=round(cpu_us, 2))
        finally:
            ctx.destroy(linger=0)
            try:
                child.wait(timeout=2)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


@contextlib.contextmanager
def _pinned(cpu: int | None):
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _cpus() -> list[int]:
    """The CPUs this process may run on ([] where the platform does not say)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def _one_cpu() -> int | None:
    """A CPU to pin both ends to, where the machine has more than one to choose from (Linux)."""
    cpus = _cpus()
    return cpus[0] if len(cpus) > 1 else None


def measure_floor(count: int = 20_000, codec_seconds: float = 0.3, progress: Callable[[str], None] | None = None,
                  config: Config | None = None) -> FloorReport:
    """`config`: also the turn's own work and the media turn's floor (else those are left out)."""
    say = progress or (lambda line: None)
    say("msgspec encode/decode of typical messages")
    codec = codec_floor(codec_seconds)
    payload = p.Codec().encode(typical_messages()["ToolInvoke"])
    say(f"ZeroMQ round trips of a {len(payload)}-byte message, {count} each")
    floors = [zmq_inproc(payload, count), zmq_ipc(payload, count)]
    if (cpu := _one_cpu()) is not None:
        floors.append(zmq_ipc(payload, count, cpu))
    small = next(row for row in codec if row.message == "ToolInvoke")
    ipc = floors[1]
    report = FloorReport(
        codec=codec, zmq=floors, message_bytes=len(payload),
        hop_us=round(ipc.round_trip_us / 2 + small.encode_us + small.decode_us, 2),
        hop_cpu_us=round(ipc.cpu_us_per_round_trip / 2 + small.encode_us + small.decode_us, 2),
    )
    if config is not None:
        say("the turn's own work, in one process, without hops")
        report.logic = anyio.run(lambda: measure_logic_floor(config), backend="trio")
        report.media_turn = media_turn_floor(report.logic, hop_us=report.hop_us, hop_cpu_us=report.hop_cpu_us,
                                             cpus=len(_cpus()) or os.cpu_count() or 1)
    return report


def format_floor(report: FloorReport) -> str:
    lines = [f"Porfiry cost floor on this machine ({os.cpu_count()} CPUs): plain pyzmq and msgspec, no event loop",
             "msgspec (protocol.Codec) per message, µs:",
             f"  {'message':12} {'bytes':>7} {'encode':>8} {'decode':>8}"]
    for row in report.codec:
        lines.append(f"  {row.message:12} {row.bytes:7d} {row.encode_us:8.2f} {row.decode_us:8.2f}")
    lines.append(f"ZeroMQ round trip of a {report.message_bytes}-byte message, µs:")
    for row in report.zmq:
        lines.append(f"  {row.transport:28} {row.round_trip_us:8.2f} wall   {row.cpu_us_per_round_trip:8.2f} CPU")
    lines.append(f"one hop between actor processes (half a round trip + encode + decode of a ToolInvoke): "
                 f"{report.hop_us:.1f} µs wall, {report.hop_cpu_us:.1f} µs CPU")
    if report.logic:
        lines.append("a turn's own work (the real Conversation in one process: no hop, no journal, no phone edge; "
                     "the load bench's texts and scripted model), CPU per turn:")
        for row in report.logic:
            lines.append(f"  {row.kind:13} {row.cpu_ms_per_turn:6.2f} ms   {row.model_calls_per_turn:g} model calls, "
                         f"{row.tool_calls_per_turn:g} toolset calls per turn")
    if (media := report.media_turn) is not None:
        lines.append(f"the media turn's floor, a process per actor: its work + {media.messages} hops = "
                     f"{media.cpu_ms:.2f} ms of CPU (at most {media.turns_per_s:,.0f} media turns/s on "
                     f"{len(_cpus()) or os.cpu_count() or 1} CPUs), {media.wall_ms:.2f} ms of wall time on an idle machine")
    return "\n".join(lines)
