"""Issue 34: a request a stop cut is closed at once, through the real actors (SessionActor,
LLMWorker with a slow scripted answer, the GlassesBridge on tcp) and real phone clients: the
`say` that sent it gets its TurnDone (marked cancelled) within 0.5 s of the stop and exits 0,
even when the stop came from another connection (a second `say`); a phone asking about the
cancelled event again is told it was cancelled, not shown a later answer."""
from __future__ import annotations

import time

import anyio

import protocol as p
from actors.glasses import GlassesBridge
from harness import free_endpoint, inproc_system, make_config, override
from llm.scripted import ScriptedBackend
from phone.client import PhoneClient
from phone.credentials import SessionTokens
from phone.say import EXIT_OK, say


def story_model(messages: list[p.ChatMessage]) -> str:
    if "story" in messages[-1].content:
        return " ".join(["and then the dragon flew further on."] * 120)  # about 30 s at 0.05 s a piece
    return "New request: " + messages[-1].content.split("]", 1)[-1].strip()


class Screen:
    """What a `say` prints, with an event set once the story is on screen."""

    def __init__(self) -> None:
        self.text = ""
        self.story_shown = anyio.Event()

    def write(self, text: str) -> None:
        self.text += text
        if "dragon" in text:
            self.story_shown.set()

    def flush(self) -> None:
        pass


class RecordingClient(PhoneClient):
    sent: list[str] = []

    async def send_text(self, session: str, text: str, *, wait: bool = True) -> str:
        event_id = await super().send_text(session, text, wait=wait)
        RecordingClient.sent.append(event_id)
        return event_id


async def test_a_stop_from_a_second_say_closes_the_first_say_within_half_a_second(tmp_path):
    endpoint = free_endpoint()
    config = override(make_config(tmp_path), phone={"endpoint": endpoint})
    backend = ScriptedBackend(reply_fn=story_model, token_delay_s=0.05)
    tokens = SessionTokens()  # what two `say` processes of one phone share (its tokens file)

    def connect() -> PhoneClient:
        return RecordingClient(endpoint, client_id="say", tokens=tokens)

    async with inproc_system(tmp_path, backend=backend, config=config, stand_ins={"glasses": GlassesBridge}):
        first, result, ended = Screen(), {}, anyio.Event()

        async def first_say() -> None:
            result["rc"] = await say(connect, "c1", "tell me a long story", timeout=30, out=first, err=first)
            result["at"] = time.monotonic()
            ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(first_say)
            with anyio.fail_after(10):
                await first.story_shown.wait()
            story_id = RecordingClient.sent[-1]
            async with connect() as second:
                stop_sent = time.monotonic()
                stop = await second.turn("c1", "стоп", timeout=10)
            with anyio.fail_after(10):
                await ended.wait()
        assert result["rc"] == EXIT_OK, first.text
        assert result["at"] - stop_sent <= 0.5
        assert "[cancelled]" in first.text and "flew further on." not in first.text.splitlines()[-1]
        assert stop.final_text == "New request: стоп"

        # A phone that asks about the cancelled event again (its TurnDone lost) hears "cancelled" again.
        async with connect() as again, again.events("c1") as incoming:
            await again._event("c1", p.UserText(event_id=story_id, ts=time.time(), text="tell me a long story"), wait=True)
            with anyio.fail_after(5):
                async for env in incoming:
                    if isinstance(env.body, p.TurnDone) and story_id in env.body.event_ids:
                        assert env.body.outcome == "cancelled"
                        break
                    assert not (isinstance(env.body, p.Display) and env.body.final), env.body


def test_the_screen_says_a_turn_was_cut_after_clearing_its_partial():
    from phone.console import Screen as Console

    live = Console(live=True)
    assert live.render(p.Display(turn_id="t", text="once upon a")).endswith("… once upon a")
    assert live.render(p.Display(turn_id="t", text="", clear=True)) == "\r\x1b[K"
    assert live.render(p.TurnDone(turn_id="t", event_ids=["e1"], outcome="cancelled")) == "[cancelled]\n"
    assert Console(live=False).render(p.TurnDone(turn_id="t", event_ids=["e1"])) == ""
    assert "interrupted" in Console(live=False).render(p.TurnDone(turn_id="t", outcome="interrupted"))
