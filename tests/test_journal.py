"""The journal's contract on both backends, a real SQLite file and a real PostgreSQL (storage/journal.py,
storage/postgres.py): round trips, search, retention, batching, failures."""
import anyio
import pytest

import protocol as p
from core.trajectory import Trajectory
from harness import until
from storage import journal as j


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        return j.SqliteStore(tmp_path / "journal.sqlite3")
    from storage.postgres import PostgresStore

    return PostgresStore(request.getfixturevalue("pg_url"))


def test_a_trajectory_comes_back_with_its_calls_and_their_states(store):
    conn = store.connect()
    trajectory = Trajectory(sink=lambda entry: store.insert_entry(conn, "s1", 100.0, entry))
    trajectory.record_events(p.Event(event_id="e1", kind="user_text", source="user", channel="speech", content="find lara"))
    trajectory.record_assistant("TOOL_CALL: media_search|lara", "c1", "media_search")
    trajectory.record_placeholder("c1")
    trajectory.record_events(p.Event(event_id="e2", kind="user_interrupt", source="user", channel="speech", content="stop"))
    trajectory.record_assistant("OK", None, None)
    trajectory.record_late_result("c1", "Lara Croft (2001)")
    trajectory.record_assistant("TOOL_CALL: show_text|hi", "c2", "show_text")  # open when the runtime died
    store.insert_event(conn, "s1", "phone-1", p.Event(event_id="e1", kind="user_text", source="user", channel="speech"), 100.0)
    stored = store.load_session(conn, "s1")
    back = Trajectory.restore(stored.entries)
    assert back.messages() == trajectory.messages()
    assert back.call_state("c1") == "late" and back.pending_calls() == [("c2", "show_text")]
    assert stored.phone_key == "phone-1" and stored.seen == ["e1"]
    assert [e.event_id for e in stored.open_events] == ["e1"]
    assert {i for e in stored.entries for i in e.event_ids} == {"e1", "e2"}
    back.record_cut("c2")
    back.check()
    assert back.placeholder_calls() == [], "c1 already has its late result"
    store.mark_done(conn, "s1", ["e1"])
    assert store.load_session(conn, "s1").open_events == []


def test_search_finds_russian_and_english_words_with_other_endings_in_its_own_session_only(store):
    conn = store.connect()
    say = lambda session, ts, role, text: store.insert_entry(conn, session, ts, j.Recorded(role=role, content=text))  # noqa: E731
    say("s1", 1.0, "user", "[User said] Меня зовут Аглая")
    say("s1", 2.0, "assistant", "Приятно познакомиться")
    say("s1", 3.0, "user", "[User said] I watched the Matrix films yesterday")
    say("s2", 4.0, "user", "[User said] Аглая is not here")
    hits = store.search(conn, "s1", "Аглаю")
    assert [(h.content, h.reply) for h in hits] == [("[User said] Меня зовут Аглая", "Приятно познакомиться")]
    assert [h.ts for h in store.search(conn, "s1", "matrix film")] == [3.0]
    assert store.search(conn, "s1", "???") == []


def test_delete_and_retention(store):
    conn = store.connect()
    for session, ts in (("old", 10.0), ("new", 1000.0)):
        store.insert_event(conn, session, "", p.Event(event_id="e", kind="user_text", source="user", channel="speech"), ts)
        store.insert_entry(conn, session, ts, j.Recorded(role="user", content=f"hello from {session}"))
        store.mark_done(conn, session, ["e"])
    assert store.purge_older_than(conn, 500.0) == 1
    assert [row[0] for row in store.list_sessions(conn)] == ["new"]
    assert store.search(conn, "old", "hello") == []
    assert store.delete_session(conn, "new") and not store.delete_session(conn, "new")
    assert store.list_sessions(conn) == []


async def test_the_journal_batches_writes_off_the_event_loop_and_acks_only_what_is_stored(tmp_path, store):
    journal = j.Journal(tmp_path / "journal.sqlite3", store=store)
    async with anyio.create_task_group() as tg:
        await tg.start(journal.run)
        for k in range(50):
            journal.append("s1", j.Recorded(role="user", content=f"message {k}"))
        event = p.Event(event_id="e1", kind="user_text", source="user", channel="speech")
        await journal.stored(journal.accept_event("s1", "", event))
        assert journal.batches <= 2, "fifty appends and an event: one or two transactions"
        stored = await journal.load("s1")
        assert [e.content for e in stored.entries] == [f"message {k}" for k in range(50)]
        tg.cancel_scope.cancel()


async def test_a_write_that_fails_is_an_error_for_whoever_waits_on_it(tmp_path, store):
    journal = j.Journal(tmp_path / "journal.sqlite3", store=store)
    async with anyio.create_task_group() as tg:
        await tg.start(journal.run)
        journal._conn.execute("DROP TABLE events")  # the disk lost the table under us
        try:
            await journal.stored(journal.accept_event("s1", "", p.Event(event_id="e1", kind="user_text", source="user", channel="speech")))
        except j.JournalError as exc:
            assert "journal write failed" in str(exc) and "events" in str(exc)
        else:
            raise AssertionError("an event that was not stored must not be acked")
        tg.cancel_scope.cancel()


async def test_on_stored_calls_back_after_the_commit_or_with_the_error(tmp_path, store):
    journal = j.Journal(tmp_path / "journal.sqlite3", store=store)
    event = p.Event(event_id="e1", kind="user_text", source="user", channel="speech")
    async with anyio.create_task_group() as tg:
        await tg.start(journal.run)
        outcomes: list = []
        waiter = journal.accept_event("s1", "", event)
        journal.on_stored(waiter, outcomes.append)
        assert outcomes == [], "called back before the commit"
        await until(lambda: outcomes)
        assert outcomes == [None] and [e.event_id for e in (await journal.load("s1")).open_events] == ["e1"]
        journal.on_stored(waiter, outcomes.append)  # already stored: at once
        assert outcomes == [None, None]
        journal._conn.execute("DROP TABLE events")
        failed = journal.accept_event("s1", "", p.Event(event_id="e2", kind="user_text", source="user", channel="speech"))
        journal.on_stored(failed, outcomes.append)
        await until(lambda: len(outcomes) >= 3)
        assert isinstance(outcomes[2], j.JournalError)
        tg.cancel_scope.cancel()
    nothing = j.NoJournal()
    nothing.on_stored(nothing.accept_event("s1", "", event), outcomes.append)
    assert outcomes[3:] == [None]


def test_a_session_with_a_running_monitor_comes_back_at_a_restart_on_either_backend(store):
    """A monitor must run again after a restart: its session is brought back with the unfinished
    ones even with no timer and no event waiting (the PostgreSQL store once missed it)."""
    from core.monitors import MonitorRow
    from core.world import WorldState

    conn = store.connect()
    store.insert_event(conn, "m", "phone-1", p.Event(event_id="e1", kind="user_text", source="user", channel="speech"), 1.0)
    store.mark_done(conn, "m", ["e1"])
    store.save_state(conn, "m", j.SessionState(), 2.0)
    assert "m" not in store.unfinished_sessions(conn)
    running = WorldState(monitors=[MonitorRow(monitor_id="m1", name="build", condition="exit 0", started=2.0)])
    store.save_state(conn, "m", j.SessionState(world=running), 3.0)
    assert "m" in store.unfinished_sessions(conn)


# ---- issue 54: small batches commit on the event loop, never waiting there for a lock ----------------
async def test_an_event_stored_while_another_writer_holds_the_lock_waits_for_it_and_is_acked_after(tmp_path):
    import sqlite3

    path = tmp_path / "journal.sqlite3"
    journal = j.Journal(path, store=j.SqliteStore(path))
    event = p.Event(event_id="e1", kind="user_text", source="user", channel="speech")
    async with anyio.create_task_group() as tg:
        await tg.start(journal.run)
        other = sqlite3.connect(str(path), isolation_level=None)  # the bridge's ownership writes share the file
        other.execute("BEGIN IMMEDIATE")
        waiter = journal.accept_event("s1", "", event)
        await until(lambda: journal._queue == [], timeout=10)  # taken by the writer: it waits in a thread
        await anyio.sleep(0.05)  # the loop keeps running meanwhile (this sleep returns)
        assert not waiter.done.is_set(), "acked before it was on disk"
        other.execute("COMMIT")
        await journal.stored(waiter)
        assert (await journal.load("s1")).seen == ["e1"]
        other.close()
        tg.cancel_scope.cancel()


async def test_the_wal_is_checkpointed_by_the_worker_thread_and_stops_growing(tmp_path):
    path = tmp_path / "journal.sqlite3"
    journal = j.Journal(path, store=j.SqliteStore(path))
    wal = tmp_path / "journal.sqlite3-wal"
    sizes = []
    async with anyio.create_task_group() as tg:
        await tg.start(journal.run)
        for k in range(6 * j.CHECKPOINT_EVERY):
            event = p.Event(event_id=f"e{k}", kind="user_text", source="user", channel="speech", content="x" * 2000)
            await journal.stored(journal.accept_event("s1", "", event))
            if (k + 1) % (2 * j.CHECKPOINT_EVERY) == 0:
                sizes.append(wal.stat().st_size)
        assert sizes[2] <= sizes[0] * 1.1, f"the WAL keeps growing: {sizes} bytes (never checkpointed)"
        assert len((await journal.load("s1")).seen) == j.DEDUP_KEPT
        tg.cancel_scope.cancel()
