"""`run.py cluster up|status|down` (cluster/cli.py): nodes as real processes on a throwaway
PostgreSQL behind a real HAProxy; a phone connected through HAProxy loses nothing when the node
serving it is SIGKILLed."""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import psycopg
import pytest

import protocol as p
from cluster.pgserver import find_bin
from harness import free_port_block
from phone.client import EventRejected, PhoneClient

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(
    not (find_bin("initdb") and (shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists())),
    reason="needs PostgreSQL's initdb and HAProxy (`make test` installs Debian's postgresql and haproxy)")


def _run(*argv, env, timeout=180):
    return subprocess.run([sys.executable, str(REPO / "run.py"), *argv], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


@pytest.fixture
def cluster_env(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="pfc"))  # short: the nodes' ipc sockets and PostgreSQL's live here
    root.chmod(0o755)  # PostgreSQL runs as another user when we are root
    config = tmp_path / "porfiry.toml"
    config.write_text('[llm]\nprofile = "scripted"\n[node]\nlease_s = 2.0\nheartbeat_s = 0.3\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PORFIRY_")}
    env["PORFIRY_CONFIG"] = str(config)
    yield root, env
    _run("cluster", "down", "--dir", str(root), env=env)
    shutil.rmtree(root, ignore_errors=True)


async def _up(root, env, nodes=2):
    """`cluster up` on free ports; (cluster.json, its stdout)."""
    base = free_port_block(nodes + 1)  # below the ephemeral range: see tests/harness.py `_port_share`
    up = await anyio.to_thread.run_sync(lambda: _run("cluster", "up", "--nodes", str(nodes), "--dir", str(root),
                                                     "--base-port", str(base), "--inproc", env=env))
    assert up.returncode == 0, up.stderr + _logs_tail(root)
    return json.loads((root / "cluster.json").read_text()), up.stdout


def _logs_tail(root: Path) -> str:
    """The nodes' last log lines: why one exited at start is in them, and the fixture removes them."""
    return "".join(f"\n--- {log.parent.name}/node.log:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                   for log in sorted(root.glob("n*/node.log")))


async def test_a_phone_through_haproxy_loses_nothing_when_its_node_is_killed(cluster_env):
    root, env = cluster_env
    state, stdout = await _up(root, env)
    base = int(state["endpoint"].rsplit(":", 1)[1])
    assert f"phone endpoint: {state['endpoint']}" in stdout
    async with PhoneClient(state["endpoint"], client_id="pixel", ack_timeout_s=0.5) as phone:
        first = await phone.turn("x", "привет", timeout=20)
        assert "привет" in first.final_text
        with psycopg.connect(state["storage_url"]) as conn:
            serving = conn.execute("SELECT node FROM session_lease WHERE session = 'x'").fetchone()[0]
        victim = next(n for n in state["nodes"] if n["name"] == serving)
        os.killpg(victim["pid"], signal.SIGKILL)  # the node dies with the phone's connection open
        async with phone.events("x") as incoming:
            sent = [await phone.send_text("x", f"event {k}", wait=False) for k in range(3)]
            undone = set(sent)
            with anyio.fail_after(40):
                async for env_ in incoming:
                    if isinstance(env_.body, p.TurnDone):
                        undone -= set(env_.body.event_ids)
                    if not undone:
                        break
    status = await anyio.to_thread.run_sync(lambda: _run("cluster", "status", "--dir", str(root), env=env))
    assert f"{serving}       DOWN" in status.stdout, status.stdout
    with psycopg.connect(state["storage_url"]) as conn:
        users = [r[0] for r in conn.execute("SELECT content FROM entries WHERE session = 'x' AND role = 'user' ORDER BY id")]
        now_serving = conn.execute("SELECT node FROM session_lease WHERE session = 'x'").fetchone()[0]
    said = ["привет"] + [f"event {k}" for k in range(3)]
    holding = [[text for text in said if text in content] for content in users]  # one turn may answer two
    assert [text for texts in holding for text in texts] == said, users  # each once, in order
    assert now_serving != serving
    down = await anyio.to_thread.run_sync(lambda: _run("cluster", "down", "--dir", str(root), env=env))
    assert down.returncode == 0 and not any(_alive(n["pid"]) for n in state["nodes"])
    assert not _busy(base), "HAProxy stopped"


async def test_two_phones_opening_one_session_on_two_nodes_at_once_only_the_first_owns_it(cluster_env):
    """Issue 51 finding 4: the claim was an upsert that overwrote, and each node cached its own
    owner: both phones were admitted (30 of 40 rounds). Now the first claim wins everywhere."""
    root, env = cluster_env
    state, _ = await _up(root, env)
    n1, n2 = (f"tcp://127.0.0.1:{node['port']}" for node in state["nodes"])
    sessions = [f"race{k}" for k in range(16)]
    outcome: dict[tuple[str, str], str] = {}

    async def send(phone, sid, text):
        try:
            await phone.send_text(sid, text)
            outcome[(phone.client_id, sid)] = "acked"
        except EventRejected as exc:
            outcome[(phone.client_id, sid)] = exc.code

    async with PhoneClient(n1, client_id="alice", ack_timeout_s=0.5) as alice, \
            PhoneClient(n2, client_id="bob", ack_timeout_s=0.5) as bob:
        async with anyio.create_task_group() as tg:  # each session opened on both nodes at once
            for sid in sessions:
                tg.start_soon(send, alice, sid, "hello")
                tg.start_soon(send, bob, sid, "hello")
        winners = {}
        for sid in sessions:
            assert sorted([outcome[("alice", sid)], outcome[("bob", sid)]]) == ["acked", "forbidden"], (sid, outcome)
            winners[sid] = alice if outcome[("alice", sid)] == "acked" else bob
        # no node caches an owner the database does not hold: the winner is admitted on the other
        # node too, the loser on neither
        async with PhoneClient(n2, client_id="alice", tokens=alice.tokens, ack_timeout_s=0.5) as alice2, \
                PhoneClient(n1, client_id="bob", tokens=bob.tokens, ack_timeout_s=0.5) as bob2:
            other = {alice: alice2, bob: bob2}
            outcome.clear()
            async with anyio.create_task_group() as tg:
                for sid, winner in winners.items():
                    tg.start_soon(send, other[winner], sid, "again")
                    tg.start_soon(send, alice if winner is bob else bob, sid, "mine?")
            for sid, winner in winners.items():
                loser = "bob" if winner is alice else "alice"
                assert (outcome[(winner.client_id, sid)], outcome[(loser, sid)]) == ("acked", "forbidden"), (sid, outcome)


SECRET_TIMER_S = 12  # room for the delete (a CLI process) on a loaded machine before it is due


async def test_a_session_deleted_on_a_cluster_is_gone_from_the_node_serving_it(cluster_env):
    """Issue 51 finding 5: `sessions delete` did not reach the node serving the session: it kept
    the history in memory (its next prompts held the deleted text), its timers rang, and its
    cached owner still shut out everyone else. Now every node hears of the delete (NOTIFY)."""
    root, env = cluster_env
    state, _ = await _up(root, env)
    n1 = f"tcp://127.0.0.1:{state['nodes'][0]['port']}"
    heard: list[p.Envelope] = []

    async def listen(phone):
        async with phone.events() as incoming:
            async for envelope in incoming:
                heard.append(envelope)

    async with PhoneClient(n1, client_id="alice", ack_timeout_s=0.5) as alice, anyio.create_task_group() as tg:
        tg.start_soon(listen, alice)
        await alice.turn("secret", "my bank password is hunter2", timeout=20)
        set_at = anyio.current_time()
        await alice.turn("secret", f"set a timer for {SECRET_TIMER_S} seconds to call the bank", timeout=20)
        env_cli = {**env, "PORFIRY_STORAGE_BACKEND": "postgres", "PORFIRY_STORAGE_URL": state["storage_url"]}
        deleted = await anyio.to_thread.run_sync(lambda: _run("sessions", "delete", "secret", env=env_cli))
        assert deleted.returncode == 0, deleted.stderr
        left = SECRET_TIMER_S - (anyio.current_time() - set_at)
        assert left > 1, f"the delete took past the timer's due time ({SECRET_TIMER_S} s): nothing to judge"
        # due after the deleted one: once this one rang, the deleted one would have rung
        await alice.turn("control", f"set a timer for {math.ceil(left) + 2} seconds to water the plants", timeout=20)
        async with PhoneClient(n1, client_id="bob", ack_timeout_s=0.5) as bob:
            tg.start_soon(listen, bob)
            with anyio.fail_after(10):  # the id is free again on the node that served it
                while True:
                    try:
                        await bob.send_text("secret", "hello")
                        break
                    except EventRejected as exc:
                        assert exc.code == "forbidden"
                        await anyio.sleep(0.2)
            with anyio.fail_after(20):  # the control session's timer, due after the deleted one's
                while not any(_rang(e, "water the plants") for e in heard):
                    await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    assert not [e.body.text for e in heard if _rang(e, "call the bank")]  # the deleted session's timer never rang
    with psycopg.connect(state["storage_url"]) as conn:
        kept = [r[0] for r in conn.execute("SELECT content FROM entries WHERE session = 'secret'")]
    assert not any("hunter2" in text or "call the bank" in text for text in kept), kept


async def test_a_node_frozen_past_its_lease_does_nothing_twice_when_it_thaws(cluster_env):
    """Issue 51 finding 3: a node SIGSTOPped longer than node.lease_s, then SIGCONTed, processed
    what it had queued: it answered again a "set a timer" turn the node that took its session
    over had answered, set a second timer, fired timers twice, and journaled all of it after the
    new holder's entries. A lease is a fence now: the thawed node drops what it queued."""
    root, env = cluster_env
    state, _ = await _up(root, env)
    heard: list[p.Envelope] = []

    async def listen(phone):
        async with phone.events() as incoming:
            async for envelope in incoming:
                heard.append(envelope)

    async with PhoneClient(state["endpoint"], client_id="pixel", ack_timeout_s=0.5, max_resends=100) as phone, \
            anyio.create_task_group() as tg:
        tg.start_soon(listen, phone)
        await phone.turn("f", "hello", timeout=20)
        frozen = next(n for n in state["nodes"] if n["name"] == _lease(state, "f"))
        os.killpg(frozen["pid"], signal.SIGSTOP)  # its lease (2 s) lapses; HAProxy marks it down
        try:
            asked = await phone.send_text("f", "set a timer for 4 seconds to stretch", wait=False)
            with anyio.fail_after(40):  # the other node took the session, set the timer, and it rang
                while not any(_rang(e, "stretch") for e in heard):
                    await anyio.sleep(0.1)
        finally:
            os.killpg(frozen["pid"], signal.SIGCONT)
        # the thawed node serves again (the session comes back to it by a hand-over): once it
        # answered this, it is past everything it had queued
        endpoint = f"tcp://127.0.0.1:{frozen['port']}"
        async with PhoneClient(endpoint, client_id="pixel", tokens=phone.tokens, ack_timeout_s=0.5) as again:
            await again.turn("f", "and now?", timeout=30)
        tg.cancel_scope.cancel()
    with psycopg.connect(state["storage_url"]) as conn:
        rows = conn.execute("SELECT role, content, event_ids FROM entries WHERE session = 'f' AND role <> '' "
                            "ORDER BY id").fetchall()
        next_due = conn.execute("SELECT next_due FROM sessions WHERE session = 'f'").fetchone()[0]
    ids = [i for role, _, event_ids in rows if role == "user" for i in event_ids.split()]
    assert len(ids) == len(set(ids)), rows  # no event answered twice
    assert sum(i.startswith("timer-") for i in ids) == 1, rows  # the timer fired once
    assert asked in ids and sum(c.startswith("Timer set") for r, c, _ in rows if r == "assistant") == 1, rows
    assert next_due is None, "no second timer was set"
    assert sum(_rang(e, "stretch") for e in heard) == 1


def _lease(state, session):
    with psycopg.connect(state["storage_url"]) as conn:
        return conn.execute("SELECT node FROM session_lease WHERE session = %s", (session,)).fetchone()[0]


def _rang(envelope, text):
    """A final display of `text` that is not the answer that set its timer."""
    body = envelope.body
    return isinstance(body, p.Display) and body.final and text in body.text and not body.text.startswith("Timer set")


def _busy(port):
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
