"""Issue 38's storage findings against a real `run.py serve` (a process per actor over ipc://):
one runtime per SQLite file, a corrupt database is one line and exit status 2, never a restart
loop, and `run.py sessions` says the same without a traceback."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from harness import poll
from test_process_mode import REPO, _cli, _status, served  # noqa: F401 - served is a fixture

EXIT_PERMANENT = 2


def _serve(config, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _journal_with_history(path) -> None:
    """A database of a few hundred entries, checkpointed into the main file."""
    from core.trajectory import Recorded
    from storage import journal

    conn = journal.connect(path)
    conn.execute("BEGIN")
    for index in range(600):
        journal.insert_entry(conn, f"s{index % 7}", 1.0, Recorded(role="user", content=f"entry {index} " * 30))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _garbage_header(path) -> None:
    path.write_bytes(os.urandom(8192))


def _truncated(path) -> None:
    _journal_with_history(path)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 3)


def _garbage_inside(path) -> None:
    _journal_with_history(path)
    with open(path, "r+b") as f:
        f.seek(4096 * 8)
        f.write(os.urandom(4096 * 6))


def _config_at(tmp_path, ipc_dir, db, port: int) -> "os.PathLike":
    from test_process_mode import _write_config

    config = _write_config(tmp_path, ipc_dir)
    text = config.read_text().replace(str(tmp_path / "porfiry.sqlite3"), str(db))
    config.write_text(text)
    return config


@pytest.mark.parametrize("spoil, cause", [
    (_garbage_header, "is not an SQLite database"),
    (_truncated, "is corrupt ("),
    (_garbage_inside, "is corrupt ("),
])
def test_a_corrupt_database_is_one_line_and_exit_status_2_for_serve_and_sessions_list(tmp_path, ipc_dir, spoil, cause):
    db = tmp_path / "porfiry.sqlite3"
    spoil(db)
    config = _config_at(tmp_path, ipc_dir, db, 0)
    started = time.monotonic()
    serve = _serve(config)
    assert serve.returncode == EXIT_PERMANENT, serve
    assert time.monotonic() - started < 15  # no restarts
    lines = serve.stderr.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0] and cause in lines[0], serve.stderr
    listed = _cli(config, "sessions", "list")
    assert listed.returncode == EXIT_PERMANENT
    lines = listed.stderr.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0] and cause in lines[0] and "Traceback" not in listed.stderr, listed.stderr


def test_corruption_a_restarted_actor_finds_stops_the_runtime_at_once_not_in_a_restart_loop(served, tmp_path):
    config, runtime = served(supervisor="intensity = 10")
    said = _cli(config, "say", "--session", "c1", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    pid = int(_status(config)["session"][2])
    db = tmp_path / "porfiry.sqlite3"
    with open(db, "r+b") as f:
        f.write(b"this is no database any more")
    os.kill(pid, signal.SIGKILL)
    assert runtime.wait(timeout=60) == EXIT_PERMANENT
    log = (tmp_path / "serve.log").read_text()
    assert log.count("restarting child=session") == 1, log  # the one restart after the kill, no loop
    assert f"porfiry: session: storage: {db} is not an SQLite database" in log
    assert "Traceback" not in log, log
    assert "porfiry: stopped: session: a permanent failure (exit status 2" in log


def test_a_second_runtime_on_the_same_database_is_refused_and_the_first_keeps_its_lock_across_restarts(served, tmp_path):
    config, first = served()
    said = _cli(config, "say", "--client-id", "alice", "--session", "mine", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    other_ipc = tempfile.mkdtemp(prefix="pf")
    try:
        other = tmp_path / "other"
        other.mkdir()
        second_config = _config_at(other, other_ipc, tmp_path / "porfiry.sqlite3", 0)
        started = time.monotonic()
        second = _serve(second_config, timeout=30)
    finally:
        shutil.rmtree(other_ipc, ignore_errors=True)
    assert second.returncode == EXIT_PERMANENT, second
    assert second.stderr.strip().splitlines() == [
        f"porfiry: storage: {tmp_path / 'porfiry.sqlite3'} is in use by another runtime (pid {first.pid}, "
        f"lock {tmp_path / 'porfiry.sqlite3.lock'}); stop it or set storage.path"]
    assert time.monotonic() - started < 15
    # The first runtime's own session process, killed, opens the journal again.
    pid = int(_status(config)["session"][2])
    os.kill(pid, signal.SIGKILL)
    poll(lambda: (row := _status(config).get("session")) and row[1] == "yes" and int(row[2]) != pid)
    again = _cli(config, "say", "--client-id", "alice", "--session", "mine", "--timeout", "20", "hello again")
    assert again.returncode == 0, again.stderr
    assert first.poll() is None


# ---- finding 7: disk full on a new session (in one process: the real bridge and session actor) --
class FullDisk:
    """A connection on a full disk: every write fails as SQLite says it then; reads work."""

    def __init__(self, conn):
        self.conn = conn

    def __getattr__(self, name):
        return getattr(self.conn, name)

    def _refuse(self, sql: str) -> None:
        import sqlite3

        if sql.lstrip().split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE", "REPLACE"):
            raise sqlite3.OperationalError("database or disk is full")

    def execute(self, sql, *args):
        self._refuse(sql)
        return self.conn.execute(sql, *args)

    def executemany(self, sql, *args):
        self._refuse(sql)
        return self.conn.executemany(sql, *args)


async def test_disk_full_on_a_new_session_answers_the_phone_with_a_storage_error_once_logged_and_loses_nothing(tmp_path, caplog):
    import logging

    import anyio

    from actors.glasses import GlassesBridge
    from harness import inproc_system, make_config, override
    from llm.scripted import ScriptedBackend
    from phone.client import EventRejected, PhoneClient
    from harness import free_port

    config = override(make_config(tmp_path), phone={"endpoint": f"tcp://127.0.0.1:{free_port()}", "curve": False})
    async with inproc_system(tmp_path, backend=ScriptedBackend(), config=config, stand_ins={"glasses": GlassesBridge}) as system:
        bridge, journal = system.actors["glasses"], system.actors["session"].journal
        async with PhoneClient(config.phone.endpoint, client_id="alice", curve=None, ack_timeout_s=2.0) as phone:
            await phone.turn("old", "hello", timeout=10)
            store = bridge.sessions.store
            store._db, journal._conn = FullDisk(store._db), FullDisk(journal._conn)
            with caplog.at_level(logging.WARNING, logger="porfiry"):
                with anyio.fail_after(10), pytest.raises(EventRejected) as old:
                    await phone.send_text("old", "still there?")
                assert old.value.code == "storage"
                for _ in range(3):
                    with anyio.fail_after(10), pytest.raises(EventRejected) as new:
                        await phone.send_text("new", "a new session")
                    assert new.value.code == "storage" and "database or disk is full" in new.value.detail
            lines = [r for r in caplog.records if r.name == "porfiry.glasses" and "ownership" in r.getMessage()]
            assert len(lines) == 1 and "database or disk is full" in lines[0].getMessage(), [r.getMessage() for r in lines]
            assert not any("deliver failed" in r.getMessage() or r.exc_info for r in caplog.records)
            assert bridge.sessions.owner("new") is None, "nothing claimed that is not on disk"
            store._db, journal._conn = store._db.conn, journal._conn.conn  # space again: the phone resends
            journal.failure = ""
            turn = await phone.turn("new", "a new session", timeout=10)
            assert turn.final_text.startswith("Sure.")
    from storage.ownership import OwnershipStore

    assert OwnershipStore(tmp_path / "porfiry.sqlite3").get("new") is not None


async def test_a_session_store_locked_past_its_wait_answers_busy_and_the_phones_resend_is_served(tmp_path):
    """The session store's write lock held past the ownership store's wait (the journal's commit
    under a flood on a loaded machine) answered a new session's first event with ErrorReply
    "storage", which ends the event at the phone; now Busy: the phone backs off and resends."""
    import sqlite3

    import anyio

    from actors.glasses import GlassesBridge
    from harness import free_port, inproc_system, make_config, override, until
    from llm.scripted import ScriptedBackend
    from phone.client import PhoneClient

    config = override(make_config(tmp_path), phone={"endpoint": f"tcp://127.0.0.1:{free_port()}", "curve": False})
    async with inproc_system(tmp_path, backend=ScriptedBackend(), config=config, stand_ins={"glasses": GlassesBridge}) as system:
        async with PhoneClient(config.phone.endpoint, client_id="alice", curve=None, ack_timeout_s=5.0) as phone:
            await phone.turn("old", "hello", timeout=10)
            holder = sqlite3.connect(tmp_path / "porfiry.sqlite3", isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
            try:
                async with anyio.create_task_group() as tg:
                    async def release_once_told_busy() -> None:
                        await until(lambda: phone.busy_received > 0, timeout=20)
                        holder.execute("ROLLBACK")
                    tg.start_soon(release_once_told_busy)
                    turn = await phone.turn("new", "a new session", timeout=30)
            finally:
                holder.close()
            assert turn.final_text.startswith("Sure."), turn
            assert system.actors["glasses"].sessions.owner("new") is not None


# ---- finding 13: the database deleted under a running runtime ------------------------------------
@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_database_deleted_while_running_is_a_storage_error_not_an_ack(tmp_path, caplog, how):
    import logging

    import protocol as p
    from harness import inproc_system
    from llm.scripted import ScriptedBackend

    db = tmp_path / "porfiry.sqlite3"
    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        await system.turn("s", "hello")
        db.unlink()
        if how == "replaced":
            db.write_bytes(b"")
        with caplog.at_level(logging.CRITICAL, logger="porfiry"):
            for index in range(3):
                reply = await system.deliver("s", "are you there", event_id=f"ev-{index}")
                assert isinstance(reply, p.ErrorReply) and reply.code == "storage", reply
                assert f"the database {db} was {how} while the runtime ran" in reply.detail
        told = [r for r in caplog.records if r.levelno == logging.CRITICAL and how in r.getMessage()]
        assert len(told) == 1, told


# ---- finding 12 through `run.py serve`: a bad value is one line and exit status 2, at once -------
@pytest.mark.parametrize("table, line, complaint", [
    ("[session]", "idle_session_ttl_s = -1", "session.idle_session_ttl_s must be >= 1 (got -1)"),
    ("[protocol]", "max_message_bytes = 0", "protocol.max_message_bytes must be >= 4096"),
    ("[web]", "port = 70000", "web.port must be >= 1 and <= 65535 (got 70000)"),
    ("[session]", 'parallel_patterns = ["(("]', "session.parallel_patterns[0] is not a valid regular expression"),
])
def test_serve_with_a_bad_value_says_so_in_one_line_and_exits_2_before_anything_starts(tmp_path, ipc_dir, table, line, complaint):
    from test_process_mode import _write_config

    config = _write_config(tmp_path, ipc_dir)
    text = config.read_text()
    config.write_text(text.replace(f"\n{table}\n", f"\n{table}\n{line}\n", 1) if f"\n{table}\n" in text else f"{text}\n{table}\n{line}\n")
    started = time.monotonic()
    serve = _serve(config, timeout=30)
    assert serve.returncode == EXIT_PERMANENT, serve
    lines = serve.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"porfiry: config {config}: ") and complaint in lines[0], serve.stderr
    assert time.monotonic() - started < 10
    assert not list((tmp_path).glob("porfiry.sqlite3*")), "nothing started"


def test_serve_with_a_storage_path_it_cannot_create_is_one_line_and_exit_2(tmp_path, ipc_dir):
    from test_process_mode import _write_config

    (tmp_path / "a-file").write_text("not a directory")
    config = _write_config(tmp_path, ipc_dir)
    config.write_text(config.read_text().replace(str(tmp_path / "porfiry.sqlite3"), str(tmp_path / "a-file" / "db.sqlite3")))
    serve = _serve(config, timeout=30)
    assert serve.returncode == EXIT_PERMANENT, serve
    assert serve.stderr.strip().splitlines() == [
        f"porfiry: storage: cannot use {tmp_path / 'a-file' / 'db.sqlite3'}: a part of its directory is a file; check storage.path"]


def test_sessions_delete_while_the_runtime_runs_asks_it_and_never_opens_the_held_file(served):
    """The running runtime holds the database's lock: the command asks it to delete (the claim
    goes with it), instead of opening the file itself and being told another runtime holds it."""
    config, _ = served()
    said = _cli(config, "say", "--client-id", "alice", "--session", "mine", "--timeout", "20", "hello there")
    assert said.returncode == 0, said.stderr
    deleted = _cli(config, "sessions", "delete", "mine")
    assert deleted.returncode == 0, deleted.stderr
    assert "in the running runtime too" in deleted.stdout
    again = _cli(config, "say", "--client-id", "mallory", "--session", "mine", "--timeout", "20", "whose is it now?")
    assert again.returncode == 0, again.stderr  # the claim went with the session: a new owner may open it
