"""`run.py web`: the web console and /metrics for a running Porfiry."""
from __future__ import annotations

import argparse
import signal
import sys
from typing import Callable

import anyio

from core.config import Config
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
    host = args.host or config.web.host
    port = config.web.port if args.port is None else args.port
    setup_logging(None)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            url, token = await tg.start(lambda task_status: serve_console(
                config, host, port, default_session=args.session, client_id=args.client_id or default_client_id(),
                task_status=task_status))
            if token:
                print(f"web console: {url}/?token={token}  (listening on {host}: every request needs this token; "
                      f"it is kept in {config.path(config.web.token_path)} or set as web.token)", flush=True)
            else:
                print(f"web console: {url}", flush=True)
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

    try:
        anyio.run(main, backend="trio")
    except OSError as exc:
        print(f"porfiry web: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
