"""One MCP server as an executor toolset: one client session per server, kept open, restarted.

The server is started (stdio) or connected to (streamable HTTP) when the toolset executor starts;
its tools are listed then and again on `notifications/tools/list_changed`. A server that fails
at start, dies or stops answering is marked unavailable (with the reason) and started
again after a backoff that doubles up to `mcp.restart_backoff_max_s`; the runtime never waits
for it. A stdio server gets only its configured environment plus PATH.
"""
from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from typing import Any

import dataclasses

import anyio
import mcp_types as types
import msgspec
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from core.fence import fence_untrusted
from core.progress import REPORTER, progress_text
from core.ratelog import RateLimitedLog
from core.toolsets import ToolResult, failure_text
from protocol import ToolsetSpec
from toolsets.mcp.schema import McpTool, first_sentence, result_text, to_arguments, tools_from_listing

log = logging.getLogger("porfiry.mcp")


def _progress_callback():
    """`notifications/progress` of this call, to the session (core.progress); None: none asked."""
    report = REPORTER.get()
    if report is None:
        return None

    async def callback(progress: float, total: float | None, message: str | None) -> None:
        report(progress_text(progress, total, message))

    return callback


def describe(exc: BaseException) -> str:
    """The first real error inside (exception groups nest), in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, MCPError) else f"{type(exc).__name__}: {text}"


class LongCallEnded(Exception):
    """A long_running call stopped by its own bound: the text says which (timed out, stalled)."""


class McpServer:
    """Executor of the toolset `name`; `on_change` is told whenever its tools or state change."""

    def __init__(self, name: str, cfg, mcp, root: Callable[[str], Any], on_change: Callable[[], None],
                 refused: str = ""):
        self.name = name
        self.cfg = cfg  # core.config.McpServerConfig
        self.mcp = mcp  # core.config.McpConfig
        self.root = root  # config.path
        self.on_change = on_change
        self.state = "unavailable" if refused else "starting" if cfg.enabled else "disabled"
        self.error = refused
        self.summary = ""
        self.tools: dict[str, McpTool] = {}
        self._client: Client | None = None
        self._available = anyio.Event()
        self.settled = anyio.Event()  # its first start came out: listed, failed, or never to start
        self._lost = anyio.Event()
        self._relist = anyio.Event()
        self._warnings = RateLimitedLog(log, mcp.warning_interval_s)
        self.refused_tools = ""  # why tools of the last listing were left out (toolsets list shows it)

    # --- what the catalog shows ------------------------------------------------------------------
    def spec(self) -> ToolsetSpec | None:
        """None until the server has listed its tools once; while it restarts its toolset stays
        (calls wait for it, bounded by timeout_s), so sessions do not see it come and go."""
        if not self.tools:
            return None
        return ToolsetSpec(name=self.name, summary=self.summary, tools=[t.spec for t in self.tools.values()],
                           timeout_s=self.cfg.timeout_s, origin="mcp")

    def transport(self) -> StdioServerParameters | str:
        if self.cfg.url:
            return self.cfg.url
        if not self.cfg.command:
            raise ValueError("needs command (stdio) or url (streamable HTTP)")
        path = os.environ.get("PATH", os.defpath)
        program = shutil.which(self.cfg.command[0], path=path)
        if program is None:
            raise FileNotFoundError(f"command not found: {self.cfg.command[0]}")
        # `env -i`: the server gets exactly its configured environment plus PATH, nothing of ours
        env = [f"{key}={value}" for key, value in {"PATH": path, **self.cfg.env}.items()]
        return StdioServerParameters(command="env", args=["-i", *env, program, *self.cfg.command[1:]],
                                     cwd=str(self.root(self.cfg.cwd)) if self.cfg.cwd else None)

    # --- the connection, supervised ---------------------------------------------------------------
    async def run(self) -> None:
        """Until cancelled: connect, serve, and after a failure wait and connect again."""
        if self.state in ("unavailable", "disabled"):
            self.settled.set()
            return
        backoff = self.mcp.restart_backoff_s
        while True:
            served = False
            try:
                served = await self._connect_and_serve()
            except Exception as exc:  # noqa: BLE001 - a failing server is a state, never a crash
                self.error = describe(exc) if served or self.tools else f"start failed: {describe(exc)}"
                log.warning("mcp server=%s unavailable: %s", self.name, self.error)
            self._gone()
            if not self.settled.is_set():  # its first start failed: the catalog stops saying "starting"
                self.settled.set()
                self.on_change()
            if served:
                backoff = self.mcp.restart_backoff_s
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, self.mcp.restart_backoff_max_s)
            self.state = "starting"

    async def _connect_and_serve(self) -> bool:
        """Connect, list, serve until the connection is lost. True when it got as far as serving."""
        self._lost = anyio.Event()
        client = Client(self.transport(), cache=None, message_handler=self._on_message)
        with anyio.CancelScope(deadline=anyio.current_time() + self.cfg.timeout_s) as starting:
            async with client:
                self.summary = first_sentence(self.cfg.summary or client.instructions or "",
                                              self.mcp.max_description_chars) or f"tools of the MCP server {self.name}"
                await self._list(client)
                starting.deadline = float("inf")  # started: from here on only a lost connection ends it
                self._client = client
                self.state = "available"
                self.error = ""
                self._available.set()
                self.settled.set()
                log.info("mcp server=%s available: %d tool(s)", self.name, len(self.tools))
                self.on_change()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._subscribe, client)
                    tg.start_soon(self._relist_on_change, client)
                    await self._lost.wait()
                    tg.cancel_scope.cancel()
                self._client = None
            return True
        raise TimeoutError(f"no answer within {self.cfg.timeout_s:g} s")

    def _gone(self, why: str = "") -> None:
        """The connection is lost (or never was): calls from now on wait for the next one."""
        if why:
            self.error = why
        self._lost.set()
        self._client = None
        self.state = "unavailable"
        if self._available.is_set():
            self._available = anyio.Event()

    async def _list(self, client: Client) -> None:
        listed: list[Any] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            listed += page.tools
            cursor = page.next_cursor
            if not cursor or len(listed) > self.mcp.max_tools:
                break
        tools, problems = tools_from_listing(self.name, listed, long_running=set(self.cfg.long_running),
                                             max_tools=self.mcp.max_tools,
                                             max_description_chars=self.mcp.max_description_chars)
        self.refused_tools = ""
        if problems:  # the same at every re-list: one line per mcp.warning_interval_s, counting the rest
            shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
            self.refused_tools = f"{len(listed) - len(tools)} of {len(listed)} listed tool(s) refused: {shown}"
            self._warnings.warning(self.name, "mcp server=%s %s", self.name, self.refused_tools)
        self.tools = {tool.spec.name: self._bounded(tool) for tool in tools}

    def _bounded(self, tool: McpTool) -> McpTool:
        """A long_running tool with its own bound (long_running_timeout_s, or its entry in
        long_running_timeouts), which the session waits for instead of timeout_s."""
        if not tool.spec.long_running:
            return tool
        own = self.cfg.long_running_timeouts
        bound = own.get(tool.remote, own.get(tool.spec.name, self.cfg.long_running_timeout_s))
        return dataclasses.replace(tool, spec=msgspec.structs.replace(tool.spec, timeout_s=bound))

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist.set()
        await anyio.lowlevel.checkpoint()

    async def _subscribe(self, client: Client) -> None:
        """2026-07-28 servers send list_changed only to a `subscriptions/listen` stream: open one
        (the notification itself still arrives through `_on_message`). Older servers need none."""
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _event in events:
                    pass
        except Exception as exc:  # noqa: BLE001 - no subscription: list_changed arrives as a notification, or never
            log.debug("mcp server=%s no listen stream: %s", self.name, describe(exc))

    async def _relist_on_change(self, client: Client) -> None:
        """List the tools again on list_changed and every `mcp.check_interval_s` (which also tells
        a server that died while idle: 2026-07-28 has no ping). Sessions hear only of a change."""
        while True:
            with anyio.move_on_after(self.mcp.check_interval_s):
                await self._relist.wait()
            self._relist = anyio.Event()
            before = [tool.spec for tool in self.tools.values()]
            try:
                with anyio.fail_after(self.cfg.timeout_s):
                    await self._list(client)
            except Exception as exc:  # noqa: BLE001
                self._gone(f"stopped answering: {describe(exc)}")
                return
            if [tool.spec for tool in self.tools.values()] != before:
                log.info("mcp server=%s tools changed: %s", self.name, ", ".join(self.tools))
                self.on_change()

    # --- the Executor interface -----------------------------------------------------------------
    async def start(self) -> None:
        """Nothing to wait for: `run` connects in the background (the runtime never waits)."""

    async def call(self, tool: str, args: dict[str, str], session: str) -> ToolResult:
        if self._client is None:
            with anyio.move_on_after(self.cfg.timeout_s):
                await self._available.wait()  # being restarted: the call waits for it, bounded
        client = self._client
        if client is None:
            return ToolResult(False, failure_text(tool, f"the MCP server {self.name} is unavailable ({fence_untrusted(self.error or self.state)})"))
        entry = self.tools.get(tool)
        if entry is None:
            names = ", ".join(self.tools) or "(none)"
            return ToolResult(False, f"tool {tool} does not exist; toolset {self.name} has: {names}")
        arguments = to_arguments(entry, args)
        if isinstance(arguments, ToolResult):
            return arguments
        try:
            if entry.spec.long_running:
                result = await self._long_call(client, entry, arguments)
            else:
                result = await client.call_tool(entry.remote, arguments, read_timeout_seconds=self.cfg.timeout_s,
                                                progress_callback=_progress_callback())
        except LongCallEnded as ended:
            log.warning("mcp server=%s %s %s", self.name, tool, ended)
            return ToolResult(False, failure_text(tool, str(ended)))
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._gone("the connection closed during a call")
                return ToolResult(False, failure_text(tool, f"the MCP server {self.name} stopped during the call "
                                                            "and is being restarted"))
            return ToolResult(False, failure_text(tool, f"the MCP server {self.name} answered: {fence_untrusted(exc.error.message)}"))
        except Exception as exc:  # noqa: BLE001 - transport trouble: reconnect
            self._gone(describe(exc))
            return ToolResult(False, failure_text(tool, f"the MCP server {self.name} could not be reached ({fence_untrusted(self.error)})"))
        return result_text(result)

    async def _long_call(self, client: Client, entry: McpTool, arguments: dict[str, Any]) -> Any:
        """A long_running call: bounded by its own long_running_timeout_s, and stopped as stalled
        when no progress came for long_running_stall_s (since its start or its last progress):
        a task that reports keeps running as long as it needs."""
        bound, stall = entry.spec.timeout_s, self.cfg.long_running_stall_s
        forward = _progress_callback()
        last = [anyio.current_time()]
        outcome: dict[str, Any] = {}

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            last[0] = anyio.current_time()
            if forward is not None:
                await forward(progress, total, message)

        async def watch(scope: anyio.CancelScope) -> None:
            while (quiet := anyio.current_time() - last[0]) < stall:
                await anyio.sleep(stall - quiet)
            outcome["stalled"] = True
            scope.cancel()

        async def call(scope: anyio.CancelScope) -> None:
            outcome["result"] = await client.call_tool(entry.remote, arguments, read_timeout_seconds=bound + 5,
                                                       progress_callback=progressed)
            scope.cancel()

        with anyio.move_on_after(bound) as timer:
            async with anyio.create_task_group() as tg:
                if stall > 0:
                    tg.start_soon(watch, tg.cancel_scope)
                tg.start_soon(call, tg.cancel_scope)
        if "result" in outcome:
            return outcome["result"]
        key = f"mcp.servers.{self.name}"
        if outcome.get("stalled"):
            raise LongCallEnded(f"stalled: no progress for {stall:g} s ({key}.long_running_stall_s); stopped")
        assert timer.cancelled_caught
        raise LongCallEnded(f"timed out after {bound:g} s ({key}.long_running_timeout_s); stopped")

