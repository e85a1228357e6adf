"""`run.py phone --session ID`: an interactive console that plays the phone and the glasses.

Type a line to say it; `/stop` interrupts, `/button NAME` presses a button, `/notify APP SENDER
TEXT` plays a notification arriving on the phone (a channel event), `/glasses off|on` takes the
glasses off (what the assistant says is kept unread; urgent: `[push] …`) and puts them on again
(what was kept is shown once), `/quit` takes them off and leaves at once: no model turn, the turn
in progress goes on and its answer waits unread (Ctrl-D leaves after what was typed reached the
runtime).
While the model works a "… thinking" line shows; what the glasses show appears as it streams:
partial text rewritten in place, the final text on its own line; playback commands and errors
on lines of their own.
"""
from __future__ import annotations

import sys
from typing import Callable, TextIO

import anyio
import msgspec

import protocol as p
from core.logs import printable
from phone.client import PhoneClient, PhoneError

HELP = "type to talk · /stop interrupts · /button NAME · /notify APP SENDER TEXT · /glasses off|on · /quit leaves"
# what a turn a stop or an interrupt cut says on the screen (its partial answer was cleared)
CUT_NOTES = {"cancelled": "[cancelled]", "interrupted": "[interrupted: a more urgent event came first]"}
_ERASE = "\r\x1b[K"  # back to column 0 and clear the line


class Screen:
    """What the runtime sends, as terminal text. `live`: partials rewrite one line in place (a
    person watching); otherwise every display is its own line, partials prefixed with "… "
    (scripts, `say`)."""

    def __init__(self, *, live: bool):
        self.live = live
        self._partial_open = False  # a partial line is on screen, without a newline yet
        self._finals_shown: set[str] = set()  # turns whose final display came (their TurnDone's copy is not shown)

    def render(self, body: p.Msg) -> str:
        """What to write for `body`: the runtime's text with its control characters escaped (a
        webhook's `ESC[2J` echoed by the model must not drive the terminal; issue 51), the
        screen's own erase sequences added after."""
        if isinstance(body, (p.Display, p.TurnDone, p.ErrorReply, p.PushNotification, p.StatusLine)):
            field = "final" if isinstance(body, p.TurnDone) else "detail" if isinstance(body, p.ErrorReply) else "text"
            body = msgspec.structs.replace(body, **{field: printable(getattr(body, field), keep="\n")})
        if isinstance(body, p.Display):
            if body.final:
                if len(self._finals_shown) > 1024:
                    self._finals_shown.clear()
                self._finals_shown.add(body.turn_id)
            return self._display(body)
        if isinstance(body, p.TurnDone):  # its final display was lost with a restarted bridge: its copy
            if body.final and body.turn_id not in self._finals_shown:
                return self._display(p.Display(turn_id=body.turn_id, text=body.final, final=True))
            self._finals_shown.discard(body.turn_id)
            if body.outcome == "interrupted" and body.going_on:  # only what the runtime says goes on
                return self.note(f"[interrupted: task {', '.join(body.going_on)} goes on; its result comes later]")
            return self.note(CUT_NOTES[body.outcome]) if body.outcome in CUT_NOTES else ""
        if isinstance(body, p.PlaybackCommand):
            what = body.title or body.media_id or "-"
            return self.note(f"[playback] {body.action} {what} (task {body.task_id})")
        if isinstance(body, p.ErrorReply):
            return self.note(f"[error {body.code}] {body.detail}")
        if isinstance(body, p.PushNotification):
            return self.note(f"[push] {body.text}")
        if isinstance(body, p.StatusLine):
            return self.note(f"[status {body.task_id}] {body.text}")
        return ""

    def _display(self, body: p.Display) -> str:
        if body.clear and not body.text:
            if self.live and self._partial_open:
                self._partial_open = False
                return _ERASE
            return ""
        if body.final:
            if self.live:
                self._partial_open = False
                return f"{_ERASE}{body.text}\n"
            return f"{body.text}\n"
        flat = " ".join(body.text.split())
        if self.live:
            self._partial_open = True
            return f"{_ERASE}… {flat}"
        return f"… {flat}\n"

    def thinking(self) -> str:
        """Said something: the model is at work until the first display of the answer."""
        if self.live:
            self._partial_open = True
            return f"{_ERASE}… thinking"
        return "… thinking\n"

    def note(self, text: str) -> str:
        """A line of its own (closing an open partial line first)."""
        if self.live and self._partial_open:
            self._partial_open = False
            return f"\n{text}\n"
        return f"{text}\n"


def parse_command(line: str) -> tuple[str, str]:
    """A typed line as (action, argument): say / stop / button / quit / help / empty / unknown."""
    text = line.strip()
    if not text:
        return ("empty", "")
    if not text.startswith("/"):
        return ("say", text)
    name, _, argument = text[1:].partition(" ")
    name = name.lower()
    if name in ("stop", "quit", "help"):
        return (name, "")
    if name in ("exit", "q"):
        return ("quit", "")
    if name == "button":
        return ("button", argument.strip()) if argument.strip() else ("unknown", "usage: /button NAME")
    if name == "glasses":
        state = argument.strip().lower()
        return ("glasses", state) if state in ("on", "off") else ("unknown", "usage: /glasses off|on")
    if name == "notify":
        return ("notify", argument.strip()) if len(argument.split(None, 2)) == 3 else ("unknown", "usage: /notify APP SENDER TEXT")
    return ("unknown", f"unknown command /{name}; {HELP}")


async def run_console(client: PhoneClient, session: str, *, read_line: Callable[[], str] | None = None,
                      out: TextIO = sys.stdout) -> int:
    """The console loop on a connected client. `read_line` returns "" at end of input."""
    read_line = read_line or sys.stdin.readline
    screen = Screen(live=out.isatty() if hasattr(out, "isatty") else False)

    def write(text: str) -> None:
        if text:
            out.write(text)
            out.flush()

    async def send(action, *args) -> bool:
        try:
            await action(session, *args)
            return True
        except PhoneError as exc:
            write(screen.note(f"[not delivered] {exc}"))
            return False

    async def say(text: str) -> None:
        if await send(client.send_text, text):
            write(screen.thinking())

    write(f"session {session} at {client.endpoint} — {HELP}\n")
    async with client.events(session) as incoming, anyio.create_task_group() as tg:
        async def show() -> None:
            async for env in incoming:
                write(screen.render(env.body))

        tg.start_soon(show)
        await send(client.start)
        while True:
            line = await anyio.to_thread.run_sync(read_line, abandon_on_cancel=True)
            if line == "":
                break
            action, argument = parse_command(line)
            if action == "quit":  # at once, and no model turn: the glasses are off, the answer waits unread
                with anyio.move_on_after(0.5):
                    await send(client.glasses, "off")
                tg.cancel_scope.cancel()
                return 0
            if action == "say":
                tg.start_soon(say, argument)
            elif action == "stop":
                tg.start_soon(send, client.interrupt)
            elif action == "glasses":
                tg.start_soon(send, client.glasses, argument)
            elif action == "button":
                tg.start_soon(send, client.button, argument)
            elif action == "notify":  # a notification arriving on this phone, as the phone bridge forwards it
                app, sender, text = argument.split(None, 2)
                tg.start_soon(send, client.notification, app, sender, text)
            elif action in ("help", "unknown"):
                write(f"{argument or HELP}\n")
        with anyio.move_on_after(3):  # let what was just typed reach the runtime
            while client.pending:
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    return 0
