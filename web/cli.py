"""`run.py web`: the web console and /metrics for a running Porfiry."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Callable

import anyio

from core.config import Config, channel_secrets
from core.logs import setup_logging


def add_web_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="address to listen on (default web.host, 127.0.0.1); "
                                                      "any other than loopback requires the token")
    parser.add_argument("--port", type=int, default=None, help="port (default web.port, 8780)")


def register(sub, load_config: Callable[[argparse.Namespace], Config]) -> None:
    web = sub.add_parser("web", help="the web console (HUD, state, timeline, prompt, admin) and /metrics")
    add_web_args(web)
    web.add_argument("--session", default="web", help="the session the page opens with (default: web)")
    web.add_argument("--client-id", default=None, help="the page's phone name (default: your user name, "
                                                       "so the page shares sessions with `run.py phone`)")
    web.set_defaults(func=lambda args: cmd_web(args, load_config))


def cmd_web(args: argparse.Namespace, load_config: Callable[[argparse.Namespace], Config]) -> int:
    from phone.cli import default_client_id
    from web.server import serve_console

    config = load_config(args)
    try:  # the webhooks' secrets are read from this environment: an unset one is one line, now
        channel_secrets(config.channels, os.environ)
    except ValueError as exc:
        print(f"porfiry web: {exc}", file=sys.stderr)
        return 2
    host = args.host or config.web.host
    port = config.web.port if args.port is None else args.port
    setup_logging(None)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            url, token = await tg.start(lambda task_status: serve_console(
                config, host, port, default_session=args.session, client_id=args.client_id or default_client_id(),
                task_status=task_status))
            if token:
                print(token_line(config, url, host, token, sys.stdout.isatty()), flush=True)
            else:
                print(f"web console: {url}", flush=True)
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

    failed: list[OSError] = []
    try:
        anyio.run(main, backend="trio")
    except* OSError as group:  # the server's bind fails inside its task groups: one clear line, not a traceback
        while isinstance(group, BaseExceptionGroup):
            group = group.exceptions[0]
        failed.append(group)
    except* KeyboardInterrupt:
        pass
    if failed:
        print(f"porfiry web: cannot listen on {host}:{port}: {failed[0]}", file=sys.stderr)
        return 1
    return 0


def token_line(config: Config, url: str, host: str, token: str, terminal: bool) -> str:
    """The console's start line. The `?token=` URL only on a terminal: `run.py up` sends this
    output to var/porfiry.log, and a log is no place for a credential."""
    kept = "it is web.token in the config" if config.web.token else f"it is kept in {config.path(config.web.token_path)}"
    if terminal:
        return f"web console: {url}/?token={token}  (listening on {host}: every request needs this token; {kept} or set as web.token)"
    return f"web console: {url}  (listening on {host}: every request needs the token; {kept}; open {url}/?token=TOKEN once)"


def start_web(args: argparse.Namespace, config: Config, log_path, run_py: str):
    """`run.py up` also serves the console, in the background (its log joins the runtime's).
    Returns the process, or None when it could not start (the phone console runs anyway)."""
    import subprocess
    import time

    from web.server import is_loopback

    host, port = args.host or config.web.host, config.web.port if args.port is None else args.port
    command = [sys.executable, run_py] + (["--config", args.config] if args.config else [])
    command += ["web", "--host", host, "--port", str(port), "--session", args.session]
    command += ["--client-id", args.client_id] if args.client_id else []
    with open(log_path, "ab") as log:
        web = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    time.sleep(1.0)
    if web.poll() is not None:
        print(f"porfiry: the web console did not start (port {port} taken?); see {log_path}", file=sys.stderr)
        return None
    where = "web.token in the config" if config.web.token else str(config.path(config.web.token_path))
    note = "" if is_loopback(host) else f"  (not loopback: every request needs the token kept in {where}; open /?token=TOKEN once)"
    print(f"web console: http://{host}:{port}{note}", flush=True)
    return web
