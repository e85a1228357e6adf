"""storage.backend = "postgres" through the real actors and commands, on a throwaway PostgreSQL
(tests/conftest.py's pg_server): the same conversations, timers, dedup, ownership and
`run.py sessions` as on SQLite; the schema migrated by the runtime, once, versioned."""
import argparse

import anyio
import psycopg
import pytest

import protocol as p
from llm.scripted import ScriptedBackend
from storage import postgres as pg
from cli.sessions import cmd_sessions
from tests.harness import inproc_system, make_config, override


def _pg_config(tmp_path, url):
    return override(make_config(tmp_path), storage={"backend": "postgres", "url": url})


async def test_a_conversation_and_its_timer_outlive_a_restart_on_postgres(tmp_path, pg_url, manual_clock):
    def model(messages):
        last = messages[-1]
        if last.role == "tool":
            return "timer noted"
        if "remind me" in last.content:
            return "TOOL_CALL: timers_set|in 5 minutes; tea"
        if "Timer fired" in last.content:
            return "Reminder: tea is ready"
        return "ok"

    backend = ScriptedBackend(reply_fn=model)
    config = _pg_config(tmp_path, pg_url)
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, config=config,
                             execute_substituted_calls=True) as system:
        await system.turn("tea", "remind me about tea in 5 minutes")
        reply = await system.deliver("tea", "hello there", event_id="ev-1")
        assert isinstance(reply, p.EventAccepted) and not reply.duplicate
        await system.actors["glasses"].wait_event_done("tea", "ev-1")
    manual_clock.advance(600)  # the runtime is down when the timer comes due
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, config=config,
                             execute_substituted_calls=True) as system:
        glasses = system.actors["glasses"]
        with anyio.fail_after(10):
            while not any(isinstance(m, p.Display) and m.final and m.text == LATE_REMINDER  # a reflex shows it
                          for m in glasses.shown.get("tea", [])):
                await glasses.changed.wait()
        fired = [m["content"] for m in await system.history("tea") if "Timer fired" in m["content"]]
        assert len(fired) == 1 and "late" in fired[0], fired
        reply = await system.deliver("tea", "hello there", event_id="ev-1")  # the phone never saw the ack
        assert isinstance(reply, p.EventAccepted) and reply.duplicate
        history = [m["content"] for m in await system.history("tea")]
        assert "[User said] remind me about tea in 5 minutes" in history and history.count("[User said] hello there") == 1
        hits = await system.actors["session"].journal.search("tea", "reminds")  # history_search: other endings too
        assert [h.content for h in hits] == ["[User said] remind me about tea in 5 minutes", LATE_REMINDER], hits


LATE_REMINDER = "⏰ Reminder: tea (late: the server was down)"  # the timer's text, as set


def test_the_schema_is_migrated_once_and_a_newer_one_is_refused(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert pg.migrate(conn) == 0, "a new database starts at version 0"
        assert pg.migrate(conn) == pg.SCHEMA_VERSION, "a second start finds it migrated and changes nothing"
        assert [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")] == sorted(pg.MIGRATIONS)
        conn.execute("INSERT INTO schema_version VALUES (%s, 0)", (pg.SCHEMA_VERSION + 1,))
        with pytest.raises(pg.JournalError, match="newer than this runtime"):
            pg.migrate(conn)


def test_ownership_claimed_on_one_node_is_proved_on_another(pg_url):
    from storage.ownership import proves

    first, second = pg.PostgresOwnershipStore(pg_url), pg.PostgresOwnershipStore(pg_url)
    try:
        first.claim("s1", "token", "secret", "ev-1", b"route-a")
        owner = second.get("s1")
        assert owner is not None and owner.route == b"route-a"
        assert proves(owner, "token", "secret") and not proves(owner, "token", "guess")
        assert "secret" not in owner.proof, "the table keeps the token salted and hashed"
        second.set_route("s1", b"route-b")
        assert pg.PostgresOwnershipStore(pg_url).get("s1").route == b"route-b"
        second.forget(["s1"])
        assert pg.PostgresOwnershipStore(pg_url).get("s1") is not None, "forgotten from memory, never from the table"
        second.delete(["s1"])
        assert pg.PostgresOwnershipStore(pg_url).get("s1") is None
    finally:
        first.close()
        second.close()


def test_run_py_sessions_lists_shows_exports_and_deletes_on_postgres(tmp_path, pg_url, capsys):
    config = _pg_config(tmp_path, pg_url)
    store = pg.PostgresStore(pg_url)
    conn = store.connect()
    store.insert_event(conn, "s1", "phone-1", p.Event(event_id="e1", kind="user_text", source="user", channel="speech"), 100.0)
    store.insert_entry(conn, "s1", 100.0, pg.Recorded(role="user", content="[User said] привет"))
    conn.close()

    def run(action, session=None):
        cmd_sessions(argparse.Namespace(action=action, session=session), config)
        return capsys.readouterr().out

    assert "s1" in run("list") and "phone-1" in run("list")
    assert "привет" in run("show", "s1")
    assert '"session": "s1"' in run("export", "s1")
    assert "deleted session s1 (1 entries)" in run("delete", "s1")
    assert "0 session(s)" in run("list")


async def test_the_journal_reconnects_after_the_server_hung_up_and_acks_nothing_it_lost(tmp_path, pg_url):
    from storage.journal import Journal

    journal = Journal(tmp_path / "unused", store=pg.PostgresStore(pg_url))
    event = lambda n: p.Event(event_id=f"e{n}", kind="user_text", source="user", channel="speech")  # noqa: E731
    async with anyio.create_task_group() as tg:
        await tg.start(journal.run)
        await journal.stored(journal.accept_event("s1", "", event(1)))
        with psycopg.connect(pg_url, autocommit=True) as admin:  # what a server restart does to it
            admin.execute("SELECT pg_terminate_backend(%s)", (journal._conn.info.backend_pid,))
        outcomes = []
        for n in (2, 3):
            try:
                await journal.stored(journal.accept_event("s1", "", event(n)))
                outcomes.append("stored")
            except pg.JournalError:
                outcomes.append("error")
        assert outcomes in (["error", "stored"], ["stored", "stored"]), outcomes
        stored = await journal.load("s1")
        assert [e.event_id for e in stored.open_events] == ["e1"] + [f"e{n}" for n, o in zip((2, 3), outcomes) if o == "stored"]
        tg.cancel_scope.cancel()
