"""Issue 52: the glasses' state comes from the phone, and the clients show the truth.

Through the real GlassesBridge over tcp, with the golden frames of docs/protocol-frames sent as a
bridge written in another language would send them (a bare ZeroMQ DEALER), a PhoneClient, `say`
run in process, and a scripted model."""
from __future__ import annotations

import io

import anyio
import msgspec
import pytest
import zmq

import protocol as p
from actors.glasses import GlassesBridge
from core import user_texts
from harness import inproc_system, until
from llm.scripted import ScriptedBackend
from phone.client import PhoneClient
from phone.console import Screen
from phone.credentials import SessionTokens
from tests.test_world import Jobs, finals, phone_config, world_model
from tools.golden_frames import FRAMES_DIR


def _dealer(endpoint: str):
    """A bare DEALER, as a Kotlin or Swift bridge has: frames in, frames out, nothing of ours."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, b"kotlin-bridge/1")
    sock.setsockopt(zmq.RCVTIMEO, 10_000)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    codec = p.Codec()

    def exchange(frame: bytes, until_type: type, event_id: str = "") -> list[p.Msg]:
        """Send one frame; what comes back until a message of `until_type` (a TurnDone: covering `event_id`)."""
        sock.send(frame)
        got = []
        while not got or not isinstance(got[-1], until_type) or event_id and event_id not in got[-1].event_ids:
            got.append(codec.decode(sock.recv()).body)
        return got
    return sock, exchange


def _frame(name: str, **changes) -> bytes:
    """A golden frame, or (with changes to its body) one built from its JSON as another bridge would."""
    if not changes:
        return (FRAMES_DIR / f"{name}.msgpack").read_bytes()
    data = msgspec.json.decode((FRAMES_DIR / f"{name}.json").read_bytes())
    data["body"].update(changes)
    return msgspec.msgpack.encode(data)


async def test_golden_frames_drive_the_real_bridge_and_an_unknown_glasses_state_is_a_clear_error(tmp_path):
    backend = ScriptedBackend(reply_fn=world_model)
    config = phone_config(tmp_path)
    async with inproc_system(tmp_path, backend=backend, config=config, stand_ins={"glasses": GlassesBridge}) as system:
        world = system.actors["session"].world
        sock, exchange = _dealer(config.phone.endpoint)
        try:
            opened = await anyio.to_thread.run_sync(exchange, _frame("SessionStart"), p.Ack)
            assert opened[-1].event_id == "e-0001"
            off = await anyio.to_thread.run_sync(exchange, _frame("GlassesState"), p.Ack)
            assert off[-1].event_id == "e-0003" and world.of("s1").glasses_on is False, "the golden frame: glasses off"
            bad = await anyio.to_thread.run_sync(exchange, _frame("GlassesState", event_id="e-0010", state="dim"), p.ErrorReply)
            assert bad[-1].code == "decode:invalid" and bad[-1].detail.endswith("`$.body.state`; expected one of 'on', 'off'"), bad[-1]
            assert world.of("s1").glasses_on is False, "an unknown state changes nothing"
            # while off, the answer to a webhook is kept; back on, it is shown once
            event = p.Event(event_id="hook-1", kind="channel", source="webhook", channel="ci", content="build 7 green",
                            data={"sender": "ci"})
            assert isinstance(await system.client.ask("session", p.DeliverEvent(event=event), session="s1"), p.EventAccepted)
            await until(lambda: world.of("s1").notes.unread())
            back = await anyio.to_thread.run_sync(exchange, _frame("GlassesState", event_id="e-0011", state="on"), p.TurnDone, "e-0011")
            shown = [m.text for m in back if isinstance(m, p.Display) and m.final]
            assert shown == ["New message: build 7 green"], back
            asked = await anyio.to_thread.run_sync(exchange, _frame("UserText"), p.TurnDone, "e-0004")
            assert [m.text for m in asked if isinstance(m, p.Display) and m.final][-1].startswith("Сейчас ")
        finally:
            sock.close()
        async with PhoneClient(config.phone.endpoint, client_id="phone-a") as phone:
            with pytest.raises(ValueError, match="'on' or 'off', not 'dim'"):
                await phone.glasses("s2", "dim")
            assert phone.pending == 0, "nothing was sent"


def _stuck_model(messages: list[p.ChatMessage]) -> str:
    """A model that never answers: it calls a tool at every step until the steps run out."""
    return "TOOL_CALL: tasks_list" if len([m for m in messages if m.role == "tool"]) % 2 else "TOOL_CALL: channels_list"


async def test_the_runtimes_own_texts_are_in_the_users_language(tmp_path):
    assert user_texts.table("ru").keys() == user_texts.table("en").keys(), "every text in every language"
    for key in user_texts.table("en"):
        en, ru = user_texts.table("en")[key], user_texts.table("ru")[key]
        assert sorted(msgspec.json.encode(f).decode() for f in _fields(en)) == sorted(
            msgspec.json.encode(f).decode() for f in _fields(ru)), key
    backend = ScriptedBackend(reply_fn=_stuck_model)
    async with inproc_system(tmp_path, backend=backend, max_steps=2, reflexes=False) as system:
        assert finals(await system.turn("ru", "что сейчас запущено?")) == [user_texts.text("gave_up", "ru")]
        assert finals(await system.turn("en", "what runs now?")) == ["Sorry, I could not finish that; please ask again."]


def _fields(template: str) -> list[str]:
    import string

    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


async def test_say_prints_its_own_end_and_an_interrupt_says_what_goes_on(tmp_path):
    from phone.say import say

    slow: list[anyio.Event] = []

    async def sleep(seconds: float) -> None:  # a long answer's first token: the test knows it is being made
        if seconds >= 30 and slow:
            slow[-1].set()
        await anyio.sleep(seconds)

    backend = ScriptedBackend(reply_fn=world_model, sleep=sleep)
    config = phone_config(tmp_path)
    async with inproc_system(tmp_path, backend=backend, config=config, tool_background_after_s=0,
                             stand_ins={"glasses": GlassesBridge, "toolsets": Jobs}) as system:
        tokens = SessionTokens()  # one user, two `say` processes: the same session
        connect = lambda: PhoneClient(config.phone.endpoint, client_id="anna", tokens=tokens)  # noqa: E731
        first, stop = io.StringIO(), io.StringIO()
        assert await say(connect, "s", "hello", timeout=10, out=io.StringIO()) == 0
        backend.first_token_delay_s = 30  # the next answer takes long: the stop comes first
        slow.append(anyio.Event())
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: say(connect, "s", "tell me a long story", timeout=20, out=first))
            await slow[-1].wait()
            backend.first_token_delay_s = 0
            assert await say(connect, "s", "stop it", timeout=20, out=stop) == 0
        assert "[cancelled]" in first.getvalue(), first.getvalue()
        assert "[cancelled]" not in stop.getvalue(), "the stop's own say prints only its answer: " + stop.getvalue()
        # an urgent event cuts a generation: nothing goes on, and the TurnDone says so
        shown: list[p.Msg] = []
        async with PhoneClient(config.phone.endpoint, client_id="anna", tokens=tokens) as phone, phone.events("s") as incoming:
            async def collect():
                async for env in incoming:
                    shown.append(env.body)
            tg_scope = anyio.CancelScope()

            async def run_collect():
                with tg_scope:
                    await collect()
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_collect)
                backend.first_token_delay_s = 30
                slow.append(anyio.Event())
                await phone.send_text("s", "another long story")
                await slow[-1].wait()
                backend.first_token_delay_s = 0
                urgent = p.Event(event_id="hook-9", kind="channel", source="webhook", channel="alerts", content="server down",
                                 data={"sender": "pager", "urgency": "high"})
                await system.client.ask("session", p.DeliverEvent(event=urgent), session="s")
                await until(lambda: any(isinstance(m, p.TurnDone) and m.outcome == "interrupted" for m in shown))
                tg_scope.cancel()
        cut = next(m for m in shown if isinstance(m, p.TurnDone) and m.outcome == "interrupted")
        assert cut.going_on == [], "a dropped generation leaves nothing running"
        assert Screen(live=False).render(cut) == "[interrupted: a more urgent event came first]\n"
        going = p.TurnDone(turn_id="t", outcome="interrupted", going_on=["3f2a9c"])
        assert Screen(live=False).render(going) == "[interrupted: task 3f2a9c goes on; its result comes later]\n"


async def test_the_phone_console_takes_the_glasses_off_and_shows_what_came_once_when_they_are_back(tmp_path):
    import queue

    from phone.console import run_console

    backend = ScriptedBackend(reply_fn=world_model)
    config = phone_config(tmp_path)
    async with inproc_system(tmp_path, backend=backend, config=config, stand_ins={"glasses": GlassesBridge}) as system:
        world, lines, out = system.actors["session"].world, queue.Queue(), io.StringIO()
        async with PhoneClient(config.phone.endpoint, client_id="anna") as phone, anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_console(phone, "s", read_line=lines.get, out=out))
            await until(lambda: "s" in system.actors["session"].sessions)  # the console's SessionStart
            lines.put("/glasses off\n")
            await until(lambda: "s" in world.sessions and not world.of("s").glasses_on)
            for n, text in enumerate(("deploy 41 failed", "deploy 42 green")):  # two webhooks meanwhile
                event = p.Event(event_id=f"hook-{n}", kind="channel", source="webhook", channel="ci", content=text,
                                data={"sender": "ci"})
                assert isinstance(await system.client.ask("session", p.DeliverEvent(event=event), session="s"), p.EventAccepted)
                await until(lambda: system.actors["session"].sessions["s"].finished(event.event_id))
            assert "deploy" not in out.getvalue(), "nothing shown to glasses that are off"
            lines.put("/glasses on\n")
            await until(lambda: "deploy 42 green" in out.getvalue())
            calls = len(backend.calls)
            lines.put("/glasses off\n")
            await until(lambda: not world.of("s").glasses_on)
            lines.put("/glasses on\n")  # nothing kept this time: nothing shown
            await until(lambda: world.of("s").glasses_on)
            lines.put("/quit\n")
        shown = out.getvalue()
        assert "While you were away:\n• New message: deploy 41 failed\n• New message: deploy 42 green\n" in shown, shown
        assert shown.count("deploy 41 failed") == 1 and shown.count("deploy 42 green") == 1, "each message once"
        assert world.of("s").glasses_on is False and len(backend.calls) == calls, "/quit: the glasses are off, no model turn"
