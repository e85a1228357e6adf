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

The pieces it is made of: the store of sessions (core/session_store.py: the journal, the acks,
bring-back, idle eviction, leases), the timer wheel (core/timer_wheel.py: each session's next due),
and "ask again safely if the other process was replaced" (actors/base.py `Asking`), one primitive
for the model, the tools and the skill store.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import operator
import time
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, AsyncIterator, Callable

import anyio
import msgspec

import protocol as p
import toolsets
from actors.base import (LOST, NO_VERDICT, RUNS_THERE, Actor, Asking, AskTimeout, Inbound, MessageTooLarge,
                         RequestLost, SendAgain, Verdict)
from actors.observers import Subscribers
from actors.topology import EXECUTORS, executor_of
from actors.world import World
from core.admission import ACK_PATH, REPLY_PATH
from core.config import Config
from core.conversation import Conversation, GenerationLost, ModelUnavailable, SessionSettings
from core.loading import intent_files
from core.local_intents import LocalIntents
from core.observe import Observer
from core.session_store import SessionStore
from core.timer_wheel import TimerWheel
from core.toolsets import ToolsetRegistry, failure_text, lost_text, repeatable
from protocol.tools import NOT_RUNNING
from storage.journal import Fenced, Journal, JournalError, NoJournal
from storage.store import journal_store, node_leases

if TYPE_CHECKING:
    from storage.leases import NodeLeases

WORKER_RESTARTED = "the LLM worker restarted"  # marks requests that died with the worker
_LOST = p.ErrorReply(code="lost", detail="")  # a call the toolset executor no longer runs (SessionActor._invoke)
SEARCH_RESULT_CHARS = 1500  # history_search answers at most this much text
_CONTENT = operator.attrgetter("content")  # a prompt's size in C, not a Python loop per message
from core.urgency import LLMRouter, RuleRouter, UrgencyConfig


class SessionActor(Actor):
    name = "session"
    backlog_limit = 10_000  # messages for the glasses waiting for room before partial displays are dropped
    bring_back_chunk = 64  # sessions read back from the journal at once after a restart (`SessionStore.bring_back`)

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time, **kwargs):
        super().__init__(config, clock=clock, **kwargs)
        self.settings: SessionSettings | None = None
        self._backlog: collections.deque[tuple[str, p.Msg]] = collections.deque()
        self._finals: dict[tuple[str, str], str] = {}  # (session, turn in progress) -> its final display, for its TurnDone
        self._held: dict[str, collections.deque[list]] = {}  # several nodes: a session's answer until its turn's end committed
        self._executor_of_call: dict[tuple[str, str], str] = {}  # (session, call id) in flight -> its executor actor
        self.llm_retries = 0
        self.tool_retries = 0  # repeatable calls made again after the toolset executor lost them
        self.skill_retries = 0  # skill requests asked again after the skill store did not answer
        self.dropped_partials = 0
        self.subscribers = Subscribers(self, config.web.max_subscribers)  # Observe: web console, metrics
        self.wheel = TimerWheel(clock)  # each session's next timer due
        journal = (Journal(config.path(config.storage.path), clock=clock, store=journal_store(config, hold_lock=True))
                   if config.storage.journal
                   else NoJournal(clock=clock))
        self.world = World(self)  # channels, notes for the user, monitors (actors/world.py)
        self.store = SessionStore(journal, self.world, self.wheel, leases=node_leases(config, journal, clock),
                                  clock=clock, on_gone=self.subscribers.gone, log=self.log)
        self._llm_started = 0.0  # the LLM worker's start time, as its last ModelInfo said
        self._generating: dict[str, float] = {}  # envelope id of each Generate in flight -> when asked
        self._catalog_asks = 0  # ToolsetsChanged answered so far (a late answer to an older one is dropped)

    @property
    def sessions(self) -> dict[str, Conversation]:
        """The sessions in memory (core/session_store.py)."""
        return self.store.sessions

    @property
    def journal(self) -> Journal:
        return self.store.journal

    @property
    def leases(self) -> NodeLeases | None:
        """Several nodes: which one serves a session (storage/leases.py); None on one node."""
        return self.store.leases

    async def conversation(self, sid: str, phone_key: str = "", *, create: bool = True) -> Conversation | None:
        """The session in memory, else read back from the journal, else a new one (None when
        `create` is false). Raises JournalError."""
        return await self.store.conversation(sid, phone_key, create=create)

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
        records = toolsets.load(self.config)
        self.settings = SessionSettings(
            registry=ToolsetRegistry(catalog.toolsets, catalog.starting), ports=self, spawn=self.spawn, config=cfg,
            records=records,
            # loaded with the reflexes off too: the toolsets' responses word what a turn did (core.done_said)
            local_intents=LocalIntents.load(intent_files(self.config), on_error=self._bad_intents),
            clock=self.clock, router=router, on_timer_set=self.wheel.wake,
            observer=Observer(self.subscribers.publish, self.subscribers.listening, self.subscribers.wants_prompt),
        )
        self.settings.search_history = self.search_history
        self.settings.world = self.world  # the channels, notify, tasks and monitors toolsets reach it here
        self.store.settings = self.settings
        self.spawn(self._learn_model_context, name="model-context")
        await self._purge_expired()
        unfinished = await self.store.start()
        if unfinished:
            self.settings.admission.slow_start()  # their cut turns would all start at once
            self.spawn(self.store.bring_back, unfinished, self.bring_back_chunk, name="bring-back")
        self.spawn(self._timers, name="timer-wheel")
        if self.leases is not None:
            self.spawn(self._node_heartbeat, name="node-heartbeat")
        self.spawn(self._admission_log, name="admission-log")
        self.spawn(self.incarnation, "llm", name="llm-incarnation")
        for executor in {"toolsets", *EXECUTORS.values()}:
            self.spawn(self.incarnation, executor, name=f"{executor}-incarnation")

    def _bad_intents(self, error: Exception) -> None:
        """An intents.yaml that cannot be used is left out, said once; the others' sentences load."""
        self.log.error("actor=session %s; its sentences go to the model until it is fixed", error)

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
            if self.leases is not None and not self.leases.serving():
                self.spawn(self._deliver_when_serving, msg, body)  # a lapsed lease: what it queued is dropped first
            elif msg.session in self.sessions and not self.store.loading(msg.session):
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
        gen = _Generation(session=session, first=request, messages=messages, admission=self.settings.admission,
                          deadline=anyio.current_time() + self.config.session.llm_turn_timeout_s)
        try:
            async with AsyncExitStack() as stack:
                try:
                    gen.asking = await stack.enter_async_context(self.asking(
                        "llm", request, session=session, when_replaced=functools.partial(self._model_replaced, gen),
                        on_again=functools.partial(self._model_asked_again, session)))
                except MessageTooLarge as exc:
                    gen.finished = True
                    raise ModelUnavailable(f"this conversation is too long for one model request ({exc}); start a new session") from None
                self._generating[gen.asking.request_id] = self.clock()
                stream = self._model_pieces(gen)
                gen.usage = _Pieces(stream)
                try:
                    yield gen.usage
                finally:
                    self._generating.pop(gen.asking.request_id, None)
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
            body = await self._model_reply(gen, min(silent_until, gen.deadline))
            if body is None and gen.deadline <= silent_until:
                raise ModelUnavailable(f"the model did not finish its answer within {self.config.session.llm_turn_timeout_s:g} s")
            if body is None:
                raise ModelUnavailable(f"no answer from the model within {timeout:g} s")
            silent_until = anyio.current_time() + timeout
            if isinstance(body, p.LLMFailed) and body.error == WORKER_RESTARTED and not body.request_id:
                await self._model_restart_announced(gen)
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

    async def _model_reply(self, gen: _Generation, until: float) -> p.Msg | None:
        """The next reply by `until`; None when nothing came in time (a deadline, not a cancel scope)."""
        envelope = await gen.asking.reply(until)
        if envelope is None:
            return None
        gen.admission.observe(time.time() - envelope.ts, REPLY_PATH)
        return envelope.body

    async def _model_replaced(self, gen: _Generation, asking: Asking, now_started: float) -> Verdict:
        """Silent a while, and the worker is not the process the request went to: the request died
        with it - sent once more, to the new worker (or, when part of the answer was already
        shown, the conversation wipes it and asks again)."""
        if asking.incarnation is None or gen.retried:
            return NO_VERDICT
        if gen.streamed:
            raise GenerationLost("the model restarted in the middle of its answer")
        return SendAgain(msgspec.structs.replace(asking.body, request_id=p.new_id()))

    async def _model_restart_announced(self, gen: _Generation) -> None:
        """The worker announced a restart (ModelInfo): the request died with it. Ask its
        successor once, on the same stream."""
        if gen.streamed:
            raise GenerationLost("the model restarted in the middle of its answer")
        if gen.retried:
            return
        self.tell("llm", p.CancelGenerate(request_id=gen.request.request_id), session=gen.session)
        await gen.asking.again(msgspec.structs.replace(gen.request, request_id=p.new_id()))

    def _model_asked_again(self, session: str) -> None:
        self.llm_retries += 1
        self.log.warning("actor=session session=%s the LLM worker restarted during a request; sent it again", session)

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
            registry = ToolsetRegistry(reply.toolsets, reply.starting) if isinstance(reply, p.Catalog) else None
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
        own_timeout = (spec.timeout_s + 2.0 if spec is not None and spec.timeout_s else  # a long task's own bound (+ the executor's)
                       toolset.timeout_s if toolset is not None and toolset.timeout_s else self.config.session.tool_timeout_s)
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
        """The executor's answer; None after `timeout`; _LOST when the call died with the
        executor's process. After each `probe_s` of silence the executor's process is pinged (one
        Ping for all waiting calls); only when it is not the one the call went to is the call
        asked about: running there, it is waited for; not running, a repeatable call is made once
        more (with a timeout of its own), any other is lost."""
        started = anyio.current_time()

        async def when_replaced(asking: Asking, now_started: float) -> Verdict:
            runs = await self._tool_runs(session, call.call_id, executor)
            if runs is None:
                return NO_VERDICT  # down still, or no answer in time: asked again at the next probe
            if runs:
                return RUNS_THERE  # (sent as it came up: it runs in the new one)
            if repeatable(spec) and asking.sent == 1 and anyio.current_time() - started < own_timeout:
                # (found later, it was dropped as stale after a long outage: the user has waited
                # out its timeout, and gets the error it would have had)
                return SendAgain(timeout=timeout)
            return LOST

        def asked_again() -> None:
            self.tool_retries += 1
            self.log.warning("actor=session session=%s %s call_id=%s lost with the toolset executor; sent it again",
                             session, call.tool, call.call_id)

        try:
            async with self.asking(executor, call, session=session, buffer=4, when_replaced=when_replaced,
                                   on_again=asked_again) as asking:
                envelope = await asking.reply(started + timeout)
        except RequestLost:
            return _LOST
        return None if envelope is None else envelope.body

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

    def save_state(self, sid: str) -> None:
        """The session's timers, skills knowledge and world, journaled now (actors/world.py)."""
        self.store.save_state(sid)

    def show(self, session: str, text: str) -> None:
        """A display of its own, outside any turn (a note for the user): no TurnDone comes to
        carry it, so none is waited for."""
        turn_id = f"note-{p.new_id()}"
        self.send(session, p.Display(turn_id=turn_id, text=text, final=True), in_turn=False)
        self._finals.pop((session, turn_id), None)

    def send(self, session: str, body: p.Msg, *, in_turn: bool = True) -> None:
        """To the glasses, in order. When the bridge is behind (its link full) messages wait in a
        backlog that one task feeds as room appears: backpressure, never WouldBlock escaping into
        a conversation (a flood of events crashed this actor that way). Past `backlog_limit`
        partial displays are dropped: the final one replaces them anyway."""
        if (self.leases is not None and isinstance(body, (p.Display, p.TurnDone))
                and (session not in self.sessions or not self.leases.serving())):
            return  # several nodes: a session let go (served elsewhere, deleted), or a lapsed lease, shows nothing more
        if self.world.outgoing(session, body):
            return  # a notice, or a display while the glasses are off: kept as a note (actors/world.py)
        if isinstance(body, p.Display):
            if body.final or body.clear:
                self._finals[(session, body.turn_id)] = body.text if body.final else ""
        elif isinstance(body, p.TurnDone):
            final = self._finals.pop((session, body.turn_id), "")
            if final:  # a Display and the TurnDone after it can part in a bridge killed between them
                body = msgspec.structs.replace(body, final=final)
        if self.leases is not None and self._held_back(session, body, in_turn):
            return
        if isinstance(body, p.TurnDone):
            self.store.turn_done(session, list(body.event_ids))
        self._to_glasses(session, body)

    def _held_back(self, session: str, body: p.Msg, in_turn: bool) -> bool:
        """Several nodes: a turn's answer (its final display, its TurnDone, and what follows them)
        reaches the phone only once the journal committed the turn's end under this node's lease.
        A node dying before that commit leaves its turn to be run again elsewhere, so the phone
        must not have its answer yet (it would be answered twice); one whose lease moved on (the
        write refused) drops it: the new holder answers."""
        held = self._held.get(session)
        if held is None:
            if not (isinstance(body, p.TurnDone) or (in_turn and isinstance(body, p.Display) and body.final)):
                return False
            held = self._held[session] = collections.deque()
        item = [body, isinstance(body, p.TurnDone)]  # [message, its commit pending]
        held.append(item)
        if isinstance(body, p.TurnDone):
            self.store.turn_done(session, list(body.event_ids))
            committed = self.journal.barrier(session)
            self.journal.on_stored(committed, lambda error: self._let_out(session, item, error))
        return True

    def _let_out(self, session: str, item: list, error: JournalError | None) -> None:
        held = self._held.get(session)
        if held is None:
            return
        if isinstance(error, Fenced):
            del self._held[session]
            return
        item[1] = False
        while held and not held[0][1]:
            self._to_glasses(session, held.popleft()[0])
        if not held:
            del self._held[session]

    def _to_glasses(self, session: str, body: p.Msg) -> None:
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
                moves = await self.store.hand_over_wanted()
                if moves:
                    self.log.info("actor=session node=%s handed %d session(s) over: %s", leases.node, len(moves),
                                  ", ".join(f"{sid} to {to}" for sid, to in moves[:10]))
                for sid in self.store.forget_deleted():  # its owner and token go on this node too
                    self.tell("glasses", p.SessionDelete(), session=sid)
                dropped = await self.store.drop_if_lapsed()
                if dropped is not None:
                    if dropped:
                        self.log.warning("actor=session node=%s its lease lapsed (frozen or cut off longer than "
                                         "node.lease_s): %d session(s) dropped with what they had queued; other nodes "
                                         "may serve them now", leases.node, len(dropped))
                    continue
                if time.monotonic() < next_beat:
                    continue
                next_beat = time.monotonic() + settings.heartbeat_s
                adopted = await self.store.adopt_due()
            except JournalError as exc:
                self.log.error("actor=session node=%s could not renew its lease: %s", leases.node, exc)
                continue
            if adopted:
                self.log.info("actor=session node=%s adopts %d session(s) of dead nodes (events open, timers due): %s",
                              leases.node, len(adopted), ", ".join(adopted[:10]))
                self.spawn(self.store.bring_back, adopted, self.bring_back_chunk, name="adopt")

    # ---- timers (E10) and idle sessions: sleep exactly until the next due, no polling --------
    async def _timers(self) -> None:
        """Due timers fire (only the sessions whose timer is due: core/timer_wheel.py), idle
        sessions leave memory, old journal entries go; between these, sleep until the next."""
        ttl = self.config.session.idle_session_ttl_s
        sweep_every = min(ttl / 2, 60.0)
        next_sweep = self.clock() + sweep_every
        next_purge = self.clock() + 3600.0
        while True:
            if self.leases is not None and not self.leases.serving():
                await anyio.sleep(self.config.node.handover_poll_s)  # a lapsed lease fires nothing here
                continue
            now = self.clock()
            for sid in self.wheel.due(now):
                self.store.fire_timers(sid, now)
            if now >= next_sweep:
                self.forget_idle_sessions(now, ttl)
                next_sweep = now + sweep_every
            if now >= next_purge:
                next_purge = now + 3600.0
                self.spawn(self._purge_expired)
            next_due = self.wheel.next_due()
            await self.wheel.sleep_until(next_sweep if next_due is None else min(next_due, next_sweep))

    def forget_idle_sessions(self, now: float, ttl: float) -> list[str]:
        idle = self.store.forget_idle(now, ttl)
        if idle:
            if self.leases is not None:  # the next node a phone reaches takes them at once
                self.spawn(self.leases.release, self.leases.forget(idle), name="release-leases")
            self.tell("glasses", p.SessionsForgotten(sessions=idle))
            self.log.info("actor=session forgot %d session(s) idle for %g s or more: %s", len(idle), ttl,
                          ", ".join(idle[:10]) + (" ..." if len(idle) > 10 else ""))
        return idle

    # ---- events: accepted events on disk before the ack (core/session_store.py) ---------------
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
            self.store.after_first_copy(sid, event.event_id, lambda error: self._ack_duplicate(msg, event.event_id, error))
        else:
            self.store.accept(sid, body.phone_key, event, lambda error: self._ack_stored(msg, event.event_id, error))

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
        if isinstance(error, Fenced):  # another node took the session: no answer, the phone resends there
            self.log.info("actor=session session=%s event not acked here: %s", msg.session, error)
            return
        if error is not None:
            self.log.error("actor=session session=%s an event was not stored: %s", msg.session, error)
            self._not_stored(msg, event_id, error)
            return
        msg.reply(self, p.EventAccepted(event_id=event_id))

    def _ack_duplicate(self, msg: Inbound, event_id: str, error: JournalError | None) -> None:
        if isinstance(error, Fenced):
            return
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

    async def _deliver_when_serving(self, msg: Inbound, body: p.DeliverEvent) -> None:
        """An event that reached a node whose lease lapsed (it was frozen, or cut off): taken once
        the node dropped its sessions and renewed its lease (the session is read anew, from
        whichever node took it meanwhile); unanswered if that takes longer than
        `node.handover_wait_s` (the phone resends)."""
        assert self.leases is not None
        with anyio.move_on_after(self.config.node.handover_wait_s):
            while not self.leases.serving():
                await anyio.sleep(self.config.node.handover_poll_s)
            await self._deliver(msg, body)

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
        try:
            info = await self.store.info(msg.session)
        except JournalError as exc:
            msg.reply(self, p.ErrorReply(code="storage", detail=str(exc)))
            return
        msg.reply(self, info)

    async def _delete(self, msg: Inbound) -> None:
        """`run.py sessions delete` while we run: out of memory, then out of the journal (after
        whatever is still queued for it, so nothing of it is written back)."""
        sid = msg.session
        try:
            outcome = await self.store.delete(sid)
        except JournalError as exc:
            msg.reply(self, p.ErrorReply(code="storage", detail=str(exc)))
            return
        if outcome == "busy":
            msg.reply(self, p.ErrorReply(code="busy", detail=f"session {sid} is in the middle of a turn; try again when it is done"))
            return
        self.tell("glasses", p.SessionDelete(), session=sid)  # its owner and token go too
        msg.reply(self, p.Ok(detail=outcome))

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
        await self.store.purge_expired(self.config.storage.retention_days)

    # ---- the model's context (for the fold) ---------------------------------------------------
    def _model_info(self, info: p.ModelInfo) -> None:
        assert self.settings is not None
        model = self.settings.model
        if model.profile != info.profile:
            model.tokens_per_char = 0.5  # another tokenizer: conservative until it reports counts
        model.profile, model.context_tokens, model.frame = info.profile, info.context_tokens, info.frame
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
                self.settings.model.frame = reply.frame
                return

@dataclasses.dataclass
class _Generation:
    """One model request in flight, and what asking it again needs."""
    session: str
    first: p.Generate  # the request as first sent
    messages: list[p.ChatMessage]
    admission: object
    deadline: float  # the whole generation, however steady
    asking: Asking | None = None
    usage: "_Pieces | None" = None
    streamed: bool = False
    finished: bool = False

    @property
    def request(self) -> p.Generate:
        """The request as last sent: a new request id each time it is sent again."""
        return self.first if self.asking is None else self.asking.body

    @property
    def retried(self) -> bool:
        return self.asking is not None and self.asking.sent > 1


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
