"""Issue 38 at the phone edge and the web console, attacked as an outsider would: raw ZeroMQ
frames to the real GlassesBridge in front of the real SessionActor, HTTP over loopback."""
from __future__ import annotations

import json
import time
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import pytest
import zmq

import protocol as p
from actors.glasses import GlassesBridge, SessionTable
from harness import free_port, inproc_system, make_config, override, until
from llm.scripted import ScriptedBackend
from phone.client import PhoneClient
from storage.ownership import OwnershipStore
from test_glasses_bridge import dirs  # noqa: F401 - dirs is a fixture


# ---- finding 1: replaying a session's first event id takes nothing over ----------------------
def _raw_text(session: str, event_id: str, text: str, token: str = "") -> bytes:
    body = p.UserText(event_id=event_id, ts=time.time(), text=text, token=token)
    return p.Codec().encode(p.Envelope(body=body, sender="attacker", session=session))


async def _replies(sock: zmq.Socket) -> list[p.Msg]:
    """What the raw socket receives for what it sent, up to the TurnDone of one more event it
    then sends, in a session of its own: the runtime answers a connection in order (the bridge
    hands events to the session actor in order, and its answers come back in order), so anything
    it had for the earlier frames has come by then. The barrier session's own answers are left out."""
    barrier = p.new_id()
    sock.send(_raw_text("barrier-" + barrier, barrier, "hello"))
    got: list[p.Envelope] = []

    def barrier_done() -> bool:
        while True:
            try:
                got.append(p.Codec().decode(sock.recv(zmq.NOBLOCK)))
            except zmq.Again:
                return any(isinstance(env.body, p.TurnDone) and barrier in env.body.event_ids for env in got)

    await until(barrier_done)
    return [env.body for env in got if env.session != "barrier-" + barrier]


async def test_a_replayed_first_event_id_gets_neither_the_token_nor_the_answer(tmp_path):
    """With CURVE off an attacker who read a session's first event id (console, log) resends it
    with no token, or a wrong one: it is refused, and sees no token, no Ack, no display."""
    config = override(make_config(tmp_path), phone={"endpoint": f"tcp://127.0.0.1:{free_port()}", "curve": False})
    async with inproc_system(tmp_path, backend=ScriptedBackend(), config=config, stand_ins={"glasses": GlassesBridge}) as system:
        async with PhoneClient(config.phone.endpoint, client_id="alice", ack_timeout_s=0.3) as alice:
            first = await alice.send_text("s1", "my secret is 1234")
            await alice.turn("s1", "and hello", timeout=10)
            attacker = system.zmq.socket(zmq.DEALER)
            attacker.setsockopt(zmq.IDENTITY, b"alice/evil")
            attacker.setsockopt(zmq.LINGER, 0)
            attacker.connect(config.phone.endpoint)
            try:
                attacker.send(_raw_text("s1", first, "my secret is 1234"))
                attacker.send(_raw_text("s1", first, "my secret is 1234", token="x" * 32))
                got = await _replies(attacker)
            finally:
                attacker.close(linger=0)
            assert [type(m).__name__ for m in got] == ["ErrorReply", "ErrorReply"], got
            assert all(m.code == "forbidden" for m in got)
            assert alice.tokens.get("s1") not in repr(got)
            # the owner is unaffected: her session still answers her
            assert (await alice.turn("s1", "still mine?", timeout=10)).final_text


def test_a_forgotten_idle_session_stays_owned(tmp_path):
    """Idle sessions leave the bridge's memory, never the table: the journal brings a forgotten
    session back, so whoever sends its id (or its first event id) next must still prove it."""
    now = [1000.0]
    table = SessionTable(clock=lambda: now[0], store=OwnershipStore(tmp_path / "o.sqlite3"))
    allowed, token = table.admit("s", b"alice/1", token="a" * 24, event_id="e1")
    assert allowed and token == "a" * 24
    now[0] += 7200
    assert table.forget(["s"], idle_s=3600) == ["s"]
    assert table.admit("s", b"mallory/1", event_id="e1") == (False, ""), "the first event id replayed"
    assert table.admit("s", b"mallory/1", token="m" * 24, event_id="e9") == (False, ""), "a new claim of a forgotten id"
    assert table.admit("s", b"alice/2", token="a" * 24, event_id="e2") == (True, "")


# ---- finding 2: the loopback console answers only to its own name (DNS rebinding) --------------
@asynccontextmanager
async def console_over_http(config, **kwargs):
    """A real Console on loopback (hypercorn's trio worker): (its URL, the console)."""
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.trio import serve

    from web.journal import Journal
    from web.metrics import Metrics
    from web.server import Console

    console = Console(config, None, Journal(), Metrics(), **kwargs)
    hyper = HypercornConfig()
    hyper.bind = ["127.0.0.1:0"]
    async with anyio.create_task_group() as tg:
        url = (await tg.start(serve, console.app(), hyper))[0]
        console.hosts.port = urlsplit(url).port
        yield url, console
        tg.cancel_scope.cancel()


async def test_a_forged_host_or_a_foreign_origin_is_refused_before_any_route(tmp_path):
    import httpx

    config = override(make_config(tmp_path), web={"allowed_hosts": ["porfiry.lan"]})
    async with console_over_http(config) as (url, _), httpx.AsyncClient(base_url=url) as client:
        port = urlsplit(url).port
        command = {"session": "", "action": "stop"}  # reaches the route: 400 (nothing to send), no runtime needed
        # what the probe did: `curl -H 'Host: attacker.example:PORT' ... POST /api/admin/profile`
        for path in ("/api/admin/profile", "/api/send", "/api/admin/skills"):
            forged = await client.post(path, json=command, headers={"Host": f"attacker.example:{port}"})
            assert forged.status_code == 403 and "web.allowed_hosts" in forged.json()["error"], path
        assert (await client.get("/api/stream", headers={"Host": f"attacker.example:{port}"})).status_code == 403
        assert (await client.get("/metrics", headers={"Host": f"127.0.0.1:{port + 1}"})).status_code == 403
        # a page of another site (or a rebound one) posting to the right Host
        for origin in ("http://attacker.example", f"http://attacker.example:{port}", "null"):
            refused = await client.post("/api/send", json=command, headers={"Origin": origin})
            assert refused.status_code == 403 and "cross-origin" in refused.json()["error"], origin
        browser_without_origin = await client.post("/api/send", json=command, headers={"Sec-Fetch-Site": "cross-site"})
        assert browser_without_origin.status_code == 403
        # the console's own page, its loopback names, a configured name, and a script without Origin
        for host, origin in ((f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"), (f"localhost:{port}", f"http://localhost:{port}"),
                             (f"[::1]:{port}", f"http://[::1]:{port}"), ("porfiry.lan", "https://porfiry.lan")):
            ok = await client.post("/api/send", json=command, headers={"Host": host, "Origin": origin, "Sec-Fetch-Site": "same-origin"})
            assert ok.status_code == 400, (host, ok.text)
        assert (await client.post("/api/send", json=command)).status_code == 400
        assert (await client.get("/metrics")).status_code == 200


# ---- finding 9: no credential in the clear, on disk or in the log --------------------------------
def test_tokens_are_kept_salted_and_hashed_in_a_private_file_and_old_plain_rows_are_hashed(tmp_path):
    import os
    import sqlite3

    from storage.ownership import SCHEMA, proves

    old = tmp_path / "old.sqlite3"  # a database of the previous version: tokens as is, mode 0644
    with sqlite3.connect(old) as db:
        db.executescript(SCHEMA)
        db.execute("INSERT INTO session_owner VALUES ('s0', 'token', 'plain-token-of-old-1234', 'e0', x'61', 0)")
    os.chmod(old, 0o644)
    store = OwnershipStore(old)
    assert proves(store.get("s0"), "token", "plain-token-of-old-1234") and not proves(store.get("s0"), "token", "guess")
    store.claim("s1", "token", "fresh-token-of-alice-5678", "e1", b"alice/1")
    store.close()
    data = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert b"plain-token-of-old-1234" not in data and b"fresh-token-of-alice-5678" not in data
    assert os.stat(old).st_mode & 0o777 == 0o600
    new = tmp_path / "var" / "new.sqlite3"
    OwnershipStore(new).close()
    assert os.stat(new).st_mode & 0o777 == 0o600
    again = OwnershipStore(old)
    assert proves(again.get("s1"), "token", "fresh-token-of-alice-5678") and proves(again.get("s0"), "token", "plain-token-of-old-1234")


async def test_no_event_id_or_token_is_logged_at_info(tmp_path, caplog):
    import logging

    config = override(make_config(tmp_path), phone={"endpoint": f"tcp://127.0.0.1:{free_port()}", "curve": False})
    with caplog.at_level(logging.INFO):
        async with inproc_system(tmp_path, backend=ScriptedBackend(), config=config, stand_ins={"glasses": GlassesBridge}):
            async with PhoneClient(config.phone.endpoint, client_id="alice", ack_timeout_s=0.3) as alice:
                turn = await alice.turn("s1", "hello there", timeout=10)
                second = await alice.turn("s1", "and again", timeout=10)
                token = alice.tokens.get("s1")
    text = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert "session=s1" in text  # the log still says what happened
    for secret in (token, turn.event_id, second.event_id):
        assert secret and secret not in text


def test_the_console_url_with_its_token_is_printed_only_to_a_terminal(tmp_path):
    """`run.py up --host 0.0.0.0` sends `run.py web`'s output to var/porfiry.log."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    config = tmp_path / "porfiry.toml"
    config.write_text(f'[phone]\nendpoint = "tcp://127.0.0.1:{free_port()}"\n[web]\ntoken_path = "{tmp_path / "var" / "web-token"}"\n')
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PORFIRY_CONFIG", None)
    web = subprocess.Popen([sys.executable, str(repo / "run.py"), "--config", str(config), "web", "--host", "0.0.0.0",
                            "--port", str(free_port())], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = next(line for line in web.stdout if line.startswith("web console:"))
    finally:
        web.terminate()
        web.wait(timeout=10)
    token = (tmp_path / "var" / "web-token").read_text().strip()
    assert token and token not in line and "?token=" not in line.replace("?token=TOKEN", "")
    assert str(tmp_path / "var" / "web-token") in line
    assert os.stat(tmp_path / "var" / "web-token").st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "var").st_mode & 0o777 == 0o700, "what the runtime creates is its user's only (umask)"


# ---- finding 13: the console's token, the metrics' labels, deletion, global caps -----------------
async def test_any_token_gets_a_clean_401_and_guesses_are_throttled_per_address(tmp_path):
    import httpx

    token = "right-token-" + "x" * 20
    config = override(make_config(tmp_path), web={"token_guesses_per_min": 3})
    async with console_over_http(config, token=token) as (url, _):
        async with httpx.AsyncClient(base_url=url) as client:
            # what a header or a cookie can carry (latin-1), and a query's unicode: 401, never 500
            assert (await client.get("/metrics", headers={"Authorization": "Bearer clé-é".encode("latin-1")})).status_code == 401
            assert (await client.get("/metrics", headers={"Cookie": "porfiry_token=\xe9t\xe9".encode("latin-1")})).status_code == 401
            assert (await client.get("/?token=ключ")).status_code == 401  # the third wrong one this minute
            throttled = await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
            assert throttled.status_code == 429 and "web.token_guesses_per_min" in throttled.json()["error"]
            assert 1 <= int(throttled.headers["Retry-After"]) <= 61
        # another address is not held back by this one's guesses
        other = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(base_url=url, transport=other) as client:
            assert (await client.get("/?token=ключ")).status_code == 401
            assert (await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})).status_code == 200


def test_a_weak_web_token_is_refused_at_config_load_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from core.config import ConfigError, load_config

    config = tmp_path / "porfiry.toml"
    config.write_text('[web]\ntoken = "x"\n')
    with pytest.raises(ConfigError, match=r"web\.token must be at least 16 characters"):
        load_config(config)
    run_py = Path(__file__).resolve().parent.parent / "run.py"
    done = subprocess.run([sys.executable, str(run_py), "--config", str(config), "web"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0 and "web.token" in done.stderr


def test_a_console_port_already_taken_is_one_clear_line(tmp_path):
    # the CI once saw `run.py web` exit 1 with a traceback (the bind fails inside the server's task groups)
    import socket
    import subprocess
    import sys
    from pathlib import Path

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    run_py = Path(__file__).resolve().parent.parent / "run.py"
    try:
        done = subprocess.run([sys.executable, str(run_py), "web", "--port", str(port)], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)
    finally:
        taken.close()
    assert done.returncode == 1 and done.stderr.strip() == f"porfiry web: cannot listen on 127.0.0.1:{port}: [Errno 98] Address already in use"


async def test_a_tool_name_the_model_made_up_is_counted_as_unknown_not_as_a_new_label(tmp_path):
    from web.metrics import Metrics

    def model(messages):
        if any("TOOL_CALL" in m.content for m in messages if m.role == "assistant"):
            return "Done."
        return "TOOL_CALL: zz9_plural_z_alpha|now"

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model)) as system:
        facts: list[p.Msg] = []
        async with system.client.ask_stream("session", p.Observe(lease_s=30)) as replies:
            assert isinstance((await replies.receive()).body, p.Observing)
            await system.turn("s1", "do the thing")
            with anyio.fail_after(10):
                while not any(isinstance(f, p.ToolCallFact) and f.outcome != "running" for f in facts):
                    facts.append((await replies.receive()).body)
    metrics = Metrics()
    for fact in facts:
        metrics.take(fact)
    text = metrics.render().decode()
    assert 'porfiry_tool_calls_total{outcome="unknown",tool="unknown"} 1.0' in text.splitlines(), text
    assert "zz9_plural_z_alpha" not in text
    assert [line for line in text.splitlines() if line.startswith("porfiry_tool_calls_total")] == [
        'porfiry_tool_calls_total{outcome="unknown",tool="unknown"} 1.0']


async def test_sessions_delete_removes_the_owner_and_its_token(tmp_path):
    import argparse

    from cli.sessions import cmd_sessions

    config = override(make_config(tmp_path), phone={"endpoint": f"tcp://127.0.0.1:{free_port()}", "curve": False})
    async with inproc_system(tmp_path, backend=ScriptedBackend(), config=config, stand_ins={"glasses": GlassesBridge}) as system:
        bridge = system.actors["glasses"]
        async with PhoneClient(config.phone.endpoint, client_id="alice", ack_timeout_s=0.3) as alice:
            await alice.turn("s1", "hello", timeout=10)
            await alice.turn("s2", "hello", timeout=10)
            assert isinstance(await system.client.ask("session", p.SessionDelete(), session="s1"), p.Ok)
            await until(lambda: bridge.sessions.owner("s1") is None)
    assert OwnershipStore(config.path(config.storage.path)).get("s1") is None
    # no runtime running: `run.py sessions delete` removes the claim from the file itself
    assert OwnershipStore(config.path(config.storage.path)).get("s2") is not None
    args = argparse.Namespace(action="delete", session="s2")
    assert await anyio.to_thread.run_sync(lambda: cmd_sessions(args, config)) == 0
    assert OwnershipStore(config.path(config.storage.path)).get("s2") is None


async def test_phone_connections_and_sessions_are_capped_for_the_whole_runtime(dirs):
    from phone.client import EventRejected, PhoneRefused
    from test_glasses_bridge import make_config as bridge_config, runtime

    config = override(bridge_config(dirs), phone={"curve": False, "max_connections": 2, "max_sessions": 3})
    async with runtime(config) as rt, rt.phone("a", curve=None) as a, rt.phone("b", curve=None) as b:
        await a.start("a1"), await a.start("a2"), await b.start("b1")
        with pytest.raises(EventRejected) as full:  # a connection under its own limit, the runtime at its
            await b.start("b2")
        assert full.value.code == "runtime_full" and "phone.max_sessions" in full.value.detail
        assert (await a.turn("a1", "still served", timeout=5)).final_text == "echo: still served"
        with pytest.raises(PhoneRefused, match=r"too_many_connections: .*phone\.max_connections"):
            async with rt.phone("c", curve=None):
                pass
        assert "c1" not in rt.journal.events and "b2" not in rt.journal.events


# ---- finding 10 (web): a page that does not read holds a bounded number of bytes -----------------
async def test_a_page_that_does_not_read_its_stream_holds_bounded_bytes_and_learns_what_it_lost(tmp_path):
    import httpx

    config = override(make_config(tmp_path), web={"stream_max_bytes": 65536})
    async with console_over_http(config) as (url, console), httpx.AsyncClient(base_url=url, timeout=30) as client:
        async with client.stream("GET", "/api/stream?session=s") as stream:  # opened, then not read
            await until(lambda: console.journal.watched() == ["s"])
            page = console.journal._clients[0][1]  # noqa: SLF001 - what the server holds for this page
            peak = 0
            for index in range(3000):  # 30 MB of displays, taken at once: the session side never waits
                console.journal.take(p.DisplayFact(session="s", ts=index, turn_id=f"t{index}", text="x" * 10_000))
                peak = max(peak, page.bytes)
            assert peak <= 65536 + 10_100
            seen, dropped = [], 0
            with anyio.fail_after(20):
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        fact = json.loads(line[6:])
                        dropped += fact.get("facts", 0) if fact.get("type") == "Dropped" else 0
                        seen.append(fact.get("turn_id"))
                        if fact.get("turn_id") == "t2999":
                            break
        assert dropped > 0 and seen[-1] == "t2999"
        delivered = [t for t in seen if t]
        assert delivered == [f"t{i}" for i in range(3000 - len(delivered), 3000)], "the newest, in order"
        assert len(delivered) + dropped >= 3000, "every fact is delivered or counted in a marker"


async def test_a_history_whose_claim_an_older_version_dropped_is_not_free_to_take(tmp_path):
    """Before issue 38 an idle session's claim was deleted while its journal stayed: whoever
    named the session (or replayed its first event id) next got its history and answers."""
    import sqlite3

    config = override(make_config(tmp_path), phone={"endpoint": f"tcp://127.0.0.1:{free_port()}", "curve": False})
    async with inproc_system(tmp_path, backend=ScriptedBackend(), config=config, stand_ins={"glasses": GlassesBridge}) as system:
        async with PhoneClient(config.phone.endpoint, client_id="alice", ack_timeout_s=0.3) as alice:
            first = await alice.send_text("s1", "my secret is 1234")
        system.actors["glasses"].sessions.forget(["s1"], idle_s=0)
        with sqlite3.connect(config.path(config.storage.path)) as db:  # what the older version's forget did
            db.execute("DELETE FROM session_owner WHERE session = 's1'")
        attacker = system.zmq.socket(zmq.DEALER)
        attacker.setsockopt(zmq.LINGER, 0)
        attacker.connect(config.phone.endpoint)
        try:
            attacker.send(_raw_text("s1", first, "my secret is 1234"))
            attacker.send(_raw_text("s1", p.new_id(), "what is my secret?", token="m" * 24))
            got = await _replies(attacker)
        finally:
            attacker.close(linger=0)
        assert [(type(m).__name__, getattr(m, "code", "")) for m in got] == [("ErrorReply", "forbidden")] * 2, got
