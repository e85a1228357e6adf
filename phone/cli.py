"""The phone tools on run.py's command line: `say`, `phone` and `keys`.

run.py calls `register(subparsers, load_config)`; each command's `func(args)` returns the exit
status.
"""
from __future__ import annotations

import argparse
import getpass
import re
import sys
from pathlib import Path
from typing import Callable

import anyio

from core.config import Config
from transport import keys as keyfiles
from phone.client import PhoneClient, PhoneError
from phone.credentials import SessionTokens, tokens_file
from phone.console import run_console
from phone.say import EXIT_REFUSED, glasses, notify, say


def default_client_id() -> str:
    """The user's name: `say` and `phone` of the same person share the session tokens kept for
    this client id, and so her sessions."""
    try:
        name = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers
        name = ""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name) or "phone"


def _add_connection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", required=True, help="session id (the first phone to use it owns it)")
    parser.add_argument("--client-id", default=None, help="this phone's name (default: your user name)")
    parser.add_argument("--endpoint", default=None,
                        help="the runtime's phone endpoint, e.g. a cluster's HAProxy (default: phone.endpoint, "
                             "PORFIRY_PHONE_ENDPOINT)")
    parser.add_argument("--key-name", default="phone",
                        help="with phone.curve on: use keys_dir/phones/NAME.key_secret (default: phone)")


def connect_factory(args: argparse.Namespace, config: Config, *, connect_timeout_s: float = 10.0) -> Callable[[], PhoneClient]:
    """A PhoneClient for the configured endpoint (CURVE keys from keys_dir when curve is on)."""
    curve = keyfiles.load_phone_keys(config.path(config.phone.keys_dir), args.key_name) if config.phone.curve else None
    client_id = args.client_id or default_client_id()
    # without CURVE a session belongs to whoever holds its token: kept per client id, next to the
    # runtime's database (var/ by default), so this user resumes her sessions from a new process
    tokens = SessionTokens(tokens_file(config.path(config.storage.path).parent, client_id))

    def connect() -> PhoneClient:
        endpoint = getattr(args, "endpoint", None) or config.phone.endpoint
        return PhoneClient(endpoint, client_id=client_id, curve=curve, tokens=tokens,
                           max_message_bytes=config.protocol.max_message_bytes, connect_timeout_s=connect_timeout_s)

    return connect


def cmd_say(args: argparse.Namespace, load_config: Callable[[argparse.Namespace], Config]) -> int:
    config = load_config(args)
    text = " ".join(args.text).strip()
    if args.follow is not None and not 0 < args.follow <= config.phone.max_follow_s:
        print(f"say: --follow {args.follow:g}: give 0 < SECONDS <= {config.phone.max_follow_s:g} (phone.max_follow_s)", file=sys.stderr)
        return EXIT_REFUSED
    if not text and not args.glasses:
        print("say: nothing to say", file=sys.stderr)
        return EXIT_REFUSED
    try:
        connect = connect_factory(args, config, connect_timeout_s=min(args.timeout, 10.0))
    except (keyfiles.KeyFileError, ValueError) as exc:
        print(f"say: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    if args.glasses:
        return anyio.run(lambda: glasses(connect, args.session, args.glasses, timeout=args.timeout), backend="trio")
    if args.notify:
        app, sender = args.notify
        return anyio.run(lambda: notify(connect, args.session, app, sender, text, timeout=args.timeout), backend="trio")
    return anyio.run(lambda: say(connect, args.session, text, timeout=args.timeout, follow=args.follow or 0.0), backend="trio")


def cmd_phone(args: argparse.Namespace, load_config: Callable[[argparse.Namespace], Config]) -> int:
    config = load_config(args)
    try:
        connect = connect_factory(args, config)
    except (keyfiles.KeyFileError, ValueError) as exc:
        print(f"phone: {exc}", file=sys.stderr)
        return 1

    async def main() -> int:
        async with connect() as client:
            return await run_console(client, args.session)

    try:
        return anyio.run(main, backend="trio")
    except PhoneError as exc:
        print(f"phone: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0


def describe_keys(made: keyfiles.Generated, keys_dir: Path, name: str | None) -> str:
    root = keys_dir
    lines = [
        f"server key pair:   {made.server_secret}  ({'created' if made.server_created else 'already there, kept'}; stays on the server)",
        f"server public key: {made.server_public}  (every phone needs a copy)",
    ]
    if made.phone_secret:
        lines += [
            f"phone '{name}' pair: {made.phone_secret}  (give it, with server.key, to that phone only)",
            f"allowed:           {made.authorized}" if made.authorized else "allowed:           not yet (--no-authorize)",
        ]
    lines += [
        "",
        "To allow a phone whose keys were made elsewhere, copy its PUBLIC key file (NAME.key, never",
        f"NAME.key_secret) into {root / keyfiles.AUTHORIZED}/. The runtime reads that folder on every",
        "connection; delete a file there to lock that phone out.",
        f'Turn CURVE on in porfiry.toml:  [phone]  curve = true   keys_dir = "{root}"',
        "Phone tools on the same machine use keys_dir/phones/NAME.key_secret (`--key-name NAME`).",
    ]
    return "\n".join(lines)


def cmd_keys(args: argparse.Namespace, load_config: Callable[[argparse.Namespace], Config]) -> int:
    if args.dir:
        keys_dir = Path(args.dir)
    else:
        config = load_config(args)
        keys_dir = config.path(config.phone.keys_dir)
    name = args.name
    if name is None and not (keys_dir / keyfiles.PHONES / "phone.key_secret").exists():
        name = "phone"  # the first run makes one phone pair too
    try:
        made = keyfiles.generate(keys_dir, name, authorize=not args.no_authorize)
    except (keyfiles.KeyFileError, ValueError, OSError) as exc:
        print(f"keys: {exc}", file=sys.stderr)
        return 1
    print(describe_keys(made, keys_dir, name))
    return 0


def register(subparsers, load_config: Callable[[argparse.Namespace], Config]) -> None:
    say_parser = subparsers.add_parser("say", help="send one text event, print what the glasses show")
    _add_connection_args(say_parser)
    say_parser.add_argument("--timeout", type=float, default=60.0, help="seconds for the whole turn (default 60)")
    say_parser.add_argument("--notify", nargs=2, metavar=("APP", "SENDER"), default=None,
                            help="send the text as a notification from APP by SENDER arriving on the phone (a channel event)")
    say_parser.add_argument("--follow", type=float, default=None, metavar="SECONDS",
                            help="after the turn keep printing what the session shows (late results, notifications) "
                                 "this many seconds (at most phone.max_follow_s)")
    say_parser.add_argument("--glasses", choices=("on", "off"), default=None,
                            help="tell the session the glasses are off (answers kept unread) or on again (shown once); no text")
    say_parser.add_argument("text", nargs="*", help="what the user says (or the notification's text)")
    say_parser.set_defaults(func=lambda args: cmd_say(args, load_config))

    phone_parser = subparsers.add_parser("phone", help="interactive phone console: type to talk, /stop, /glasses off|on, /quit")
    _add_connection_args(phone_parser)
    phone_parser.set_defaults(func=lambda args: cmd_phone(args, load_config))

    keys_parser = subparsers.add_parser("keys", help="CURVE key pairs for the phone endpoint")
    keys_parser.add_argument("--dir", default=None, help="keys directory (default: phone.keys_dir from the config)")
    keys_parser.add_argument("--name", default=None, help="make a phone key pair with this name (default: 'phone' on the first run)")
    keys_parser.add_argument("--no-authorize", action="store_true", help="do not add the new phone's public key to the allow-list")
    keys_parser.set_defaults(func=lambda args: cmd_keys(args, load_config))
