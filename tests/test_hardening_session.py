"""Issue 17, findings 6 and 7, through the real SessionActor and LLMWorker over real sockets:
a model that streams forever is stopped, and a history too large for one request fails at once."""
import anyio

import protocol as p
from harness import inproc_system, override, until
from llm.base import Generation


class EndlessModel:
    """Streams "la " every 20 ms and never finishes: the attack of finding 6."""

    name = "endless"

    def __init__(self) -> None:
        self.closed = anyio.Event()
        self.calls = 0

    def stream(self, messages, *, tools, max_tokens, arg_choices=None) -> Generation:
        self.calls += 1

        async def produce(generation):
            try:
                while True:
                    await anyio.sleep(0.02)  # the model's pace: the behaviour under test
                    yield "la "
            finally:
                self.closed.set()

        return Generation(produce)

    async def health(self):
        return True, "endless"

    async def aclose(self):
        pass


async def test_a_model_that_streams_forever_is_stopped_with_a_clear_message(tmp_path):
    model = EndlessModel()
    async with inproc_system(tmp_path, backend=model, llm_turn_timeout_s=1.0) as system:
        shown = await system.turn("s", "sing", timeout=10)
        partials = [m for m in shown if isinstance(m, p.Display) and not m.final]
        final = [m for m in shown if isinstance(m, p.Display) and m.final][-1]
        assert partials, "it did stream"
        assert final.text == "The model is unavailable: the model did not finish its answer within 1 s"
        assert isinstance(shown[-1], p.TurnDone)
        with anyio.fail_after(5):
            await model.closed.wait()  # the worker stopped generating too


class EchoLength:
    name = "echo"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def stream(self, messages, *, tools, max_tokens, arg_choices=None) -> Generation:
        self.sizes.append(sum(len(m.content) for m in messages))

        async def produce(generation):
            yield "ok"

        return Generation(produce)

    async def health(self):
        return True, "echo"

    async def aclose(self):
        pass


async def test_a_history_past_the_message_limit_fails_at_once_and_clearly(tmp_path, inproc_config):
    """Finding 7 at a smaller scale: two user messages each under the limit make every later
    Generate larger than it. Before, every turn then waited llm_timeout_s (60 s) and failed."""
    config = override(inproc_config, protocol={"max_message_bytes": 64 * 1024})
    model = EchoLength()
    async with inproc_system(tmp_path, backend=model, config=config) as system:
        first = await system.turn("s", "a" * 40_000, timeout=10)
        assert [m.text for m in first if isinstance(m, p.Display) and m.final] == ["ok"]
        with anyio.fail_after(10):  # llm_timeout_s is still 60 s: no waiting for it
            for _ in range(2):
                shown = await system.turn("s", "b" * 40_000, timeout=10)
                final = [m for m in shown if isinstance(m, p.Display) and m.final][-1]
                assert final.text.startswith("The model is unavailable: this conversation is too long for one model request")
                assert "exceeds protocol.max_message_bytes (65536)" in final.text
                assert isinstance(shown[-1], p.TurnDone)
    assert len(model.sizes) == 1, "no oversized request reached the model"


async def test_a_bridge_that_falls_behind_pushes_back_and_the_session_actor_survives(tmp_path):
    from harness import RecordingGlasses
    from llm.scripted import ScriptedBackend

    gate = anyio.Event()

    class Stalled(RecordingGlasses):
        async def handle(self, msg):
            await gate.wait()
            await super().handle(msg)

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=lambda messages: "ok"),
                             stand_ins={"glasses": Stalled}) as system:
        session = system.actors["session"]
        session._link("glasses")._send_buffer = 50  # a small link queue: the backlog is reached sooner
        sessions = [f"s{i}" for i in range(1500)]
        with anyio.fail_after(60):
            for sid in sessions:  # each turn sends a final display and a TurnDone to the stalled bridge
                assert isinstance(await system.deliver(sid, "hi"), p.EventAccepted)
            await until(lambda: session._backlog)
            assert (await system.info("s0")).exists, "the session actor still answers while held back"
            gate.set()
            glasses = system.actors["glasses"]
            for sid in sessions:
                shown = await glasses.wait_turns(sid, 1, timeout=60)
                assert isinstance(shown[-1], p.TurnDone) and shown[-2] == p.Display(turn_id=shown[-1].turn_id, text="ok", final=True)
        assert not session._backlog
