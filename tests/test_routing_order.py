"""Issue 34: events are routed and batched in the order they arrived, whatever decides their
strategy - through the real SessionActor and LLMWorker, with the model router on and a router
model that answers about the first event later than about the second."""
from __future__ import annotations

import anyio

import protocol as p
from harness import inproc_system, until
from llm.scripted import ScriptedBackend
from test_interruptions import ScenarioToolsets, scenario_model

ROUTER_QUESTION = "Answer with exactly one word"


class SlowOnFirst(ScriptedBackend):
    """The router's answer about FIRST waits until the one about SECOND is out: classifications
    finish in the other order than the events came."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.second_answered = anyio.Event()

    async def _produce(self, generation, messages, max_tokens):
        about = messages[0].content if ROUTER_QUESTION in messages[0].content else ""
        if "FIRST" in about:
            await self.second_answered.wait()
        try:
            async for piece in super()._produce(generation, messages, max_tokens):
                yield piece
        finally:
            if "SECOND" in about and "FIRST" not in about:
                self.second_answered.set()


def model(messages: list[p.ChatMessage]) -> str:
    if messages[0].role == "user" and ROUTER_QUESTION in messages[0].content:
        return "queue"
    return scenario_model(messages)


async def test_a_batch_keeps_the_order_the_events_came_in_while_the_model_router_decides(tmp_path):
    backend = SlowOnFirst(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, stand_ins={"toolsets": ScenarioToolsets}, router="model",
                             execute_substituted_calls=True, tool_background_after_s=0) as system:
        tools = system.actors["toolsets"]
        await system.deliver("s", "write an email to Anna", event_id="e1")
        await tools.started["contacts_search"].wait()
        await system.deliver("s", "FIRST: and add Peter to it", event_id="e2")
        await system.deliver("s", "SECOND: sign it with my name", event_id="e3")
        asked = lambda: sum(ROUTER_QUESTION in c[0].content for c in backend.calls)  # noqa: E731
        await until(lambda: asked() == 2)
        await until(lambda: system.queued("s", 2))
        tools.release["contacts_search"].set()
        await system.actors["glasses"].wait_event_done("s", "e3")
        said = "\n".join(m["content"] for m in await system.history("s") if m["role"] == "user")
        assert 0 <= said.find("FIRST") < said.find("SECOND"), said
        request = next(c for c in backend.calls if "SECOND" in str(c) and ROUTER_QUESTION not in c[0].content)
        seen = "\n".join(m.content for m in request)
        assert "FIRST" in seen and seen.find("FIRST") < seen.find("SECOND"), "the batch read SECOND before FIRST"


class VerySlowOnFirst(ScriptedBackend):
    """The router's question about FIRST is never answered (the router gives up after its timeout)."""

    async def _produce(self, generation, messages, max_tokens):
        if ROUTER_QUESTION in messages[0].content and "FIRST" in messages[0].content:
            await anyio.sleep_forever()
        async for piece in super()._produce(generation, messages, max_tokens):
            yield piece


async def test_a_stop_waits_for_no_classifier_and_the_event_before_it_keeps_its_place(tmp_path):
    backend = VerySlowOnFirst(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, stand_ins={"toolsets": ScenarioToolsets}, router="model",
                             router_timeout_s=30, execute_substituted_calls=True, tool_background_after_s=0) as system:
        tools, glasses = system.actors["toolsets"], system.actors["glasses"]
        await system.deliver("s", "write an email to Anna", event_id="e1")
        await tools.started["contacts_search"].wait()
        await system.deliver("s", "FIRST: and add Peter to it", event_id="e2")
        await until(lambda: any("FIRST" in c[0].content for c in backend.calls))
        await system.deliver("s", "стоп", event_id="e3")
        shown = await glasses.wait_event_done("s", "e3", timeout=3)  # not after the router's 30 s
        assert [d.outcome for d in shown if isinstance(d, p.TurnDone) and "e1" in d.event_ids] == ["cancelled"]
        said = "\n".join(m["content"] for m in await system.history("s") if m["role"] == "user")
        assert 0 <= said.find("FIRST") < said.find("стоп"), said
