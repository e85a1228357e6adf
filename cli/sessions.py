"""`python run.py sessions list|show ID|export ID|delete ID`: users own their data.

Reads the journal directly (SQLite in WAL mode allows it while the runtime runs). `delete` asks
the running runtime's session actor first (it forgets the session in memory, then deletes its
journal after anything still queued for it); with no runtime answering, it deletes on disk.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from typing import Callable

from core.config import Config
from core.logs import printable

_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029]")  # what json.dumps(ensure_ascii=False) leaves raw of the controls


def _shown(text: str) -> str:
    """A stored text as `show` prints it: control characters escaped (a webhook's `ESC[2J` must not
    clear the operator's screen), its own lines indented under the entry's (issue 51)."""
    return printable(text, keep="\n").replace("\n", "\n    ")


def register(subparsers, load_config: Callable[[argparse.Namespace], Config]) -> None:
    sessions = subparsers.add_parser("sessions", help="list, show, export or delete journaled sessions",
                                     description="The session journal (storage.path, or storage.url on PostgreSQL): "
                                                 "every session's history.")
    action = sessions.add_subparsers(dest="action", required=True)
    action.add_parser("list", help="every session: id, phone key, entries, last activity")
    for name, text in (("show", "print a session's history"), ("export", "a session's history as JSON lines"),
                       ("delete", "delete everything the journal holds about a session")):
        action.add_parser(name, help=text).add_argument("session")
    sessions.set_defaults(func=lambda args: cmd_sessions(args, load_config(args)))


def _delete_in_runtime(config: Config, session: str, timeout: float = 2.0) -> str:
    """"deleted", "unknown" (the runtime knows nothing of it), an error text, or "" when no
    runtime answers."""
    import anyio

    import protocol as p
    from actors.base import AskTimeout, Endpoint

    async def ask() -> str:
        client = Endpoint(config, name="sessions-cli")
        async with client.running():
            reply = await client.ask("session", p.SessionDelete(), session=session, timeout=timeout)
        if isinstance(reply, p.Ok):
            return "deleted" if reply.detail == "deleted" else ""
        return getattr(reply, "detail", type(reply).__name__)

    try:
        return anyio.run(ask, backend="trio")
    except (AskTimeout, BaseExceptionGroup):
        return ""


def _delete_owner(config: Config, session: str) -> None:
    """Who owned the session (the bridge's table, same database): its claim and token go with it,
    so an old token opens nothing. The running bridge drops its copy when the session actor tells it."""
    from storage.store import ownership_store

    store = ownership_store(config)
    try:
        store.delete([session])
    finally:
        store.close()


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def _show_world(stored) -> None:
    """The notifications kept for the user (read or unread), the watches and monitors."""
    world = stored.state.world if stored is not None else None
    if world is None:
        return
    for note in world.notes:
        state = "read" if note.read else "UNREAD"
        pushed = ", pushed to the phone" if note.pushed else ""
        print(f"[{_when(note.ts)}] notification {note.note_id} ({note.urgency}, {printable(note.source)}, {state}{pushed}): "
              f"{_shown(note.text)}")
    for watch in world.watches:
        print(printable(f"watch {watch.watch_id}: {watch.channel} - {watch.what}"))
    for row in world.monitors:
        print(printable(f"monitor {row.monitor_id}: {row.name} ({row.condition}) {row.state}, {row.checks} check(s)"))
    if world.unshown:
        print(f"channel events kept, not shown (no watch matched): {world.unshown} (in the journal's events)")
    if not world.glasses_on:
        print("glasses: off (notifications wait for them)")


def cmd_sessions(args: argparse.Namespace, config: Config) -> int:
    from storage.store import journal_store

    journal = journal_store(config)
    if config.storage.backend == "sqlite" and not config.path(config.storage.path).exists():
        sys.exit(f"porfiry: no journal at {journal.where} (storage.path); nothing has been recorded yet")
    path = journal.where
    from core.permanent import EXIT_PERMANENT
    from storage.sqlite_file import StorageError

    try:
        conn = journal.connect()
    except StorageError as exc:  # a corrupt database: one line, no traceback
        print(f"porfiry: {exc}", file=sys.stderr)
        return EXIT_PERMANENT
    except journal.errors as exc:
        sys.exit(f"porfiry: cannot open the journal {path}: {exc}")
    try:
        if args.action == "list":
            rows = journal.list_sessions(conn)
            print(f"{'session':<24} {'entries':>7}  {'last active':<25} phone key")
            for session, phone_key, _created, last_active, entries in rows:
                print(f"{printable(session):<24} {entries:>7}  {_when(last_active):<25} {printable(phone_key) or '-'}")
            print(f"{len(rows)} session(s) in {path}")
            return 0
        entries = journal.session_entries(conn, args.session)
        known = any(row[0] == args.session for row in journal.list_sessions(conn)) if not entries else True
        if args.action == "delete":
            answer = _delete_in_runtime(config, args.session)
            if answer == "deleted":  # the running runtime dropped its claim too (the bridge holds the file)
                print(f"deleted session {args.session} ({len(entries)} entries), in the running runtime too")
                return 0
            if answer:
                sys.exit(f"porfiry: {answer}")
            _delete_owner(config, args.session)  # no runtime holds the file: its claim goes here
            if not journal.delete_session(conn, args.session):
                sys.exit(f"porfiry: no session {args.session!r} in {path}")
            print(f"deleted session {args.session} ({len(entries)} entries)")
            return 0
        if not known:
            sys.exit(f"porfiry: no session {args.session!r} in {path}")
        for entry in entries:
            if args.action == "export":
                line = json.dumps({"session": args.session, **entry, "time": _when(entry["ts"])}, ensure_ascii=False)
                print(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line))
            else:
                name = f" ({printable(entry['name'])})" if entry.get("name") else ""
                print(f"[{_when(entry['ts'])}] {entry['role']}{name}: {_shown(entry['content'])}")
        if args.action == "show":
            _show_world(journal.load_session(conn, args.session))
        return 0
    finally:
        journal.close(conn)
