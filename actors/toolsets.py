"""ToolsetSupervisor: the toolset catalog, argument checks and routing to executors (S5, S11).

A session sends ToolInvoke(call_id, tool, args) for a toolset tool. Here, before anything runs:
the tool must exist and its arguments must fit the schema (else the model gets the terse
signature back). Then the call goes by prefix to the executor actor serving that toolset
(`media_*` -> "media"). Each call runs in its own task, so a slow search in one session never
delays a call of another. Whatever happens to the executor, the session gets a ToolOutcome:
down, crashed or slow -> a clear tool error after `session.tool_timeout_s`; the session goes on.
"""
from __future__ import annotations

import json
import time
from typing import Callable, Iterable, Mapping

import anyio
import zmq

import protocol as p
from actors.base import Actor, AskTimeout, Inbound
from core.config import Config
from core.toolsets import ToolsetRegistry, terse

EXECUTORS: dict[str, str] = {"media": "media"}
"""Toolset -> the actor that executes its tools."""

SESSION_TOOLSETS = frozenset({"timers"})
"""Toolsets whose tools the SessionActor runs itself (they act on per-session state)."""

CANCELLED = "cancelled"


def default_toolsets() -> list[p.ToolsetSpec]:
    """The shipped catalog, in prompt order: media, timers."""
    from core.timers import TIMERS_TOOLSET
    from media.tools import MEDIA_TOOLSET

    return [MEDIA_TOOLSET, TIMERS_TOOLSET]


def check_args(registry: ToolsetRegistry, tool: str, args: Mapping[str, str]) -> dict[str, str] | str:
    """ToolInvoke's args (already by name) against the tool's schema: the args to run, or the text
    for the model. Unknown names and missing required values are invalid; empty values count as
    absent."""
    spec = registry.spec(tool)
    if spec is None:
        return registry.unknown_tool_text(tool)
    if set(args) - {arg.name for arg in spec.args}:
        return f"arguments invalid for {tool}; expected: {terse(spec)}"
    return registry.validate(tool, json.dumps(dict(args), ensure_ascii=False) if args else "")


def failed(tool: str, call_id: str, why: str) -> p.ToolOutcome:
    return p.ToolOutcome(call_id=call_id, ok=False, text=f"tool {tool} failed: {why}; try again")


class ToolsetSupervisor(Actor):
    name = "toolsets"

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.time, toolsets: Iterable[p.ToolsetSpec] | None = None,
                 executors: Mapping[str, str] | None = None):
        super().__init__(config, zmq_context=zmq_context, clock=clock)
        self._toolsets = list(toolsets) if toolsets is not None else None
        self.executors = dict(EXECUTORS if executors is None else executors)
        self.registry: ToolsetRegistry | None = None
        self.catalog = p.Catalog(toolsets=[])
        self._running: dict[tuple[str, str], tuple[anyio.CancelScope, str]] = {}

    async def on_start(self) -> None:
        toolsets = default_toolsets() if self._toolsets is None else self._toolsets
        self.registry = ToolsetRegistry(toolsets)  # a bad catalog raises here: start-up fails
        self.catalog = p.Catalog(toolsets=[self.registry.toolset(n) for n in self.registry.toolset_names()])
        self.log.info("actor=%s catalog: %s", self.name, ", ".join(self.registry.toolset_names()))

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.CatalogRequest):
            msg.reply(self, self.catalog)
        elif isinstance(body, p.ToolInvoke):
            self._start_invoke(msg, body)
        elif isinstance(body, p.ToolCancel):
            msg.reply(self, self._cancel(msg.session, body.call_id))
        elif isinstance(body, (p.Ok, p.ErrorReply, p.ToolOutcome)):
            # A late answer: to a ToolCancel we told, or from an executor to a call already
            # cancelled or timed out. Answering it would echo between the two actors forever.
            self.log.debug("actor=%s dropped uncorrelated %s", self.name, type(body).__name__)
        else:
            await super().handle(msg)

    # --- invoke ---------------------------------------------------------------------------------
    def route(self, tool: str, args: Mapping[str, str]) -> tuple[str, dict[str, str]] | str:
        """(executor actor, checked args) for a call, or the text explaining why it cannot run."""
        assert self.registry is not None
        if self.registry.is_core(tool):
            return f"{tool} is a core tool; the session runs it"
        toolset = self.registry.toolset_of(tool)
        checked = check_args(self.registry, tool, args)
        if isinstance(checked, str):
            return checked
        assert toolset is not None  # check_args passed, so the tool is a toolset tool
        if toolset in SESSION_TOOLSETS:
            return f"{toolset} tools run in the session"
        executor = self.executors.get(toolset)
        if executor is None:
            return f"toolset {toolset} has no executor"
        return executor, checked

    def _start_invoke(self, msg: Inbound, call: p.ToolInvoke) -> None:
        routed = self.route(call.tool, call.args)
        if isinstance(routed, str):
            msg.reply(self, p.ToolOutcome(call_id=call.call_id, ok=False, text=routed))
            return
        key = (msg.session, call.call_id)
        if key in self._running:
            msg.reply(self, p.ToolOutcome(call_id=call.call_id, ok=False,
                                          text=f"call {call.call_id} is already running"))
            return
        executor, args = routed
        scope = anyio.CancelScope()
        self._running[key] = (scope, executor)
        self.spawn(self._invoke, msg, executor, p.ToolInvoke(call_id=call.call_id, tool=call.tool, args=args),
                   scope, name=f"invoke-{call.tool}-{call.call_id}")

    async def _invoke(self, msg: Inbound, executor: str, call: p.ToolInvoke, scope: anyio.CancelScope) -> None:
        timeout = self.config.session.tool_timeout_s
        outcome = p.ToolOutcome(call_id=call.call_id, ok=False, text=CANCELLED)
        try:
            with scope:
                try:
                    answer = await self.ask(executor, call, session=msg.session, timeout=timeout)
                except AskTimeout:
                    outcome = failed(call.tool, call.call_id,
                                     f"the {executor} executor did not answer within {timeout:g} s")
                except Exception as exc:  # noqa: BLE001 - a spawned task must never take the actor down
                    self.log.exception("actor=%s invoke %s failed", self.name, call.tool)
                    outcome = failed(call.tool, call.call_id, f"{type(exc).__name__}: {exc}")
                else:
                    outcome = self._outcome(call, executor, answer)
        finally:
            self._running.pop((msg.session, call.call_id), None)
        msg.reply(self, outcome)

    @staticmethod
    def _outcome(call: p.ToolInvoke, executor: str, answer: p.Msg) -> p.ToolOutcome:
        if isinstance(answer, p.ToolOutcome):
            return p.ToolOutcome(call_id=call.call_id, ok=answer.ok, text=answer.text, task_id=answer.task_id)
        if isinstance(answer, p.ErrorReply):
            return failed(call.tool, call.call_id, f"the {executor} executor reported {answer.detail}")
        return failed(call.tool, call.call_id, f"the {executor} executor answered {type(answer).__name__}")

    # --- cancel ---------------------------------------------------------------------------------
    def _cancel(self, session: str, call_id: str) -> p.Ok:
        running = self._running.get((session, call_id))
        if running is None:
            return p.Ok(detail=f"call {call_id} is not running")
        scope, executor = running
        self.tell(executor, p.ToolCancel(call_id=call_id), session=session)
        scope.cancel()
        return p.Ok(detail=CANCELLED)
