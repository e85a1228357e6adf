"""OpenTelemetry tracing (core/tracing.py, docs/tracing.md): one user turn is one trace - its turn
span, the model and tool calls in it, and the spans the LLMWorker and the toolset's executor make
for them, in this process over the bus and in another process over OTLP/HTTP; the traceparent
rides in the Envelope without breaking a receiver that does not know it; off, nothing of
OpenTelemetry is even imported."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import msgspec
import pytest

import protocol as p
from core import tracing
from core.config import ConfigError, TracingConfig, load_config, to_json
from harness import inproc_system, override, until
from llm.scripted import ScriptedBackend
from protocol.messages import Message

REPO = Path(__file__).resolve().parent.parent
MEDIA_TURN = "I want to watch a film tonight, find «Брат 2»."  # read_skill, then media_search in the media actor
# the model's path is what is traced here (a reflex would search without it: test_reflex.py)


@pytest.fixture
def spans():
    """Tracing on in this process, every span handed to a list as it ends; off again after."""
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = memory.InMemorySpanExporter()
    tracing.configure(TracingConfig(enabled=True), "test", exporter=exporter)
    yield exporter
    tracing.reset()


def _one(found: list) -> object:
    assert len(found) == 1, found
    return found[0]


async def test_a_turn_with_a_tool_call_is_one_trace_through_the_session_the_model_worker_and_the_media_actor(tmp_path, spans):
    async with inproc_system(tmp_path, backend=ScriptedBackend(), reflexes=False) as system:
        shown = await system.turn("s1", MEDIA_TURN)
    done = shown[-1]
    assert isinstance(done, p.TurnDone) and done.outcome == "done"
    finished = spans.get_finished_spans()
    turn = _one([s for s in finished if s.name == "turn"])
    assert turn.parent is None
    assert dict(turn.attributes) == {"session.id": "s1", "porfiry.turn_id": done.turn_id, "porfiry.parallel": False,
                                     "porfiry.outcome": "done", "porfiry.model_calls": done.model_calls}
    trace_id = turn.context.trace_id
    assert {s.context.trace_id for s in finished} == {trace_id}

    model_calls = [s for s in finished if s.name == "model_call"]
    assert len(model_calls) == done.model_calls >= 2
    assert all(s.parent.span_id == turn.context.span_id for s in model_calls)
    assert all(s.attributes["porfiry.outcome"] == "ok" and s.attributes["porfiry.profile"] == "test"
               and s.attributes["porfiry.ttft_s"] >= 0 and s.attributes["gen_ai.usage.output_tokens"] > 0
               for s in model_calls)
    # served by the LLMWorker, the request's span its parent: the traceparent crossed the bus
    generated = [s for s in finished if s.name == "llm.generate"]
    assert sorted(s.parent.span_id for s in generated) == sorted(s.context.span_id for s in model_calls)

    tool_calls = {s.attributes["gen_ai.tool.name"]: s for s in finished if s.name == "tool_call"}
    assert {"read_skill", "media_search"} <= set(tool_calls)
    assert all(s.parent.span_id == turn.context.span_id and s.attributes["porfiry.outcome"] == "ok"
               for s in tool_calls.values())
    executed = _one([s for s in finished if s.name == "tool.execute"])  # in the media actor
    assert executed.attributes["gen_ai.tool.name"] == "media_search"
    assert executed.attributes["porfiry.outcome"] == "ok"
    assert executed.parent.span_id == tool_calls["media_search"].context.span_id


async def test_a_sample_ratio_of_zero_traces_no_turn_nor_any_call_in_it(tmp_path):
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = memory.InMemorySpanExporter()
    tracing.configure(TracingConfig(enabled=True, sample_ratio=0.0), "test", exporter=exporter)
    try:
        async with inproc_system(tmp_path, backend=ScriptedBackend(), reflexes=False) as system:
            shown = await system.turn("s1", MEDIA_TURN)
    finally:
        tracing.reset()
    assert isinstance(shown[-1], p.TurnDone) and shown[-1].model_calls >= 2
    assert exporter.get_finished_spans() == ()


# ---- across processes, over OTLP/HTTP ------------------------------------------------------------

class _Collector:
    """An OTLP/HTTP receiver on loopback: keeps every span posted to /v1/traces, with the
    resource of the process that sent it."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans: list[dict] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                collector.add(self.path, request)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, path: str, request) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    self.spans.append({
                        "path": path, "name": span.name, "trace": span.trace_id.hex(), "id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(), "pid": resource["process.pid"].int_value,
                        "process": resource["porfiry.process"].string_value,
                        "service": resource["service.name"].string_value,
                    })

    def named(self, name: str) -> list[dict]:
        return [span for span in self.spans if span["name"] == name]


async def test_the_model_workers_spans_from_its_own_process_reach_the_collector_in_the_turns_trace(ipc_config, monkeypatch):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    collector = _Collector()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # batches every 50 ms: the test waits less
    config = override(ipc_config, llm={"profile": "scripted"}, session={"reflexes": False},
                      tracing={"enabled": True, "otlp_endpoint": collector.url, "service_name": "porfiry-test"})
    env = dict(os.environ, PORFIRY_CONFIG_JSON=to_json(config).decode())
    worker = await anyio.open_process([sys.executable, "-m", "actors.host", "llm"], cwd=REPO, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async with inproc_system(config=config, actors=("glasses", "skills", "toolsets", "media", "session")) as system:
            await until(lambda: _answers_ping(system), timeout=60)
            shown = await system.turn("s1", MEDIA_TURN, timeout=30)
            tracing.reset()  # this process's spans: exported now
            await until(lambda: len(collector.named("llm.generate")) >= shown[-1].model_calls, timeout=20)
    finally:
        tracing.reset()
        worker.terminate()
        await worker.wait()
        collector.server.shutdown()
    turn = _one(collector.named("turn"))
    model_calls = collector.named("model_call")
    generated = collector.named("llm.generate")
    assert len(model_calls) == len(generated) == shown[-1].model_calls
    assert {span["trace"] for span in collector.spans} == {turn["trace"]}
    assert {span["pid"] for span in generated} == {worker.pid} != {turn["pid"]}
    assert {span["process"] for span in generated} == {"llm"}
    assert sorted(span["parent"] for span in generated) == sorted(span["id"] for span in model_calls)
    assert {span["path"] for span in collector.spans} == {"/v1/traces"}
    assert {span["service"] for span in collector.spans} == {"porfiry-test"}


async def _answers_ping(system) -> bool:
    with anyio.move_on_after(1):
        try:
            return isinstance(await system.client.ask("llm", p.Ping(), timeout=1), p.Pong)
        except TimeoutError:
            return False
    return False


# ---- off, and the wire ---------------------------------------------------------------------------

OFF_SCRIPT = """
import sys, tempfile
from pathlib import Path
import anyio
from harness import inproc_system
from llm.scripted import ScriptedBackend

async def main():
    async with inproc_system(Path(tempfile.mkdtemp(prefix="pf")), backend=ScriptedBackend(), reflexes=False) as system:
        shown = await system.turn("s1", sys.argv[1])
    print(type(shown[-1]).__name__, shown[-1].model_calls)
    print(",".join(sorted(name for name in sys.modules if name.startswith(tuple(sys.argv[2:])))))

anyio.run(main, backend="trio")
"""


def test_with_tracing_off_a_turn_runs_without_importing_the_opentelemetry_sdk():
    # (the OpenTelemetry API is another matter: the mcp package imports it for its own spans)
    sdk = ("core.otel", "opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto")
    run = subprocess.run([sys.executable, "-c", OFF_SCRIPT, MEDIA_TURN, *sdk], cwd=REPO, capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}"))
    assert run.returncode == 0, run.stderr
    turn, modules = run.stdout.splitlines()[-2:]
    assert turn.startswith("TurnDone ") and int(turn.split()[1]) >= 2
    assert modules == ""


class _EnvelopeBefore(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The Envelope as a receiver built before tracing knows it."""

    body: Message
    id: str
    sender: str = ""
    session: str = ""
    corr: str = ""
    v: int = p.PROTOCOL_VERSION
    ts: float = 0.0


def test_an_envelope_without_a_traceparent_is_what_a_receiver_without_the_field_decodes_and_one_with_it_carries_it():
    codec = p.Codec()
    untraced = codec.encode(p.Envelope(body=p.Ping(), sender="session"))
    before = msgspec.msgpack.decode(untraced, type=_EnvelopeBefore)
    assert before.sender == "session" and isinstance(before.body, p.Ping)
    assert codec.decode(msgspec.msgpack.encode(before)).trace is msgspec.UNSET  # and back
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert codec.decode(codec.encode(p.Envelope(body=p.Ping(), trace=parent))).trace == parent


def test_the_collector_url_is_checked_when_the_config_loads(tmp_path):
    config = tmp_path / "porfiry.toml"
    config.write_text('[tracing]\nenabled = true\notlp_endpoint = "localhost:4318"\n')
    with pytest.raises(ConfigError, match="tracing.otlp_endpoint must be an http:// or https:// URL"):
        load_config(config, env={})
    config.write_text('[tracing]\nsample_ratio = 1.5\n')
    with pytest.raises(ConfigError, match="tracing.sample_ratio"):
        load_config(config, env={})


NO_SDK = """
import runpy, sys
sys.modules["opentelemetry.sdk"] = None  # as if the tracing extra were not installed: importing it fails
sys.argv = ["run.py", *sys.argv[1:]]
runpy.run_path("run.py", run_name="__main__")
"""


def test_tracing_switched_on_without_its_packages_stops_serve_in_one_line(tmp_path, ipc_dir):
    config = tmp_path / "porfiry.toml"
    config.write_text(f'[topology]\nmode = "inproc"\nipc_dir = "{ipc_dir}"\n[storage]\npath = "{tmp_path / "db.sqlite3"}"\n'
                      '[tracing]\nenabled = true\n')
    run = subprocess.run([sys.executable, "-c", NO_SDK, "--config", str(config), "serve"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1].startswith(
        "porfiry: tracing.enabled needs OpenTelemetry: pip install -e '.[tracing]'")
