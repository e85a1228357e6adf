"""Issue 34 / seed 003: placeholders only when urgent. A slow call nobody interrupted keeps its
turn waiting, with a progress line on the glasses, and a clarification said meanwhile ("только за
последний месяц") joins the task's batch: the model's next request has the call's result and the
clarification together - through the real SessionActor, LLMWorker and a toolset stand-in."""
from __future__ import annotations

import anyio

import protocol as p
from harness import inproc_system, until
from llm.scripted import ScriptedBackend
from test_interruptions import ScenarioToolsets, assert_every_call_paired, finals, scenario_model

CLARIFICATION = "только за последний месяц"


def search_model(messages: list[p.ChatMessage]) -> str:
    said = "\n".join(m.content for m in messages[-3:])
    if "anna@example.com" in said and CLARIFICATION in said:
        return "Письма Анны за последний месяц: 3."
    return scenario_model(messages)


async def test_a_clarification_said_while_a_slow_search_runs_joins_its_batch(tmp_path):
    backend = ScriptedBackend(reply_fn=search_model)
    async with inproc_system(tmp_path, backend=backend, stand_ins={"toolsets": ScenarioToolsets},
                             execute_substituted_calls=True, tool_progress_after_s=0.2) as system:
        tools, glasses = system.actors["toolsets"], system.actors["glasses"]
        await system.deliver("s", "write an email to Anna", event_id="e1")
        await tools.started["contacts_search"].wait()
        # the glasses say it is still working, with no answer yet
        await until(lambda: any(isinstance(m, p.Display) and m.kind == "progress" for m in glasses.shown.get("s", [])))
        await system.deliver("s", CLARIFICATION, event_id="e2")
        await until(lambda: system.queued("s"))
        tools.release["contacts_search"].set()
        shown = await glasses.wait_event_done("s", "e2")

        done = [m for m in shown if isinstance(m, p.TurnDone)]
        assert [d.event_ids for d in done] == [["e1", "e2"]], "the clarification started a turn of its own"
        assert finals(shown) == ["Письма Анны за последний месяц: 3."]
        request = next(c for c in backend.calls if any(CLARIFICATION in m.content for m in c))
        assert request[-2].role == "tool" and "anna@example.com" in request[-2].content
        assert CLARIFICATION in request[-1].content
        history = await system.history("s")
        assert not any("NOT available yet" in m["content"] for m in history), "a placeholder was recorded"
        assert_every_call_paired(history)
