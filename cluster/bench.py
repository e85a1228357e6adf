"""`python run.py bench --nodes N [--chaos-nodes SECONDS]`: a local cluster (cluster/cli.py: a
throwaway PostgreSQL, N nodes with the scripted model, HAProxy) driven through HAProxy's phone
endpoint; with chaos, a random node is SIGKILLed every SECONDS and started again a second later.

Reported: events lost (acked by the runtime, yet not in the journal at the end), turns gone wrong
(an answer that is not the scripted answer to what was said), history intact (the share of
sessions whose journal holds every acked event, in the order said, nothing twice), how long a
moved session waited for its first answer after its node died, and turns per second. Events not
acked or not answered within TURN_TIMEOUT_S are counted apart: the runtime fell behind (the phone
still holds an unacked event and resends it; the bench stops waiting).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import psycopg

import protocol as p

from cluster import cli as cluster_cli
from core.config import Config

CHAOS_RESTART_S = 1.0  # a killed node is started again this long after its death
BENCH_LEASE_S = 3.0  # node.lease_s of the bench's nodes (at most): a moved session waits about this long
BENCH_HEARTBEAT_S = 0.5
TURN_TIMEOUT_S = 60.0  # the bench stops waiting for a turn's ack and answer after this long


@dataclass
class Figures:
    turns_ok: int = 0
    unacked: list[tuple[str, str]] = field(default_factory=list)  # (session, text): no ack in time
    unanswered: list[tuple[str, str]] = field(default_factory=list)  # acked, no TurnDone in time
    rejected: list[str] = field(default_factory=list)
    acked: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # session -> (event id, text) acked, in order
    wrong: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    moved_waits: list[float] = field(default_factory=list)
    kills: int = 0
    moved: dict[str, float] = field(default_factory=dict)  # session -> when its node was killed (pending)
    said: dict[str, list[str]] = field(default_factory=dict)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _one_turn(phone, sid: str, text: str, figures: Figures) -> str | None:
    """The answer, or None (counted in `figures`) when there was none in time."""
    from phone.client import PhoneError

    finals: list[str] = []
    acked = False
    async with phone.events(sid) as incoming:
        with anyio.move_on_after(TURN_TIMEOUT_S):
            try:
                event_id = await phone.send_text(sid, text)  # returns once the runtime acked it
            except PhoneError as exc:
                figures.rejected.append(f"{sid}: {text} ({type(exc).__name__}: {exc})")
                return None
            acked = True
            figures.acked.setdefault(sid, []).append((event_id, text))
            async for env in incoming:
                if isinstance(env.body, p.Display) and env.body.final:
                    finals.append(env.body.text)
                elif isinstance(env.body, p.TurnDone) and event_id in env.body.event_ids:
                    return finals[-1] if finals else env.body.final
    (figures.unanswered if acked else figures.unacked).append((sid, text))
    return None


async def _session(phone, sid: str, turns: int, think_s: float, rng: random.Random, figures: Figures) -> None:
    said = figures.said.setdefault(sid, [])
    for k in range(turns):
        if think_s:
            await anyio.sleep(think_s * rng.uniform(0.5, 1.5))
        text = f"{sid} turn {k}"
        said.append(text)
        started = time.monotonic()
        killed_at = figures.moved.get(sid)
        answer = await _one_turn(phone, sid, text, figures)
        if answer is None:
            continue
        figures.latencies.append(time.monotonic() - started)
        if killed_at is not None and figures.moved.get(sid) == killed_at:
            del figures.moved[sid]
            figures.moved_waits.append(time.monotonic() - max(started, killed_at))
        if text not in answer:
            figures.wrong.append(f"{sid}: said {text!r}, answered {answer!r}")
        else:
            figures.turns_ok += 1


async def _chaos(root: Path, every_s: float, url: str, inproc: bool, figures: Figures, rng: random.Random) -> None:
    while True:
        await anyio.sleep(every_s)
        state = cluster_cli.ClusterState.load(root)
        assert state is not None
        victim = rng.choice(state.nodes)
        with psycopg.connect(url) as conn:
            held = [r[0] for r in conn.execute("SELECT session FROM session_lease WHERE node = %s", (victim.name,))]
        now = time.monotonic()
        try:
            os.killpg(victim.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        figures.kills += 1
        for sid in held:
            figures.moved[sid] = now
        await anyio.sleep(CHAOS_RESTART_S)
        index = state.nodes.index(victim)
        state.nodes[index] = cluster_cli._start_node(root, victim.name, victim.port, url, inproc)
        state.save(root)


async def drive(endpoint: str, root: Path, url: str, *, sessions: int, turns: int, think_s: float, per_phone: int,
                chaos_s: float, inproc: bool, seed: int) -> tuple[Figures, float]:
    from phone.client import PhoneClient

    figures, rng = Figures(), random.Random(seed)
    started = time.monotonic()
    async with anyio.create_task_group() as outer:
        if chaos_s:
            outer.start_soon(_chaos, root, chaos_s, url, inproc, figures, random.Random(seed + 1))
        async with anyio.create_task_group() as tg:
            for first in range(0, sessions, per_phone):
                tg.start_soon(_phone, PhoneClient, endpoint, first, min(per_phone, sessions - first), turns, think_s,
                              random.Random(rng.random()), figures)
        elapsed = time.monotonic() - started
        outer.cancel_scope.cancel()
    return figures, elapsed


async def _phone(client_class, endpoint, first, count, turns, think_s, rng, figures) -> None:
    async with client_class(endpoint, client_id=f"bench{first}", ack_timeout_s=1.0, max_resends=40) as phone:
        async with anyio.create_task_group() as tg:
            for n in range(first, first + count):
                tg.start_soon(_session, phone, f"s{n}", turns, think_s, random.Random(rng.random()), figures)


def history_check(url: str, figures: Figures) -> tuple[float, list[str]]:
    """(the share of sessions whose journal holds every acked event, in the order said, none
    twice; the events lost: acked, and in no history entry). By event id: events waiting together
    are one user entry (one turn), so texts would not match one to one."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT session, event_ids FROM entries WHERE role = 'user' AND event_ids <> '' "
                            "ORDER BY id").fetchall()
    stored: dict[str, list[str]] = {}
    for session, event_ids in rows:
        stored.setdefault(session, []).extend(event_ids.split())
    lost = [f"{sid}: {text} ({event_id})" for sid, acked in figures.acked.items() for event_id, text in acked
            if event_id not in stored.get(sid, [])]

    def intact(sid: str) -> bool:
        held, acked = stored.get(sid, []), [event_id for event_id, _ in figures.acked.get(sid, [])]
        return len(held) == len(set(held)) and [i for i in held if i in set(acked)] == acked

    return sum(intact(sid) for sid in figures.said) / max(1, len(figures.said)), lost


def cmd_bench_nodes(config: Config, *, nodes: int, sessions: int, turns: int, think_ms: float, per_phone: int,
                    chaos_s: float, seed: int, base_port: int = 0) -> int:
    """Up, drive, report, down; everything in a scratch directory."""
    from cluster.pgserver import free_port

    root = Path(tempfile.mkdtemp(prefix="pfb"))
    root.chmod(0o755)  # PostgreSQL runs as another user when we are root
    base_port = base_port or free_port()
    bench_config = _bench_config(config)
    os.environ["PORFIRY_LLM_PROFILE"] = "scripted"  # the nodes inherit our environment
    os.environ["PORFIRY_CONFIG"] = str(bench_config(root))
    try:
        if cluster_cli.cluster_up(config, root, nodes, base_port, inproc=True) != 0:
            return 1
        state = cluster_cli.ClusterState.load(root)
        assert state is not None
        print(f"driving {sessions} sessions x {turns} turns through {state.endpoint}"
              f"{f', a node killed every {chaos_s:g} s' if chaos_s else ''} ...", flush=True)
        figures, elapsed = anyio.run(lambda: drive(
            state.endpoint, root, state.storage_url, sessions=sessions, turns=turns, think_s=think_ms / 1000,
            per_phone=per_phone, chaos_s=chaos_s, inproc=True, seed=seed), backend="trio")
        if chaos_s:
            # a turn answered just before its node died, its entries still queued there, runs again
            # on a live node once the dead node's lease expired (docs/several-nodes.md)
            time.sleep(BENCH_LEASE_S + 3 * BENCH_HEARTBEAT_S)
        intact, lost = history_check(state.storage_url, figures)
        _report(figures, elapsed, intact, lost, nodes=nodes, sessions=sessions, turns=turns)
        return 0 if not lost and not figures.wrong and intact == 1.0 else 2
    finally:
        cluster_cli.cluster_down(root, quiet=True)
        if os.environ.get("PORFIRY_BENCH_KEEP"):  # to look into a run: its database and the nodes' logs stay
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _bench_config(config: Config):
    def write(root: Path) -> Path:
        path = root / "bench.json"
        node = config.node
        path.write_text(json.dumps({"llm": {"profile": "scripted"}, "node": {
            "lease_s": min(node.lease_s, BENCH_LEASE_S), "heartbeat_s": min(node.heartbeat_s, BENCH_HEARTBEAT_S)}}))
        return path

    return write


def _report(figures: Figures, elapsed: float, intact: float, lost: list[str], *, nodes: int, sessions: int,
            turns: int) -> None:
    ms = lambda v: f"{v * 1000:8.1f}"  # noqa: E731
    print(f"Porfiry cluster benchmark: {nodes} node(s) behind HAProxy, {sessions} sessions x {turns} turns, "
          f"scripted model; {figures.kills} node(s) killed")
    print(f"  duration                {elapsed:.1f} s; turns per second {figures.turns_ok / elapsed:.1f}")
    print(f"  events lost             {len(lost)} (acked by the runtime, not in its journal)")
    print(f"  runtime behind          {len(figures.unacked)} not acked, {len(figures.unanswered)} acked but not answered "
          f"within {TURN_TIMEOUT_S:g} s; {len(figures.rejected)} refused")
    print(f"  turns gone wrong        {len(figures.wrong)}")
    print(f"  history intact          {intact:.3f}")
    if figures.latencies:
        print(f"  turn time, ms           p50 {ms(statistics.median(figures.latencies))}   p99 {ms(_pct(figures.latencies, 0.99))}")
    if figures.moved_waits:
        print(f"  moved session's first answer after its node died, ms   p50 {ms(statistics.median(figures.moved_waits))}"
              f"   p99 {ms(_pct(figures.moved_waits, 0.99))}   n={len(figures.moved_waits)}")
    for line in (lost + figures.wrong + figures.rejected)[:10]:
        print(f"    {line}")
