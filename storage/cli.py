"""`python run.py sessions list|show ID|export ID|delete ID`: users own their data.

Reads the journal directly (SQLite in WAL mode allows it while the runtime runs). `delete` asks
the running runtime's session actor first (it forgets the session in memory, then deletes its
journal after anything still queued for it); with no runtime answering, it deletes on disk.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Callable

from core.config import Config


def register(subparsers, load_config: Callable[[argparse.Namespace], Config]) -> None:
    sessions = subparsers.add_parser("sessions", help="list, show, export or delete journaled sessions",
                                     description="The session journal (storage.path): every session's history.")
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


def _delete_owner(path, session: str) -> None:
    """Who owned the session (the bridge's table, same file): its claim and token go with it, so
    an old token opens nothing. The running bridge drops its copy when the session actor tells it."""
    from storage.ownership import OwnershipStore

    store = OwnershipStore(path)
    try:
        store.delete([session])
    finally:
        store.close()


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def cmd_sessions(args: argparse.Namespace, config: Config) -> int:
    from storage import journal

    path = config.path(config.storage.path)
    if not path.exists():
        sys.exit(f"porfiry: no journal at {path} (storage.path); nothing has been recorded yet")
    from core.permanent import EXIT_PERMANENT
    from storage.sqlite_file import StorageError

    try:
        conn = journal.connect(path)
    except StorageError as exc:  # a corrupt database: one line, no traceback
        print(f"porfiry: {exc}", file=sys.stderr)
        return EXIT_PERMANENT
    try:
        if args.action == "list":
            rows = journal.list_sessions(conn)
            print(f"{'session':<24} {'entries':>7}  {'last active':<25} phone key")
            for session, phone_key, _created, last_active, entries in rows:
                print(f"{session:<24} {entries:>7}  {_when(last_active):<25} {phone_key or '-'}")
            print(f"{len(rows)} session(s) in {path}")
            return 0
        entries = journal.session_entries(conn, args.session)
        known = any(row[0] == args.session for row in journal.list_sessions(conn)) if not entries else True
        if args.action == "delete":
            answer = _delete_in_runtime(config, args.session)
            _delete_owner(path, args.session)
            if answer == "deleted":
                print(f"deleted session {args.session} ({len(entries)} entries), in the running runtime too")
                return 0
            if answer:
                sys.exit(f"porfiry: {answer}")
            if not journal.delete_session(conn, args.session):
                sys.exit(f"porfiry: no session {args.session!r} in {path}")
            print(f"deleted session {args.session} ({len(entries)} entries)")
            return 0
        if not known:
            sys.exit(f"porfiry: no session {args.session!r} in {path}")
        for entry in entries:
            if args.action == "export":
                print(json.dumps({"session": args.session, **entry, "time": _when(entry["ts"])}, ensure_ascii=False))
            else:
                name = f" ({entry['name']})" if entry.get("name") else ""
                print(f"[{_when(entry['ts'])}] {entry['role']}{name}: {entry['content']}")
        return 0
    finally:
        conn.close()
