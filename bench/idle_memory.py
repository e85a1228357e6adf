"""What one more idle session costs the session actor's process, by `tracemalloc`.

    python -m bench.idle_memory [FIRST] [MORE] [--frames N] [--top K]

The session, LLM worker, media, skills and toolsets actors run in this one process over inproc
ZeroMQ (the scripted model as `bench` serves it), the glasses replaced by a stand-in that keeps
nothing per session. After three warm-up sessions, FIRST sessions (default 200) and then MORE
(default 800) play the load bench's seeded sessions (a start, two turns; a long story is
interrupted), at most 50 at once, each left idle. Printed: the bytes per session of each batch
(the second one's is the slope: the first also fills bounded caches), the top allocation lines
of the second batch per session, and the deep size of a Conversation's parts (objects the
settings, registry and config share left out). docs/performance.md, "memory per idle session".
"""
from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import anyio
import msgspec
import zmq

import protocol as p
from actors.base import Actor, Endpoint
from bench.load import LoadOptions, SessionPlan, plan_sessions, warmup_plan
from bench.runtime import scratch_config
from core.config import Config, TopologyConfig, apply_env

AT_ONCE = 50  # sessions played at the same time


class _Sink(Actor):
    """Stands in for the glasses: answers what needs an answer, keeps nothing."""

    name = "glasses"

    async def handle(self, msg) -> None:
        if isinstance(msg.body, p.PhoneCommand):
            msg.reply(self, p.PlaybackStatus(event_id=p.new_id(), ts=time.time(), task_id=msg.body.command.task_id,
                                             state="started"))
        elif not isinstance(msg.body, (p.Display, p.TurnDone, p.SessionsForgotten)):
            await super().handle(msg)


def _config(workdir: Path) -> Config:
    replace = msgspec.structs.replace
    base = apply_env(Config(topology=TopologyConfig(mode="inproc")), {})
    config = scratch_config(base, workdir)
    # as `bench` runs it: no reflexes, the scripted model, no frame call, no model warm-up
    return replace(config, session=replace(config.session, reflexes=False, frame=False,
                                           execute_substituted_calls=False),
                   llm=replace(config.llm, profile="scripted", warmup=False))


async def _play(client: Endpoint, sid: str, plan: SessionPlan) -> None:
    async def deliver(kind: str, text: str = "") -> None:
        phone = kind == "session_start"
        event = p.Event(event_id=p.new_id(), kind=kind, source="phone" if phone else "user",
                        channel="phone" if phone else "speech", content=text, ts=time.time())
        reply = await client.ask("session", p.DeliverEvent(event=event), session=sid)
        assert isinstance(reply, p.EventAccepted), reply

    await deliver("session_start")
    for turn in plan.turns:
        await deliver("user_text", turn.text)
        if turn.kind == "interrupt":
            await deliver("user_interrupt")


async def _idle(session, sids) -> None:
    with anyio.fail_after(300):
        while any((c := session.sessions.get(sid)) is not None and (c.running or c.queue) for sid in sids):
            await anyio.sleep(0.05)


async def _batch(client: Endpoint, session, prefix: str, plans: list[SessionPlan]) -> None:
    limit = anyio.CapacityLimiter(AT_ONCE)

    async def one(sid: str, plan: SessionPlan) -> None:
        async with limit:
            await _play(client, sid, plan)
            await _idle(session, [sid])

    async with anyio.create_task_group() as tg:
        for index, plan in enumerate(plans):
            tg.start_soon(one, f"{prefix}{index}", plan)
    await anyio.sleep(0.3)  # the last saves and acks settle


def _snapshot() -> tracemalloc.Snapshot:
    gc.collect()
    return tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])


def _deep_size(obj, seen: set[int]) -> int:
    """Bytes reachable from `obj` not in `seen` (classes, modules and functions not counted)."""
    todo, total = [obj], 0
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, type) or type(item).__name__ in ("module", "function", "method"):
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        todo.extend(gc.get_referents(item))
    return total


def _parts(session, sample: int = 200) -> dict[str, float]:
    """Mean deep size of each part of the last `sample` Conversations."""
    store = session.store
    stop = {id(c) for c in store.sessions.values()} | {id(store), id(session), id(store.sessions)}
    shared = set(stop)
    for root in (store.settings, session.config):
        _deep_size(root, shared)
    shared -= stop
    conversations = list(store.sessions.values())[-sample:]
    totals: dict[str, int] = {}
    for conversation in conversations:
        seen = set(shared)
        totals["(the object)"] = totals.get("(the object)", 0) + sys.getsizeof(conversation)
        for slot in type(conversation).__slots__:
            if slot != "s" and hasattr(conversation, slot):
                totals[slot] = totals.get(slot, 0) + _deep_size(getattr(conversation, slot), seen)
    return {name: size / len(conversations) for name, size in sorted(totals.items(), key=lambda kv: -kv[1])}


async def measure(first: int, more: int, frames: int = 1, top: int = 25) -> None:
    from actors.llm_worker import LLMWorker
    from actors.session import SessionActor
    from actors.topology import ACTORS, actor_class
    from llm.scripted import ScriptedBackend

    tracemalloc.start(frames)
    workdir = Path(tempfile.mkdtemp(prefix="porfiry-idle-"))
    config = _config(workdir)
    ctx = zmq.Context()
    built: dict[str, Actor] = {}
    for name in ACTORS:
        if name == "llm":
            built[name] = LLMWorker(config, zmq_context=ctx, backends={"scripted": ScriptedBackend(keep_calls=0)})
        elif name == "session":
            built[name] = SessionActor(config, zmq_context=ctx)
        elif name == "glasses":
            built[name] = _Sink(config, zmq_context=ctx)
        else:
            built[name] = actor_class(name)(config, zmq_context=ctx)
    try:
        async with anyio.create_task_group() as tg:
            for actor in built.values():
                await tg.start(actor.run)
            client = Endpoint(config, zmq_context=ctx, name="idle-memory")
            async with client.running():
                session = built["session"]
                await _batch(client, session, "warm", warmup_plan() * 3)
                before = _snapshot()
                plans = plan_sessions(LoadOptions(sessions=first + more, turns=2, think_ms=0))
                await _batch(client, session, "a", plans[:first])
                middle = _snapshot()
                await _batch(client, session, "b", plans[first:])
                after = _snapshot()
                _print(before, middle, after, first, more, top)
                print(f"deep size of a Conversation's parts, mean of the last {min(200, len(session.sessions))}:")
                parts = _parts(session)
                for name, size in parts.items():
                    if size >= 8:
                        print(f"  {size:8.0f} B  {name}")
                print(f"  {sum(parts.values()):8.0f} B  in all")
            tg.cancel_scope.cancel()
    finally:
        ctx.destroy(linger=0)


def _print(before, middle, after, first: int, more: int, top: int) -> None:
    for label, start, end, count in (("first", before, middle, first), ("then", middle, after, more)):
        grown = sum(stat.size_diff for stat in end.compare_to(start, "filename"))
        print(f"{label} {count} sessions: {grown / max(1, count):,.0f} B per idle session")
    here = str(Path.cwd())
    print(f"the {top} largest allocation lines of the last {more} sessions, per session:")
    for stat in after.compare_to(middle, "traceback" if len(after.traces) and tracemalloc.get_traceback_limit() > 1 else "lineno")[:top]:
        frame = stat.traceback[-1] if tracemalloc.get_traceback_limit() > 1 else stat.traceback[0]
        print(f"  {stat.size_diff / max(1, more):8.0f} B {stat.count_diff / max(1, more):6.1f} objects  "
              f"{frame.filename.replace(here, '.')}:{frame.lineno}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.idle_memory", description=__doc__.splitlines()[0])
    parser.add_argument("first", type=int, nargs="?", default=200)
    parser.add_argument("more", type=int, nargs="?", default=800)
    parser.add_argument("--frames", type=int, default=1, help="traceback frames tracemalloc keeps (1: by line)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    anyio.run(measure, args.first, args.more, args.frames, args.top, backend="trio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
