"""Tracing on: core.tracing's hooks over the OpenTelemetry SDK. Imported only by
`core.tracing.configure` when `tracing.enabled`, so a runtime with tracing off loads none of it.

One TracerProvider per process, kept here rather than set as OpenTelemetry's global (which can
be set only once, and a test switches tracing on and off). Sampling is decided once per trace,
at its turn: `ParentBased(TraceIdRatioBased(sample_ratio))`, so a model call, a tool call and
the spans other processes make for them follow their turn's decision (the traceparent's flag).
"""
from __future__ import annotations

import os
import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from core.config import TracingConfig

TRACES_PATH = "/v1/traces"
_NO_PARENT = otel_context.Context()  # a turn begins a trace of its own, whichever task started it
_PROPAGATOR = TraceContextTextMapPropagator()


def traces_url(base: str) -> str:
    """`tracing.otlp_endpoint` is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: the traces go
    to its /v1/traces (a URL that already names it is taken as it is)."""
    base = base.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def otlp_exporter(settings: TracingConfig) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if settings.otlp_endpoint:
        return OTLPSpanExporter(endpoint=traces_url(settings.otlp_endpoint))
    # the SDK reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4318
    return OTLPSpanExporter()


class _Span:
    """One open span, current in the task that opened it until it ends (its children, and the
    requests made meanwhile, are its); core.tracing.NullSpan's interface. An exception ends it
    as an error; a cancellation (not an Exception) as cancelled."""

    __slots__ = ("span", "token")

    def __init__(self, span: trace.Span):
        self.span = span
        self.token: object | None = otel_context.attach(trace.set_span_in_context(span))

    def __enter__(self) -> "_Span":
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is not None and self.token is not None:
            if issubclass(kind, Exception):
                self.span.record_exception(exc)
                self.outcome("error")
            else:
                self.outcome("cancelled")
        self.close()

    def outcome(self, outcome: str) -> None:
        self.span.set_attribute("porfiry.outcome", outcome)
        if outcome == "error":
            self.span.set_status(Status(StatusCode.ERROR))

    def usage(self, reply: Any) -> None:
        self.span.set_attributes(_usage(reply))
        self.outcome("ok")

    def close(self) -> None:
        if self.token is None:
            return
        otel_context.detach(self.token)
        self.token = None
        self.span.end()

    def end(self, outcome: str, model_calls: int) -> None:
        """A turn's (_TurnSpan)."""

    def watching(self, probe: Any) -> Any:
        """A model call's (_ModelCallSpan)."""
        return probe


class _TurnSpan(_Span):
    __slots__ = ()

    def end(self, outcome: str, model_calls: int) -> None:
        if self.token is not None:
            self.span.set_attributes({"porfiry.outcome": outcome, "porfiry.model_calls": model_calls})
            self.close()


class _ModelCallSpan(_Span):
    """Also the probe `_stream` feeds (core.observe's interface), passing every piece on: the
    time to the first piece, and the tokens of the reply's LLMDone."""

    __slots__ = ("inner", "started", "first")

    def __init__(self, span: trace.Span):
        super().__init__(span)
        self.inner: Any = None
        self.started = time.perf_counter()
        self.first = -1.0

    def watching(self, probe: Any) -> Any:
        self.inner = probe
        return self

    def piece(self, text: str) -> None:
        if self.first < 0:
            self.first = time.perf_counter() - self.started
            self.span.set_attribute("porfiry.ttft_s", round(self.first, 6))
        self.inner.piece(text)

    def done(self, pieces: object) -> None:
        self.usage(getattr(pieces, "done", None))
        self.inner.done(pieces)


def _usage(reply: Any) -> dict[str, Any]:
    """A model reply's profile and tokens (an LLMDone), when it says them."""
    if reply is None or not hasattr(reply, "prompt_tokens"):
        return {}
    attributes: dict[str, Any] = {"gen_ai.usage.input_tokens": reply.prompt_tokens,
                                  "gen_ai.usage.output_tokens": reply.completion_tokens}
    if getattr(reply, "profile", ""):
        attributes["porfiry.profile"] = reply.profile
    if getattr(reply, "finish_reason", ""):
        attributes["gen_ai.response.finish_reasons"] = [reply.finish_reason]
    return attributes


class OtelTracer:
    """core.tracing's tracer with tracing on."""

    def __init__(self, settings: TracingConfig, process: str, exporter: SpanExporter | None = None):
        resource = Resource.create({"service.name": settings.service_name, "porfiry.process": process,
                                    "process.pid": os.getpid()})
        self.provider = TracerProvider(resource=resource, sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
                                       shutdown_on_exit=True)
        # a test's exporter gets each span as it ends; the collector gets batches, off the event loop's thread
        processor = SimpleSpanProcessor(exporter) if exporter is not None else BatchSpanProcessor(otlp_exporter(settings))
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("porfiry")

    def turn(self, session: str, turn_id: str, parallel: bool = False) -> _TurnSpan:
        return _TurnSpan(self.tracer.start_span("turn", context=_NO_PARENT, attributes={
            "session.id": session, "porfiry.turn_id": turn_id, "porfiry.parallel": parallel}))

    def model_call(self, step: int) -> _ModelCallSpan:
        return _ModelCallSpan(self.tracer.start_span("model_call", kind=SpanKind.CLIENT,
                                                     attributes={"porfiry.step": step}))

    def tool_call(self, tool: str, call_id: str) -> _Span:
        return _Span(self.tracer.start_span("tool_call", kind=SpanKind.CLIENT, attributes={
            "gen_ai.tool.name": tool, "gen_ai.tool.call.id": call_id}))

    def serve(self, name: str, parent: Any, tool: str = "") -> _Span:
        """A span for a request another actor made: `parent` its Envelope's traceparent (none: the
        request belongs to no trace, and gets no span: an invalid one, which records nothing);
        `tool`, the tool a call runs."""
        if not parent:
            return _Span(trace.INVALID_SPAN)
        attributes = {"gen_ai.tool.name": tool} if tool else None
        return _Span(self.tracer.start_span(name, context=_PROPAGATOR.extract({"traceparent": parent}),
                                            kind=SpanKind.SERVER, attributes=attributes))

    def traceparent(self) -> str:
        """The current span's W3C traceparent ("" when no span is current)."""
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier.get("traceparent", "")

    def shutdown(self) -> None:
        self.provider.shutdown()
