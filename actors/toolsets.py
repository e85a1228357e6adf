"""The toolset executors and their supervisor.

`ToolsetExecutor` runs the calls of the executor toolsets it hosts; each executor actor hosts the
toolsets `actors.topology.executor_of` gives it (media: the MediaExecutor, its own process in
ipc mode, restarted alone; every other executor toolset and the MCP servers: the
ToolsetSupervisor), so a crash of one leaves the others' calls untouched.
`ToolsetSupervisor` ("toolsets") is also the catalog: it reads the toolset registry (`toolsets/`:
built-in records, `toolsets.extra`, one MCP server per `[mcp.servers.NAME]`), supervises the MCP
servers (see toolsets.mcp.server) and reports every toolset's state, an executor actor that does
not answer included. A session sends ToolInvoke(call_id, tool, args) to the toolset's executor
actor with the arguments already bound and checked against the spec; the call runs there, in its
own task, so a slow call never delays another session's: one hop there, one back. In every
executor, for every toolset alike: a call queued
while this actor was down is dropped (its caller has had a timeout error), a call id runs once,
a call is bounded by its toolset's timeout, a ToolCancel stops it, a ToolRunning asks whether it
still runs (the caller's probe: a call killed with this process is not waited for until its
timeout), any failure becomes one clear tool error, and a long result is cut with an `offset=`
call for the rest (core.toolsets.cap_result).
When the catalog changes (an MCP server listed new tools, started or died) the session actor is
told ToolsetsChanged.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

import anyio
import zmq

import protocol as p
import toolsets
from actors.base import Actor, AskTimeout, Inbound
from actors.topology import executor_of
from core import tracing
from core.config import Config
from core.progress import REPORTER
from core.toolsets import (Executor, ExecutorToolset, KeptResults, Toolset, ToolResult, ToolsetRegistry, cap_result,
                           failure_text, not_kept_text)
from protocol.tools import NOT_RUNNING

CANCELLED = "cancelled"
RUNNING = "running"  # the answer to ToolRunning while the call runs


class ToolsetExecutor(Actor):
    """Runs the calls of the executor toolsets whose `executor_of` is this actor's name."""

    name = "toolsets"

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.time, records: Iterable[Toolset] | None = None):
        super().__init__(config, zmq_context=zmq_context, clock=clock)
        self.records = list(records) if records is not None else self.own_records(toolsets.load(config))
        self.registry = ToolsetRegistry([])
        self.executors: dict[str, Executor] = {}
        self._running: dict[tuple[str, str], anyio.CancelScope] = {}
        self._results = KeptResults(config.toolsets.results_kept, config.toolsets.results_kept_bytes)  # for offset=

    def own_records(self, records: list[Toolset]) -> list[Toolset]:
        """The records this actor knows of: the toolsets it runs."""
        return [record for record in records if executor_of(record.spec.name) == self.name]

    def runs_here(self, record: Toolset) -> bool:
        return isinstance(record, ExecutorToolset) and executor_of(record.spec.name) == self.name

    async def on_start(self) -> None:
        for record in self.records:
            if self.runs_here(record):
                self.executors[record.spec.name] = record.factory(self)
        self._rebuild()  # a bad built-in catalog raises here: start-up fails
        for name, executor in self.executors.items():
            self.spawn(executor.start, name=f"start-{name}")  # calls are served meanwhile
        self.log.info("actor=%s runs: %s", self.name, ", ".join(self.executors) or "nothing")

    def _rebuild(self) -> None:
        self.registry = ToolsetRegistry([record.spec for record in self.records])

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.ToolInvoke):
            self._start(msg, body)
        elif isinstance(body, p.ToolCancel):
            scope = self._running.get((msg.session, body.call_id))
            if scope is not None:
                scope.cancel()
            msg.reply(self, p.Ok(detail=CANCELLED if scope else f"call {body.call_id} is not running"))
        elif isinstance(body, p.ToolRunning):
            if (msg.session, body.call_id) in self._running:
                msg.reply(self, p.Ok(detail=RUNNING))
            else:
                msg.reply(self, p.ErrorReply(code=NOT_RUNNING, detail=f"call {body.call_id} is not running"))
        elif isinstance(body, (p.Ok, p.ErrorReply, p.ToolOutcome)):
            # A reply nobody waits for (e.g. to a cancelled call): answering it would echo forever.
            self.log.debug("actor=%s dropped uncorrelated %s", self.name, type(body).__name__)
        else:
            await super().handle(msg)


    # --- one call ------------------------------------------------------------------------------
    def _start(self, msg: Inbound, call: p.ToolInvoke) -> None:
        age = self.clock() - msg.env.ts
        if age > self.config.session.tool_timeout_s and age > self._timeout(call.tool):
            # Queued while this actor was down: its caller has had a timeout error already, so
            # running it now would, say, start a film the user gave up on minutes ago.
            self.log.warning("actor=%s dropped stale %s call_id=%s age=%.1fs", self.name, call.tool, call.call_id, age)
            return
        key = (msg.session, call.call_id)
        if key in self._running:
            msg.reply(self, p.ToolOutcome(call_id=call.call_id, ok=False, text=f"call {call.call_id} is already running"))
            return
        scope = anyio.CancelScope()
        self._running[key] = scope
        self.spawn(self._run, msg, call, scope, name=f"{call.tool}-{call.call_id}")

    def _timeout(self, tool: str) -> float:
        toolset = self.registry.toolset(self.registry.toolset_of(tool) or "")
        spec = self.registry.spec(tool)
        if spec is not None and spec.timeout_s:  # a long task's own bound: the executor's clear text speaks first
            return spec.timeout_s + 2.0
        return (toolset.timeout_s if toolset is not None and toolset.timeout_s else
                self.config.session.tool_timeout_s)

    async def _run(self, msg: Inbound, call: p.ToolInvoke, scope: anyio.CancelScope) -> None:
        result = ToolResult(False, CANCELLED)
        REPORTER.set(lambda text: self._progress(msg.session, call.call_id, text))  # this task's own context
        with tracing.tracer.serve("tool.execute", msg.env.trace, call.tool) as traced:
            try:
                with scope:
                    result = await self._execute(call, msg.session)
            finally:
                self._running.pop((msg.session, call.call_id), None)
            traced.outcome("cancelled" if scope.cancelled_caught else "ok" if result.ok else "error")
        msg.reply(self, p.ToolOutcome(call_id=call.call_id, ok=result.ok, text=result.text, task_id=result.task_id,
                                      data=result.data))

    def _progress(self, session: str, call_id: str, text: str) -> None:
        """A running call's progress to its session (core.progress); dropped when the link is full."""
        try:
            self.tell("session", p.ToolProgress(call_id=call_id, text=text), session=session)
        except anyio.WouldBlock:
            self.log.debug("actor=%s progress of call_id=%s dropped: the session's link is full", self.name, call_id)

    async def _execute(self, call: p.ToolInvoke, session: str) -> ToolResult:
        tool = call.tool
        toolset = self.registry.toolset_of(tool)
        if toolset is None or self.registry.spec(tool) is None:
            return ToolResult(False, self.registry.unknown_tool_text(tool))
        executor = self.executors.get(toolset)
        if executor is None:
            return ToolResult(False, f"{toolset} tools run in the session")
        args, offset = dict(call.args), call.offset
        key = (session, tool, tuple(sorted(args.items())))
        if offset:
            if key in self._results:
                return ToolResult(True, self._cut(tool, args, self._results[key], offset, key))
            # Not kept (evicted by toolsets.results_kept_bytes): running the call again to page
            # in it could repeat what it did; the model decides.
            return ToolResult(False, not_kept_text(tool, args, self.config.toolsets.results_kept_bytes))
        timeout = self._timeout(tool)
        try:
            with anyio.fail_after(timeout):
                result = await executor.call(tool, args, session)
        except TimeoutError:
            return ToolResult(False, failure_text(tool, f"no answer within {timeout:g} s"))
        except Exception as exc:  # noqa: BLE001 - a failing tool is a tool error, never a crash
            self.log.exception("actor=%s %s failed", self.name, tool)
            return ToolResult(False, failure_text(tool, f"{type(exc).__name__}: {exc}"))
        return ToolResult(result.ok, self._cut(tool, args, result.text, offset, key), result.task_id, result.data)

    def _cut(self, tool: str, args: dict[str, str], text: str, offset: int, key: tuple) -> str:
        limit = self.config.toolsets.max_result_chars
        if len(text) > limit:
            self._results.keep(key, text)
        return cap_result(tool, args, text, offset, limit)


class ToolsetSupervisor(ToolsetExecutor):
    """The catalog, the MCP servers, and the executor of every executor toolset without an
    executor actor of its own."""

    name = "toolsets"

    def __init__(self, config: Config, **kwargs):
        super().__init__(config, **kwargs)
        self.catalog = p.Catalog(toolsets=[])
        self.mcp: list = []  # toolsets.mcp.server.McpServer, one per configured server
        self._refused: dict[str, str] = {}  # MCP toolset -> why the catalog refused it (names collide)

    def own_records(self, records: list[Toolset]) -> list[Toolset]:
        return records  # the catalog holds them all; `runs_here` says which run here

    async def on_start(self) -> None:
        from toolsets.mcp import servers

        self.mcp = servers(self.config, [r.spec.name for r in self.records], self._mcp_changed)
        await super().on_start()
        for server in self.mcp:
            self.executors[server.name] = server
            self.spawn(server.run, name=f"mcp-{server.name}")
        await self._first_listings()
        self._rebuild()  # what came of each start (a disabled server is not "starting")
        self.log.info("actor=%s catalog: %s", self.name, ", ".join(self.registry.toolset_names()))

    async def _first_listings(self) -> None:
        """Until each MCP server has listed its tools or failed to start (bounded by
        `mcp.start_wait_s`): this actor answers nothing before, so the runtime is ready - and a
        session's first catalog fetched - only with every server that can start in the catalog,
        never a moment where the model is told its toolset does not exist."""
        with anyio.move_on_after(self.config.mcp.start_wait_s) as waited:
            for server in self.mcp:
                await server.settled.wait()
        if waited.cancelled_caught:
            slow = [server.name for server in self.mcp if not server.settled.is_set()]
            self.log.warning("actor=%s MCP server(s) %s still starting after mcp.start_wait_s (%g s); they join the "
                             "catalog when listed", self.name, ", ".join(slow), self.config.mcp.start_wait_s)

    def _rebuild(self) -> None:
        """The catalog: the built-in toolsets (a bad one raises: start-up fails) and every listed
        MCP server whose names fit; one that collides is refused alone, logged once."""
        served = [spec for spec in (server.spec() for server in self.mcp) if spec is not None]
        self.registry, refused = ToolsetRegistry.admitting([record.spec for record in self.records], served)
        self.catalog = p.Catalog(toolsets=self.registry.specs(),
                                 starting=[s.name for s in self.mcp if s.state == "starting" and not s.settled.is_set()])
        for name, why in refused.items():
            if self._refused.get(name) != why:
                self.log.error("actor=%s toolset %s refused, the others serve on: %s", self.name, name, why)
        for name in self._refused.keys() - refused.keys():
            self.log.info("actor=%s toolset %s admitted again", self.name, name)
        self._refused = refused

    def _mcp_changed(self) -> None:
        self._rebuild()
        try:
            self.tell("session", p.ToolsetsChanged())
        except anyio.WouldBlock:
            self.log.warning("actor=%s could not tell the session actor the catalog changed", self.name)

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.CatalogRequest):
            msg.reply(self, self.catalog)
        elif isinstance(body, p.ToolsetsRequest):
            self.spawn(self._reply_report, msg, name="toolsets-report")
        else:
            await super().handle(msg)

    async def _reply_report(self, msg: Inbound) -> None:
        msg.reply(self, await self.report())

    async def report(self) -> p.ToolsetsReport:
        """Every toolset's state; one whose executor actor answers no Ping is unavailable."""
        actors = {executor_of(r.spec.name) for r in self.records if r.runs == "executor"} - {self.name}
        silent = {actor: await self._silent(actor) for actor in sorted(actors)}
        rows = []
        for r in self.records:
            why = silent.get(executor_of(r.spec.name), "") if r.runs == "executor" else ""
            rows.append(p.ToolsetState(name=r.spec.name, runs=r.runs, state="unavailable" if why else "available",
                                       tools=len(r.spec.tools), error=why))
        rows += [p.ToolsetState(name=s.name, runs="mcp", state="unavailable", tools=len(s.tools),
                                error=f"refused: {self._refused[s.name]}") if s.name in self._refused else
                 p.ToolsetState(name=s.name, runs="mcp", state=s.state, tools=len(s.tools),
                                error=s.error or s.refused_tools)
                 for s in self.mcp]
        return p.ToolsetsReport(toolsets=rows)

    async def _silent(self, actor: str) -> str:
        """Why the executor actor `actor` is not serving ("" while it answers a Ping)."""
        with anyio.move_on_after(1.0):  # the send too: a dead process's link may be full
            try:
                await self.ask(actor, p.Ping(), timeout=1.0)
                return ""
            except AskTimeout:
                pass
        return f"its executor ({actor}) does not answer"
