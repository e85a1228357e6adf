"""One session's brain: the event loop of E2 around the skills/toolsets mechanics of S2-S9.

A `Conversation` owns a session's in-memory state (history, toolset deadlines, timers, what it
knows of skills) and runs its loop as a task only while it has work, so an idle session costs a
few objects and no task. Everything outside the session - the model, the toolsets, the skill
store, the glasses - is reached through `Ports`, which the SessionActor implements with
messages and tests may implement directly.

The loop (E2): take every queued event at a safe point, record them as one labelled batch (E8),
then steps: purge expired toolsets, rebuild the prompt (S4), stream the model's reply to the
glasses with any TOOL_CALL line hidden, record it (E6 rule 1), run the call, record its result
(rule 2), repeat until the model answers in plain text. `enable_toolset`/`disable_toolset` are
invisible (S7): their calls and results never enter the history; the result (S3's forgiving
answers) is shown to the very next request only, as a system notice after the history, so a
model that repeats an enable learns "already active" without the history changing.

Urgent events stop the running step at once, in one of two ways (core.urgency): CANCEL ("stop")
discards a generation in progress unrecorded (rule 4), clears the glasses, cancels the running
tools (their result: "cancelled by the user") and calls the model at once with the queue;
INTERRUPT (a priority request while a tool runs) also discards the generation, but the tool keeps
running: its call gets the rule-3 placeholder and its real result comes later as a tool_result
event, which starts a turn when the session is idle or joins the next batch (core.background).
A `long_running` tool moves to the background the same way; a slow ordinary call keeps the turn
waiting (a progress line on the glasses every `session.tool_progress_after_s`), and events said
meanwhile join the batch after its result (seed 003: placeholders only when really urgent). Light independent requests (E5) are answered by a side run
offering only what it can run (core.parallel).

Before the model's first step, a turn whose words are a plain request is carried out by the
session itself (the reflexes and the frame: `ReflexSteps`, core/reflex_steps.py).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import re
import time
import zoneinfo
from collections import OrderedDict, deque
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Protocol, Sequence

import anyio
import msgspec

import protocol as p
from core.admission import SESSION_PATHS, TurnAdmission
from core.activity import ToolsetActivity
from core.resume import RESUME_KIND, ResumePoint
from core import discovery
from core.places import zone_of
from core.prompt import (DISCOVER_TOOL, RECIPE_NOTICE, RECIPE_UNDONE_NOTICE, USER_LABEL, Scope, after_result_notice,
                         arg_choices, build_prompt, layout, reply_language, visible_skills)
from core.observe import ConversationView, Observer, strategy_name
from core.fold import ModelContext, fold_history
from core.background import (
    ASKED_KEY, BACKGROUND, CANCELLED, CANCELLED_TEXT, INTERRUPTED_TEXT, SLOW_TEXT, STARTED_TEXT, UNFINISHED_TEXT,
    ToolRun, ToolRuns, late_event, names_a_task,
)
from core.fence import fence
from core.parallel import parallel_prompt, parallel_tools, unavailable_text
from core.timewords import progress_line, spoken_time, thinking_line
from core.done_said import unsaid_done
from core.intent import SMALL_TALK_NOTICE, CLAIM_NOTICE, REFUSED, Refusal, check_call, claimed_action, covers, executed_kind, small_talk, toolset_offerable, unasked_lookup, offerable
from core.echo import (ACKNOWLEDGED_TEXT, CHAT_REFUSAL_NOTICE, ECHO_NOTICE, NOT_AN_ANSWER_TEXT, REFUSAL_NOTICE, UNINFORMATIVE_NOTICE, WRONG_LANGUAGE_NOTICE, WRONG_LANGUAGE_QUOTED, echoed, example_name_echoed, example_names, first_line,
                       held_back, never_shown, refused, uninformative, wrong_language)
from core.skills_notice import SKILLS_HOWTO, SkillChangeTracker
from core import tracing, user_texts
from core.lexicon import fold
from core.local_intents import LocalIntents
from core.reflex_steps import ReflexSteps, builtin_local_intents
from core.event_turn import quiet_reason, silent_end
from core.timers import TimerTable
from core.intent import action_kind, same_word, unsaid_amount, unshown_id
from core.toolcall import find_call_start, parse_reply
from core.toolsets import (CATALOG_TOOL_NAMES, CORE_TOOL_NAMES, Bound, Invalid, SessionContext, SessionToolset, Toolset, ToolsetRegistry,
                           answer_checks_of, error_outcome, executed, failure_text, phrasings_of, steps_of)
from core.trajectory import Trajectory
from core.turn import GenerationLost, ModelUnavailable, TurnState, user_lines
from core.world import WorldPort
from core.urgency import Decision, RuleRouter
from protocol.phone import TurnOutcome
from protocol.results import ClockRead, TextSent, shown_ids
from protocol.tools import FAILED_KINDS, RAN_KINDS, OutcomeKind

RECIPE_CALL = re.compile(r"TOOL_CALL: ([A-Za-z_][A-Za-z0-9_]*)")
_SLUG = re.compile(r"(?=.*[-\d])[a-z0-9]+(?:-[a-z0-9]+)*")  # id-like: a dash or a digit ("tt1330061"), no title
# id-like as well: a time stamp the model made up ("2023-04-15T12:30:00"), which no title is
# the words of the instructions' placeholders ("<название>", "<title as the user said it>"): a
# search made of them, with no word the user said, is the instructions copied (a title translated
# by the model, "Back to the Future" for «Назад в будущее», is not refused)
_INSTRUCTION_WORDS = re.compile(r"(?i)(?:название|title|user|query|запрос|пример|example|[<>\[\]()])")
_PLACEHOLDER = re.compile(r"[<\[][^<>\[\]]{2,80}[>\]]")  # "<title>", "[title as the user said it]"
_STAMP = re.compile(r"\d{4}-\d\d-\d\d(?:[t ]\d\d:\d\d(?::\d\d)?)?(?:z|[+-]\d\d:?\d\d)?", re.I)
SHOWN_MESSAGES = 40  # the messages whose user side and results may give a call's words or ids (a cheap, bounded read)
RECENT_MESSAGES = 12  # the messages whose user words and calls rank the prompt's index (issue 53)
_CALL_LINE = re.compile(r"TOOL_CALL: ([A-Za-z_][A-Za-z0-9_]*)\|?(.*)")


_log = logging.getLogger("porfiry.session")

DEDUP_WINDOW = 256  # event ids remembered per session for at-least-once delivery
_NO_IDS_READ = (None, 0, frozenset())  # Conversation._ids_read before a first read: shared, never updated
STANDING_KEPT = 64  # events' standing requests remembered (Conversation.standing): a turn's batch holds fewer


class Ports(Protocol):
    """What a conversation needs from the rest of the system."""

    async def skills(self, session: str, phone_key: str) -> p.SkillIndex: ...

    async def read_skill(self, session: str, phone_key: str, name: str) -> p.SkillBody: ...

    def generate(self, session: str, messages: list[p.ChatMessage], tools: list[str], max_tokens: int,
                 arg_choices: dict[str, list[str]] | None = None) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        """Stream the model's reply; `tools` may be called now, `arg_choices` limits some
        tools' argument to names that exist (for grammar-constrained backends)."""

    async def invoke(self, session: str, call: p.ToolInvoke) -> p.ToolOutcome:
        """Run a toolset call (its arguments bound and checked) in its toolset's executor."""

    def cancel_tool(self, session: str, call_id: str) -> None: ...

    def send(self, session: str, body: p.Msg) -> None:
        """To the user's glasses/phone: Display, TurnDone."""


class SessionSettings:
    """What every conversation shares: registry, config, clock, router, ports, task spawner."""

    def __init__(self, *, registry: ToolsetRegistry, ports: Ports, spawn: Callable[..., None],
                 config, clock: Callable[[], float] = time.time, router=None,
                 on_timer_set: Callable[[], None] = lambda: None, observer: Observer | None = None,
                 session_toolsets: Mapping[str, SessionToolset] | None = None,
                 local_intents: LocalIntents | None = None, records: Sequence[Toolset] | None = None):
        self.registry = registry  # replaced whole when the catalog changes (ToolsetsChanged)
        if records is None:  # the built-in ones (toolsets/), for callers without an actor
            from core.loading import load_toolsets

            records = load_toolsets()
        if session_toolsets is None:
            session_toolsets = {r.spec.name: r for r in records if isinstance(r, SessionToolset)}
        self.session_toolsets = dict(session_toolsets)  # name -> record of a toolset run here
        # the plain requests toolsets carry out for the fast path, by kind, and how they are said (core.fastpath)
        self.local_steps = steps_of(records)
        self.phrasings = phrasings_of(records)
        self.answer_checks = answer_checks_of(records)  # the model's figures put right (a conversion stated wrong)
        # the sentences answered without the model (core.local_intents); the built-in toolsets'
        # when a caller has no config of its own
        self.local_intents = local_intents if local_intents is not None else builtin_local_intents()
        self.observer = observer or Observer()  # facts for subscribers (web console, metrics)
        self.ports = ports
        self.spawn = spawn
        self.config = config  # core.config.SessionConfig
        self.clock = clock
        self.router = router or RuleRouter()
        self.on_timer_set = on_timer_set
        self.skills_epoch = 0  # +1 on SkillsChanged: every conversation's cached index is stale
        self.skill_bodies: dict[tuple[str, str], str] = {}  # (name, body_version) -> body, all sessions
        self._skill_indexes: list[p.SkillIndex] = []  # the distinct indexes sessions hold (shared_skill_index)
        self.model = ModelContext()  # the active model's context, for the fold (core/fold.py)
        self.search_history: Callable[[str, str], Awaitable[str]] | None = None  # history_search; raises on failure
        self.world: WorldPort | None = None  # the world around sessions, for the session toolsets (actors/world.py)
        self.admission = TurnAdmission(  # where a turn waits for its start (core/admission.py)
            target_s=config.admission_delay_ms / 1000, min_turns=config.admission_min_turns,
            max_turns=config.admission_max_turns, paths=SESSION_PATHS)
        try:
            self.tz = zoneinfo.ZoneInfo(config.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            _log.warning("unknown time zone %r; using UTC", config.timezone)
            self.tz = dt.timezone.utc

    def shared_skill_index(self, index: p.SkillIndex) -> p.SkillIndex:
        """`index`, or an equal one a session already holds: every session keeps the index it was
        given (mostly the same one, a kilobyte and more each), so equal ones are held once. The
        few distinct ones (exclusions per session or phone) are remembered; a change of skills
        makes new ones, the oldest are let go."""
        for known in self._skill_indexes:
            if known == index:
                return known
        self._skill_indexes = [index, *self._skill_indexes[:7]]
        return index


def _new_id() -> str:
    return os.urandom(6).hex()


def _ok(text: str) -> p.CallOutcome:
    return p.CallOutcome(kind="ok", text=text)


_CANCELLED = p.CallOutcome(kind="cancelled", text=CANCELLED_TEXT)
_UNFINISHED = p.CallOutcome(kind="cancelled", text=UNFINISHED_TEXT)  # a core tool stopped with its step
_IN_BACKGROUND = p.CallOutcome(kind="placeholder", text="")  # its placeholder is recorded already
# how a call's tool_call span ends (core.tracing), by its outcome's kind
_SPAN_OUTCOME: dict[OutcomeKind, tracing.SpanOutcome] = {
    "ok": "ok", "error": "error", "invalid": "error", "not_executed": "error", "placeholder": "background",
    "cancelled": "cancelled", "refused": "refused"}


TOGGLES_PER_TURN = 3  # enable/disable calls in one turn before they are offered no more (one off ends them too)
TOGGLED_ENOUGH_NOTICE = ("Toolsets were turned on and off enough this turn: do not call enable_toolset or "
                         "disable_toolset again. Answer the user now in plain text, in {language}.")


def _zone_named(place: str) -> zoneinfo.ZoneInfo | None:
    """The zone of a city as said ("нью-йорке", core.places) or of an IANA name ("Asia/Tokyo")."""
    try:
        return zoneinfo.ZoneInfo(zone_of(place) or place.strip())
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # "../etc", an unknown name
        return None


def _closing_result(trajectory: Trajectory) -> tuple[p.ChatMessage, OutcomeKind] | None:
    """The tool result the history ends with, which the model is to answer from, and its
    outcome's kind; not a skill's body (a recipe to follow) nor a call S8 did not run (it is to
    be made again)."""
    last = trajectory.last_result()
    if last is None or last[0].name == "read_skill" or last[1] == "not_executed":
        return None
    return last


class _Routing:
    """An accepted event waiting for its strategy, in the conversation's arrival order."""

    __slots__ = ("event", "busy", "decision")

    def __init__(self, event: p.Event, busy: bool, decision: Decision | None) -> None:
        self.event, self.busy, self.decision = event, busy, decision


_STEP_AGAIN = object()  # a stage's verdict: ask the model again (a notice may say why)
_TURN_OVER = object()  # a stage's verdict: the turn ended, the user told


@dataclasses.dataclass
class _Step:
    """What one step asked the model."""
    history: list[p.ChatMessage]
    messages: list[p.ChatMessage]
    tools: list[str]
    choices: dict[str, list[str]]
    asked_notice: str  # the notice this step showed (shown again if the answer is lost)
    plain_only: bool
    closing: tuple[p.ChatMessage, OutcomeKind] | None = None  # the result `history` ends with, its kind (_closing_result)


class Conversation(ReflexSteps):
    __slots__ = (
        "sid", "phone_key", "s", "trajectory", "activity", "timers", "tracker", "queue", "seen",
        "running", "_step_scope", "_skills", "_skills_epoch", "_model_calls", "last_active",
        "fold_cut", "fold_turns", "runs", "_finished", "resumed_turn_start", "resuming", "open_events",
        "cut_by", "cut_events", "routing", "_ids_read", "standing", "_feedback", "_discovered",
    )

    def __init__(self, sid: str, settings: SessionSettings, phone_key: str = ""):
        self.sid = sid
        self.phone_key = phone_key
        self.s = settings
        self.trajectory = Trajectory()
        self.activity = ToolsetActivity(settings.registry, clock=settings.clock, ttl=settings.config.toolset_ttl_s,
                                        max_tools=settings.config.max_active_tools)
        self.timers = TimerTable(clock=settings.clock, tz=settings.tz)
        self.tracker = SkillChangeTracker()
        self.queue: list[p.Event] = []
        # accepted events not yet applied, in arrival order (a few at most: a list, not a deque,
        # whose first block costs an idle session 760 bytes)
        self.routing: list[_Routing] = []
        self._ids_read: tuple = _NO_IDS_READ  # (trajectory, messages read, ids seen): _seen_ids
        self.seen: OrderedDict[str, None] = OrderedDict()
        self.running = False
        self._step_scope: anyio.CancelScope | None = None
        self._skills: p.SkillIndex | None = None
        self._skills_epoch = -1  # settings.skills_epoch when _skills was fetched
        self._model_calls = 0  # generations of the turn in progress (TurnDone reports them)
        self.last_active = settings.clock()
        self.fold_cut = 0  # history[:fold_cut] is folded out of requests (core/fold.py)
        self.fold_turns = 0  # the user turns in history[:fold_cut]
        self.resumed_turn_start: int | None = None  # after a restart: where the turn it cut began (core.resume)
        # accepted events no TurnDone has covered yet (a phone asking about one is told nothing yet)
        self.open_events: set[str] = set()
        # after a restart: (the event that continues the cut turn, the cut turn's events), until
        # that turn is done: its TurnDone covers them (core.resume)
        self.resuming: tuple[str, list[str]] | None = None
        self.runs = ToolRuns()  # toolset calls in flight, each in its own task
        self._discovered = False  # the last discover_tools made tools callable (the next step is told to call one)
        self.cut_by: TurnOutcome = "done"  # what cut the turn in progress (its TurnDone's outcome)
        self.cut_events: OrderedDict[str, TurnOutcome] = OrderedDict()  # recent events a stop or an interrupt cut
        self._finished: dict[str, p.CallOutcome] = {}  # call id -> result the step has but not yet recorded
        # (where in the history, the words): what the user asked earlier that events taken since
        # report on (a late result's call): an event's turn may carry it out (_guard_words)
        # and the tool whose late result it is (the answer may tell of that call: _reported)
        # made on the first event that has one (most sessions never do: an empty deque is 760 bytes)
        self.standing: deque[tuple[int, str, str]] | tuple = ()
        self._feedback: anyio.CancelScope | None = None  # the turn's pending "thinking…" line (first_feedback_ms)

    # ---- intake ---------------------------------------------------------------------------
    def submit(self, event: p.Event) -> str:
        """accepted | duplicate | busy. Never blocks; the loop runs as a separate task."""
        self.last_active = self.s.clock()
        if event.event_id in self.seen:
            return "duplicate"
        # A late tool result, a timer firing: the session's own, never refused (a refused timer
        # waited for the next restart). Timers are bounded by the table's max_timers instead.
        if len(self.queue) >= self.s.config.queue_limit and event.kind not in ("user_interrupt", "tool_result", "timer"):
            return "busy"
        self.seen[event.event_id] = None
        self.open_events.add(event.event_id)
        if len(self.seen) > DEDUP_WINDOW:
            self.seen.popitem(last=False)
        slot = _Routing(event, self.running, self.s.router.sure(event, self.running))
        if slot.decision is None:  # the model router is asked (bounded by session.router_timeout_s)
            self.s.spawn(self._route_by_model, slot)
        elif slot.decision.strategy == "cancel":
            self._settle_routing()  # a stop waits for no classifier: earlier events take the rules' verdict
        self.routing.append(slot)
        self._release_routed()
        return "accepted"

    async def _route_by_model(self, slot: "_Routing") -> None:
        decision = await self.s.router.route_why(slot.event, slot.busy)
        if slot.decision is None:
            slot.decision = decision
        self._release_routed()

    def _settle_routing(self) -> None:
        for slot in self.routing:
            if slot.decision is None:
                verdict = self.s.router.fallback(slot.event, slot.busy)
                slot.decision = Decision(verdict.strategy, f"{verdict.rule} (a stop came: the model not waited for)")

    def _release_routed(self) -> None:
        """Events are applied (queued, batched, run aside) in the order they arrived, whatever
        decided their strategy and however long it took: a batch never reads SECOND before FIRST."""
        while self.routing and self.routing[0].decision is not None:
            slot = self.routing.pop(0)
            self._apply(slot.event, slot.decision)

    def _apply(self, event: p.Event, decision: Decision) -> None:
        strategy = decision.strategy
        # event ids only at DEBUG: a log is no place to learn what identifies a phone's event
        _log.info("session=%s kind=%s strategy=%s decided_by=%s", self.sid, event.kind, strategy, decision.rule)
        _log.debug("session=%s event=%s strategy=%s", self.sid, event.event_id, strategy)
        self.s.observer.event(self, event, strategy_name(strategy, self.running), "accepted")
        if strategy == "parallel" and self.running:
            self.s.spawn(self._parallel, event)
            return
        self.queue.append(event)
        # "cancel 3f2a9c" names one background task: the tasks toolset stops it, not all - also
        # while a turn runs (a progress report's, a late result's), which it waits for
        one_task = event.kind == "user_text" and names_a_task(event.content, self.runs.in_background())
        if strategy == "cancel" and (self.running or len(self.runs)) and not one_task:
            self._cancel()  # "stop" also stops what runs in the background
        elif self.running and strategy == "interrupt":
            self._interrupt()
        self._ensure_running()
        self.s.observer.state(self)

    def _ensure_running(self) -> None:
        if not self.running and self.queue:
            self.running = True
            self.s.spawn(self._loop)

    # ---- the loop -------------------------------------------------------------------------
    async def _loop(self) -> None:
        try:
            await self.s.admission.enter(self.phone_key)  # a wave of turns waits here, not in every inbox
            try:
                await self._turns()
            finally:
                self.s.admission.leave()
        finally:
            self.running = False
            self._step_scope = None
            self.last_active = self.s.clock()

    async def _turns(self) -> None:
        while self.queue:
            turn_id = _new_id()
            consumed: list[str] = []
            self._model_calls = 0
            self.cut_by = "done"
            traced = tracing.tracer.turn(self.sid, turn_id)  # current in this task until it ends
            with anyio.CancelScope() as scope:
                self._step_scope = scope
                self.s.observer.turn(self, turn_id, "start", [e.event_id for e in self.queue])
                self._feedback_soon(turn_id)
                await self._steps(turn_id, consumed)
            self._shown()
            self._step_scope = None
            if scope.cancelled_caught:
                # Cancelled or interrupted: the glasses stop showing the old answer; the
                # urgent event is already queued and the next iteration calls the model at once.
                self._close_open_calls()
                self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text="", clear=True))
            if self.resuming is not None and self.resuming[0] in consumed:
                consumed += self.resuming[1]  # the TurnDone of a continued turn covers the cut one's events
                self.resuming = None
            outcome: TurnOutcome = "done"
            if scope.cancelled_caught:  # a stop or an interrupt cut it: its events are closed now
                outcome = self.cut_by if self.cut_by != "done" else "cancelled"
            going_on = [run.task_id for run in self.runs.in_background()] if outcome == "interrupted" else []
            self.s.ports.send(self.sid, p.TurnDone(turn_id=turn_id, event_ids=consumed, model_calls=self._model_calls,
                                                   outcome=outcome, going_on=going_on))
            traced.end(outcome, self._model_calls)
            if outcome != "done":
                self._remember_cut(consumed, outcome)
            self.open_events.difference_update(consumed)
            self.s.observer.turn(self, turn_id, "end", consumed, self._model_calls, interrupted=scope.cancelled_caught)

    def _feedback_soon(self, turn_id: str) -> None:
        """A turn that shows nothing within `first_feedback_ms` (the model is slow to start: a
        local one loading its prompt, the frame's call first) shows what it is doing: the user
        sees the event was taken. A reflex's answer comes first and cancels it."""
        delay = self.s.config.first_feedback_ms
        if delay > 0 and self.s.config.progress_lines:
            self._feedback = anyio.CancelScope()
            self.s.spawn(self._feedback_after, self._feedback, turn_id, delay / 1000)

    async def _feedback_after(self, scope: anyio.CancelScope, turn_id: str, delay: float) -> None:
        with scope:
            await anyio.sleep(delay)
            if self._feedback is scope:
                self._feedback = None
                text = thinking_line(self._language() == "Russian")
                self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text=text, kind="progress"))

    def _shown(self) -> None:
        """The turn showed something of its own (or ended): no "thinking…" line after it."""
        if self._feedback is not None:
            self._feedback.cancel()
            self._feedback = None

    def _remember_cut(self, event_ids: list[str], outcome: TurnOutcome) -> None:
        """A phone asking again about a cut event is told how it ended, not shown a later answer."""
        for event_id in event_ids:
            self.cut_events[event_id] = outcome
        while len(self.cut_events) > DEDUP_WINDOW:
            self.cut_events.popitem(last=False)

    def resume_at(self, point: ResumePoint) -> None:
        """After a restart (core.resume): the calls the crash cut answered, the cut turn and the
        waiting events queued, the loop started if there is anything to do."""
        for call_id in point.cut_calls:
            self.trajectory.record_cut(call_id)
        for call_id, text in point.late_results:
            self.trajectory.record_late_result(call_id, text)
        if point.event is not None:
            self.queue.append(point.event)
            self.resumed_turn_start = point.turn_start
            self.resuming = (point.event.event_id, list(point.cut))
        self.open_events.update(point.cut)
        self.open_events.update(e.event_id for e in point.waiting)
        self.queue.extend(point.waiting)
        self._ensure_running()

    def finished(self, event_id: str) -> bool:
        """Accepted and covered by a TurnDone: none for it is still to come."""
        return event_id in self.seen and event_id not in self.open_events

    def idle_since(self) -> float | None:
        """When the session last did anything, if it could be forgotten now: nothing running or
        queued, no timer set, no interrupted tool call still to report back. Else None."""
        if self.running or self.queue or len(self.timers) or len(self.runs) or self.trajectory.awaiting_late_results():
            return None
        return self.last_active

    def _take_queue(self, consumed: list[str]) -> bool:
        """A safe point (E2): every queued event goes into the history at once, labelled (E8).
        True when something needs the model (not just session start/end bookkeeping). A
        `resume` event (core.resume) only makes the model continue: it is not recorded."""
        batch, self.queue = self.queue, []
        if not batch:
            return False
        consumed.extend(e.event_id for e in batch)
        recorded = [e for e in batch if e.kind != RESUME_KIND]
        try:
            if recorded:
                self.trajectory.record_events(recorded)
                at = len(self.trajectory) - 1
                standing = [(at, e.data.get(ASKED_KEY, ""), self._task_tool(e)) for e in recorded
                            if e.data.get(ASKED_KEY) or self._task_tool(e)]
                if standing:
                    if not isinstance(self.standing, deque):
                        self.standing = deque(maxlen=STANDING_KEPT)
                    self.standing.extend(standing)
        except Exception:  # noqa: BLE001 - a malformed event must not stop the session
            _log.exception("session=%s could not record events", self.sid)
        return any(e.kind not in ("session_start", "session_end", "glasses") for e in batch)

    def _task_tool(self, event: p.Event) -> str:
        """The tool of the background call an event reports on (its late result, its progress), "" for none."""
        if event.kind == "tool_result" and event.data.get("tool"):
            return event.data["tool"]
        task_id = event.data.get("task_id", "")
        return next((run.tool for run in self.runs.in_background() if task_id and run.task_id == task_id), "")

    def _cancel(self) -> None:
        """CANCEL (E3): stop the step now (rule 4 for a generation) and cancel every tool the
        session has running; each call's result says so plainly."""
        for call_id, _tool in self.trajectory.pending_calls():
            self.trajectory.record_result(call_id, self._finished.pop(call_id, _CANCELLED))
        for call_id in list(self.runs.ids()):
            run = self.runs.get(call_id)
            was_background = run.state == BACKGROUND
            run.state = CANCELLED
            self.s.ports.cancel_tool(self.sid, call_id)
            if was_background:
                self.runs.record_end(run, CANCELLED_TEXT)
            if was_background and self.trajectory.call_state(call_id) == "placeholder":
                self.trajectory.record_late_result(call_id, CANCELLED_TEXT)
        if self._step_scope is not None:
            self.cut_by = "cancelled"
            self._step_scope.cancel()

    def abandon(self) -> None:
        """The session is served elsewhere now, or deleted: nothing queued runs, the step in
        progress stops (what it would still show or record is dropped by the caller)."""
        self.queue.clear()
        self.routing.clear()
        if self._step_scope is not None:
            self._step_scope.cancel()

    def _interrupt(self) -> None:
        """INTERRUPT (E6 rule 3): the running tool keeps running and its call gets the placeholder;
        its real result comes later as an event. A generation in progress is discarded (rule 4)."""
        for call_id, tool in self.trajectory.pending_calls():
            run = self.runs.get(call_id)
            if call_id in self._finished or run is None:  # done, or a core tool that stops with the step
                self.trajectory.record_result(call_id, self._finished.pop(call_id, _UNFINISHED))
                continue
            run.state = BACKGROUND
            self.trajectory.record_placeholder(call_id, INTERRUPTED_TEXT.format(tool=tool, task_id=run.task_id))
            self.s.observer.tool_finished(self, "", call_id, tool, "", "placeholder", "")
        if self._step_scope is not None:
            if self.cut_by != "cancelled":  # a stop in the same breath wins
                self.cut_by = "interrupted"
            self._step_scope.cancel()

    def _close_open_calls(self) -> None:
        """A stop or an interrupt that landed while the model's reply was finishing cut the step
        after its call was recorded and before it ran: that call is closed as the stop or the
        interrupt closes one, so the history stays paired (E6) and the next batch can be recorded.
        Called once the step is over (no scope left to cancel)."""
        if self.trajectory.pending_calls():
            self._cancel() if self.cut_by == "cancelled" else self._interrupt()

    async def _reflex_or_model(self, turn: TurnState) -> bool:
        """The fast path's step; a bug in its reading of the words (h63: "pause, pause, …" raised a
        ValueError, and the session's loop died with the turn) is logged and the turn left to the
        model, which answers anyway. Storage and model failures go on as they would."""
        try:
            return await self._step_reflex(turn)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, re.error):
            _log.exception("session %s: the fast path failed on this turn; the model answers it", self.sid)
            return False

    async def _steps(self, turn_id: str, consumed: list[str]) -> None:
        # a turn a crash cut goes on as the current turn: the request is the one the lost step made
        turn = TurnState(turn_id=turn_id,
                     start=len(self.trajectory) if self.resumed_turn_start is None else self.resumed_turn_start)
        self.resumed_turn_start = None
        if not self._take_queue(consumed):
            return
        if self.s.config.reflexes and await self._reflex_or_model(turn):
            return  # carried out without the model (core.reflex)
        await self._step_discovery(turn)
        for _ in range(self.s.config.max_steps):
            # a stop that came while the last await was finishing cuts the turn here, before the
            # queue is taken: taken, it would close with the cut turn and never be answered
            await anyio.lowlevel.checkpoint()
            taken_at = len(self.trajectory)
            if self._take_queue(consumed) and self.s.config.reflexes:
                await self._step_queued_reflex(turn, taken_at)  # "включи Матрицу" said during a slow search
            step = await self._step_prompt(turn)
            reply = await self._step_generate(turn, step)
            if reply is _TURN_OVER:
                return
            if reply is _STEP_AGAIN:
                continue
            parsed = parse_reply(reply, self.s.registry.tool_names)  # a call line without its marker too
            call = parsed.call
            if call is not None and step.plain_only and not turn.echo_retried:  # an unconstrained model called anyway
                turn.echo_retried, turn.notice = True, SMALL_TALK_NOTICE.format(language=self._language())
                continue
            if call is None:
                if self._step_answer(turn, step, parsed, reply):
                    return
                continue
            if call.name in ("enable_toolset", "disable_toolset"):
                self._step_invisible_call(turn, call)
                continue
            await self._step_call(turn, parsed)
            if self._ended_silently(turn, call.name):
                return
        self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text=self._text("gave_up"), final=True))

    async def _step_prompt(self, turn: TurnState) -> _Step:
        """What this step asks the model: the prompt, the tools it may call, their argument choices."""
        self.activity.registry = self.s.registry  # the catalog may have changed (an MCP server)
        expired = self.activity.purge_expired()
        if expired:
            _log.info("session=%s toolsets expired: %s", self.sid, ", ".join(expired))
        skills = await self._skill_index()
        active = self.activity.active()
        prompt = build_prompt(self.s.registry, active, skills.entries, SKILLS_HOWTO, scope=await self._scope(skills))
        notice = turn.notice
        history = self._fitted(prompt.static + prompt.state, notice, turn.start)
        # a skill body is a recipe to follow, not an answer: no nudge to answer after it
        # nor after a call S8 did not run ("NOT been executed yet"): it is to be made again
        answered = _closing_result(self.trajectory)  # `history` ends as the trajectory does (core.fold)
        after_result = not notice and answered is not None
        closing = [p.ChatMessage(role="user", content=f"[System notice] {notice}")] if notice else []
        if after_result:
            discovered = answered[0].name == DISCOVER_TOOL and self._discovered
            left = await self._part_left(turn, skills)
            closing.append(p.ChatMessage(role="user", content=after_result_notice(self._last_user_words(), bool(turn.recipe),
                                                                                    discovered, left)))
        elif turn.recipe and not notice and history and history[-1].role == "tool" and history[-1].name == "read_skill":
            closing.append(p.ChatMessage(role="user", content=RECIPE_NOTICE))
        messages = layout(prompt, history, len(self.trajectory) - turn.start, closing)
        turn.notice = ""
        tools = self.s.registry.callable_tools(active) if prompt.shown is None else [*CORE_TOOL_NAMES, *prompt.shown]
        tools = [tool for tool in tools if prompt.discover or tool != DISCOVER_TOOL]  # issue 53
        tools += [t for t in self._used_toolset_tools(active) + turn.recipe_tools if t not in tools]
        said = self._turn_words(turn.start)
        # a remark is the frame's verdict over the built-in commands alone: with a toolset beyond
        # them (an MCP server's) or a skill of the user's, what it asks may be theirs
        plain_only = self.s.config.small_talk_plain and (
            small_talk(said) or turn.remark and not await self.others_could_serve())
        if plain_only:
            tools = []  # thanks, praise, "хм, ладно": a plain answer; no toolset turned on, no search
        else:  # a change nobody asked for is not even offered (core.intent.offerable)
            tools = self._offerable(tools, said, turn)
        if turn.repeated or turn.withheld:
            # a small model repeats a call whose result it already has: not twice in a row
            tools = [tool for tool in tools if tool != turn.repeated and tool not in turn.withheld]
        if turn.turned_off or turn.toggled >= TOGGLES_PER_TURN:  # the local model turned media on and off 8 times
            tools = [tool for tool in tools if tool not in ("enable_toolset", "disable_toolset")]
        # a skill read earlier in the conversation may be read again (its toolset expired or
        # was turned off, its body is far back); within one turn, once is enough
        readable = [skill for skill in visible_skills(self.s.registry, active, skills.entries)
                    if skill.name not in turn.read_this_turn]
        choices = arg_choices(self.s.registry, active, readable)
        for tool in ("enable_toolset", "read_skill"):  # the world's toolsets: only when the words are about them
            choices[tool] = [name for name in choices.get(tool, [])
                             if toolset_offerable(self.s.registry.toolset(name), said)]
        tools = self._routed(turn, tools, choices, active)
        choices.update(self._id_choices(tools))
        return _Step(history=history, messages=messages, tools=tools, choices=choices,
                     asked_notice=notice, plain_only=plain_only, closing=answered)

    def _routed(self, turn: TurnState, tools: list[str], choices: dict[str, list[str]], active: list[str]) -> list[str]:
        """The tools a step offers when the frame read the words as a request of one toolset
        (`TurnState.routed_to`) that is not on yet: that toolset is the only one the model may turn
        on or read the skill of among the built-in ones, and no other built-in toolset's tools are
        offered until it is on (the local model turned timers on for a conversion of pounds, and
        answered "No timers set."). Core tools, a plain answer and the toolsets the frame does not
        know (an MCP server's: the world clock's home city) stay."""
        routed, registry = turn.routed_to, self.s.registry
        if not routed or routed in active or routed not in choices.get("enable_toolset", ()):
            return tools
        def kept(name: str | None) -> bool:  # a toolset's name (None: a core tool's; a skill of no toolset's)
            spec = registry.toolset(name) if name else None
            return spec is None or name == routed or spec.origin != "builtin"
        choices["enable_toolset"] = [name for name in choices["enable_toolset"] if kept(name)]
        choices["read_skill"] = [name for name in choices.get("read_skill", []) if kept(name)]
        return [tool for tool in tools if kept(registry.toolset_of(tool))]

    async def _step_generate(self, turn: TurnState, step: _Step) -> str | object:
        """The model's reply; _STEP_AGAIN when the step is to be asked again, _TURN_OVER when the
        turn ended here (the model unavailable, its answer told the user)."""
        self._model_calls += 1
        try:
            return await self._generate(turn.turn_id, step.messages, step.tools, step.choices)
        except GenerationLost:
            if turn.lost_once:
                self.s.ports.send(self.sid, p.Display(turn_id=turn.turn_id, text=self._text("model_lost_twice"), final=True))
                return _TURN_OVER
            turn.lost_once, turn.notice = True, step.asked_notice
            self.s.ports.send(self.sid, p.Display(turn_id=turn.turn_id, text="", clear=True))
            return _STEP_AGAIN  # the same step again: nothing of the lost answer was recorded
        except ModelUnavailable as exc:
            self.s.ports.send(self.sid, p.Display(turn_id=turn.turn_id, text=self._text("model_unavailable", detail=exc), final=True))
            return _TURN_OVER

    def _step_answer(self, turn: TurnState, step: _Step, parsed, reply: str) -> bool:
        """A reply with no call: the turn's answer (True), or not an answer and asked once more
        with a notice (False)."""
        text = parsed.text_before.strip() or reply.strip()
        if self._kept_quiet(turn, text):
            return True
        notice = "" if turn.echo_retried else self._answer_notice(text, step.closing)
        if notice:
            turn.echo_retried, turn.notice = True, notice
            return False
        if turn.recipe and turn.recipe_tools and not turn.acted and not turn.recipe_retried and len(text.split()) <= 3:
            turn.recipe_retried, turn.notice = True, RECIPE_UNDONE_NOTICE.format(language=self._language())
            _log.info("session=%s the reply %r followed none of the recipe; asking again", self.sid, text[:40])
            return False
        claimed = claimed_action(text)
        if claimed is not None and not covers(claimed, turn.acted | self._reported(turn.start)):  # reported, none made
            if not turn.claim_retried:
                turn.claim_retried, turn.notice = True, CLAIM_NOTICE.format(kind=claimed, language=self._language())
                _log.info("session=%s the reply claimed %s, which no call did; asking again", self.sid, claimed)
                return False
            text = user_texts.text("not_done", user_texts.code_of(self._language()))
        if turn.echo_retried and refused(text):  # asked again and still refusing: never the answer (core/echo.py);
            # after an action that ran, what was done is (core.done_said), else the runtime's own line
            text = "" if turn.acted else self._not_an_answer(turn)
        elif turn.echo_retried and (never_shown(text) or echoed(text, self._last_user_words())
                                    or self._example_echoed(text, self._last_user_words(), step.closing[0] if step.closing else None)):
            text = self._not_an_answer(turn)  # asked again and still a call line, the user's words or an example's
        text = self._figures_put_right(text)
        if turn.acted:  # a timer set, a film started, a change made: the answer says so (core.done_said)
            results = zip(self.trajectory.results_since(turn.start), self.trajectory.data_since(turn.start))
            ran = [(action_kind(self.s.registry.spec(tool)) or "", result, data, self._changes(tool))
                   for (tool, result, kind), data in results if kind in RAN_KINDS]
            russian = self._language() == "Russian"
            text = " ".join([text.strip(), *unsaid_done(text, ran, russian, self.speaker(russian), self.s.tz)]).strip()
        if not text:
            text = "…"
        self.trajectory.record_assistant(text)
        self.s.ports.send(self.sid, p.Display(turn_id=turn.turn_id, text=text, final=True))
        return True

    def _figures_put_right(self, text: str) -> str:
        """The answer with the figures the toolsets check put right (toolsets/units: "80 кило — это
        35.27 фунтов" says 176.37): a made-up figure never reaches the user as the model wrote it."""
        checked = text
        for check in self.s.answer_checks:
            try:
                checked = check(checked)
            except Exception:  # a toolset's own code: its fault never costs the user the answer
                _log.exception("session=%s an answer check failed; the answer is shown as the model wrote it", self.sid)
        if checked != text:
            _log.info("session=%s the answer's figures put right: %r -> %r", self.sid, text[:80], checked[:80])
        return checked

    def _kept_quiet(self, turn: TurnState, text: str) -> bool:
        """A turn nobody asked for that already reached the user (a notifying tool) or said it has
        nothing for them: its reply is recorded, not shown nor kept (core.event_turn)."""
        reason = quiet_reason(self._turn_words(turn.start), self.trajectory.results_since(turn.start), self.s.registry.spec)
        if not reason:
            return False
        self.trajectory.record_assistant(text or "…")
        self.s.ports.send(self.sid, p.Display(turn_id=turn.turn_id, text="", clear=True))  # partials it streamed
        _log.info("session=%s turn %s: the reply is not shown (%s)", self.sid, turn.turn_id, reason)
        return True

    def _ended_silently(self, turn: TurnState, tool: str) -> bool:
        """The tool that serves `event_silent` ends the turn at once, no reply asked for (core.event_turn)."""
        results = self.trajectory.results_since(turn.start)
        if not results or not silent_end(results[-1][0], results[-1][2], self.s.registry.spec) or self._turn_words(turn.start):
            return False
        return self._kept_quiet(turn, "(handled silently)")

    def _not_an_answer(self, turn: TurnState) -> str:
        """Shown in place of a reply that, asked again, is still no answer (an echo, a call line, a
        stock refusal): a remark ("я сегодня встал в семь утра …") is acknowledged; a request is
        asked for in other words, in the user's language (the stock refusal is the model's English)."""
        language = "ru" if self._language() == "Russian" else "en"
        return (ACKNOWLEDGED_TEXT if turn.remark else NOT_AN_ANSWER_TEXT)[language]

    def _answer_notice(self, text: str, closing: tuple[p.ChatMessage, OutcomeKind] | None) -> str:
        """Why a plain reply is not an answer (an echo, a refusal after a call that worked, nothing
        of a lookup's result), as the notice to ask again with; "" when it is one. `closing`: the
        result the step's history ended with, and its kind."""
        said = self._last_user_words()
        answered, kind = closing if closing is not None else (None, "")
        what = echoed(text, said) or self._example_echoed(text, said, answered)
        if what:  # not an answer: ask once more, unrecorded (core/echo.py)
            _log.info("session=%s the reply repeated %s; asking again", self.sid, what)
            return ECHO_NOTICE.format(what=what)
        worked = answered is not None and kind not in FAILED_KINDS
        if refused(text) and worked:
            _log.info("session=%s the reply refused after a call that worked; asking again", self.sid)
            return REFUSAL_NOTICE.format(language=self._language())
        if refused(text):  # to small talk, or after a call that failed: asked once more all the same
            _log.info("session=%s the reply was a stock refusal; asking again", self.sid)
            return CHAT_REFUSAL_NOTICE.format(language=self._language())
        if worked and self._is_lookup(answered.name) and uninformative(text, answered.content):
            _log.info("session=%s the reply said nothing of the lookup's result; asking again", self.sid)
            return UNINFORMATIVE_NOTICE.format(first=first_line(answered.content), language=self._language())
        language = wrong_language(text, said) if USER_LABEL.match(said) else ""  # not after a world event's line
        if language:
            _log.info("session=%s the reply was not in %s; asking again", self.sid, language)
            return WRONG_LANGUAGE_NOTICE.format(language=language, reply=" ".join(text.split())[:WRONG_LANGUAGE_QUOTED])
        return ""

    def _example_echoed(self, text: str, said: str, answered: p.ChatMessage | None) -> str:
        """What a reply copied from an active toolset's worked example: a name in it the user and
        the step's result never said ("Скажу, когда Анна напишет." after a watch for Катя)."""
        specs = (self.s.registry.toolset(name) for name in self.activity.active())
        examples = "\n".join(spec.example for spec in specs if spec is not None)
        name = example_name_echoed(text, example_names(examples), said, answered.content if answered is not None else "")
        return f"the worked example of your instructions (its name {name!r}, which this user never said)" if name else ""

    def _step_invisible_call(self, turn: TurnState, call) -> None:
        """S7: invisible tools - no history; the next prompt already shows the new state. Past a
        toolset turned off, or TOGGLES_PER_TURN of them, none is made: the model is told to answer."""
        if turn.turned_off or turn.toggled >= TOGGLES_PER_TURN:
            turn.notice = TOGGLED_ENOUGH_NOTICE.format(language=self._language())
            _log.info("session=%s %s refused: toolsets turned on and off enough this turn", self.sid, call.name)
            return
        bound = self.s.registry.validate(call.name, call.raw_args)
        name = bound.args.get("name", "") if isinstance(bound, Bound) else ""
        turn.toggled += 1
        turn.turned_off = turn.turned_off or call.name == "disable_toolset"
        turn.notice = self.activity.enable(name) if call.name == "enable_toolset" else self.activity.disable(name)
        _log.info("session=%s %s|%s -> %s", self.sid, call.name, name, turn.notice)
        self.s.observer.tool_finished(self, turn.turn_id, "", call.name, name, "invisible", turn.notice)

    async def _step_call(self, turn: TurnState, parsed, by_reflex: bool = False) -> p.CallOutcome | None:
        """A visible call: recorded, checked by the guards, run, its outcome recorded and
        returned (None when a stop or an interrupt took it). A reflex's own call (core.reflex)
        is the user's words carried out: the request guard has nothing to add to it."""
        call, turn_id = parsed.call, turn.turn_id
        call_id = _new_id()
        visible = parsed.text_before.strip()
        self.trajectory.record_assistant(f"{visible}\nTOOL_CALL: {call.name}|{call.raw_args}".strip(), call_id, call.name)
        self.s.observer.tool_started(self, turn_id, call_id, call.name, call.raw_args)
        allowed = [call.name] if by_reflex else turn.recipe_tools if turn.recipe else []
        refusal = self._guard(call.name, call.raw_args, turn.start, allowed)
        line = progress_line(self.s.registry.spec(call.name), call.raw_args, self._language() == "Russian") if not refusal else ""
        if line and self.s.config.progress_lines:
            self._shown()
            self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text=line, final=False))
        with tracing.tracer.tool_call(call.name, call_id) as traced:
            outcome = (p.CallOutcome(kind="refused", text=refusal.text()) if refusal else
                       await self._run_call(turn_id, call_id, call.name, call.raw_args))
            traced.outcome(_SPAN_OUTCOME[outcome.kind])
        spec = self.s.registry.spec(call.name)
        done = executed_kind(spec, call.raw_args) if outcome.ran else None
        if outcome.kind == "placeholder" and spec is not None and spec.long_running:
            done = done or "change"  # started in the background (a lookup too): a start the answer may tell of
        if done:
            turn.acted.add(done)
        if call.name == "read_skill":
            self._step_skill_read(turn, call, outcome.text)
        # a failed or substituted call (S8: "NOT been executed yet") is to be made again
        turn.repeated = call.name if refusal or not outcome.failed else ""
        if parsed.extra_calls:
            outcome = msgspec.structs.replace(outcome, text=outcome.text + (
                f"\n(only the first call was run; {parsed.extra_calls} more ignored: make one call per turn)"))
        self._finished[call_id] = outcome  # an interrupt from here on records it, not a placeholder
        try:
            skills_notice = await self._skills_notice()
        finally:
            finished = self._finished.pop(call_id, None)
        if finished is not None and self.trajectory.call_state(call_id) == "pending":
            self.trajectory.record_result(call_id, finished, skills_notice)
            self.s.observer.tool_finished(self, turn_id, call_id, call.name, call.raw_args, finished.kind, finished.text)
        return finished

    def _step_skill_read(self, turn: TurnState, call, result: str) -> None:
        """A skill read: not offered again this turn; a recipe's tools allowed; its toolset on."""
        bound = self.s.registry.validate(call.name, call.raw_args)
        skill = bound.args.get("name", "").strip().lower() if isinstance(bound, Bound) else ""
        turn.read_this_turn.add(skill)
        named = self._recipe_tools(result)
        if named and self.s.registry.toolset(skill) is None:
            turn.recipe = skill  # a procedure to follow, not a toolset's own skill
        elif (self.s.config.enable_on_skill_read and self.s.registry.toolset(skill) is not None
              and skill not in self.activity.active()):
            enabled = self.activity.enable(skill)  # the skill says to turn it on: done, one step fewer
            self.s.observer.tool_finished(self, turn.turn_id, "", "enable_toolset", skill, "invisible", enabled)
        turn.recipe_tools += [t for t in named if t not in turn.recipe_tools]

    def _clock_time(self, epoch: float) -> str:
        return dt.datetime.fromtimestamp(epoch, self.s.tz).strftime("%H:%M")

    def _used_toolset_tools(self, active: Iterable[str]) -> list[str]:
        """The tools of toolsets this conversation used that are off now (expired, turned off):
        their calls in the history taught the model their names, and S8 substitutes a call to one
        (turning the toolset on again), so the grammar must not forbid them. A small model kept
        from them reads an unrelated skill or shows the old result instead (run.py eval, the
        expired-* scenarios)."""
        registry = self.s.registry
        called = self.trajectory.called_tools()
        off = {registry.toolset_of(tool) for tool in called} - set(active) - {None}
        # of a big toolset (issue 53) only the tools called: the grammar is not 10,000 names long
        return [tool.name for toolset in sorted(off) for tool in registry.toolset(toolset).tools
                if not self.activity.big(toolset) or tool.name in called]

    def _recipe_tools(self, body: str) -> list[str]:
        """Tools a skill's body tells the model to call: a recipe may call a tool of a toolset
        that is off (S8 substitutes that call and turns the toolset on), so the grammar must not
        forbid what the recipe says."""
        return [name for name in dict.fromkeys(RECIPE_CALL.findall(body)) if self.s.registry.spec(name) is not None]

    def _is_lookup(self, tool: str) -> bool:
        """A read-only tool of a toolset executor (a search, a title's details, an MCP lookup):
        what it found is what the user asked to hear."""
        registry = self.s.registry
        toolset, spec = registry.toolset_of(tool), registry.spec(tool)
        return toolset is not None and spec is not None and spec.read_only and not registry.runs_in_session(toolset)

    def _changes(self, tool: str) -> bool:
        """Whether a call of `tool` changes something (core.intent.action_kind): a timer, playback,
        an MCP tool not marked read-only."""
        spec = self.s.registry.spec(tool)
        return action_kind(spec) is not None

    def _text(self, key: str, **fields: object) -> str:
        """A fixed text for the user (core/texts), in the session's language."""
        return user_texts.text(key, self.language_code(), **fields)

    def language_code(self) -> str:
        """"ru" or "en": the language of the user's own last words (not of a channel message or a
        result), for the runtime's fixed texts; "en" before the user said anything."""
        return user_texts.code_of(reply_language(self._standing_words()))

    def _language(self) -> str:
        """The language a notice asks the reply in: the user's last words'."""
        return reply_language(USER_LABEL.sub("", self._last_user_words()))

    def _guard(self, tool: str, raw_args: str, turn_start: int, recipe_tools: Iterable[str]):
        """core.intent: a call that changes something runs only when this turn's user words (or
        the recipe the turn follows) ask for it; an id must be one this conversation's results
        showed (or a title). A Refusal to answer the call with, or None."""
        spec = self.s.registry.spec(tool)
        bound = self.s.registry.validate(tool, raw_args) if spec is not None else None
        if not isinstance(bound, Bound):
            return None  # unknown tool or bad arguments: the ordinary binding answers it
        args = bound.args
        placeholder = next((value for value in args.values() if _PLACEHOLDER.fullmatch(value.strip())), None)
        if placeholder is not None:  # "<search>|[title as the user said it]": the recipe's, copied
            return Refusal(kind="ungrounded_text", tool=tool, reason=(
                f"«{placeholder.strip()}» is a placeholder of the instructions, not the user's words. Put in what "
                "the user actually said, or answer without this call."))
        for name in spec.grounded_args:  # "<search>|название (the title …)": the instructions' words
            if _INSTRUCTION_WORDS.search(args.get(name, "")) and not self._said_or_shown(args.get(name, "")):
                return Refusal(kind="ungrounded_text", tool=tool, reason=(
                    f"no word of «{args.get(name, '').strip()}» was said by the user or shown by a result. Use "
                    "what the user said, or answer without this call."))
        for name in spec.seen_args:  # an id-like value (a slug, a time stamp) no result showed: made up
            given = args.get(name, "").strip()
            if (_SLUG.fullmatch(given) or _STAMP.fullmatch(given)) and given not in self._seen_ids():
                return Refusal(kind="unseen_id", tool=tool, reason=(
                    f"the {name} «{given}» was not in any result of this conversation. Use an {name} exactly as a "
                    "result shows it, or the exact title (search first)."))
        if spec.id_args and (refusal := unshown_id(spec, args, self._shown_text())):  # an MCP tool's made-up id
            return refusal
        if spec.said_number_args and (refusal := unsaid_amount(spec, args, self._shown_text(), self._turn_words(turn_start))):  # 55 put as 50
            return refusal
        if action_kind(spec, args) is None:  # a lookup: only one that asks for words of its own needs them
            return None if tool in recipe_tools else unasked_lookup(spec, self._guard_words(turn_start))
        said = self._turn_words(turn_start)
        messages = self.trajectory.messages()
        offered = self._offered(turn_start)
        # what results showed; a refusal's own words are none (it quotes the refused text back: h38's subtitles)
        sources = tuple(m.content for m in messages[-20:] if m.role == "tool" and m.name not in CATALOG_TOOL_NAMES
                        and not m.content.startswith(REFUSED))
        toolset = self.s.registry.toolset_of(tool) or ""
        refusal = check_call(spec, args, said=said, offered=offered, recipe_tools=frozenset(recipe_tools), sources=sources,
                             words_name_it=discovery.words_name_tool(spec, toolset, said))
        standing = self._guard_words(turn_start) if refusal is not None and not said.strip() else ""
        if standing:  # an event's turn: what the user asked that set it up may be carried out now
            refusal = check_call(spec, args, said=standing, offered=offered, recipe_tools=frozenset(recipe_tools),
                                 sources=sources, words_name_it=discovery.words_name_tool(spec, toolset, standing))
        return refusal

    def _said_or_shown(self, query: str) -> bool:
        """Whether a word of `query` (3 letters or more, in any case) is in what the user said or a
        result showed in this conversation: a search for the instructions' own words is not."""
        words = [w for w in re.findall(r"[^\W_]{3,}|\d+", fold(query))]
        if not words:
            return True  # "найди М", a number: nothing to judge by
        seen = " ".join("\n".join(user_lines(m.content)) if m.role == "user" else re.sub(r"“[^”]*”", " ", m.content)
                        for m in self.trajectory.messages()[-SHOWN_MESSAGES:] if m.role in ("user", "tool"))  # no label, no echo
        known = set(re.findall(r"[^\W_]{3,}|\d+", fold(seen)))
        return any(w in known or any(same_word(w, k) for k in known) for w in words)

    def _shown_text(self) -> str:
        """The text the last SHOWN_MESSAGES brought from outside the model (core.intent.unshown_id):
        the user side (the user's words, events, late results) and the results, less those of
        calls that failed or were refused, which may echo the model's own made-up id."""
        messages = self.trajectory.messages()
        start = max(0, len(messages) - SHOWN_MESSAGES)
        return "\n".join(m.content for at, m in enumerate(messages[start:], start) if m.role == "user"
                         or m.role == "tool" and self.trajectory.kind_at(at) not in FAILED_KINDS)

    def _turn_start(self) -> int:
        """Where the current turn's messages begin: after the last assistant answer (no call)."""
        messages = self.trajectory.messages()
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].role == "assistant" and "TOOL_CALL" not in messages[index].content:
                return index + 1
        return 0

    def _offerable(self, tools: list[str], said: str, turn: TurnState) -> list[str]:
        """The step's tools less those the turn's words do not ask for (a recipe's own calls stay)."""
        offered, recipe = self._offered(turn.start), turn.recipe_tools if turn.recipe else []
        standing = self._guard_words(turn.start) if not said.strip() else ""  # an event's turn: what set it up
        return [tool for tool in tools if tool in recipe or offerable(spec := self.s.registry.spec(tool), said, offered)
                or standing and offerable(spec, standing, offered)]

    def _offered(self, turn_start: int) -> str:
        """The assistant's last answer before the turn (a question it asked: "Включить?")."""
        messages = self.trajectory.messages()
        return next((m.content for m in map(messages.__getitem__, range(min(turn_start, len(messages)) - 1, -1, -1))
                     if m.role == "assistant" and "TOOL_CALL" not in m.content), "")

    def _guard_words(self, turn_start: int) -> str:
        """The words a call of this turn is judged by (core.intent): the user's own; in a turn an
        event started (a late result), which has none, the user's words that set up what the
        event reports (the request that started the task), so a standing instruction ("when one
        ends, cancel the slow one") is carried out then, and nothing else is."""
        said = self._turn_words(turn_start)
        if said.strip():
            return said
        return "\n".join(dict.fromkeys(words for at, words, _tool in self.standing if at >= turn_start and words))

    def _standing_words(self) -> str:
        """The user's last words in the conversation, however far back (the language a turn nobody
        asked for, a late result's, answers in)."""
        for message in reversed(self.trajectory.messages()):
            lines = user_lines(message.content) if message.role == "user" else ()
            if lines:
                return "\n".join(lines)
        return ""

    def _reported(self, turn_start: int) -> set[str]:
        """The kinds of action of the calls whose late results this turn took: made in an earlier
        turn, and what the answer may tell of ("Запустил три скрипта, первый готов")."""
        registry = self.s.registry
        return {executed_kind(spec, "") or ("change" if spec.long_running else "")
                for at, _words, tool in self.standing if at >= turn_start and tool
                for spec in [registry.spec(tool)] if spec is not None} - {""}

    def _turn_words(self, turn_start: int) -> str:
        """What the user said in this turn (their lines only: no timer, no tool result)."""
        lines = [line for m in self.trajectory.messages()[turn_start:] if m.role == "user"
                 for line in user_lines(m.content)]
        return "\n".join(lines)

    def _seen_ids(self) -> set[str]:
        """Ids the results of this conversation showed, read from their payloads (a result without
        one showed none). The history only grows (S9), so each call reads only the results added
        since the last (all again for another trajectory)."""
        size = len(self.trajectory)
        trajectory, scanned, seen = self._ids_read
        if trajectory is not self.trajectory or scanned > size:
            scanned, seen = 0, set()
        seen.update(found for index in range(scanned, size) for found in shown_ids(self.trajectory.data_at(index)))
        self._ids_read = (self.trajectory, size, seen)
        return seen

    def _id_choices(self, tools: list[str]) -> dict[str, list[str]]:
        """For a constrained backend: a lookup by id (a read-only tool whose one argument must be an
        id a result showed: a title's details) takes only such an id (none shown yet: it cannot be
        called; a search comes first)."""
        registry = self.s.registry
        by_id = [tool for tool in tools for spec in [registry.spec(tool)]
                 if spec is not None and spec.read_only and [a.name for a in spec.args] == spec.seen_args == ["id"]]
        return {tool: sorted(self._seen_ids()) for tool in by_id} if by_id else {}

    def _last_user_words(self) -> str:
        for message in reversed(self.trajectory.messages()):
            if message.role == "user":
                return message.content
        return ""

    def _fitted(self, system: str, notice: str, turn_start: int) -> list[p.ChatMessage]:
        """The history that fits the model's context: the oldest whole turns folded into one
        line (core/fold.py). The journal keeps everything; history_search finds it."""
        model = self.s.model
        others = model.cost(p.ChatMessage(role="system", content=system + notice))
        fold = fold_history(self.trajectory.messages(), cut=self.fold_cut, current_start=turn_start,
                            other_tokens=others, max_tokens=self.s.config.max_tokens, model=model,
                            chars=self.trajectory.chars(), folded_turns=self.fold_turns)
        self.fold_cut, self.fold_turns = fold.cut, fold.folded_turns
        return fold.messages

    async def _skill_index(self) -> p.SkillIndex:
        """This session's skills index: kept until the SkillStore says skills changed
        (SkillsChanged), then asked for again - no round trip on an ordinary step."""
        if self._skills is not None and self._skills_epoch == self.s.skills_epoch:
            return self._skills
        epoch = self.s.skills_epoch  # read first: a change announced meanwhile means ask again
        try:
            self._skills = self.s.shared_skill_index(await self.s.ports.skills(self.sid, self.phone_key))
            self._skills_epoch = epoch
        except Exception as exc:  # noqa: BLE001 - a skill store hiccup must not stop the session
            _log.warning("session=%s skill index unavailable: %s", self.sid, exc)
            if self._skills is None:
                return p.SkillIndex(version="", entries=[])
        return self._skills

    async def _skills_notice(self) -> str:
        """V4: a tool result carries skills_version/skills_changed only when they changed."""
        skills = await self._skill_index()
        if not skills.version:
            return ""  # the store did not answer: the next result will carry the notice
        notice = self.tracker.annotate(skills.version, skills.entries, skills.body_versions)
        return f"\n{notice}" if notice else ""

    async def _generate(self, turn_id: str, messages: list[p.ChatMessage], tools: list[str],
                        choices: dict[str, list[str]] | None = None) -> str:
        with self.s.observer.model_call(self, turn_id, self._model_calls, messages, tools) as observed, \
                tracing.tracer.model_call(self._model_calls) as traced:
            text = await self._stream(turn_id, messages, tools, choices, traced.watching(observed))
        return text

    async def _stream(self, turn_id: str, messages: list[p.ChatMessage], tools: list[str],
                      choices: dict[str, list[str]] | None, observed) -> str:
        text = ""
        shown = ""
        async with self.s.ports.generate(self.sid, messages, tools, self.s.config.max_tokens, choices) as pieces:
            async for piece in pieces:
                observed.piece(piece)
                text += piece
                cut = find_call_start(text)
                visible = (text if cut is None else text[:cut]).rstrip()
                if visible and visible != shown and not held_back(visible):
                    shown = visible
                    if cut is None and getattr(pieces, "done", None) is not None:
                        continue  # the model already finished: the final display of this text comes next
                    self._shown()
                    self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text=visible, final=False))
        observed.done(pieces)
        return text

    async def _run_call(self, turn_id: str, call_id: str, tool: str, raw_args: str) -> p.CallOutcome:
        registry = self.s.registry
        if registry.is_core(tool):
            return await self._run_core(turn_id, tool, raw_args)
        if registry.toolset_of(tool) is None:
            return p.CallOutcome(kind="invalid", text=registry.unknown_tool_text(tool))
        decision = self.activity.substitute(tool, raw_args, execute_if_valid=self.s.config.execute_substituted_calls)
        if decision.action != "execute":
            return decision.answer()
        if self.s.registry.runs_in_session(decision.toolset):
            outcome = self._run_here(tool, decision.toolset, decision.args)
        else:
            invoke = p.ToolInvoke(call_id=call_id, tool=tool, args=decision.args, offset=decision.offset)
            outcome = await self._invoke_tool(invoke, turn_id)
            if outcome is None:
                return _IN_BACKGROUND  # the placeholder answers this call, the result comes later
        if decision.note:
            return msgspec.structs.replace(outcome, text=f"({decision.note})\n{outcome.text}")
        return outcome

    async def _invoke_tool(self, call: p.ToolInvoke, turn_id: str = "") -> p.CallOutcome | None:
        """Run a toolset call in its own task and wait for it - not at all for a `long_running`
        tool; for others until it ends (seed 003: a placeholder invites the model to invent a
        result, so only an interrupt gives one), with a progress line on the glasses every
        `session.tool_progress_after_s`, and events said meanwhile joining the batch after it.
        `session.tool_background_after_s` > 0 brings back the old way: a call still running then
        is answered with a task id and its result comes later as an event. None when the call
        went to the background."""
        call_id, tool = call.call_id, call.tool
        run = self.runs.start(call_id, tool, asked=self._guard_words(self._turn_start()))
        self.s.spawn(self._run_tool, run, call)
        spec = self.s.registry.spec(tool)
        long_running = spec is not None and spec.long_running
        wait_s = self.s.config.tool_background_after_s
        if not long_running:
            with anyio.move_on_after(wait_s if wait_s > 0 else float("inf")):
                await self._wait_showing_progress(run, turn_id)
        if run.done.is_set():
            return run.outcome
        if self.trajectory.call_state(call_id) != "pending":
            return None
        run.state = BACKGROUND
        text = (STARTED_TEXT if long_running else SLOW_TEXT).format(tool=tool, task_id=run.task_id)
        self.trajectory.record_placeholder(call_id, text)
        _log.info("session=%s %s call=%s moved to the background as task %s", self.sid, tool, call_id, run.task_id)
        return None

    async def _wait_showing_progress(self, run, turn_id: str) -> None:
        """Until the call ends; past `session.tool_progress_after_s` (0: never) a progress line
        on the glasses, renewed as often, so a slow call does not look like a hang."""
        every = self.s.config.tool_progress_after_s
        started = time.monotonic()
        while not run.done.is_set():
            with anyio.move_on_after(every if every > 0 else float("inf")):
                await run.done.wait()
            if not run.done.is_set():
                waited = round(time.monotonic() - started)
                self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text=self._text("still_working", tool=run.tool, seconds=waited),
                                                      kind="progress"))

    async def _run_tool(self, run, call: p.ToolInvoke) -> None:
        """The call's own task. A result the step no longer waits for comes back as an event: it
        starts a turn when the session is idle or joins the next batch (E6 rule 3, E7)."""
        try:
            outcome = executed(await self.s.ports.invoke(self.sid, call))
        except Exception as exc:  # noqa: BLE001
            outcome = error_outcome(failure_text(run.tool, str(exc)))
        if self.runs.finish(run, outcome) == BACKGROUND:
            self.s.observer.tool_finished(self, "", run.call_id, run.tool, "", "late", outcome.text)
            self.submit(late_event(run, outcome.text, self.s.clock()))

    def _run_here(self, tool: str, toolset: str, args: dict[str, str]) -> p.CallOutcome:
        """A tool of a toolset that runs in the session: its record's handler, given what it may
        use of this session (a SessionContext)."""
        record = self.s.session_toolsets.get(toolset)
        if record is None:
            return error_outcome(failure_text(tool, f"toolset {toolset} is not installed in this runtime"))
        context = SessionContext(sid=self.sid, timers=self.timers, timer_set=self.s.on_timer_set,
                                 tell_user=partial(self.s.ports.send, self.sid),
                                 background=tuple(self.runs.in_background()), cancel_task=self._cancel_task,
                                 world=self.s.world, asked=self._guard_words(self._turn_start()),
                                 ended=self.runs.ended)
        return record.handler(context, tool, args)

    def _cancel_task(self, run: ToolRun) -> None:
        """A task cancelled by its id: one background call stops, the others run on; its result says so (E3's wording)."""
        run.state = CANCELLED
        self.runs.record_end(run, CANCELLED_TEXT)
        self.s.ports.cancel_tool(self.sid, run.call_id)
        if self.trajectory.call_state(run.call_id) == "placeholder":
            self.trajectory.record_late_result(run.call_id, CANCELLED_TEXT)

    def _clock(self, place: str) -> p.CallOutcome:
        """get_current_time: the user's clock, or with `place` (a city as said, an IANA zone) the
        time there (core.places knows the cities); for a place it does not know, the user's own
        time and a line saying so."""
        zone = _zone_named(place) if place else None
        now = dt.datetime.fromtimestamp(self.s.clock(), zone or self.s.tz)
        spoken = spoken_time(now, russian=reply_language(self._turn_words(self._turn_start())) == "Russian")
        if place and zone is None:  # words after the call, or a place no zone is known for: the user's own time, said so
            spoken = f"no time zone known for «{place[:80]}»; the user's own time: {spoken}"
        elif zone is not None:
            spoken = f"{place}: {spoken}"
        return p.CallOutcome(kind="ok", text=spoken, data=ClockRead(at=now.timestamp(), zone=now.tzname() or "",
                                                                    place=str(zone) if zone is not None else ""))

    async def _run_core(self, turn_id: str, tool: str, raw_args: str) -> p.CallOutcome:
        bound = self.s.registry.validate(tool, raw_args)  # the one binding every tool gets (S12)
        if isinstance(bound, Invalid):
            return bound.outcome()
        args = bound.args
        if tool == "get_current_time":
            return self._clock(args.get("place", "").strip())
        if tool == "show_text":
            self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text=args["text"], final=False))
            return p.CallOutcome(kind="ok", text="shown on the glasses", data=TextSent(text=args["text"]))
        if tool == "read_skill":
            return await self._read_skill(args["name"])
        if tool == "history_search":
            return await self._search_history(args["query"])
        if tool == DISCOVER_TOOL:
            return await self._discover(turn_id, args["need"])
        return p.CallOutcome(kind="invalid", text=self.s.registry.unknown_tool_text(tool))

    async def _scope(self, skills: p.SkillIndex) -> Scope:
        """The prompt's bounds (issue 53) and what the conversation said and used lately; the
        discovery index, when the prompt may rank by it, is built first in a worker thread."""
        config, registry = self.s.config, self.s.registry
        every = self._skill_pairs(skills)
        if discovery.needs_index(registry, every, config.index_budget_tokens, config.max_active_tools) \
                and not discovery.has_index(registry, every):
            await anyio.to_thread.run_sync(discovery.index_for, registry, every)
        messages = self.trajectory.messages()[-RECENT_MESSAGES:]
        recent = " ".join(line for m in messages if m.role == "user" for line in user_lines(m.content))
        lines = (_CALL_LINE.search(m.content) for m in messages if m.role == "assistant")
        calls = [(line.group(1), line.group(2)) for line in lines if line is not None]
        used = discovery.used_names(calls, registry) | set(self.activity.active())
        return Scope(config.index_budget_tokens, config.max_active_tools, config.toolset_first_tools,
                     recent[-discovery.MAX_NEED_CHARS:], tuple(sorted(used)), self.activity.made_active())

    async def _discover(self, turn_id: str, need: str) -> p.CallOutcome:
        """discover_tools (issue 53): the best matches for the need (by its words and the model's
        rewording), as a tool result at the end of the conversation; each tool found is made
        callable: its toolset turned on (invisibly, as enable_toolset does) and the tool shown by
        the prompt from the next step on."""
        need = need[:discovery.MAX_NEED_CHARS]
        if not discovery.stems(need):  # "?", "мне нужно": nothing to search by
            return p.CallOutcome(kind="invalid", text=discovery.EMPTY_NEED_TEXT)
        found = await self._found(turn_id, need)
        callable_now = []
        for entry in found:
            if entry.kind == "tool":
                if entry.toolset not in self.activity.active():
                    self.activity.enable(entry.toolset)
                self.activity.make_active(entry.name)
                callable_now.append(entry.name)
        self._discovered = bool(callable_now)
        return _ok(discovery.result_text(need, found, callable_now))

    async def _found(self, turn_id: str, need: str) -> list[discovery.Entry]:
        """What discover_tools finds for a need: tools, toolsets and the skills the prompt may show."""
        # a thin need ("weather") is reworded from the request it came from, which says the task too
        reworded = await self._reworded(turn_id, (discovery.thin(need) and self._last_request()) or need)
        skills = await self._skill_index()
        every = self._skill_pairs(skills)
        index = await anyio.to_thread.run_sync(discovery.index_for, self.s.registry, every)
        visible = {s.name for s in visible_skills(self.s.registry, self.activity.active(), skills.entries)}
        return [entry for entry in index.search(need, limit=discovery.MAX_RESULTS + 2, reworded=reworded)
                if entry.kind != "skill" or entry.name in visible][:discovery.MAX_RESULTS]

    async def _step_discovery(self, turn: TurnState) -> None:
        """Issue 53: where tools are left out of the prompt, a user's request that reaches the model
        is first searched as discover_tools would search it (its words and the model's rewording),
        and the tools found are made callable - their toolsets turned on, invisibly as
        enable_toolset does (seed 000 §12), the tools shown under Active toolsets - so the model's
        first step reads the request with its tools in front of it, as in a small catalog. The
        embedded model called discover_tools itself in 6 of 12 such requests and otherwise answered
        from nothing; shown the result of a search the session made as a call, it answered the list
        instead of calling (`run.py eval --set discovery`, its first 12: 1/12 either way, 4/12 with
        the tools shown). Not for small talk, a remark, or an event with no user words."""
        said = self._turn_words(turn.start)
        if not self.s.config.discover_first or not said.strip() or turn.remark or small_talk(said):
            return
        skills = await self._skill_index()
        config = self.s.config
        if not discovery.needs_index(self.s.registry, self._skill_pairs(skills), config.index_budget_tokens,
                                     config.max_active_tools):
            return  # the whole catalog is in the prompt: nothing is left out to search for
        active = self.activity.active()
        prompt = build_prompt(self.s.registry, active, skills.entries, SKILLS_HOWTO, scope=await self._scope(skills))
        need = " ".join(said.split())[:discovery.MAX_NEED_CHARS]
        if not prompt.discover or not discovery.stems(need):
            return  # everything is in the prompt already, or nothing to search by
        shown = set(self.s.registry.callable_tools(active) if prompt.shown is None else prompt.shown)
        found = [entry.name for entry in await self._found(turn.turn_id, need) if entry.kind == "tool"]
        # a request of several tasks ("find arXiv papers on X and download the top one"): each
        # task's best tool is callable too, and a task left after a result is named (_part_left)
        index = await anyio.to_thread.run_sync(discovery.index_for, self.s.registry, self._skill_pairs(skills))
        by_part = discovery.part_tools(index, discovery.request_parts(need))
        turn.parts = [part for part, _tools in by_part]
        for tool in dict.fromkeys([*found, *(tools[0] for _part, tools in by_part)]):
            if tool not in shown:
                self._make_callable(turn, tool)

    def _make_callable(self, turn: TurnState, tool: str) -> None:
        """A tool found for the user's request: its toolset on (invisibly), the tool shown."""
        toolset = self.s.registry.toolset_of(tool)
        if toolset is not None and toolset not in self.activity.active():
            enabled = self.activity.enable(toolset)
            self.s.observer.tool_finished(self, turn.turn_id, "", "enable_toolset", toolset, "invisible", enabled)
        self.activity.make_active(tool)

    @staticmethod
    def _skill_pairs(skills: p.SkillIndex) -> tuple[tuple[str, str], ...]:
        return tuple((s.name, s.description) for s in skills.entries)

    async def _part_left(self, turn: TurnState, skills: p.SkillIndex) -> str:
        """A task of the user's request of several that no call of this turn has served yet, the
        first time it is found left; "" otherwise (core.discovery.part_left)."""
        if not turn.parts:
            return ""
        index = await anyio.to_thread.run_sync(discovery.index_for, self.s.registry, self._skill_pairs(skills))
        called = [m.name for m in self.trajectory.messages()[turn.start:] if m.role == "tool" and m.name]
        left = discovery.part_left(index, turn.parts, called)
        if not left or left in turn.parts_told:
            return ""
        turn.parts_told.add(left)
        return left

    def _last_request(self) -> str:
        """What the user said last (their lines only), cut as a need is."""
        said = next((m.content for m in reversed(self.trajectory.messages()) if m.role == "user"), "")
        return " ".join(user_lines(said))[:discovery.MAX_NEED_CHARS]

    async def _reworded(self, turn_id: str, need: str) -> str:
        """The model's short English rewording of a need (core.discovery.rewording_messages); ""
        when it is off (`session.discover_rewording`) or the model does not answer: the need's
        own words still search."""
        if not self.s.config.discover_rewording:
            return ""
        try:
            reply = await self._ask_quietly(turn_id, discovery.rewording_messages(need), discovery.REWORDING_MAX_TOKENS)
        except ModelUnavailable:
            return ""
        reworded = discovery.reworded(reply)
        _log.info("session=%s discover_tools need %r reworded %r", self.sid, need[:80], reworded[:80])
        return reworded

    async def _search_history(self, words: str) -> p.CallOutcome:
        if self.s.search_history is None:
            return p.CallOutcome(kind="error", text="history_search is not available: this runtime keeps no journal")
        try:
            return _ok(await self.s.search_history(self.sid, words))
        except Exception as exc:  # noqa: BLE001 - the journal failing is a tool error the model reads
            return error_outcome(str(exc))

    async def _read_skill(self, name: str) -> p.CallOutcome:
        """A skill's body. The body of a version this session's index lists is the same for every
        session that may see it, so it is fetched from the SkillStore once per version."""
        name = name.strip().lower()
        body_version = (await self._skill_index()).body_versions.get(name, "")
        cached = self.s.skill_bodies.get((name, body_version)) if body_version else None
        if cached is not None:
            self.tracker.note_read(name, body_version)
            return _ok(cached)
        try:
            body = await self.s.ports.read_skill(self.sid, self.phone_key, name)
        except Exception as exc:  # noqa: BLE001
            return error_outcome(f"the skill store did not answer ({exc}); try again")
        if body.found:
            self.tracker.note_read(name, body.body_version)
            if body.body_version:
                if len(self.s.skill_bodies) >= 256:  # old versions of edited skills: start afresh
                    self.s.skill_bodies.clear()
                self.s.skill_bodies[(name, body.body_version)] = body.text
        return _ok(body.text)

    # ---- timers (E10) ---------------------------------------------------------------------
    def fire_due_timers(self, now: float) -> None:
        for timer in self.timers.due(now):
            self.submit(timer.to_event(now, self.s.tz))

    # ---- parallel light requests (E5) -----------------------------------------------------
    async def _parallel(self, event: p.Event) -> None:
        """A side run: it offers only the tools it can run (core tools that change nothing, the
        read-only tools of active toolsets), runs them as the main loop does, and never shows
        or records a TOOL_CALL line as the answer."""
        turn_id = _new_id()
        traced = tracing.tracer.turn(self.sid, turn_id, parallel=True)
        self.s.observer.turn(self, turn_id, "start", [event.event_id], parallel=True)
        tools = parallel_tools(self.s.registry, self.activity.active())
        made_active = set(self.activity.made_active())  # of a big toolset only those (issue 53)
        tools = [t for t in tools if t in made_active or not self.activity.big(self.s.registry.toolset_of(t) or "")]
        system = parallel_prompt(self.s.registry, tools)
        messages = [p.ChatMessage(role="system", content=system), p.ChatMessage(role="user", content=event.content)]
        answer = ""
        model_calls = 0
        for _ in range(3):
            model_calls += 1
            try:
                reply = await self._generate(turn_id, messages, tools)
            except ModelUnavailable as exc:
                answer = self._text("model_unavailable", detail=exc)
                break
            parsed = parse_reply(reply, self.s.registry.tool_names)
            answer = parsed.text_before.strip()
            if parsed.call is None:
                break
            call = parsed.call
            if call.name not in tools:
                result = unavailable_text(call.name, tools)
            else:
                result = fence((await self._run_side_call(turn_id, call.name, call.raw_args)).text)
            messages += [p.ChatMessage(role="assistant", content=f"TOOL_CALL: {call.name}|{call.raw_args}"),
                         p.ChatMessage(role="tool", name=call.name, content=result)]
        answer = answer or self._text("parallel_gave_up")
        if claimed_action(answer) is not None:  # it can run nothing that acts: a claim is made up
            answer = user_texts.text("not_done", user_texts.code_of(reply_language(event.content)))
        self.s.ports.send(self.sid, p.Display(turn_id=turn_id, text=answer, final=True))
        self.s.ports.send(self.sid, p.TurnDone(turn_id=turn_id, event_ids=[event.event_id], model_calls=model_calls))
        self.open_events.discard(event.event_id)
        traced.end("done", model_calls)
        self.s.observer.turn(self, turn_id, "end", [event.event_id], model_calls, parallel=True)
        self.trajectory.record_parallel(event.content, answer)

    async def _run_side_call(self, turn_id: str, tool: str, raw_args: str) -> p.CallOutcome:
        """A call of the side run: a core tool, a timers tool, or a read-only toolset tool."""
        if self.s.registry.is_core(tool):
            return await self._run_core(turn_id, tool, raw_args)
        bound = self.s.registry.validate(tool, raw_args)
        if isinstance(bound, Invalid):
            return bound.outcome()
        toolset = self.s.registry.toolset_of(tool) or ""
        if self.s.registry.runs_in_session(toolset):
            return self._run_here(tool, toolset, bound.args)
        try:
            return executed(await self.s.ports.invoke(
                self.sid, p.ToolInvoke(call_id=_new_id(), tool=tool, args=bound.args, offset=bound.offset)))
        except Exception as exc:  # noqa: BLE001
            return error_outcome(failure_text(tool, str(exc)))

    # ---- inspection -----------------------------------------------------------------------
    def view(self) -> ConversationView:
        """Its state now, as a value (core.observe)."""
        skills = self._skills  # the index this session last saw, not a fresh ask
        return ConversationView(
            now=self.s.clock(), busy=self.running, queue=tuple(self.queue), toolset_deadlines=self.activity.deadlines(),
            running_tools=tuple(tool for _, tool in self.trajectory.pending_calls()),
            timers=tuple((t.timer_id, t.due, t.text) for t in self.timers.pending()),
            skills_version=skills.version if skills is not None else "")

    def knows_tool(self, tool: str) -> bool:
        return self.s.registry.is_core(tool) or self.s.registry.spec(tool) is not None

    def info(self) -> p.SessionInfo:
        return p.SessionInfo(
            exists=True, history=self.trajectory.as_dicts(), active_toolsets=self.activity.deadlines(),
            queued=len(self.queue), busy=self.running,
        )

