"""`/metrics` in the Prometheus text format: counters from the session actor's facts, gauges from
the supervisor's status and the glasses bridge's counters, read at each scrape.

Runtime time per turn is the turn's wall time minus the time its model calls took (what Porfiry
itself costs); model time is per generation.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

import protocol as p

disable_created_metrics()  # no *_created series: one line per counter is what people grep
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_TURN_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_MODEL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.turns = Counter("porfiry_turns", "Turns finished (a TurnDone sent)", registry=r)
        self.turn_runtime = Histogram("porfiry_turn_runtime_seconds", "Runtime time per turn: wall time minus model time",
                                      buckets=_TURN_BUCKETS, registry=r)
        self.model_time = Histogram("porfiry_model_call_seconds", "Model time per generation", ["outcome"],
                                    buckets=_MODEL_BUCKETS, registry=r)
        self.model_calls = Counter("porfiry_model_calls", "Model calls (generations)", ["outcome"], registry=r)
        self.tool_calls = Counter("porfiry_tool_calls", "Tool calls by tool and outcome", ["tool", "outcome"], registry=r)
        self.events = Counter("porfiry_events", "Events reaching sessions, by strategy", ["strategy"], registry=r)
        self.queue_depth = Gauge("porfiry_session_queue_depth", "Events waiting in sessions (sum over sessions)", registry=r)
        self.sessions = Gauge("porfiry_sessions_in_memory", "Sessions the session actor holds (seen since subscribing, not forgotten)", registry=r)
        self._status: p.SystemStatus | None = None
        self._edge: p.EdgeStats | None = None
        self._admission: p.AdmissionStats | None = None
        r.register(_RuntimeCounters(self))
        self._open_turns: dict[str, tuple[float, float]] = {}  # turn_id -> (start ts, model seconds so far)
        self._queues: dict[str, int] = {}
        self._turn_of_call: dict[str, str] = {}

    def take(self, fact: p.Msg) -> None:
        if isinstance(fact, p.TurnFact):
            if fact.phase == "start":
                self._open_turns[fact.turn_id] = (fact.ts, 0.0)
                if len(self._open_turns) > 10_000:  # turns whose end we never saw (a restart)
                    self._open_turns.pop(next(iter(self._open_turns)))
            else:
                self.turns.inc()
                started, model = self._open_turns.pop(fact.turn_id, (fact.ts, 0.0))
                self.turn_runtime.observe(max(0.0, fact.ts - started - model))
        elif isinstance(fact, p.ModelCallFact):
            self.model_calls.labels(fact.outcome).inc()
            self.model_time.labels(fact.outcome).observe(fact.duration_s)
            if fact.turn_id in self._open_turns:
                started, model = self._open_turns[fact.turn_id]
                self._open_turns[fact.turn_id] = (started, model + fact.duration_s)
        elif isinstance(fact, p.ToolCallFact):
            if fact.outcome != "running":
                # a model can emit any name: only tools that exist become labels (bounded series)
                tool = "unknown" if fact.outcome == "unknown" else fact.tool
                self.tool_calls.labels(tool, fact.outcome).inc()
        elif isinstance(fact, p.EventFact):
            self.events.labels(fact.strategy or fact.verdict).inc()
        elif isinstance(fact, p.StateFact):
            self._queues[fact.session] = len(fact.queue)
            self.queue_depth.set(sum(self._queues.values()))
            self.sessions.set(len(self._queues))
        elif isinstance(fact, p.SessionGoneFact):
            for sid in fact.sessions:
                self._queues.pop(sid, None)
            self.queue_depth.set(sum(self._queues.values()))
            self.sessions.set(len(self._queues))

    def seed(self, sessions: list[p.SessionSummary]) -> None:
        """The session actor's sessions when the subscription began (it may have restarted)."""
        self._queues = {s.session: s.queued for s in sessions}
        self.queue_depth.set(sum(self._queues.values()))
        self.sessions.set(len(self._queues))

    def take_status(self, status: p.Msg | None, edge: p.Msg | None, admission: p.Msg | None = None) -> None:
        """What the supervisor, the bridge and the session actor answered at this scrape (None:
        they did not)."""
        self._status = status if isinstance(status, p.SystemStatus) else None
        self._edge = edge if isinstance(edge, p.EdgeStats) else None
        self._admission = admission if isinstance(admission, p.AdmissionStats) else None

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _RuntimeCounters:
    """Counters the runtime keeps itself (restarts, busy answers, dropped frames) and inbox
    depths, exposed as read at the last scrape; absent when their actor did not answer."""

    def __init__(self, metrics: Metrics):
        self.metrics = metrics

    def collect(self):
        status, edge, admission = self.metrics._status, self.metrics._edge, self.metrics._admission  # noqa: SLF001 - one module
        if status is not None:
            restarts = CounterMetricFamily("porfiry_actor_restarts", "Restarts of each actor since the supervisor started", labels=["actor"])
            depth = GaugeMetricFamily("porfiry_actor_inbox_depth", "Messages waiting in an actor's inbox", labels=["actor"])
            up = GaugeMetricFamily("porfiry_actor_up", "1 when the actor is running", labels=["actor"])
            for row in status.actors:
                restarts.add_metric([row.name], row.restarts)
                depth.add_metric([row.name], row.inbox_depth)
                up.add_metric([row.name], 1 if row.alive else 0)
            yield from (restarts, depth, up)
        if edge is not None:
            yield CounterMetricFamily("porfiry_phone_busy_answers", "Busy answers to phones since the bridge started", value=edge.busy)
            yield CounterMetricFamily("porfiry_phone_dropped_frames", "Phone frames dropped (undecodable, malformed, unsendable) since the bridge started",
                                      value=edge.dropped_frames)
        if admission is not None:
            yield GaugeMetricFamily("porfiry_turns_running", "Turns the session actor runs now", value=admission.running)
            yield GaugeMetricFamily("porfiry_turns_waiting", "Turns waiting for turn admission to start (their events acked)", value=admission.waiting)
            yield GaugeMetricFamily("porfiry_turn_admission_limit", "Turns turn admission lets run at once now", value=admission.limit)
            yield CounterMetricFamily("porfiry_turns_admission_waited", "Turns that waited to start since the session actor started",
                                      value=admission.waited)
