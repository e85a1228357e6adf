"""`run.py say --session ID [--timeout S] [--follow S] "text"`: one event, every glasses line as
it arrives; `--follow S` keeps listening S seconds after the turn (late results, notifications);
`say --glasses off|on` tells the session the glasses are off or on again.

Partial displays are printed prefixed with "… ", the final text plainly, playback commands and
errors in brackets; a turn a stop cut prints "[cancelled]" (only for its own events: the `say`
that sent the stop prints its own answer). Exit status: 0 at TurnDone (cancelled
or interrupted too: the event is closed), 1 when the runtime refused the event or the
connection, 2 on timeout or when the runtime cannot be reached.
"""
from __future__ import annotations

import sys
from typing import Callable, TextIO

import anyio
import msgspec

from phone.client import DeliveryFailed, PhoneClient, PhoneError, PhoneUnreachable
from phone.console import Screen

EXIT_OK, EXIT_REFUSED, EXIT_TIMEOUT = 0, 1, 2


async def notify(connect: Callable[[], PhoneClient], session: str, app: str, sender: str, text: str, *,
                 timeout: float, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """`say --notify APP SENDER TEXT`: forward one phone notification and print what the glasses
    show until the TurnDone that covers it (at once when no watch asked for it: "(kept)")."""
    import protocol as p

    screen = Screen(live=False)
    try:
        with anyio.fail_after(timeout):
            async with connect() as client, client.events(session) as incoming:
                event_id = await client.notification(session, app, sender, text)
                async for env in incoming:
                    body = env.body
                    if isinstance(body, p.TurnDone) and event_id in body.event_ids:
                        if body.turn_id.startswith("kept-"):
                            out.write("(kept: no watch of this session asked for it)\n")
                        break
                    out.write(screen.render(body))
                    out.flush()
        return EXIT_OK
    except (TimeoutError, PhoneError) as exc:
        return _failed(exc, err, timeout)


def _failed(exc: Exception, err: TextIO, timeout: float) -> int:
    """The line and exit status of a `say` that got no answer: a timeout or an unreachable
    runtime (EXIT_TIMEOUT: try again), or a refusal (EXIT_REFUSED: a refused key, a rejected event)."""
    if isinstance(exc, TimeoutError):
        err.write(f"say: timeout: no answer within {timeout:g}s\n")
        return EXIT_TIMEOUT
    err.write(f"say: {exc}\n")
    return EXIT_TIMEOUT if isinstance(exc, (PhoneUnreachable, DeliveryFailed)) else EXIT_REFUSED


def _own(body, event_id: str):
    """What of a message `say` prints: a TurnDone of another turn (the one a stop cut, a late
    result's) shows its lost final display at most, never its "[cancelled]": that was not this
    event's end."""
    import protocol as p

    if isinstance(body, p.TurnDone) and event_id not in body.event_ids and body.outcome != "done":
        return msgspec.structs.replace(body, outcome="done")
    return body


async def say(connect: Callable[[], PhoneClient], session: str, text: str, *, timeout: float, follow: float = 0.0,
              out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Connect with `connect()`, send `text`, print the answer; the turn within `timeout`. With
    `follow` > 0 keep printing what the session shows for that many seconds more (a background
    task's late result, notifications), then a line saying the bound is over."""
    import protocol as p

    screen = Screen(live=False)

    def show(body) -> None:
        line = screen.render(body)
        if line:
            out.write(line)
            out.flush()

    try:
        async with connect() as client, client.events(session) as incoming:
            with anyio.fail_after(timeout):
                event_id = await client.send_text(session, text)
                async for env in incoming:
                    body = env.body
                    show(_own(body, event_id))
                    if isinstance(body, p.TurnDone) and (event_id in body.event_ids or not body.event_ids):
                        break
            if follow > 0:
                with anyio.move_on_after(follow):
                    async for env in incoming:
                        show(_own(env.body, event_id))
                out.write(f"(follow: {follow:g} s over; anything later waits in the session)\n")
        return EXIT_OK
    except (TimeoutError, PhoneError) as exc:
        return _failed(exc, err, timeout)


async def glasses(connect: Callable[[], PhoneClient], session: str, state: str, *, timeout: float,
                  out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """`say --glasses off|on`: tell the session the glasses are off or on (no model turn); on
    prints what was kept for them meanwhile."""
    import protocol as p

    screen = Screen(live=False)
    try:
        with anyio.fail_after(timeout):
            async with connect() as client, client.events(session) as incoming:
                event_id = await client.glasses(session, state)
                async for env in incoming:
                    if isinstance(env.body, p.TurnDone) and event_id in env.body.event_ids:
                        break
                    out.write(screen.render(_own(env.body, event_id)))
        out.write("(glasses off: what the assistant says is kept unread)\n" if state == "off" else "(glasses on)\n")
        return EXIT_OK
    except (TimeoutError, PhoneError) as exc:
        return _failed(exc, err, timeout)
