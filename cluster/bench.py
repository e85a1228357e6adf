"""`python run.py bench --nodes N [--chaos-nodes SECONDS [--freeze-nodes]]`: a local cluster
(cluster/cli.py: a throwaway PostgreSQL, N nodes with the scripted model, HAProxy) driven through
HAProxy's phone endpoint; with chaos, a random node is SIGKILLed every SECONDS and started again a
second later, or with `--freeze-nodes` every other time SIGSTOPped past its lease and SIGCONTed
(it must drop what it queued: docs/several-nodes.md). With chaos, two sessions per phone ("t…")
only set a timer, due at a random moment of the run: its firing must survive the chaos once.

Reported: events lost (acked by the runtime, yet not in the journal at the end), turns gone wrong
(an answer that is not the scripted answer to what was said), history intact (the share of
sessions whose journal holds every acked event, in the order said, nothing twice), how long a
moved session waited for its first answer after its node died, and turns per second. Events not
acked or not answered within TURN_TIMEOUT_S are counted apart: the runtime fell behind (the phone
still holds an unacked event and resends it; the bench stops waiting). With chaos also: events
answered twice (by two turns, as the phones saw them or as the journal holds them) and the timers
that did not ring exactly once.
"""
from __future__ import annotations

import itertools
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
FREEZE_S = BENCH_LEASE_S + 2.0  # --freeze-nodes: a node is stopped this long, past its lease
TIMER_S = 3  # with chaos: the soonest a timer session's timer is due
REMINDER = "⏰ Reminder: "  # how a ringing timer is shown (core/reflex_answers.py)


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
    freezes: int = 0
    finished: float = 0.0  # when the last turn was answered (monotonic)
    answered_by: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (session, event id) -> turns that answered it
    rang: dict[str, int] = field(default_factory=dict)  # session -> reminders its phone was shown
    timers: set[str] = field(default_factory=set)  # timer sessions whose timer was set
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

    finals: dict[str, str] = {}  # turn id -> its final display (a timer's reminder is another turn)
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
                    finals[env.body.turn_id] = env.body.text
                elif isinstance(env.body, p.TurnDone) and event_id in env.body.event_ids:
                    return finals.get(env.body.turn_id) or env.body.final
    (figures.unanswered if acked else figures.unacked).append((sid, text))
    return None


async def _timer_session(phone, sid: str, within_s: float, rng: random.Random, figures: Figures) -> None:
    """One turn that sets a timer (a session of its own: a timer firing in the middle of a
    session's turns is batched with them, or answered aside, which the answer checks would not
    read as the scripted answer)."""
    text = f"set a timer for {rng.randint(TIMER_S, max(TIMER_S, int(within_s)))} seconds to {sid} ring"
    figures.said.setdefault(sid, []).append(text)
    answer = await _one_turn(phone, sid, text, figures)
    if answer is not None and answer.startswith("Timer set"):
        figures.timers.add(sid)
    elif answer is not None:
        figures.wrong.append(f"{sid}: said {text!r}, answered {answer!r}")


async def _session(phone, sid: str, turns: int, think_s: float, rng: random.Random, figures: Figures) -> None:
    said = figures.said.setdefault(sid, [])
    for k in range(turns):
        if think_s:
            await anyio.sleep(think_s * rng.uniform(0.5, 1.5))
        text = expected = f"{sid} turn {k}"
        said.append(text)
        started = time.monotonic()
        killed_at = figures.moved.get(sid)
        answer = await _one_turn(phone, sid, text, figures)
        if answer is None:
            continue
        figures.latencies.append(time.monotonic() - started)
        figures.finished = max(figures.finished, time.monotonic())
        if killed_at is not None and figures.moved.get(sid) == killed_at:
            del figures.moved[sid]
            figures.moved_waits.append(time.monotonic() - max(started, killed_at))
        if expected not in answer:
            figures.wrong.append(f"{sid}: said {text!r}, answered {answer!r}")
        else:
            figures.turns_ok += 1


async def _chaos(root: Path, every_s: float, url: str, inproc: bool, figures: Figures, rng: random.Random,
                 freeze: bool = False) -> None:
    """A random node SIGKILLed (started again CHAOS_RESTART_S later) every `every_s`; with
    `freeze`, every other round SIGSTOPped for FREEZE_S (past its lease) and SIGCONTed instead."""
    for round_ in itertools.count():
        await anyio.sleep(every_s)
        state = cluster_cli.ClusterState.load(root)
        assert state is not None
        victim = rng.choice(state.nodes)
        with psycopg.connect(url) as conn:
            held = [r[0] for r in conn.execute("SELECT session FROM session_lease WHERE node = %s", (victim.name,))]
        now = time.monotonic()
        for sid in held:
            figures.moved[sid] = now
        if freeze and round_ % 2:
            await _freeze(victim.pid, figures)
            continue
        _signal(victim.pid, signal.SIGKILL)
        figures.kills += 1
        await anyio.sleep(CHAOS_RESTART_S)
        index = state.nodes.index(victim)
        state.nodes[index] = cluster_cli._start_node(root, victim.name, victim.port, url, inproc)
        state.save(root)


async def _freeze(pid: int, figures: Figures) -> None:
    _signal(pid, signal.SIGSTOP)
    figures.freezes += 1
    try:
        await anyio.sleep(FREEZE_S)
    finally:
        _signal(pid, signal.SIGCONT)  # also when the run ends meanwhile: no node stays stopped


def _signal(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


async def drive(endpoint: str, root: Path, url: str, *, sessions: int, turns: int, think_s: float, per_phone: int,
                chaos_s: float, inproc: bool, seed: int, freeze: bool = False) -> tuple[Figures, float]:
    from phone.client import PhoneClient

    figures, rng = Figures(), random.Random(seed)
    started = time.monotonic()
    async with anyio.create_task_group() as outer:
        if chaos_s:
            outer.start_soon(_chaos, root, chaos_s, url, inproc, figures, random.Random(seed + 1), freeze)
        async with anyio.create_task_group() as tg:
            for first in range(0, sessions, per_phone):
                tg.start_soon(_phone, PhoneClient, endpoint, first, min(per_phone, sessions - first), turns, think_s,
                              random.Random(rng.random()), figures, bool(chaos_s))
        elapsed = max(figures.finished, started + 0.001) - started  # turns only, not the wait for the last timers
        outer.cancel_scope.cancel()
    return figures, elapsed


async def _phone(client_class, endpoint, first, count, turns, think_s, rng, figures, timers=False) -> None:
    within_s = max(TIMER_S, turns * think_s)  # the timers come due while the sessions talk (and nodes die)
    mine = [f"t{first + k}" for k in range(2 if timers else 0)]
    async with client_class(endpoint, client_id=f"bench{first}", ack_timeout_s=1.0, max_resends=40) as phone:
        async with anyio.create_task_group() as watching:
            watching.start_soon(_watch, phone, figures)
            async with anyio.create_task_group() as tg:
                for n in range(first, first + count):
                    tg.start_soon(_session, phone, f"s{n}", turns, think_s, random.Random(rng.random()), figures)
                for sid in mine:
                    tg.start_soon(_timer_session, phone, sid, within_s, random.Random(rng.random()), figures)
            with anyio.move_on_after(within_s + BENCH_LEASE_S + 10 * BENCH_HEARTBEAT_S):  # the last ones may ring later
                while any(sid in figures.timers and not figures.rang.get(sid) for sid in mine):
                    await anyio.sleep(0.2)
            watching.cancel_scope.cancel()


async def _watch(phone, figures: Figures) -> None:
    """Every turn that answered each event (a resend's "again-" reply is the same answer told once
    more), and every reminder shown, whatever session."""
    async with phone.events() as incoming:
        async for env in incoming:
            body = env.body
            if isinstance(body, p.TurnDone) and body.outcome == "done" and not body.turn_id.startswith(("again-", "kept-")):
                for event_id in body.event_ids:
                    figures.answered_by.setdefault((env.session, event_id), set()).add(body.turn_id)
            elif isinstance(body, p.Display) and body.final and body.text.startswith(REMINDER):
                figures.rang[env.session] = figures.rang.get(env.session, 0) + 1


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


def twice_check(url: str, figures: Figures) -> tuple[list[str], list[str], list[str]]:
    """(events answered twice: by two turns the phones saw, or in two history entries; timers
    that did not fire exactly once in the journal, or were shown twice; timers fired, never shown:
    a node that adopted a dead or frozen node's session fires its timer, but only a node the
    phone is connected to can show it)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT session, event_ids FROM entries WHERE role = 'user' AND event_ids <> ''").fetchall()
    entries: dict[tuple[str, str], int] = {}
    fired: dict[str, set[str]] = {}
    for session, event_ids in rows:
        for event_id in event_ids.split():
            entries[(session, event_id)] = entries.get((session, event_id), 0) + 1
            if event_id.startswith("timer-"):
                fired.setdefault(session, set()).add(event_id)
    twice = sorted({f"{sid}: {event_id} (answered by {len(turns)} turns)"
                    for (sid, event_id), turns in figures.answered_by.items() if len(turns) > 1}
                   | {f"{sid}: {event_id} (in {n} history entries)" for (sid, event_id), n in entries.items() if n > 1})
    timers = [f"{sid}: fired {len(fired.get(sid, ()))} time(s) in the journal, shown {figures.rang.get(sid, 0)} time(s)"
              for sid in sorted(figures.timers) if figures.rang.get(sid, 0) > 1 or len(fired.get(sid, ())) != 1]
    unseen = [sid for sid in sorted(figures.timers) if not figures.rang.get(sid, 0) and len(fired.get(sid, ())) == 1]
    return twice, timers, unseen


def cmd_bench_nodes(config: Config, *, nodes: int, sessions: int, turns: int, think_ms: float, per_phone: int,
                    chaos_s: float, seed: int, base_port: int = 0, freeze: bool = False) -> int:
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
              f"{f', a node killed every {chaos_s:g} s' if chaos_s and not freeze else ''}"
              f"{f', a node killed or frozen for {FREEZE_S:g} s in turn every {chaos_s:g} s' if chaos_s and freeze else ''}"
              " ...", flush=True)
        figures, elapsed = anyio.run(lambda: drive(
            state.endpoint, root, state.storage_url, sessions=sessions, turns=turns, think_s=think_ms / 1000,
            per_phone=per_phone, chaos_s=chaos_s, inproc=True, seed=seed, freeze=freeze), backend="trio")
        if chaos_s:
            # a turn answered just before its node died, its entries still queued there, runs again
            # on a live node once the dead node's lease expired (docs/several-nodes.md)
            time.sleep(BENCH_LEASE_S + 3 * BENCH_HEARTBEAT_S)
        intact, lost = history_check(state.storage_url, figures)
        twice, timers, unseen = twice_check(state.storage_url, figures)
        _report(figures, elapsed, intact, lost, nodes=nodes, sessions=sessions, turns=turns)
        if chaos_s:
            print(f"  answered twice          {len(twice)} (an event answered by two turns, or in two history entries)")
            print(f"  timers not fired once   {len(timers)} of {len(figures.timers)} (fired in the journal exactly "
                  "once, shown at most once)")
            print(f"  timers fired, unshown   {len(unseen)} (fired on a node the phone was not connected to)")
            for line in (twice + timers)[:10]:
                print(f"    {line}")
        return 0 if not lost and not figures.wrong and intact == 1.0 and not twice and not timers else 2
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
          f"scripted model; {figures.kills} node(s) killed, {figures.freezes} frozen")
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
