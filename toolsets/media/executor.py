"""The media toolset's executor: catalog work, `media_play` via the phone.

Built once in the toolset executor actor; every call arrives there in its own task with its
arguments already bound and checked. Catalog work runs in a worker thread, so a slow provider
never blocks another session's call, except while the provider says it answers at once
(`ready_now()`: the embedded catalog with its index built), when the thread hand-offs would cost
more than the lookup.
"""
from __future__ import annotations

import os

import anyio

import protocol as p
from core.toolsets import ToolHost, ToolResult, failure_text
from toolsets.media.catalog import DEFAULT_SOURCE, EmbeddedCatalog
from toolsets.media.provider import MediaProvider, ProviderError
from toolsets.media.settings import MediaSettings, read_settings
from toolsets.media.tools import (
    PlayRequest, play_command, play_started, play_status, run_info, run_search, validate_play,
)

GLASSES = "glasses"


def default_provider(config, settings: MediaSettings | None = None) -> EmbeddedCatalog:
    """The embedded catalog: its index at `db_path`, built from `catalog_path` or the shipped TSV
    (`settings`, else the toolset's section of `config`)."""
    settings = read_settings(config) if settings is None else settings
    source = config.path(settings.catalog_path) if settings.catalog_path else DEFAULT_SOURCE
    return EmbeddedCatalog(config.path(settings.db_path), source, loop_budget_s=settings.loop_search_ms / 1000)


class MediaTools:
    def __init__(self, host: ToolHost, provider: MediaProvider | None = None, *, settings: MediaSettings | None = None):
        self.host = host
        self.provider: MediaProvider = provider if provider is not None else default_provider(host.config, settings)

    async def start(self) -> None:
        ready = getattr(self.provider, "ensure_ready", None)
        if ready is None:
            return
        try:
            await anyio.to_thread.run_sync(ready)  # first start builds the index: not in the loop
        except ProviderError as exc:
            # Serve anyway: each call then says the catalog is unavailable, the session goes on.
            self.host.log.warning("media catalog not ready: %s", exc)

    async def call(self, tool: str, args: dict[str, str], session: str) -> ToolResult:
        if tool == "media_search":
            return await self._catalog(run_search, self.provider, args)
        if tool == "media_info":
            return await self._catalog(run_info, self.provider, args)
        checked = await self._catalog(validate_play, args, self.provider)
        if isinstance(checked, ToolResult):
            return checked
        return await self.play(checked, session)

    async def _catalog(self, fn, *args):
        """`fn(*args)` on the loop while the provider answers at once, else in a worker thread."""
        ready_now = getattr(self.provider, "ready_now", None)
        if ready_now is not None and ready_now():
            return fn(*args)
        return await _in_thread(fn, *args)

    async def play(self, request: PlayRequest, session: str) -> ToolResult:
        """Send the command to the session's phone and report its answer (or that it is pending)."""
        task_id = os.urandom(4).hex()
        config = self.host.config
        wait_s = config.phone.playback_wait_s
        timeout = wait_s + config.supervisor.ask_timeout_s
        command = p.PhoneCommand(command=play_command(request, task_id), wait_s=wait_s)
        try:
            answer = await self.host.ask(GLASSES, command, session=session, timeout=timeout)
        except TimeoutError:
            return ToolResult(False, failure_text("media_play", f"the glasses bridge did not answer within "
                                                                f"{timeout:g} s, so the phone may not have the command"))
        if isinstance(answer, p.PlaybackStatus):
            return play_status(request, answer)
        if isinstance(answer, p.Ok):
            return play_started(request, task_id)
        if isinstance(answer, p.ErrorReply):
            return ToolResult(False, failure_text("media_play", answer.detail))
        return ToolResult(False, failure_text("media_play", f"the glasses bridge answered {type(answer).__name__}"))


async def _in_thread(fn, *args):
    # abandon_on_cancel: a cancelled call answers at once; the thread finishes on its own.
    return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)
