"""Issue 34 / seed 003: placeholders only when urgent. A slow call nobody interrupted keeps its
turn waiting, with a progress line on the glasses, and a clarification said meanwhile ("только за
последний месяц") joins the task's batch: the model's next request has the call's result and the
clarification together - through the real SessionActor, LLMWorker and a toolset stand-in."""
from __future__ import annotations

import re

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


async def test_a_plain_command_said_during_a_slow_search_is_carried_out_at_the_safe_point(tmp_path):
    """Issue 50: "включи Матрицу" said while the model waits on a slow search joins the batch and is
    played there (a reflex, its calls recorded), and the model's answer says so; it was answered by
    the model with no play."""
    def model(messages):
        if "was already carried out" in messages[-1].content:  # told of the play: the earlier request's answer
            email = re.search(r"\S+@\S+", next(m.content for m in reversed(messages) if "@" in m.content)).group(0)
            return f"Письмо Анне ({email}) готово к отправке."  # in the language of the user's last words
        return scenario_model(messages)

    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, stand_ins={"toolsets": ScenarioToolsets},
                             execute_substituted_calls=True) as system:
        tools, glasses = system.actors["toolsets"], system.actors["glasses"]
        await system.deliver("s", "write an email to Anna", event_id="e1")
        await tools.started["contacts_search"].wait()
        await system.deliver("s", "включи Матрицу", event_id="e2")
        await until(lambda: system.queued("s"))
        tools.release["contacts_search"].set()
        shown = await glasses.wait_event_done("s", "e2")
        history = await system.history("s")
    calls = [m["content"].split("TOOL_CALL: ", 1)[1] for m in history if "TOOL_CALL: " in m["content"]]
    assert "media_play|matrix-1999" in calls, calls
    assert [d.event_ids for d in shown if isinstance(d, p.TurnDone)] == [["e1", "e2"]]
    answer = finals(shown)[-1]
    assert answer == "Письмо Анне (anna@example.com) готово к отправке. Включаю «Матрица».", answer  # the play said too
    assert_every_call_paired(history)
