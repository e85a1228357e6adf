"""SessionActor: hosts every session's Conversation and connects it to the other actors.

All the behaviour lives in core.conversation; this actor only turns messages into calls and
calls into messages: DeliverEvent in, Display/TurnDone out to the glasses, Generate to the LLM
worker, ToolInvoke to the toolset's executor actor (MediaExecutor, ToolsetSupervisor),
SkillIndexRequest/SkillRead to the SkillStore.
Every session is journaled (storage/journal.py): its history entries as the Trajectory records
them, the events it accepted (on disk before the phone is acked), its timers and what it knows of
skills. Memory holds the active sessions, disk holds all: a session idle for
`session.idle_session_ttl_s` leaves memory and comes back from the journal on its next event; a
restart brings back at once every session with unanswered events or timers, and continues a turn
the crash cut. Toolset activity is deliberately not kept (S6: a restart resets toolsets).
"""
from __future__ import annotations

import collections
import dataclasses
import heapq
import operator
import time
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, AsyncIterator, Callable

import anyio
import msgspec

import protocol as p
import toolsets
from actors.base import Actor, AskTimeout, Inbound, MessageTooLarge
from actors.observers import Subscribers
from actors.topology import EXECUTORS, executor_of
from actors.world import World
from core.admission import ACK_PATH, REPLY_PATH
from core.config import Config
from core.conversation import Conversation, GenerationLost, ModelUnavailable, SessionSettings
from core.observe import Observer
from core.resume import resume
from core.timers import Timer
from core.toolsets import ToolsetRegistry, failure_text, lost_text, repeatable
from core.trajectory import Trajectory
from protocol.tools import NOT_RUNNING
from storage.journal import Journal, JournalError, NoJournal, SessionState, StoredSession, TimerRow
from storage.store import journal_store, node_leases

if TYPE_CHECKING:
    from storage.leases import NodeLeases

WORKER_RESTARTED = "the LLM worker restarted"  # marks requests that died with the worker
_LOST = p.ErrorReply(code="lost", detail="")  # a call the toolset executor no longer runs (SessionActor._invoke_once)
SEARCH_RESULT_CHARS = 1500  # history_search answers at most this much text
_CONTENT = operator.attrgetter("content")  # a prompt's size in C, not a Python loop per message
from core.urgency import LLMRouter, RuleRouter, UrgencyConfig


class SessionActor(Actor):
    name = "session"
    backlog_limit = 10_000  # messages for the glasses waiting for room before partial displays are dropped
    bring_back_chunk = 64  # sessions read back from the journal at once after a restart (`_bring_back`)

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time, **kwargs):
        super().__init__(config, clock=clock, **kwargs)
        self.sessions: dict[str, Conversation] = {}
        self.settings: SessionSettings | None = None
        self._backlog: collections.deque[tuple[str, p.Msg]] = collections.deque()
        self._finals: dict[tuple[str, str], str] = {}  # (session, turn in progress) -> its final display, for its TurnDone
        self._executor_of_call: dict[tuple[str, str], str] = {}  # (session, call id) in flight -> its executor actor
        self.llm_retries = 0
        self.tool_retries = 0  # repeatable calls made again after the toolset executor lost them
        self.skill_retries = 0  # skill requests asked again after the skill store did not answer
        self.dropped_partials = 0
        self._timer_wake = anyio.Event()
        self._timer_heap: list[tuple[float, str]] = []  # (a session's next timer due, session): the wheel's agenda
        self._timer_heap_limit = 4096
        self.subscribers = Subscribers(self, config.web.max_subscribers)  # Observe: web console, metrics
        if hasattr(clock, "on_change"):
            clock.on_change(self.wake_timers)
        self.journal = (Journal(config.path(config.storage.path), clock=clock, store=journal_store(config, hold_lock=True))
                        if config.storage.journal
                        else NoJournal(clock=clock))
        self.leases = node_leases(config, self.journal, clock)  # several nodes: which one serves a session
        self._loading: dict[str, anyio.Event] = {}  # sessions being read back from the journal
        self._unstored: dict[tuple[str, str], object] = {}  # (session, event) accepted, its commit not done yet
        self._restored: set[str] = set()  # sessions in memory that came back from the journal
        self._llm_started = 0.0  # the LLM worker's start time, as its last ModelInfo said
        self._generating: dict[str, float] = {}  # envelope id of each Generate in flight -> when asked
        self._catalog_asks = 0  # ToolsetsChanged answered so far (a late answer to an older one is dropped)
        self.world = World(self)  # channels, notes for the user, monitors (actors/world.py)

    # ---- start-up -------------------------------------------------------------------------
    async def on_start(self) -> None:
        assert self._tg is not None
        await self._tg.start(self.journal.run)
        catalog = await self._fetch_catalog()
        cfg = self.config.session
        urgency = UrgencyConfig.from_mapping(
            {"urgent_words": cfg.urgent_words, "interrupt_phrases": cfg.interrupt_phrases,
             "classifier": cfg.router_classifier,
             **({"parallel_patterns": cfg.parallel_patterns} if cfg.parallel_patterns else {})}
        )
        router = RuleRouter(urgency)
        if cfg.router == "model":
            router = LLMRouter(self.classify, router, timeout_s=cfg.router_timeout_s)
        self.settings = SessionSettings(
            registry=ToolsetRegistry(catalog.toolsets), ports=self, spawn=self.spawn, config=cfg,
            session_toolsets={r.spec.name: r for r in toolsets.load(self.config) if r.runs == "session"},
            clock=self.clock, router=router, on_timer_set=self.wake_timers,
            observer=Observer(self.subscribers.publish, self.subscribers.listening, self.subscribers.wants_prompt),
        )
        self.settings.search_history = self.search_history
        self.settings.world = self.world  # the channels, notify, tasks and monitors toolsets reach it here
        self.spawn(self._learn_model_context, name="model-context")
        await self._purge_expired()
        if self.leases is not None:
            await self.leases.beat()
        unfinished = await (self.journal.unfinished() if self.leases is None else self.leases.adopt(due_only=False))
        if unfinished:
            self.settings.admission.slow_start()  # their cut turns would all start at once
            self.spawn(self._bring_back, unfinished, name="bring-back")
        self.spawn(self._timer_wheel, name="timer-wheel")
        if self.leases is not None:
            self.spawn(self._node_heartbeat, name="node-heartbeat")
        self.spawn(self._admission_log, name="admission-log")
        self.spawn(self.incarnation, "llm", name="llm-incarnation")
        for executor in {"toolsets", *EXECUTORS.values()}:
            self.spawn(self.incarnation, executor, name=f"{executor}-incarnation")

    async def _bring_back(self, sessions: list[str]) -> None:
        """After a restart, the sessions with unanswered events or timers, read back while the
        actor already serves (one at a time, thousands of them would keep every user waiting while
        the phones resend); a chunk at a time, the journal reads a chunk in one transaction. An event
        for a session not back yet reads it back itself (`conversation` loads each once)."""
        started = time.monotonic()
        failed = 0

        async def one(sid: str) -> None:
            nonlocal failed
            try:
                await self.conversation(sid)
            except JournalError as exc:  # its next event tries again
                failed += 1
                self.log.error("actor=session session=%s could not be read back: %s", sid, exc)

        for start in range(0, len(sessions), self.bring_back_chunk):
            async with anyio.create_task_group() as tg:
                for sid in sessions[start:start + self.bring_back_chunk]:
                    tg.start_soon(one, sid)
        self.log.info("actor=session brought back %d session(s) with unanswered events or timers in %.1f s%s",
                      len(sessions) - failed, time.monotonic() - started, f"; {failed} could not be read" if failed else "")

    async def _admission_log(self, every_s: float = 5.0) -> None:
        """A line per interval while turns wait for admission: overload is visible in the log."""
        admission, told = self.settings.admission, 0
        while True:
            await anyio.sleep(every_s)
            if admission.waiting or admission.waited != told:
                self.log.warning("actor=session turn admission: %d turn(s) waiting, %d running, limit %d, queueing "
                                 "delay %.0f ms; %d waited since start, limit cut %d time(s)", admission.waiting,
                                 admission.running, admission.limit, admission.delay_s * 1000, admission.waited, admission.cuts)
                told = admission.waited

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
            if msg.session in self.sessions and msg.session not in self._loading:
                self._deliver_now(msg, body)
            else:
                self.spawn(self._deliver, msg, body)
        elif isinstance(body, p.SkillsChanged):
            if self.settings is not None:
                self.settings.skills_epoch += 1  # every session asks again on its next step
        elif isinstance(body, p.ToolsetsChanged):
            self.spawn(self._refresh_catalog, name="catalog")
        elif isinstance(body, (p.Observe, p.ObserveRenew, p.ObserveStop)):
            self.subscribers.handle(msg, lambda: [
                p.SessionSummary(session=sid, busy=c.running, queued=len(c.queue), last_active=c.last_active)
                for sid, c in self.sessions.items()])
        elif isinstance(body, p.SessionInfoRequest):
            self.spawn(self._info, msg)
        elif isinstance(body, p.ModelInfo):
            self._model_info(body)
        elif isinstance(body, p.AdmissionStatsRequest) and self.settings is not None:
            a = self.settings.admission
            msg.reply(self, p.AdmissionStats(running=a.running, waiting=a.waiting, limit=a.limit, delay_ms=round(a.delay_s * 1000, 1),
                                             waited=a.waited, cuts=a.cuts, lowest_limit=a.lowest_limit))
        elif isinstance(body, p.SessionDelete):
            self.spawn(self._delete, msg)
        elif isinstance(body, p.ToolProgress):
            self.world.progress(msg.session, body)
        else:
            await super().handle(msg)

    # ---- Ports, for the conversations -------------------------------------------------------
    async def skills(self, session: str, phone_key: str) -> p.SkillIndex:
        return await self._ask_skills(session, p.SkillIndexRequest(phone_key=phone_key), p.SkillIndex)

    async def read_skill(self, session: str, phone_key: str, name: str) -> p.SkillBody:
        return await self._ask_skills(session, p.SkillRead(name=name, phone_key=phone_key), p.SkillBody)

    async def _ask_skills(self, session: str, request: p.Msg, answer: type[p.Msg]) -> p.Msg:
        """Reading skills changes nothing, so a request that got no answer (the store's process
        died with it) is asked once more when the store answers a Ping again (its successor, or
        the same process slow for a moment); the user's turn goes on instead of failing."""
        def counted() -> None:
            self.skill_retries += 1
            self.log.warning("actor=session session=%s the skill store did not answer %s; asked again",
                             session, type(request).__name__)

        reply = await self.ask_again_if_answering("skills", request, session=session, on_retry=counted)
        if not isinstance(reply, answer):
            raise RuntimeError(f"skill store answered {type(reply).__name__}")
        return reply

    @asynccontextmanager
    async def generate(self, session: str, messages: list[p.ChatMessage], tools: list[str], max_tokens: int,
                       arg_choices: dict[str, list[str]] | None = None) -> AsyncIterator[AsyncIterator[str]]:
        request = p.Generate(request_id=p.new_id(), messages=messages, tools=tools, max_tokens=max_tokens,
                             arg_choices=arg_choices or {})
        gen = _Generation(session=session, request=request, messages=messages, admission=self.settings.admission,
                          incarnation=self._started_at.get("llm"),  # the worker this request goes to, as far as we know
                          deadline=anyio.current_time() + self.config.session.llm_turn_timeout_s)
        try:
            async with AsyncExitStack() as stack:
                gen.stack = stack
                try:
                    gen.replies, gen.env_id = await stack.enter_async_context(
                        self.request_stream("llm", request, session=session))
                except MessageTooLarge as exc:
                    gen.finished = True
                    raise ModelUnavailable(f"this conversation is too long for one model request ({exc}); start a new session") from None
                self._generating[gen.env_id] = self.clock()
                stream = self._model_pieces(gen)
                gen.usage = _Pieces(stream)
                try:
                    yield gen.usage
                finally:
                    self._generating.pop(gen.env_id, None)
                    await stream.aclose()
        finally:
            if not gen.finished:
                # Cancelled or abandoned mid-stream: stop the generation at the worker too.
                try:
                    self.tell("llm", p.CancelGenerate(request_id=gen.request.request_id), session=session)
                except Exception:  # noqa: BLE001 - best effort
                    pass

    async def _model_pieces(self, gen: _Generation) -> AsyncIterator[str]:
        """The model's answer, piece by piece: received under the timeouts, yielded outside the receive."""
        timeout = self.config.session.llm_timeout_s
        silent_until = anyio.current_time() + timeout
        while True:
            now = anyio.current_time()
            left, silence_left = gen.deadline - now, silent_until - now
            wait = min(silence_left, left)
            body = await self._model_reply(gen, wait)
            if body is None and wait > self.probe_s:
                if not gen.retried:
                    await self._ask_model_again_if_replaced(gen)
                continue
            if body is None and left <= silence_left:
                raise ModelUnavailable(f"the model did not finish its answer within {self.config.session.llm_turn_timeout_s:g} s")
            if body is None:
                raise ModelUnavailable(f"no answer from the model within {timeout:g} s")
            silent_until = anyio.current_time() + timeout
            if isinstance(body, p.LLMFailed) and body.error == WORKER_RESTARTED and not body.request_id:
                self._model_restart_announced(gen)
                continue
            if getattr(body, "request_id", gen.request.request_id) != gen.request.request_id:
                continue  # from a request given up when the worker restarted
            if isinstance(body, p.LLMChunk):
                gen.streamed = True
                yield body.text
                continue
            gen.finished = True
            tail = self._model_finished(gen, body)
            if tail:
                yield tail
            return

    async def _model_reply(self, gen: _Generation, wait: float) -> p.Msg | None:
        """The next reply within `wait` (at most a probe interval); None when nothing came in time
        (a deadline, not a cancel scope)."""
        if wait <= 0:
            return None
        envelope = await gen.replies.receive(min(wait, self.probe_s))
        if envelope is None:
            return None
        gen.admission.observe(time.time() - envelope.ts, REPLY_PATH)
        return envelope.body

    async def _ask_model_again_if_replaced(self, gen: _Generation) -> None:
        """Silent a while: if the worker restarted since the request went out, the request died
        with it - send it once more, to the new worker (or, when part of the answer was already
        shown, let the conversation wipe it and ask again)."""
        now_started = await self.replaced("llm", gen.incarnation)
        if now_started is None or gen.incarnation is None:
            return
        if gen.streamed:
            raise GenerationLost("the model restarted in the middle of its answer")
        gen.retried = True
        self.llm_retries += 1
        gen.request = msgspec.structs.replace(gen.request, request_id=p.new_id())
        self.log.warning("actor=session session=%s the LLM worker restarted during a request; sent it again", gen.session)
        gen.replies = await gen.stack.enter_async_context(self.ask_stream("llm", gen.request, session=gen.session))

    def _model_restart_announced(self, gen: _Generation) -> None:
        """The worker announced a restart (ModelInfo): the request died with it. Ask its
        successor once, on the same stream."""
        if gen.streamed:
            raise GenerationLost("the model restarted in the middle of its answer")
        if gen.retried:
            return
        gen.retried = True
        self.llm_retries += 1
        self.log.warning("actor=session session=%s the LLM worker restarted during a request; sent it again", gen.session)
        self.tell("llm", p.CancelGenerate(request_id=gen.request.request_id), session=gen.session)
        gen.request = msgspec.structs.replace(gen.request, request_id=p.new_id())
        self.resend("llm", gen.env_id, gen.request, session=gen.session)

    def _model_finished(self, gen: _Generation, body: p.Msg) -> str:
        """The answer's last words (LLMDone), or ModelUnavailable."""
        if isinstance(body, p.LLMDone):
            gen.usage.done = body  # what the backend said about tokens, for observers
            if self.settings is not None:  # how many tokens a character costs on this model
                self.settings.model.observe(body.prompt_tokens, sum(map(len, map(_CONTENT, gen.messages))))
            return body.tail
        if isinstance(body, p.LLMFailed):
            raise ModelUnavailable(body.error)
        raise ModelUnavailable(f"unexpected reply {type(body).__name__}")

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
                        return body.text or text + body.tail
                    raise RuntimeError(body.error if isinstance(body, p.LLMFailed) else type(body).__name__)
        finally:
            if not finished:
                try:
                    self.tell("llm", p.CancelGenerate(request_id=request.request_id))
                except Exception:  # noqa: BLE001 - best effort
                    pass

    async def _refresh_catalog(self) -> None:
        """ToolsetsChanged: every session's next step shows the new catalog (an MCP server's tools)."""
        self._catalog_asks += 1
        ask = self._catalog_asks
        try:
            reply = await self.ask("toolsets", p.CatalogRequest())
            registry = ToolsetRegistry(reply.toolsets) if isinstance(reply, p.Catalog) else None
        except (AskTimeout, ValueError) as exc:
            self.log.warning("actor=session could not refresh the toolset catalog: %s", exc)
            return
        if ask != self._catalog_asks:
            return  # a later change was announced meanwhile: its answer is the one to keep
        if registry is not None and self.settings is not None:
            self.settings.registry = registry
            self.log.info("actor=session toolset catalog now: %s", ", ".join(registry.toolset_names()))

    async def invoke(self, session: str, call: p.ToolInvoke) -> p.ToolOutcome:
        """One hop to the toolset executor, one back. Silent for `probe_s`, the executor is asked
        whether the call still runs once its process is not the one the call went to: a call
        killed with the toolsets process (or dropped there as stale) is found then, not at its
        timeout. A `repeatable` call (read-only or idempotent) is made once more, as a lost model
        request is; any other is answered as lost, for the model to make again if it still should
        (a note added twice is not harmless)."""
        call_id, tool = call.call_id, call.tool
        registry = self.settings.registry if self.settings is not None else None
        toolset = registry.toolset(registry.toolset_of(tool) or "") if registry is not None else None
        spec = registry.spec(tool) if registry is not None else None
        own_timeout = toolset.timeout_s if toolset is not None and toolset.timeout_s else self.config.session.tool_timeout_s
        timeout = own_timeout + 2.0
        executor = executor_of(registry.toolset_of(tool) if registry is not None else None)
        self._executor_of_call[(session, call_id)] = executor
        try:
            reply = await self._invoke(session, call, executor, timeout, own_timeout, spec)
        finally:
            self._executor_of_call.pop((session, call_id), None)
        if reply is _LOST:
            self.log.warning("actor=session session=%s %s call_id=%s lost with the toolset executor", session, tool, call_id)
            return p.ToolOutcome(call_id=call_id, ok=False, text=lost_text(tool))
        if reply is None:
            return p.ToolOutcome(call_id=call_id, ok=False, text=failure_text(tool, f"the toolset executor did not answer within {timeout:g} s"))
        if isinstance(reply, p.ToolOutcome):
            return reply
        detail = reply.detail if isinstance(reply, p.ErrorReply) else type(reply).__name__
        return p.ToolOutcome(call_id=call_id, ok=False, text=failure_text(tool, detail))

    async def _invoke(self, session: str, call: p.ToolInvoke, executor: str, timeout: float, own_timeout: float,
                      spec) -> p.Msg | None:
        """The executor's answer, the call made once more when it was lost and may be."""
        tool, call_id = call.tool, call.call_id
        started = anyio.current_time()
        reply = await self._invoke_once(session, call, started + timeout, executor)
        if reply is _LOST and repeatable(spec) and anyio.current_time() - started < own_timeout:
            # (found later, it was dropped as stale after a long outage: the user has waited
            # out its timeout, and gets the error it would have had)
            self.tool_retries += 1
            self.log.warning("actor=session session=%s %s call_id=%s lost with the toolset executor; sent it again", session, tool, call_id)
            reply = await self._invoke_once(session, call, anyio.current_time() + timeout, executor)
        return reply

    async def _invoke_once(self, session: str, call: p.ToolInvoke, deadline: float,
                           executor: str = "toolsets") -> p.Msg | None:
        """The executor's answer; None at `deadline`; _LOST when the executor says the call is not
        running. After each `probe_s` of silence the executor's process is pinged (one Ping for
        all waiting calls); only when it is not the one the call went to is the call asked about."""
        incarnation = self._started_at.get(executor)
        async with self.ask_stream(executor, call, session=session, buffer=4) as replies:
            while True:
                left = deadline - anyio.current_time()
                envelope = await replies.receive(min(left, self.probe_s)) if left > 0 else None
                if envelope is not None:
                    return envelope.body
                if left <= self.probe_s:
                    return None
                now_started = await self.replaced(executor, incarnation)
                if now_started is None:
                    continue  # down (no verdict yet), or the process the call went to: it runs there
                runs = await self._tool_runs(session, call.call_id, executor)
                if runs is False:
                    # its answer may have come just before the executor's "not running"
                    return replies.receive_nowait().body if len(replies) else _LOST
                if runs:
                    incarnation = now_started  # (sent as it came up: it runs in the new one)

    async def _tool_runs(self, session: str, call_id: str, executor: str = "toolsets") -> bool | None:
        """What the toolset executor says of the call: running, not running, or None for no
        verdict (no answer in time, or an executor that does not know ToolRunning): asked again
        at the next probe. Bounded as a whole: with the process down its link may be full, and
        the question would wait for room."""
        reply = None
        with anyio.move_on_after(1.0):
            try:
                reply = await self.ask(executor, p.ToolRunning(call_id=call_id), session=session, timeout=1.0)
            except AskTimeout:
                pass
        if isinstance(reply, p.Ok):
            return True
        if isinstance(reply, p.ErrorReply) and reply.code == NOT_RUNNING:
            return False
        return None

    def cancel_tool(self, session: str, call_id: str) -> None:
        self.tell(self._executor_of_call.get((session, call_id), "toolsets"), p.ToolCancel(call_id=call_id), session=session)

    def send(self, session: str, body: p.Msg) -> None:
        """To the glasses, in order. When the bridge is behind (its link full) messages wait in a
        backlog that one task feeds as room appears: backpressure, never WouldBlock escaping into
        a conversation (a flood of events crashed this actor that way). Past `backlog_limit`
        partial displays are dropped: the final one replaces them anyway."""
        if self.world.outgoing(session, body):
            return  # a notice, or a display while the glasses are off: kept as a note (actors/world.py)
        if isinstance(body, p.Display):
            if body.final or body.clear:
                self._finals[(session, body.turn_id)] = body.text if body.final else ""
        elif isinstance(body, p.TurnDone):
            final = self._finals.pop((session, body.turn_id), "")
            if final:  # a Display and the TurnDone after it can part in a bridge killed between them
                body = msgspec.structs.replace(body, final=final)
            body = self._turn_done(session, body)
        if self.subscribers:
            self.subscribers.shown(session, body)
        if not self._backlog:
            try:
                self.tell("glasses", body, session=session)
                return
            except anyio.WouldBlock:
                self.spawn(self._drain_backlog, name="glasses-backlog")
        if len(self._backlog) >= self.backlog_limit and isinstance(body, p.Display) and not body.final:
            self.dropped_partials += 1
            return
        self._backlog.append((session, body))

    async def _drain_backlog(self) -> None:
        link = self._link("glasses")
        while self._backlog:
            session, body = self._backlog[0]
            await link.send([self.codec.encode(p.Envelope(body=body, sender=self.name, session=session))])
            self._backlog.popleft()

    async def _node_heartbeat(self) -> None:
        """Several nodes: hand over the sessions other nodes asked for, let go of those taken while
        this node's lease had lapsed, and adopt the sessions of dead nodes whose timers came due
        (they fire here, late, once: storage/leases.py). A thread renews the lease."""
        assert self.leases is not None
        self.leases.renew_in_thread()
        try:
            await self._node_loop(self.leases)
        finally:
            with anyio.CancelScope(shield=True):
                await self.leases.close()

    async def _node_loop(self, leases: NodeLeases) -> None:
        settings = self.config.node
        next_beat = time.monotonic() + settings.heartbeat_s
        while True:
            await anyio.sleep(min(settings.handover_poll_s, settings.heartbeat_s))
            try:
                await self._hand_over_wanted()
                lost = await leases.lapsed_sessions(list(self.sessions))
                if lost:
                    self.log.warning("actor=session node=%s lost its lease: %d session(s) moved to other nodes "
                                     "meanwhile leave memory", leases.node, len(lost))
                    for sid in lost:
                        self._let_go(sid)
                if time.monotonic() < next_beat:
                    continue
                next_beat = time.monotonic() + settings.heartbeat_s
                adopted = [sid for sid in await leases.adopt(due_only=True) if sid not in self.sessions]
            except JournalError as exc:
                self.log.error("actor=session node=%s could not renew its lease: %s", leases.node, exc)
                continue
            if adopted:
                self.log.info("actor=session node=%s adopts %d session(s) of dead nodes (events open, timers due): %s",
                              leases.node, len(adopted), ", ".join(adopted[:10]))
                self.spawn(self._bring_back, adopted, name="adopt")

    async def _hand_over_wanted(self) -> None:
        """Sessions another node asked for (a phone reached it): an idle one leaves memory and goes
        at once, one mid-turn after its turn (a later poll). Its toolset activity stays behind."""
        assert self.leases is not None
        moves = []
        for sid, to in await self.leases.wanted():
            conversation = self.sessions.get(sid)
            if sid in self._loading or (conversation is not None and (conversation.running or conversation.queue)):
                continue
            self._let_go(sid)
            moves.append((sid, to))
        if moves:
            await self.leases.hand_over(moves)
            self.log.info("actor=session node=%s handed %d session(s) over: %s", self.leases.node, len(moves),
                          ", ".join(f"{sid} to {to}" for sid, to in moves[:10]))

    def _let_go(self, sid: str) -> None:
        """Another node serves the session now: out of memory (its toolset activity with it)."""
        conversation = self.sessions.pop(sid, None)
        if conversation is not None:
            self._restored.discard(sid)
            conversation.timers.on_change = None
            self.subscribers.gone([sid])

    # ---- timers (E10) and idle sessions: sleep exactly until the next due, no polling --------
    def wake_timers(self) -> None:
        self._timer_wake.set()

    async def _timer_wheel(self) -> None:
        ttl = self.config.session.idle_session_ttl_s
        sweep_every = min(ttl / 2, 60.0)
        next_sweep = self.clock() + sweep_every
        next_purge = self.clock() + 3600.0
        heap = self._timer_heap
        while True:
            self._timer_wake = anyio.Event()
            now = self.clock()
            # Only the sessions whose timer is due, from a heap: no pass over every session. An
            # entry may be stale (that timer was cancelled or already fired): firing finds nothing.
            while heap and heap[0][0] <= now:
                _, sid = heapq.heappop(heap)
                conversation = self.sessions.get(sid)
                if conversation is not None and len(conversation.timers):
                    self._fire_due_timers(sid, conversation, now)
            next_due = min(next_sweep, heap[0][0]) if heap else next_sweep
            if now >= next_sweep:
                self.forget_idle_sessions(now, ttl)
                next_sweep = now + sweep_every
                next_due = min(next_due, next_sweep)
            if now >= next_purge:
                next_purge = now + 3600.0
                self.spawn(self._purge_expired)
            with anyio.move_on_after(max(0.0, next_due - now)):
                await self._timer_wake.wait()

    def forget_idle_sessions(self, now: float, ttl: float) -> list[str]:
        if isinstance(self.journal, NoJournal):
            return []  # nothing would bring them back
        idle = [sid for sid, c in self.sessions.items() if (since := c.idle_since()) is not None and now - since >= ttl]
        for sid in idle:
            del self.sessions[sid]  # its journal holds it all: the next event brings it back
            self._restored.discard(sid)
            self.world.forget(sid)
        if idle:
            if self.leases is not None:
                self.spawn(self.leases.release, idle, name="release-leases")  # the next node a phone reaches takes them at once
            self.tell("glasses", p.SessionsForgotten(sessions=idle))
            self.subscribers.gone(idle)
            self.log.info("actor=session forgot %d session(s) idle for %g s or more: %s", len(idle), ttl,
                          ", ".join(idle[:10]) + (" ..." if len(idle) > 10 else ""))
        return idle

    # ---- the journal: accepted events on disk before the ack, sessions back from disk ----------
    def _deliver_now(self, msg: Inbound, body: p.DeliverEvent) -> None:
        """DeliverEvent for a session in memory: taken in arrival order at once, acked once the
        journal stored it (an ack means it survives any restart)."""
        sid, event = msg.session, body.event
        conversation = self.sessions[sid]
        shown = self.world.incoming(sid, event)  # presence; a channel event labelled, or kept unshown
        verdict = conversation.submit(shown) if shown is not None else self._keep_unshown(sid, conversation, event)
        event = shown or event
        if verdict == "busy":
            msg.reply(self, p.Busy(event_id=event.event_id, detail=f"session {sid} has {len(conversation.queue)} events waiting; try again shortly"))
        elif verdict == "duplicate":
            unstored = self._unstored.get((sid, event.event_id))
            if unstored is not None:
                # a resend of an event whose first copy is not on disk yet: an ack now would
                # promise what a crash before the commit breaks (the phone stops resending, the
                # event is gone), so the copy is acked by the same commit
                self.journal.on_stored(unstored, lambda error: self._ack_duplicate(msg, event.event_id, error))
            else:
                self._ack_duplicate(msg, event.event_id, None)
        else:
            key = (sid, event.event_id)
            waiter = self._unstored[key] = self.journal.accept_event(sid, body.phone_key, event)

            def stored(error: JournalError | None) -> None:
                del self._unstored[key]
                self._ack_stored(msg, event.event_id, error)

            self.journal.on_stored(waiter, stored)  # acked by the journal's writer once committed: no task per event

    def _keep_unshown(self, sid: str, conversation: Conversation, event: p.Event) -> str:
        """A channel event no watch asked for: journaled and acked like any, covered by a TurnDone
        at once, never shown to the model."""
        if event.event_id in conversation.seen:
            return "duplicate"
        conversation.seen[event.event_id] = None
        self.send(sid, p.TurnDone(turn_id=f"kept-{event.event_id}", event_ids=[event.event_id]))
        return "accepted"

    def _tell_again(self, sid: str, conversation: Conversation, event_id: str) -> None:
        """A finished event sent again: the phone asks after a reconnect, its TurnDone may have
        died with the bridge. The answer it got and a TurnDone covering it, once more."""
        outcome = conversation.cut_events.get(event_id, "done")
        answer = conversation.trajectory.answer_to(event_id) if outcome == "done" else None
        turn_id = f"again-{p.new_id()}"
        if answer is not None:
            self.send(sid, p.Display(turn_id=turn_id, text=answer, final=True))
        self.send(sid, p.TurnDone(turn_id=turn_id, event_ids=[event_id], outcome=outcome))

    def _ack_stored(self, msg: Inbound, event_id: str, error: JournalError | None) -> None:
        # how long the bridge waited for this ack (our inbox, then the journal's commit): a
        # signal of turn admission, as the age of every model reply is
        self.settings.admission.observe(time.time() - msg.env.ts, ACK_PATH)
        if error is not None:
            self.log.error("actor=session session=%s an event was not stored: %s", msg.session, error)
            self._not_stored(msg, event_id, error)
            return
        msg.reply(self, p.EventAccepted(event_id=event_id))

    def _ack_duplicate(self, msg: Inbound, event_id: str, error: JournalError | None) -> None:
        if error is not None:
            self._not_stored(msg, event_id, error)
            return
        msg.reply(self, p.EventAccepted(event_id=event_id, duplicate=True))
        conversation = self.sessions.get(msg.session)
        if conversation is not None and conversation.finished(event_id):
            self._tell_again(msg.session, conversation, event_id)

    def _not_stored(self, msg: Inbound, event_id: str, error: JournalError) -> None:
        """Instead of an ack: the phone resends, and nothing was promised."""
        msg.reply(self, p.ErrorReply(code="storage", detail=f"event {event_id} could not be stored in the session journal: {error}"))

    async def _deliver(self, msg: Inbound, body: p.DeliverEvent) -> None:
        """DeliverEvent for a session not in memory: read it back from the journal first."""
        try:
            await self.conversation(msg.session, body.phone_key)
        except JournalError as exc:
            self.log.error("actor=session session=%s could not be read back: %s", msg.session, exc)
            msg.reply(self, p.ErrorReply(code="storage", detail=f"session {msg.session} could not be read from the journal: {exc}"))
            return
        self._deliver_now(msg, body)

    async def _info(self, msg: Inbound) -> None:
        """A session in memory as it is; one that left memory as its journal holds it."""
        sid = msg.session
        conversation = self.sessions.get(sid)
        if conversation is not None:
            msg.reply(self, msgspec.structs.replace(conversation.info(), restored=sid in self._restored, resident=True))
            return
        try:
            stored = await self.journal.load(sid)
        except JournalError as exc:
            msg.reply(self, p.ErrorReply(code="storage", detail=str(exc)))
            return
        if stored is None:
            msg.reply(self, p.SessionInfo(exists=False))
            return
        history = [msgspec.structs.asdict(entry.message()) for entry in stored.entries if entry.role]
        msg.reply(self, p.SessionInfo(exists=True, history=history, queued=len(stored.open_events)))

    async def conversation(self, sid: str, phone_key: str = "", *, create: bool = True) -> Conversation | None:
        """The session in memory, else read back from the journal (and continued if a restart cut
        it), else a new one (None when `create` is false). Raises JournalError."""
        while (loading := self._loading.get(sid)) is not None:
            await loading.wait()
        conversation = self.sessions.get(sid)
        if conversation is not None:
            return conversation
        done = self._loading[sid] = anyio.Event()
        try:
            if self.leases is not None and (holder := await self.leases.take(sid)):
                raise JournalError(f"session {sid} is served by node {holder} (its lease is alive); try again")
            stored = await self.journal.load(sid)
            if stored is None and not create:
                return None
            conversation = self._build(sid, phone_key, stored)
            self.sessions[sid] = conversation
        finally:
            del self._loading[sid]
            done.set()
        if stored is not None:
            self._restored.add(sid)
            self._continue(sid, conversation, stored)
        return conversation

    async def _delete(self, msg: Inbound) -> None:
        """`run.py sessions delete` while we run: out of memory, then out of the journal (after
        whatever is still queued for it, so nothing of it is written back)."""
        sid = msg.session
        conversation = self.sessions.get(sid)
        if conversation is not None and (conversation.running or conversation.queue):
            msg.reply(self, p.ErrorReply(code="busy", detail=f"session {sid} is in the middle of a turn; try again when it is done"))
            return
        if conversation is not None:
            del self.sessions[sid]
            self._restored.discard(sid)
            conversation.timers.on_change = None
        self.world.drop(sid)
        try:
            existed = await self.journal.delete(sid)
        except JournalError as exc:
            msg.reply(self, p.ErrorReply(code="storage", detail=str(exc)))
            return
        self.tell("glasses", p.SessionDelete(), session=sid)  # its owner and token go too
        msg.reply(self, p.Ok(detail="deleted" if existed or conversation is not None else "unknown"))

    def _build(self, sid: str, phone_key: str, stored: StoredSession | None) -> Conversation:
        assert self.settings is not None
        conversation = Conversation(sid, self.settings, phone_key or (stored.phone_key if stored else ""))
        sink = lambda entry: self.journal.append(sid, entry)  # noqa: E731
        if stored is None:
            conversation.trajectory.sink = sink
        else:
            conversation.trajectory = Trajectory.restore(stored.entries, sink)
            conversation.seen.update(dict.fromkeys(stored.seen))
            state = stored.state
            conversation.timers.restore([Timer(t.timer_id, t.due, t.text, t.every) for t in state.timers], state.next_timer)
            conversation.tracker.restore(state.skills_version, state.skills_names, state.skills_read)
            conversation.last_active = stored.last_active
            self.world.restore(sid, state.world)
        conversation.timers.on_change = lambda: self._timers_changed(sid)
        return conversation

    def _timers_changed(self, sid: str) -> None:
        self._save_state(sid)
        self._schedule_timers(sid)

    def _schedule_timers(self, sid: str) -> None:
        """Put the session's next due timer on the wheel's heap (after every change of its timers)."""
        conversation = self.sessions.get(sid)
        due = conversation.timers.next_due() if conversation is not None else None
        if due is not None:
            heapq.heappush(self._timer_heap, (due, sid))
        if len(self._timer_heap) > self._timer_heap_limit:
            # stale entries (timers cancelled long before they were due) piled up: rebuild once
            self._timer_heap[:] = [(due, sid) for sid, c in self.sessions.items() if (due := c.timers.next_due()) is not None]
            heapq.heapify(self._timer_heap)
            self._timer_heap_limit = max(4096, 4 * len(self._timer_heap))

    def _continue(self, sid: str, conversation: Conversation, stored: StoredSession) -> None:
        """After a restart (core.resume): a turn the crash cut goes on (told of the restart only
        when a call was cut; its TurnDone covers the cut turn's events); accepted events that
        never reached the history are queued again. Timers due meanwhile fire from the wheel."""
        resumed = resume(conversation, stored.entries, stored.open_events, self.clock())
        if conversation.queue:
            self.log.info("actor=session session=%s continues after a restart: %d cut, %d waiting",
                          sid, len(resumed.cut), len(resumed.waiting))
            conversation._ensure_running()
        if len(conversation.timers):
            self._schedule_timers(sid)
            self.wake_timers()

    def _turn_done(self, sid: str, body: p.TurnDone) -> p.TurnDone:
        """A TurnDone closes its events in the journal (a restart will not run them again), and
        the session's skills knowledge is saved with it."""
        if body.event_ids:
            self.journal.events_done(sid, list(body.event_ids))
        self._save_state(sid)
        return body

    def _save_state(self, sid: str) -> None:
        conversation = self.sessions.get(sid)
        if conversation is None:
            return
        timers, next_number = conversation.timers.snapshot()
        skills_version, skills_names, skills_read = conversation.tracker.state()
        self.journal.save_state(sid, SessionState(
            timers=[TimerRow(t.timer_id, t.due, t.text, t.every) for t in timers], next_timer=next_number,
            skills_version=skills_version, skills_names=skills_names, skills_read=skills_read,
            world=self.world.snapshot(sid)))

    def _fire_due_timers(self, sid: str, conversation: Conversation, now: float) -> None:
        """Due timers become events, journaled in the same transaction as the timers' new state
        (nothing awaited in between), so a crash neither loses a firing nor repeats it."""
        assert self.settings is not None
        for timer in conversation.timers.due(now):
            event = timer.to_event(now, self.settings.tz)
            if event.event_id in conversation.seen:
                continue
            self.journal.note_event(sid, event)
            conversation.submit(event)

    async def search_history(self, sid: str, words: str) -> str:
        """history_search: the session's matching turns from the whole journal, with their time.
        Raises JournalError (the model reads it as a tool error)."""
        from core.timers import format_time

        hits = await self.journal.search(sid, words)
        if not hits:
            return f"nothing in this conversation matches {words!r}"
        assert self.settings is not None
        lines = []
        for hit in hits:
            said = f"[{format_time(hit.ts, self.settings.tz)}] {hit.role}: {hit.content.strip()}"
            if hit.reply:
                said += f"\n  assistant: {hit.reply.strip()}"
            lines.append(said)
        text = "\n".join(lines)
        return text if len(text) <= SEARCH_RESULT_CHARS else text[:SEARCH_RESULT_CHARS] + " …"

    async def _purge_expired(self) -> None:
        days = self.config.storage.retention_days
        if days <= 0:
            return
        try:
            deleted = await self.journal.purge(self.clock() - days * 86400.0)
        except JournalError as exc:
            self.log.error("actor=session retention purge failed: %s", exc)
            return
        if deleted:
            self.log.info("actor=session deleted %d journal entries older than %g days", deleted, days)

    # ---- the model's context (for the fold) ---------------------------------------------------
    def _model_info(self, info: p.ModelInfo) -> None:
        assert self.settings is not None
        model = self.settings.model
        if model.profile != info.profile:
            model.tokens_per_char = 0.5  # another tokenizer: conservative until it reports counts
        model.profile, model.context_tokens = info.profile, info.context_tokens
        if info.worker_started > self._llm_started:
            # A new worker: the requests the old one was serving died with it. Ask again.
            for env_id in list(self._generating):
                self.post_reply(env_id, p.LLMFailed(request_id="", error=WORKER_RESTARTED), sender="llm")
            if self._generating:
                self.log.warning("actor=session the LLM worker restarted: %d request(s) asked again", len(self._generating))
        self._llm_started = max(self._llm_started, info.worker_started)
        self.log.info("actor=session model profile=%s context_tokens=%d", info.profile, info.context_tokens)

    async def _learn_model_context(self) -> None:
        """The LLM worker tells its context when it starts; if it started before us, ask."""
        assert self.settings is not None
        for _ in range(30):
            if self.settings.model.context_tokens:
                return
            try:
                reply = await self.ask("llm", p.LLMStatusRequest(), timeout=2.0)
            except AskTimeout:
                continue
            if isinstance(reply, p.LLMStatus) and not self.settings.model.context_tokens:
                self.settings.model.profile, self.settings.model.context_tokens = reply.active, reply.context_tokens
                return

@dataclasses.dataclass
class _Generation:
    """One model request in flight, and what asking it again needs."""
    session: str
    request: p.Generate
    messages: list[p.ChatMessage]
    admission: object
    incarnation: float | None
    deadline: float  # the whole generation, however steady
    stack: AsyncExitStack | None = None
    replies: object = None
    env_id: str = ""
    usage: "_Pieces | None" = None
    retried: bool = False
    streamed: bool = False
    finished: bool = False


class _Pieces:
    """The model's text pieces, remembering the LLMDone that closed them (`done`): token counts
    for observers, without changing what a conversation iterates."""

    __slots__ = ("_stream", "done")

    def __init__(self, stream: AsyncIterator[str]):
        self._stream = stream
        self.done: p.LLMDone | None = None

    def __aiter__(self) -> "_Pieces":
        return self

    async def __anext__(self) -> str:
        return await self._stream.__anext__()
