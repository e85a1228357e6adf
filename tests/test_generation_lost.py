"""A generation lost with its LLM worker mid-answer (core.conversation.GenerationLost): the half
answer is wiped from the glasses and the step asked again, once; lost twice, the turn ends with a
clear message. The real-process case (a SIGKILLed worker) is in test_hardening_process."""
from contextlib import asynccontextmanager

import anyio
import msgspec

import protocol as p
from core.inprocess import InProcessPorts
from core.budget import default_catalog
from core.clock import ManualClock
from core.config import load_config
from core.conversation import Conversation, GenerationLost, SessionSettings
from core.skills import SkillRepository
from core.toolsets import ToolsetRegistry
from llm.scripted import ScriptedBackend


class LosingPorts(InProcessPorts):
    """The first `lose` generations die after their first word, as with a killed worker."""

    def __init__(self, lose: int, **kwargs):
        super().__init__(**kwargs)
        self.lose = lose

    @asynccontextmanager
    async def generate(self, session, messages, tools, max_tokens, arg_choices=None):
        if self.lose:
            self.lose -= 1

            async def half():
                yield "Sure. "
                raise GenerationLost("the model restarted in the middle of its answer")

            yield half()
            return
        async with super().generate(session, messages, tools, max_tokens, arg_choices) as pieces:
            yield pieces


async def _turn(lose: int) -> list[p.Msg]:
    config = load_config(None, env={})
    ports = LosingPorts(lose, repo=SkillRepository(config.builtin_skill_dirs(), None), provider=None, backend=ScriptedBackend())
    async with anyio.create_task_group() as tasks:
        settings = SessionSettings(registry=ToolsetRegistry(default_catalog()), ports=ports, spawn=tasks.start_soon,
                                   config=msgspec.structs.replace(config.session, frame=False), clock=ManualClock(1_773_500_400.0))
        conversation = Conversation("lost", settings)
        conversation.submit(p.Event(event_id="e1", kind="user_text", source="user", channel="speech", content="what is a haiku"))
        with anyio.fail_after(10):
            await ports.turn_done.wait()
        tasks.cancel_scope.cancel()
    return ports.shown


async def test_a_lost_generation_is_wiped_and_asked_again_once():
    shown = await _turn(lose=1)
    displays = [m for m in shown if isinstance(m, p.Display)]
    assert [d.text for d in displays if d.clear] == [""], "the half answer is wiped"
    assert displays[-1].final and displays[-1].text == "Sure. Here is a short answer to: what is a haiku"
    assert shown[-1].model_calls == 2


async def test_lost_twice_the_turn_ends_saying_so():
    shown = await _turn(lose=2)
    final = [m for m in shown if isinstance(m, p.Display) and m.final][-1]
    assert final.text.startswith("The model is unavailable: it restarted twice in the middle of its answer")
    assert isinstance(shown[-1], p.TurnDone)
