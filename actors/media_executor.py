"""MediaExecutor: runs the media toolset (media_search, media_info, media_play) for every session.

The pure work lives in media.tools over a MediaProvider (the embedded SQLite catalog by default).
Here: each call is its own task, catalog work runs in a worker thread (a search never blocks
another session's call, nor the other actors of a one-process topology), arguments are checked
again (defence in depth: the ToolsetSupervisor checked them already), and media_play goes to the
phone through the GlassesBridge ("glasses"). A call can be cancelled with ToolCancel(call_id).
"""
from __future__ import annotations

import os
import time
from typing import Callable

import anyio
import zmq

import protocol as p
from actors.base import Actor, AskTimeout, Inbound
from core.config import Config
from media.catalog import DEFAULT_SOURCE, EmbeddedCatalog
from media.provider import MediaProvider, ProviderError
from media.tools import (
    MEDIA_TOOLSET, PlayRequest, ToolReply, play_command, play_started_text, play_status_text,
    run_info, run_search, validate_play,
)

GLASSES = "glasses"
TOOL_NAMES = tuple(tool.name for tool in MEDIA_TOOLSET.tools)


def default_provider(config: Config) -> EmbeddedCatalog:
    """The embedded catalog: db at media.db_path, built from media.catalog_path or the shipped TSV."""
    source = config.path(config.media.catalog_path) if config.media.catalog_path else DEFAULT_SOURCE
    return EmbeddedCatalog(config.path(config.media.db_path), source)


class MediaExecutor(Actor):
    name = "media"

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.time, provider: MediaProvider | None = None):
        super().__init__(config, zmq_context=zmq_context, clock=clock)
        self.provider: MediaProvider = provider if provider is not None else default_provider(config)
        self._running: dict[tuple[str, str], anyio.CancelScope] = {}

    async def on_start(self) -> None:
        ready = getattr(self.provider, "ensure_ready", None)
        if ready is None:
            return
        try:
            await anyio.to_thread.run_sync(ready)  # first start builds the index: not in the loop
        except ProviderError as exc:
            # Serve anyway: each call then says the catalog is unavailable, the session goes on.
            self.log.warning("actor=%s media catalog not ready: %s", self.name, exc)

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.ToolInvoke):
            self._start(msg, body)
        elif isinstance(body, p.ToolCancel):
            scope = self._running.get((msg.session, body.call_id))
            if scope is not None:
                scope.cancel()
            msg.reply(self, p.Ok(detail="cancelled" if scope else f"call {body.call_id} is not running"))
        elif isinstance(body, (p.Ok, p.ErrorReply)):
            # A reply nobody waits for (e.g. to a cancelled call): answering it would echo forever.
            self.log.debug("actor=%s dropped late %s", self.name, type(body).__name__)
        else:
            await super().handle(msg)

    def _start(self, msg: Inbound, call: p.ToolInvoke) -> None:
        age = self.clock() - msg.env.ts
        if age > self.config.session.tool_timeout_s:
            # Queued while this executor was down: its caller has had a timeout error already, so
            # running it now would, say, start a film the user gave up on minutes ago.
            self.log.warning("actor=%s dropped stale %s call_id=%s age=%.1fs", self.name, call.tool,
                             call.call_id, age)
            return
        key = (msg.session, call.call_id)
        if key in self._running:
            msg.reply(self, p.ToolOutcome(call_id=call.call_id, ok=False,
                                          text=f"call {call.call_id} is already running"))
            return
        scope = anyio.CancelScope()
        self._running[key] = scope
        self.spawn(self._run, msg, call, scope, name=f"{call.tool}-{call.call_id}")

    async def _run(self, msg: Inbound, call: p.ToolInvoke, scope: anyio.CancelScope) -> None:
        outcome = p.ToolOutcome(call_id=call.call_id, ok=False, text="cancelled")
        try:
            with scope:
                try:
                    outcome = await self.execute(call, msg.session)
                except Exception as exc:  # noqa: BLE001 - a failing tool is a tool error, never a crash
                    self.log.exception("actor=%s %s failed", self.name, call.tool)
                    outcome = p.ToolOutcome(call_id=call.call_id, ok=False,
                                            text=f"tool {call.tool} failed: {type(exc).__name__}: {exc}")
        finally:
            self._running.pop((msg.session, call.call_id), None)
        msg.reply(self, outcome)

    # --- the tools ------------------------------------------------------------------------------
    async def execute(self, call: p.ToolInvoke, session: str) -> p.ToolOutcome:
        args = dict(call.args)
        if call.tool == "media_search":
            reply = await self._in_thread(run_search, self.provider, args)
        elif call.tool == "media_info":
            reply = await self._in_thread(run_info, self.provider, args)
        elif call.tool == "media_play":
            checked = await self._in_thread(validate_play, args, self.provider)
            if isinstance(checked, ToolReply):
                reply = checked
            else:
                return await self.play(call.call_id, checked, session)
        else:
            reply = ToolReply(False, f"tool {call.tool} does not exist; toolset media has: {', '.join(TOOL_NAMES)}")
        return p.ToolOutcome(call_id=call.call_id, ok=reply.ok, text=reply.text)

    @staticmethod
    async def _in_thread(fn, *args):
        # abandon_on_cancel: a cancelled call answers at once; the thread finishes on its own.
        return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)

    async def play(self, call_id: str, request: PlayRequest, session: str) -> p.ToolOutcome:
        """Send the command to the session's phone and report its answer (or that it is pending)."""
        task_id = os.urandom(4).hex()
        wait_s = self.config.phone.playback_wait_s
        timeout = wait_s + self.config.supervisor.ask_timeout_s
        command = p.PhoneCommand(command=play_command(request, task_id), wait_s=wait_s)
        try:
            answer = await self.ask(GLASSES, command, session=session, timeout=timeout)
        except AskTimeout:
            return p.ToolOutcome(call_id=call_id, ok=False, text=(
                f"media_play failed: the glasses bridge did not answer within {timeout:g} s, so the phone "
                "may not have the command; try again"))
        if isinstance(answer, p.PlaybackStatus):
            return p.ToolOutcome(call_id=call_id, ok=answer.state != "failed",
                                 text=play_status_text(request, answer))
        if isinstance(answer, p.Ok):
            return p.ToolOutcome(call_id=call_id, ok=True, text=play_started_text(request, task_id),
                                 task_id=task_id)
        if isinstance(answer, p.ErrorReply):
            return p.ToolOutcome(call_id=call_id, ok=False, text=f"media_play failed: {answer.detail}")
        return p.ToolOutcome(call_id=call_id, ok=False,
                             text=f"media_play failed: the glasses bridge answered {type(answer).__name__}")
