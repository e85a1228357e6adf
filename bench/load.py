"""The load generator: many phone sessions talking to a running Porfiry through its phone endpoint.

Each session is one task on a PhoneClient: its own by default, as every user has a phone, or
shared by `sessions_per_phone` sessions (the bridge allows many sessions on one connection). It opens with SessionStart, then plays its plan of turns with
a think pause (uniform around the mean, seeded) before each. A turn is timed on the phone's side, from the
moment the event is handed to the client until the TurnDone that covers it; the scripted model's
own time (`model_calls` x latency, reported in TurnDone) is subtracted, which leaves what the
runtime itself costs. Every event must be acked AND covered by a TurnDone: anything else is lost.

The mix (weights in `MIX`), each checked against what a user would see:
    plain         a question answered in one model call                 "Sure. Here is ..."
    media         read_skill -> enable_toolset -> media_search -> answer "Here is what I found: ..."
    substitution  media_search called while media is inactive (S8), then repeated -> same answer
    interrupt     a long story, then "stop" at once -> the last thing shown is "OK, stopped."
"""
from __future__ import annotations

import contextlib
import gc
import math
import random
from dataclasses import dataclass, field
from typing import Callable

import anyio
import zmq

import protocol as p
from bench.stats import Tally
from phone.client import DeliveryFailed, EventRejected, PhoneClient, PhoneError

MIX: dict[str, float] = {"plain": 0.4, "media": 0.3, "substitution": 0.15, "interrupt": 0.15}


def parse_mix(text: str) -> dict[str, float]:
    """`--mix media=1` or `plain=2,media=1`: the turn kinds to play and their weights. Raises
    ValueError saying what is wrong (an unknown kind, a weight that is not a positive number)."""
    mix: dict[str, float] = {}
    for part in filter(None, (item.strip() for item in text.split(","))):
        kind, sep, weight = (piece.strip() for piece in part.partition("="))
        if kind not in MIX:
            raise ValueError(f"--mix: unknown turn kind {kind!r}; kinds: {', '.join(MIX)}")
        if kind in mix:
            raise ValueError(f"--mix: {kind!r} is given twice")
        try:
            value = float(weight) if sep else 1.0
        except ValueError:
            raise ValueError(f"--mix: the weight of {kind!r} must be a number, not {weight!r}") from None
        if not value > 0 or value == float("inf"):
            raise ValueError(f"--mix: the weight of {kind!r} must be a positive number, not {weight!r}")
        mix[kind] = value
    if not mix:
        raise ValueError(f"--mix needs at least one KIND=WEIGHT; kinds: {', '.join(MIX)}")
    return mix

PLAIN_QUESTIONS = (
    "how tall is mount everest", "what is a haiku", "how do I say thank you in japanese",
    "what is the capital of australia", "how many legs does a spider have", "what does a barista do",
    "why is the sky blue", "what is the boiling point of water on a mountain",
)
TITLES = ("lara croft", "the matrix", "inception", "interstellar", "the godfather", "parasite",
          "pulp fiction", "spirited away")
STORY_TOPICS = ("a lighthouse keeper", "a lost cat", "the first train", "a dragon who loved tea")


@dataclass(frozen=True)
class LoadOptions:
    sessions: int = 100
    turns: int = 5
    latency_ms: float = 0.0  # the scripted model's delay before each reply's first token
    think_ms: float = 1000.0  # mean pause before each turn (0.5x..1.5x, uniform); 0: back to back (saturation)
    sessions_per_phone: int = 1  # sessions sharing one PhoneClient connection (1: a phone per user)
    turn_timeout_s: float = 60.0  # past this (plus model time) the turn's events count as lost
    seed: int = 1
    session_prefix: str = "bench"
    mix: tuple[tuple[str, float], ...] = tuple(MIX.items())  # turn kinds and their weights (--mix)


@dataclass
class TurnPlan:
    kind: str
    text: str
    think_s: float


@dataclass
class SessionPlan:
    start_after_s: float  # sessions arrive spread over one think time, not all in the first instant
    turns: list[TurnPlan]


def plan_sessions(options: LoadOptions) -> list[SessionPlan]:
    """Every session's turns, decided up front from the seed so runs compare."""
    rng = random.Random(options.seed)
    kinds, weights = [kind for kind, _ in options.mix], [weight for _, weight in options.mix]
    think_s = options.think_ms / 1000
    plans = []
    for _ in range(options.sessions):
        turns = []
        for _ in range(options.turns):
            kind = rng.choices(kinds, weights)[0]
            think = rng.uniform(0.5, 1.5) * think_s
            turns.append(TurnPlan(kind, _utterance(kind, rng), think))
        plans.append(SessionPlan(rng.uniform(0, think_s), turns))
    return plans


def warmup_plan() -> list[SessionPlan]:
    """One session that plays every kind once: loads what loads lazily before the baseline."""
    rng = random.Random(0)
    return [SessionPlan(0.0, [TurnPlan(kind, _utterance(kind, rng), 0.0) for kind in MIX])]


def _utterance(kind: str, rng: random.Random) -> str:
    if kind == "plain":
        return rng.choice(PLAIN_QUESTIONS)
    if kind == "media":
        return f"{rng.choice(TITLES)} film"
    if kind == "substitution":
        return f"search {rng.choice(TITLES)}"
    return f"tell me a long story about {rng.choice(STORY_TOPICS)}"


def check_answer(kind: str, finals: list[str]) -> str:
    """'' when the glasses showed what this kind of turn must show; else what went wrong."""
    last = finals[-1] if finals else ""
    if kind == "plain":
        ok = last.startswith("Sure. Here is a short answer")
    elif kind in ("media", "substitution"):
        # a search's first line; not "tool error: …" nor "tool media_search is still running …"
        found = last.removeprefix("Here is what I found:").strip()
        ok = last.startswith("Here is what I found:") and "nothing found" not in last and not found.startswith("tool ")
    else:
        ok = last == "OK, stopped."
    return "" if ok else f"{kind} turn ended with {last[:80]!r}"


@dataclass
class LoadResult:
    """Raw samples; bench.report turns them into figures."""

    overhead_s: dict[str, list[float]] = field(default_factory=dict)  # by kind (interrupts excluded)
    per_call_s: list[float] = field(default_factory=list)  # a turn's overhead / its model calls
    first_display_s: list[float] = field(default_factory=list)
    events_sent: int = 0
    events_done: int = 0
    turns_done: int = 0
    lost: int = 0
    model_calls: int = 0
    errors: Tally = field(default_factory=Tally)
    started_at: float = 0.0
    finished_at: float = 0.0
    resends: int = 0
    busy: int = 0
    said: dict[str, list[str]] = field(default_factory=dict)  # session -> its acked texts, in order (--chaos)

    @property
    def duration_s(self) -> float:
        return max(self.finished_at - self.started_at, 1e-9)


def phone_count(sessions: int, options: LoadOptions) -> int:
    """Phone connections for `sessions`: `sessions_per_phone` share one."""
    return max(1, math.ceil(sessions / max(1, options.sessions_per_phone)))


def phone_context(phones: int) -> zmq.Context:
    """A ZeroMQ context with room for `phones` phones: each a socket and its monitor's pair."""
    context = zmq.Context()
    context.set(zmq.MAX_SOCKETS, 4 * phones + 64)
    return context


@contextlib.contextmanager
def _quiet_collector():
    """The phones are the bench's, not the runtime's: this process's full collections (passes over
    every phone's state) would delay reading the runtime's answers and so inflate the runtime's
    time per turn. Its start-up objects are frozen and young collections run less often while the
    load runs."""
    threshold = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(max(threshold[0], 20_000), threshold[1], threshold[2])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


class LoadDriver:
    def __init__(self, endpoint: str, options: LoadOptions, *, zmq_context: zmq.Context | None = None):
        self.endpoint = endpoint
        self.options = options
        self.result = LoadResult()
        self._latency_s = options.latency_ms / 1000
        self._context = zmq_context

    async def run(self, *, plans: list[SessionPlan] | None = None, progress: Callable[[LoadResult], None] | None = None,
                  progress_every_s: float = 1.0) -> LoadResult:
        """Play `plans` (default: `plan_sessions(options)`) to the end; never raises for a lost
        event or a wrong answer - those are counted - only when no phone can connect."""
        options, result = self.options, self.result
        plans = plans if plans is not None else plan_sessions(options)
        phones = phone_count(len(plans), options)
        context = self._context
        if context is None:
            context = phone_context(phones)
        try:
            clients = [PhoneClient(self.endpoint, client_id=f"bench{i}", zmq_context=context) for i in range(phones)]
            async with contextlib.AsyncExitStack() as stack:
                for client in clients:  # each in this task: a client's task group lives in it
                    await stack.enter_async_context(client)
                stack.enter_context(_quiet_collector())
                result.started_at = anyio.current_time()
                async with anyio.create_task_group() as tg:
                    if progress is not None:
                        tg.start_soon(self._report_progress, progress, progress_every_s)
                    async with anyio.create_task_group() as sessions:
                        for index, plan in enumerate(plans):
                            sessions.start_soon(self._session, clients[index % phones], f"{options.session_prefix}-{index}", plan)
                    result.finished_at = anyio.current_time()
                    tg.cancel_scope.cancel()
                result.resends = sum(c.resends for c in clients)
                result.busy = sum(c.busy_received for c in clients)
        finally:
            if self._context is None:
                context.destroy(linger=0)
        return result

    async def _report_progress(self, progress: Callable[[LoadResult], None], every_s: float) -> None:
        while True:
            await anyio.sleep(every_s)
            self.result.finished_at = anyio.current_time()
            progress(self.result)

    async def _session(self, phone: PhoneClient, session: str, plan: SessionPlan) -> None:
        await anyio.sleep(plan.start_after_s)
        async with phone.events(session) as incoming:
            if not await self._exchange(phone, incoming, session, TurnPlan("start", "", 0.0)):
                # never opened (no token): its turns would only be refused as another phone's
                skipped = sum(2 if turn.kind == "interrupt" else 1 for turn in plan.turns)
                self.result.lost += skipped
                for _ in range(skipped):
                    self.result.errors.add("session_not_opened", f"session {session}: its opening event was lost; turns not played")
                return
            for turn in plan.turns:
                await anyio.sleep(turn.think_s)
                await self._exchange(phone, incoming, session, turn)

    async def _send_events(self, sends, session: str, turn: TurnPlan) -> set[str]:
        """The ids of the turn's events the runtime took; one it did not is counted as lost."""
        result = self.result
        waiting: set[str] = set()
        for index, send in enumerate(sends):
            result.events_sent += 1
            try:
                waiting.add(await send())
                if index == 0 and turn.text:
                    result.said.setdefault(session, []).append(turn.text)
            except DeliveryFailed as exc:
                result.lost += 1
                result.errors.add("delivery_failed", str(exc))
            except EventRejected as exc:
                result.lost += 1
                result.errors.add(f"rejected:{exc.code}", exc.detail)
            except PhoneError as exc:
                result.lost += 1
                result.errors.add("phone_error", str(exc))
        return waiting

    async def _exchange(self, phone: PhoneClient, incoming, session: str, turn: TurnPlan) -> bool:
        """One turn: send its events, read until a TurnDone has covered every one of them.
        False when one of them was lost."""
        result = self.result
        started = anyio.current_time()
        sends = [lambda: phone.start(session)] if turn.kind == "start" else [lambda: phone.send_text(session, turn.text)]
        if turn.kind == "interrupt":
            sends.append(lambda: phone.interrupt(session))
        waiting = await self._send_events(sends, session, turn)
        if not waiting:
            return False  # nothing reached the runtime: counted as lost above
        first_display = None
        finals: list[str] = []
        model_calls = 0
        with anyio.move_on_after(self.options.turn_timeout_s + 8 * self._latency_s):
            while waiting:
                env = await incoming.receive()
                body = env.body
                if isinstance(body, p.Display):
                    # a "thinking…" line (session.first_feedback_ms) is no display of the answer
                    if body.text and body.kind == "answer" and first_display is None:
                        first_display = anyio.current_time()
                    if body.final:
                        finals.append(body.text)
                elif isinstance(body, p.TurnDone):
                    if body.final and not finals:  # its final display was lost with a bridge
                        finals.append(body.final)
                    model_calls += body.model_calls
                    covered = waiting.intersection(body.event_ids)
                    result.events_done += len(covered)
                    waiting -= covered
                elif isinstance(body, p.ErrorReply):
                    result.errors.add(f"error_reply:{body.code}", body.detail)
        finished = anyio.current_time()
        result.model_calls += model_calls
        if waiting:
            result.lost += len(waiting)
            result.errors.add("turn_timeout", f"session {session}: no TurnDone for {turn.kind} {turn.text!r}")
            return False
        if turn.kind == "start":
            return True
        result.turns_done += 1
        wrong = check_answer(turn.kind, finals)
        if wrong:
            result.errors.add("wrong_answer", f"session {session}: {wrong}")
        if turn.kind == "interrupt":
            return True  # its length is set by when "stop" came, not by the runtime
        model_s = model_calls * self._latency_s
        result.overhead_s.setdefault(turn.kind, []).append(finished - started - model_s)
        if model_calls:
            result.per_call_s.append((finished - started - model_s) / model_calls)
        if first_display is not None:
            # every model call of these turns precedes the answer text (tool calls show nothing)
            result.first_display_s.append(first_display - started - model_s)
        return True
