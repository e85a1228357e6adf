"""Issue 54: a turn the model is slow to start (a local model evaluating its prompt, the frame's
call first) shows what the assistant is doing on the glasses, in the user's language, before any
word of the answer; the answer replaces it."""
from contextlib import asynccontextmanager

import anyio
import msgspec

import protocol as p
from core.budget import default_catalog
from core.clock import ManualClock
from core.config import load_config
from core.conversation import Conversation, SessionSettings
from core.inprocess import InProcessPorts
from core.skills import SkillRepository
from core.toolsets import ToolsetRegistry
from llm.scripted import ScriptedBackend


class SilentModelPorts(InProcessPorts):
    """The model says its first word only once the glasses show something (else never)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.something_shown = anyio.Event()

    def send(self, session: str, body: p.Msg) -> None:
        if isinstance(body, p.Display) and body.text:
            self.something_shown.set()
        super().send(session, body)

    @asynccontextmanager
    async def generate(self, session, messages, tools, max_tokens, arg_choices=None):
        await self.something_shown.wait()
        async with super().generate(session, messages, tools, max_tokens, arg_choices) as pieces:
            yield pieces


async def _turn(words: str, first_feedback_ms: float) -> list[p.Display]:
    config = load_config(None, env={})
    session = msgspec.structs.replace(config.session, frame=False, reflexes=False, first_feedback_ms=first_feedback_ms)
    ports = SilentModelPorts(repo=SkillRepository(config.builtin_skill_dirs(), None), provider=None,
                             backend=ScriptedBackend())
    async with anyio.create_task_group() as tasks:
        settings = SessionSettings(registry=ToolsetRegistry(default_catalog()), ports=ports, spawn=tasks.start_soon,
                                   config=session, clock=ManualClock(1_773_500_400.0))
        Conversation("slow", settings).submit(
            p.Event(event_id="e1", kind="user_text", source="user", channel="speech", content=words))
        with anyio.move_on_after(10):
            await ports.turn_done.wait()
        tasks.cancel_scope.cancel()
    return [m for m in ports.shown if isinstance(m, p.Display)]


async def test_a_slow_model_turn_first_shows_thinking_in_the_users_language_then_the_answer():
    displays = await _turn("расскажи, что такое хайку", first_feedback_ms=5)
    assert displays, "nothing was shown while the model was silent"
    assert displays[0].kind == "progress" and displays[0].text == "думаю…"
    assert displays[-1].final and displays[-1].kind == "answer" and "хайку" in displays[-1].text
    assert [d.text for d in displays].count("думаю…") == 1


async def test_in_english_it_says_thinking():
    displays = await _turn("what is a haiku", first_feedback_ms=5)
    assert displays and displays[0].text == "thinking…"


async def test_with_first_feedback_off_nothing_is_shown_before_the_model_speaks():
    assert await _turn("what is a haiku", first_feedback_ms=0) == []
