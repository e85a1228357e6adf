"""Tracing: OpenTelemetry spans of a turn, its model calls and its tool calls, across processes.

The spans (docs/tracing.md): `turn`, the root of a trace (its session, turn id, outcome, model
calls); in it `model_call` (profile, tokens, time to the first piece) and `tool_call` (tool,
outcome); and, where the request is served, `llm.generate` (the LLMWorker) and `tool.execute`
(the toolset's executor actor), children of the span the request was made in. That parent
travels as a W3C traceparent in the request's Envelope (`Envelope.trace`, set by
`actors.base.Endpoint` on every request made while a span is current), so a trace follows the
request into another process as it does into another actor of this one.

The hooks are context managers the Conversation and the actors enter at those boundaries; a span
is current in the task that entered it, so a task started meanwhile (a tool call's own task)
makes its requests inside it too.

Off (`tracing.enabled = false`, the default) nothing of the OpenTelemetry SDK is imported (the
API may be: the mcp package imports it for spans of its own): `tracer` is `OFF`, whose hooks all
hand back one shared span that does nothing, and the message path reads one module attribute
(`ON`). `configure` switches tracing on, once per process (`core/otel.py`: the SDK, sampling, a
batch exporter over OTLP/HTTP).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from core.permanent import PermanentFailure

if TYPE_CHECKING:
    from core.config import TracingConfig

# how a model call, a tool call or a served request ended, as its span says: done, failed,
# cancelled (a stop, an interrupt), refused by the session's guard (core.intent, a tool call), or
# moved to the background (a tool call whose result comes later)
SpanOutcome = Literal["ok", "error", "cancelled", "refused", "background"]


class NullSpan:
    """Every span's interface, doing nothing: what every hook returns while tracing is off."""

    __slots__ = ()

    def __enter__(self) -> "NullSpan":
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def end(self, outcome: str, model_calls: int) -> None:
        """A turn's: it ended so (protocol.TurnOutcome), after this many model calls."""

    def watching(self, probe: Any) -> Any:
        """A model call's: the probe `_stream` feeds (core.observe), this span's view added."""
        return probe

    def outcome(self, outcome: SpanOutcome) -> None:
        """How a tool call or a served request ended."""

    def usage(self, reply: Any) -> None:
        """A served model request's: the profile and tokens its LLMDone says; it ended well."""


NULL = NullSpan()


class Off:
    """The tracer while tracing is off."""

    __slots__ = ()

    def turn(self, session: str, turn_id: str, parallel: bool = False) -> NullSpan:
        return NULL

    def model_call(self, step: int) -> NullSpan:
        return NULL

    def tool_call(self, tool: str, call_id: str) -> NullSpan:
        return NULL

    def serve(self, name: str, parent: Any, tool: str = "") -> NullSpan:
        return NULL

    def traceparent(self) -> str:
        return ""

    def shutdown(self) -> None:
        pass


OFF = Off()
ON = False  # the one check the message path makes
tracer: Any = OFF  # Off, or core.otel.OtelTracer once `configure` switched tracing on


def configure(settings: "TracingConfig", process: str, exporter: Any = None) -> None:
    """Switch tracing on in this process when `settings.enabled`; the first call decides (the
    next actor of a process group changes nothing). `process` names this process in every
    span's resource. `exporter`: a span exporter to hand each span to as it ends, instead of the
    batches over OTLP/HTTP (tests)."""
    global ON, tracer
    if ON or not (settings.enabled or exporter is not None):
        return
    try:
        from core.otel import OtelTracer
    except ImportError as exc:
        raise PermanentFailure(f"tracing.enabled needs OpenTelemetry: pip install -e '.[tracing]' ({exc})") from None
    tracer, ON = OtelTracer(settings, process, exporter), True


def reset() -> None:
    """Tracing off again, the spans still held exported first (tests; at a process's exit the
    SDK exports them itself)."""
    global ON, tracer
    previous, tracer, ON = tracer, OFF, False
    previous.shutdown()
