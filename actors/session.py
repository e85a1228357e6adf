"""SessionActor: hosts every session's Conversation and connects it to the other actors.

All the behaviour lives in core.conversation; this actor only turns messages into calls and
calls into messages: DeliverEvent in, Display/TurnDone out to the glasses, Generate to the LLM
worker, ToolInvoke to the ToolsetSupervisor, SkillIndexRequest/SkillRead to the SkillStore.
Session state is in memory only (S6): a restart of this actor starts every session afresh, and
a session idle for `session.idle_session_ttl_s` (nothing running, no timer set) is forgotten, so
a long-running server does not keep every session it ever saw; its next event starts afresh.
"""
from __future__ import annotations

import time
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable

import anyio

import protocol as p
from actors.base import Actor, AskTimeout, Inbound
from core.config import Config
from core.conversation import Conversation, ModelUnavailable, SessionSettings
from core.toolsets import ToolsetRegistry
from core.urgency import LLMRouter, RuleRouter, UrgencyConfig


class SessionActor(Actor):
    name = "session"

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time, **kwargs):
        super().__init__(config, clock=clock, **kwargs)
        self.sessions: dict[str, Conversation] = {}
        self.settings: SessionSettings | None = None
        self._timer_wake = anyio.Event()
        if hasattr(clock, "on_change"):
            clock.on_change(self.wake_timers)

    # ---- start-up -------------------------------------------------------------------------
    async def on_start(self) -> None:
        catalog = await self._fetch_catalog()
        cfg = self.config.session
        urgency = UrgencyConfig.from_mapping(
            {"urgent_words": cfg.urgent_words, "interrupt_phrases": cfg.interrupt_phrases,
             **({"parallel_patterns": cfg.parallel_patterns} if cfg.parallel_patterns else {})}
        )
        router = RuleRouter(urgency)
        if cfg.router == "model":
            router = LLMRouter(self.classify, router, timeout_s=cfg.router_timeout_s)
        self.settings = SessionSettings(
            registry=ToolsetRegistry(catalog.toolsets), ports=self, spawn=self.spawn, config=cfg,
            clock=self.clock, router=router, on_timer_set=self.wake_timers,
        )
        self.spawn(self._timer_wheel, name="timer-wheel")

    async def _fetch_catalog(self) -> p.Catalog:
        """The ToolsetSupervisor may start after us (or restart): wait for it, loudly."""
        while True:
            try:
                reply = await self.ask("toolsets", p.CatalogRequest(), timeout=2.0)
            except AskTimeout:
                self.log.warning("actor=session waiting for the toolset catalog")
                continue
            if isinstance(reply, p.Catalog):
                return reply
            raise RuntimeError(f"toolset supervisor answered {reply!r} to CatalogRequest")

    # ---- messages -------------------------------------------------------------------------
    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.DeliverEvent):
            if not msg.session:
                msg.reply(self, p.ErrorReply(code="no_session", detail="DeliverEvent needs a session id in the envelope"))
                return
            conversation = self.sessions.get(msg.session)
            if conversation is None:
                assert self.settings is not None
                conversation = self.sessions[msg.session] = Conversation(msg.session, self.settings, body.phone_key)
            verdict = conversation.submit(body.event)
            if verdict == "busy":
                msg.reply(self, p.Busy(event_id=body.event.event_id, detail=f"session {msg.session} has {len(conversation.queue)} events waiting; try again shortly"))
            else:
                msg.reply(self, p.EventAccepted(event_id=body.event.event_id, duplicate=verdict == "duplicate"))
        elif isinstance(body, p.SkillsChanged):
            if self.settings is not None:
                self.settings.skills_epoch += 1  # every session asks again on its next step
        elif isinstance(body, p.SessionInfoRequest):
            conversation = self.sessions.get(msg.session)
            msg.reply(self, conversation.info() if conversation else p.SessionInfo(exists=False))
        else:
            await super().handle(msg)

    # ---- Ports, for the conversations -------------------------------------------------------
    async def skills(self, session: str, phone_key: str) -> p.SkillIndex:
        reply = await self.ask("skills", p.SkillIndexRequest(phone_key=phone_key), session=session)
        if not isinstance(reply, p.SkillIndex):
            raise RuntimeError(f"skill store answered {type(reply).__name__}")
        return reply

    async def read_skill(self, session: str, phone_key: str, name: str) -> p.SkillBody:
        reply = await self.ask("skills", p.SkillRead(name=name, phone_key=phone_key), session=session)
        if not isinstance(reply, p.SkillBody):
            raise RuntimeError(f"skill store answered {type(reply).__name__}")
        return reply

    @asynccontextmanager
    async def generate(self, session: str, messages: list[p.ChatMessage], tools: list[str], max_tokens: int) -> AsyncIterator[AsyncIterator[str]]:
        request = p.Generate(request_id=p.new_id(), messages=messages, tools=tools, max_tokens=max_tokens)
        timeout = self.config.session.llm_timeout_s
        finished = False

        async def pieces() -> AsyncIterator[str]:
            # No yield inside a cancel scope: receive under the timeout, yield outside it.
            nonlocal finished
            while True:
                body = None
                with anyio.move_on_after(timeout):
                    body = (await replies.receive()).body
                if body is None:
                    raise ModelUnavailable(f"no answer from the model within {timeout:g} s")
                if isinstance(body, p.LLMChunk):
                    yield body.text
                    continue
                finished = True
                if isinstance(body, p.LLMDone):
                    return
                if isinstance(body, p.LLMFailed):
                    raise ModelUnavailable(body.error)
                raise ModelUnavailable(f"unexpected reply {type(body).__name__}")

        try:
            async with self.ask_stream("llm", request, session=session) as replies:
                stream = pieces()
                try:
                    yield stream
                finally:
                    await stream.aclose()
        finally:
            if not finished:
                # Cancelled or abandoned mid-stream: stop the generation at the worker too.
                try:
                    self.tell("llm", p.CancelGenerate(request_id=request.request_id), session=session)
                except Exception:  # noqa: BLE001 - best effort
                    pass

    async def classify(self, prompt: str) -> str:
        """The model router's question (`session.router = "model"`), on `session.router_profile`.
        The router bounds the wait; a cancelled wait stops the generation at the worker too."""
        request = p.Generate(request_id=p.new_id(), messages=[p.ChatMessage(role="user", content=prompt)],
                             max_tokens=4, profile=self.config.session.router_profile)
        text, finished = "", False
        try:
            async with self.ask_stream("llm", request) as replies:
                while True:
                    body = (await replies.receive()).body
                    if isinstance(body, p.LLMChunk):
                        text += body.text
                        continue
                    finished = True
                    if isinstance(body, p.LLMDone):
                        return body.text or text
                    raise RuntimeError(body.error if isinstance(body, p.LLMFailed) else type(body).__name__)
        finally:
            if not finished:
                try:
                    self.tell("llm", p.CancelGenerate(request_id=request.request_id))
                except Exception:  # noqa: BLE001 - best effort
                    pass

    async def invoke(self, session: str, call_id: str, tool: str, args: dict[str, str]) -> p.ToolOutcome:
        timeout = self.config.session.tool_timeout_s + 2.0
        try:
            reply = await self.ask("toolsets", p.ToolInvoke(call_id=call_id, tool=tool, args=args), session=session, timeout=timeout)
        except AskTimeout:
            return p.ToolOutcome(call_id=call_id, ok=False, text=f"tool {tool} failed: the toolset supervisor did not answer within {timeout:g} s; try again")
        if isinstance(reply, p.ToolOutcome):
            return reply
        detail = reply.detail if isinstance(reply, p.ErrorReply) else type(reply).__name__
        return p.ToolOutcome(call_id=call_id, ok=False, text=f"tool {tool} failed: {detail}")

    def cancel_tool(self, session: str, call_id: str) -> None:
        self.tell("toolsets", p.ToolCancel(call_id=call_id), session=session)

    def send(self, session: str, body: p.Msg) -> None:
        self.tell("glasses", body, session=session)

    # ---- timers (E10) and idle sessions: sleep exactly until the next due, no polling --------
    def wake_timers(self) -> None:
        self._timer_wake.set()

    async def _timer_wheel(self) -> None:
        ttl = self.config.session.idle_session_ttl_s
        sweep_every = min(ttl / 2, 60.0)
        next_sweep = self.clock() + sweep_every
        while True:
            self._timer_wake = anyio.Event()
            now = self.clock()
            next_due = next_sweep
            for conversation in self.sessions.values():
                if len(conversation.timers):
                    conversation.fire_due_timers(now)
                    due = conversation.timers.next_due()
                    if due is not None:
                        next_due = min(next_due, due)
            if now >= next_sweep:
                self.forget_idle_sessions(now, ttl)
                next_sweep = now + sweep_every
                next_due = min(next_due, next_sweep)
            with anyio.move_on_after(max(0.0, next_due - now)):
                await self._timer_wake.wait()

    def forget_idle_sessions(self, now: float, ttl: float) -> list[str]:
        idle = [sid for sid, c in self.sessions.items() if (since := c.idle_since()) is not None and now - since >= ttl]
        for sid in idle:
            del self.sessions[sid]
        if idle:
            self.tell("glasses", p.SessionsForgotten(sessions=idle))
            self.log.info("actor=session forgot %d session(s) idle for %g s or more: %s", len(idle), ttl,
                          ", ".join(idle[:10]) + (" ..." if len(idle) > 10 else ""))
        return idle
