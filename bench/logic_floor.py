"""The floor of a turn's own work: what `run.py bench --floor` adds to the hop's floor.

The load bench's turn kinds (its texts, the scripted model it runs) through the real
`Conversation`, in one process and one turn at a time: the prompt built at every step, the
model's reply parsed, the media search and the skill store run directly (`InProcessPorts`). No
sockets, no actors, no journal, no phone edge: the CPU a turn costs before the runtime moves a
single message. A runtime's CPU per turn can only approach this, never beat it; the gap is the
price of the actor system (hops, the event loop per message, the journal, the edge).
"""
from __future__ import annotations

import random
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import anyio
import msgspec

import protocol as p
from core.inprocess import InProcessPorts
from core.clock import ManualClock
from core.config import Config
from llm.chunks import ChunkCoalescer

KINDS = ("plain", "media", "substitution")  # the kinds whose time per turn the load bench reports
MEDIA_TURN_MESSAGES = 24  # messages between processes per media turn, the MediaExecutor's call included


class LogicFloor(msgspec.Struct, kw_only=True):
    kind: str
    turns: int
    cpu_ms_per_turn: float  # mean
    model_calls_per_turn: float
    tool_calls_per_turn: float


async def measure_logic_floor(config: Config, *, sessions: int = 60, turns: int = 3,
                              rounds: int = 3) -> list[LogicFloor]:
    """Per kind: `sessions` fresh sessions of `turns` turns each, as `bench --turns N` plays them
    (the first media turn of a session enables media, later ones find it on), after a warm-up;
    the cheapest of `rounds` such rounds (a floor: on a shared VM a round can only be slowed).
    Raises RuntimeError when a turn fails or does not show what the load bench checks it must."""
    from actors.skill_store import build_repository
    from bench.runtime import bench_config
    from core.budget import default_catalog
    from core.conversation import SessionSettings
    from core.toolsets import ToolsetRegistry
    from llm.backends import make_backend
    from toolsets.media.executor import default_provider

    with tempfile.TemporaryDirectory(prefix="porfiry-logic-floor-") as scratch:
        config = bench_config(config, Path(scratch), latency_ms=0)
        provider = default_provider(config)
        if (ready := getattr(provider, "ensure_ready", None)) is not None:
            await anyio.to_thread.run_sync(ready)
        backend = make_backend(config.llm.profiles["scripted"], name="scripted")
        ports = RuntimeLikePorts(build_repository(config), provider, backend,
                                 stream_interval_s=config.llm.stream_interval_ms / 1000)
        clock = ManualClock(time.time())
        player = _FloorPlayer(ports, clock, turns)
        floors: dict[str, LogicFloor] = {}
        try:
            async with anyio.create_task_group() as tasks:
                settings = SessionSettings(registry=ToolsetRegistry(default_catalog()), ports=ports,
                                           spawn=tasks.start_soon, config=config.session, clock=clock)
                for kind in KINDS:  # a warm-up first: what loads lazily
                    await player.play(settings, kind, 3)
                for _ in range(rounds):
                    for kind in KINDS:
                        row = await player.play(settings, kind, sessions)
                        if kind not in floors or row.cpu_ms_per_turn < floors[kind].cpu_ms_per_turn:
                            floors[kind] = row
                tasks.cancel_scope.cancel()
        except* Exception as failed:  # a turn's own error (a model that refuses, a wrong answer), said plainly
            first = failed.exceptions[0]
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise RuntimeError(f"a turn of the floor failed: {type(first).__name__}: {first}") from first
    return [floors[kind] for kind in KINDS]


class _FloorPlayer:
    """Plays the floor's sessions through real Conversations, turn by turn, counting each turn's
    CPU time, model requests and toolset calls."""

    def __init__(self, ports: "RuntimeLikePorts", clock: ManualClock, turns: int):
        self.ports, self.clock, self.turns = ports, clock, turns
        self.rng = random.Random(0)
        self.played = 0  # sessions so far: each round's are new

    async def play(self, settings, kind: str, count: int) -> LogicFloor:
        from core.conversation import Conversation

        cpu_s = calls = tool_calls = 0
        for _ in range(count):
            self.played += 1
            conversation = Conversation(f"{kind}-{self.played}", settings)
            for turn in range(1, self.turns + 1):
                turn_cpu_s, turn_calls, turn_tool_calls = await self._turn(conversation, kind, turn)
                cpu_s += turn_cpu_s
                calls += turn_calls
                tool_calls += turn_tool_calls
        done = count * self.turns
        return LogicFloor(kind=kind, turns=done, cpu_ms_per_turn=round(cpu_s * 1000 / done, 3),
                          model_calls_per_turn=round(calls / done, 2), tool_calls_per_turn=round(tool_calls / done, 2))

    async def _turn(self, conversation, kind: str, turn: int) -> tuple[float, int, int]:
        """One turn: its CPU seconds, model requests and toolset calls; RuntimeError when it fails."""
        from bench.load import _utterance, check_answer

        ports, clock = self.ports, self.clock
        clock.advance(10.0)
        ports.begin_turn(turn)
        ports.requests.clear()
        ports.shown.clear()
        event = p.Event(event_id=f"e{turn}", kind="user_text", source="user", channel="speech",
                        content=_utterance(kind, self.rng), ts=clock())
        started = time.process_time()
        if conversation.submit(event) != "accepted":
            raise RuntimeError(f"a {kind} turn was not accepted")
        with anyio.fail_after(30):
            await ports.turn_done.wait()
        cpu_s = time.process_time() - started
        calls, tool_calls = len(ports.requests), ports.tool_calls
        ports.tool_calls = 0
        finals = [body.text for body in ports.shown if isinstance(body, p.Display) and body.final]
        if wrong := check_answer(kind, finals):
            raise RuntimeError(wrong)
        return cpu_s, calls, tool_calls


class RuntimeLikePorts(InProcessPorts):
    """The model's stream reaches the conversation as the LLM worker sends it: the pieces coalesced
    into chunks (`llm.stream_interval_ms`), the rest at the end, so the session's per-chunk work is
    counted as often as the runtime does it, not once per token. Counts the toolset calls."""

    def __init__(self, *args, stream_interval_s: float, **kwargs):
        super().__init__(*args, **kwargs)
        self.stream_interval_s = stream_interval_s
        self.tool_calls = 0

    async def invoke(self, *args, **kwargs) -> p.ToolOutcome:
        self.tool_calls += 1
        return await super().invoke(*args, **kwargs)

    @asynccontextmanager
    async def generate(self, *args, **kwargs) -> AsyncIterator[AsyncIterator[str]]:
        async with super().generate(*args, **kwargs) as pieces:
            yield self._chunks(pieces)

    async def _chunks(self, pieces: AsyncIterator[str]) -> AsyncIterator[str]:
        coalescer = ChunkCoalescer(self.stream_interval_s, anyio.current_time)
        async for piece in pieces:
            if piece and (text := coalescer.add(piece)):
                yield text
        if tail := coalescer.flush():
            yield tail


class MediaTurnFloor(msgspec.Struct, kw_only=True):
    """The least a media turn costs a process-per-actor runtime: its own work plus its messages'
    hops at the floor (no event loop, no journal, no phone edge)."""

    messages: int  # between processes, per media turn
    cpu_ms: float  # its work + every hop's CPU
    wall_ms: float  # on an idle machine: its work + every hop's wall time, one after another
    turns_per_s: float  # at most, every CPU of the machine busy with media turns


def media_turn_floor(logic: list[LogicFloor], *, hop_us: float, hop_cpu_us: float, cpus: int) -> MediaTurnFloor:
    media = next(row for row in logic if row.kind == "media")
    cpu_ms = media.cpu_ms_per_turn + MEDIA_TURN_MESSAGES * hop_cpu_us / 1000
    return MediaTurnFloor(messages=MEDIA_TURN_MESSAGES, cpu_ms=round(cpu_ms, 3),
                          wall_ms=round(media.cpu_ms_per_turn + MEDIA_TURN_MESSAGES * hop_us / 1000, 3),
                          turns_per_s=round(cpus * 1000 / cpu_ms, 1))
