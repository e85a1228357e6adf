"""Event-driven sessions (SPEC E1-E10) through the real SessionActor, with a model and a tool
whose timing the test controls."""
import anyio

import protocol as p
from actors.base import Actor, Inbound
from harness import inproc_system, until
from llm.scripted import ScriptedBackend


class SlowToolsets(Actor):
    """Stands in for the MediaExecutor (the ToolsetSupervisor still serves the catalog): every
    tool blocks until the test releases it, and ignores ToolCancel (the worst case: a tool that
    cannot stop)."""

    name = "media"

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.answered = anyio.Event()
        self.cancels: list[str] = []

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.ToolInvoke):
            self.spawn(self._slow, msg, body)
        elif isinstance(body, p.ToolCancel):
            self.cancels.append(body.call_id)

    async def _slow(self, msg: Inbound, body: p.ToolInvoke) -> None:
        self.started.set()
        await self.release.wait()
        msg.reply(self, p.ToolOutcome(call_id=body.call_id, ok=True, text=f"slow result for {body.args.get('query', '')}"))
        self.answered.set()


def model(messages):
    last = messages[-1]
    text = last.content
    if last.role == "tool":
        return f"answer after {last.name}"
    if "[User said] search" in text and "Unprocessed" not in text:
        return "TOOL_CALL: media_search|lara"
    if "get_current_time" not in messages[0].content:
        return "no core tools?"
    if "который час" in text and not any(m.role == "tool" for m in messages):
        return "TOOL_CALL: get_current_time"
    if "story" in text:
        return "once upon a time " * 40
    return "noted: " + " | ".join(line for line in text.splitlines() if line.startswith("[") or line.startswith("Above"))


def assert_every_call_paired(history):
    for index, message in enumerate(history):
        if message["role"] == "assistant" and "TOOL_CALL:" in message["content"]:
            assert history[index + 1]["role"] == "tool", history
        if message["role"] == "tool":
            assert "TOOL_CALL:" in history[index - 1]["content"], history
    calls = sum(1 for m in history if m["role"] == "assistant" and "TOOL_CALL:" in m["content"])
    assert calls == sum(1 for m in history if m["role"] == "tool")


async def test_stop_mid_generation_discards_the_partial_answer(tmp_path):
    backend = ScriptedBackend(reply_fn=model, token_delay_s=0.02)
    async with inproc_system(tmp_path, backend=backend) as system:
        glasses = system.actors["glasses"]
        await system.deliver("s", "tell me a story", event_id="e1")
        await until(lambda: any(isinstance(m, p.Display) and "once upon" in m.text for m in glasses.shown.get("s", [])))
        await system.deliver("s", "стоп", event_id="e2")
        shown = await glasses.wait_event_done("s", "e2")
        assert any(isinstance(m, p.Display) and m.clear for m in shown), "glasses were not cleared"
        history = await system.history("s")
        assert not any("once upon" in m["content"] for m in history), "partial output was stored"
        # The next model call saw the interrupt together with the original request.
        last_request = backend.calls[-1]
        assert "стоп" in last_request[-1].content
        assert any("story" in m.content for m in last_request[1:-1])
        final = [m for m in shown if isinstance(m, p.Display) and m.final][-1]
        assert final.text.startswith("noted:")
        assert_every_call_paired(history)


async def test_stop_during_slow_tool_cancels_it_and_says_so(tmp_path):
    """CANCEL (E3): the running tool gets a cancel signal, its call's result says "cancelled by the
    user", and whatever the tool answers afterwards never enters the history."""
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), stand_ins={"media": SlowToolsets},
                             execute_substituted_calls=True, tool_background_after_s=0) as system:
        slow = system.actors["media"]
        await system.deliver("s", "search lara", event_id="e1")
        await slow.started.wait()
        await system.deliver("s", "", kind="user_interrupt", event_id="e2")
        shown = await system.actors["glasses"].wait_event_done("s", "e2")
        history = await system.history("s")
        tool_msgs = [m for m in history if m["role"] == "tool"]
        assert tool_msgs[0]["content"] == "cancelled by the user"
        assert slow.cancels, "the running tool got no cancel signal"
        assert any(isinstance(m, p.Display) and m.final for m in shown)
        slow.release.set()  # this stand-in ignores the cancel and answers anyway
        await slow.answered.wait()  # in one process the answer reaches the session as it is sent
        history = await system.history("s")
        assert not any("slow result" in m["content"] for m in history)
        assert not (await system.info("s")).busy, "a cancelled tool's answer started a turn"
        assert_every_call_paired(history)


async def test_events_during_a_step_are_batched_with_labels(tmp_path):
    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, stand_ins={"media": SlowToolsets},
                             execute_substituted_calls=True, tool_background_after_s=0) as system:
        slow = system.actors["media"]
        await system.deliver("s", "search lara", event_id="e1")
        await slow.started.wait()
        await system.deliver("s", "and also the sequel", event_id="e2")
        await system.deliver("s", "in Russian please", event_id="e3")
        late = p.Event(event_id="e4", kind="tool_result", source="media_play", channel="tool", content="playback started")
        await system.client.ask("session", p.DeliverEvent(event=late), session="s")
        slow.release.set()
        shown = await system.actors["glasses"].wait_event_done("s", "e4")
        batched = [m for m in backend.calls[-1] if "Unprocessed event" in m.content][0].content
        for label in ("[Unprocessed event 1/3]", "[Unprocessed event 2/3]", "[Unprocessed event 3/3]"):
            assert label in batched
        assert "Above are 3 unprocessed events" in batched and "covers all of them" in batched
        assert "Tool result from media_play" in batched
        # One model call covered all three, after the tool's own result.
        calls_with_batch = [c for c in backend.calls if any("Unprocessed event" in m.content for m in c)]
        assert len(calls_with_batch) == 1
        assert_every_call_paired(await system.history("s"))


async def test_time_question_during_slow_tool_is_answered_in_parallel(tmp_path):
    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, stand_ins={"media": SlowToolsets},
                             execute_substituted_calls=True, tool_background_after_s=0) as system:
        slow = system.actors["media"]
        await system.deliver("s", "search lara", event_id="e1")
        await slow.started.wait()
        await system.deliver("s", "который час?", event_id="e2")
        shown = await system.actors["glasses"].wait_event_done("s", "e2")
        assert not slow.release.is_set(), "the parallel answer waited for the tool"
        answer = [m for m in shown if isinstance(m, p.Display) and m.final][-1].text
        assert answer == "answer after get_current_time"
        slow.release.set()
        await system.actors["glasses"].wait_event_done("s", "e1")
        history = await system.history("s")
        assert any("handled in parallel with the main task" in m["content"].lower() for m in history)
        assert_every_call_paired(history)


async def test_timer_fires_into_idle_and_busy_sessions(tmp_path, manual_clock):
    clock = manual_clock

    def timer_model(messages):
        text = messages[-1].content
        if messages[-1].role == "tool":
            return "timer noted"
        if "remind me" in text:
            return "TOOL_CALL: timers_set|in 5 minutes; tea is ready"
        if "Timer fired" in text:
            return "Reminder: tea is ready"
        return "ok"

    backend = ScriptedBackend(reply_fn=timer_model)
    async with inproc_system(tmp_path, backend=backend, clock=clock, execute_substituted_calls=True) as system:
        glasses = system.actors["glasses"]
        await system.turn("idle", "remind me in 5 minutes that tea is ready")
        await system.turn("busy", "remind me in 5 minutes that tea is ready")
        clock.advance(301)
        await until(lambda: any(isinstance(m, p.Display) and m.final and m.text == "⏰ Reminder: tea is ready" for m in glasses.shown["idle"]))
        await until(lambda: any(isinstance(m, p.Display) and m.final and m.text == "⏰ Reminder: tea is ready" for m in glasses.shown["busy"]))
        for session in ("idle", "busy"):
            history = await system.history(session)
            assert any("tea is ready" in m["content"] and "Timer fired" in m["content"] for m in history), history
            assert_every_call_paired(history)


async def test_a_session_idle_past_its_ttl_leaves_memory_unless_a_timer_waits_and_comes_back_from_disk(tmp_path, manual_clock):
    """A long-running server must not keep every session it ever saw in memory
    (session.idle_session_ttl_s); the journal keeps them all (seed 000 §8)."""
    clock = manual_clock

    def reminder_model(messages):
        if messages[-1].role == "tool":
            return "timer noted"
        return "TOOL_CALL: timers_set|in 30 minutes; tea" if "remind me" in messages[-1].content else "ok"

    backend = ScriptedBackend(reply_fn=reminder_model)
    async with inproc_system(tmp_path, backend=backend, clock=clock, idle_session_ttl_s=600,
                            execute_substituted_calls=True) as system:
        await system.turn("chatty", "hello")
        await system.turn("reminded", "remind me about tea in 30 minutes")
        clock.advance(599)
        session = system.actors["session"]
        await until(lambda: not session.wheel._wake.is_set())  # noqa: SLF001 - the timer wheel has looked at the new time
        assert (await system.info("chatty")).resident, "not yet: 599 s idle"
        clock.advance(61)  # idle sessions are looked for once a minute
        await until(lambda: _gone(system, "chatty"))
        on_disk = await system.info("chatty")
        assert on_disk.exists and [m["content"] for m in on_disk.history if m["role"] == "user"] == ["[User said] hello"]
        await until(lambda: system.actors["glasses"].forgotten == ["chatty"])  # the bridge forgets too
        reminded = await system.info("reminded")
        assert reminded.resident, "a session with a timer set is kept in memory"
        assert any(m["role"] == "tool" and m["name"] == "timers_set" for m in reminded.history)
        # The session's next event brings it back from the journal with its whole history.
        await system.turn("chatty", "hello again")
        info = await system.info("chatty")
        assert info.resident and info.restored
        assert [m["content"] for m in info.history if m["role"] == "user"] == ["[User said] hello", "[User said] hello again"]
        assert [m.content for m in backend.calls[-1] if m.role == "user"] == ["[User said] hello", "[User said] hello again"]


async def _gone(system, session):
    return not (await system.info(session)).resident


async def test_each_sessions_timer_fires_at_its_own_time_and_a_cancelled_one_never(tmp_path, manual_clock):
    clock = manual_clock

    def timer_model(messages):
        last = messages[-1]
        if last.role == "tool":
            return "timer noted"
        if "Timer fired" in last.content:
            return "Reminder: " + last.content.rsplit("]", 1)[-1].strip()
        if "remind me in" in last.content:
            minutes = last.content.split("remind me in", 1)[1].split()[0]
            return f"TOOL_CALL: timers_set|in {minutes} minutes; {minutes} minutes passed"
        if "forget it" in last.content:
            return "TOOL_CALL: timers_cancel|all"
        return "ok"

    def reminders(glasses, session):
        return [m.text for m in glasses.shown.get(session, []) if isinstance(m, p.Display) and m.final and m.text.startswith("⏰ Reminder")]  # a reflex shows a firing (core.reflex)

    backend = ScriptedBackend(reply_fn=timer_model)
    async with inproc_system(tmp_path, backend=backend, clock=clock, execute_substituted_calls=True) as system:
        glasses = system.actors["glasses"]
        for index in range(20):  # sessions without timers: the wheel must not need them
            await system.turn(f"quiet-{index}", "hello")
        await system.turn("soon", "remind me in 5")
        await system.turn("later", "remind me in 10")
        await system.turn("cancelled", "remind me in 7")
        await system.turn("cancelled", "forget it")
        clock.advance(301)
        await until(lambda: reminders(glasses, "soon"))
        assert reminders(glasses, "later") == [] and reminders(glasses, "cancelled") == []
        clock.advance(300)
        await until(lambda: reminders(glasses, "later"))
        # "cancelled"'s timer would have come due before "later"'s: fired, it would be running now
        cancelled = system.actors["session"].sessions["cancelled"]
        assert not cancelled.running and not cancelled.queue and not len(cancelled.timers)
        assert reminders(glasses, "soon") == ["⏰ Reminder: 5 minutes passed"]
        assert reminders(glasses, "later") == ["⏰ Reminder: 10 minutes passed"]
        assert reminders(glasses, "cancelled") == []
        assert not any("Timer fired" in m["content"] for m in await system.history("cancelled"))
