"""`run.py say --session ID [--timeout S] "text"`: one event, every glasses line as it arrives.

Partial displays are printed prefixed with "… ", the final text plainly, playback commands and
errors in brackets; a turn a stop cut prints "[cancelled]". Exit status: 0 at TurnDone (cancelled
or interrupted too: the event is closed), 1 when the runtime refused the event or the
connection, 2 on timeout or when the runtime cannot be reached.
"""
from __future__ import annotations

import sys
from typing import Callable, TextIO

import anyio

from phone.client import DeliveryFailed, PhoneClient, PhoneError, PhoneUnreachable, TurnTimeout
from phone.console import Screen

EXIT_OK, EXIT_REFUSED, EXIT_TIMEOUT = 0, 1, 2


async def say(connect: Callable[[], PhoneClient], session: str, text: str, *, timeout: float,
              out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Connect with `connect()`, send `text`, print the answer; the whole run within `timeout`."""
    screen = Screen(live=False)

    def show(body) -> None:
        line = screen.render(body)
        if line:
            out.write(line)
            out.flush()

    try:
        with anyio.fail_after(timeout):
            async with connect() as client:
                await client.turn(session, text, timeout=timeout, on_message=show)
        return EXIT_OK
    except TimeoutError as exc:
        detail = str(exc) if isinstance(exc, TurnTimeout) else f"no answer within {timeout:g}s"
        err.write(f"say: timeout: {detail}\n")
        return EXIT_TIMEOUT
    except (PhoneUnreachable, DeliveryFailed) as exc:
        err.write(f"say: {exc}\n")
        return EXIT_TIMEOUT
    except PhoneError as exc:  # refused key, rejected event
        err.write(f"say: {exc}\n")
        return EXIT_REFUSED
