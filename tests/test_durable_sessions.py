"""Conversations that last (issue 14), through the real actors: the journal brings sessions back
after a restart, timers due meanwhile fire once, resent events do not run twice, a cut turn is
continued, and the prompt always fits the model's context."""
import json
import subprocess
import sys
from pathlib import Path

import anyio
import msgspec

import protocol as p
from core.resume import RESTART_NOTICE
from core.fold import FOLD_LINE
from llm.profiles import ProfileConfig
from llm.scripted import ScriptedBackend
from tests.harness import inproc_system, override, until

REPO = Path(__file__).resolve().parent.parent


def _user_texts(messages) -> list[str]:
    return [m.content for m in messages if m.role == "user"]


async def test_a_timer_due_while_the_runtime_was_down_fires_once_labelled_late(tmp_path, manual_clock):
    clock = manual_clock

    def model(messages):
        last = messages[-1]
        if last.role == "tool":
            return "timer noted"
        if "remind me" in last.content:
            return "TOOL_CALL: timers_set|in 5 minutes; tea"
        if "Timer fired" in last.content:
            return "Reminder: tea is ready"
        return "ok"

    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, clock=clock, execute_substituted_calls=True) as system:
        await system.turn("tea", "remind me about tea in 5 minutes")
    clock.advance(600)  # the runtime is down when the timer comes due
    async with inproc_system(tmp_path, backend=backend, clock=clock, execute_substituted_calls=True) as system:
        glasses = system.actors["glasses"]
        shown = await glasses.wait_turns("tea", 1)  # the firing, shown by a reflex (core.reflex)
        assert [m.text for m in shown if isinstance(m, p.Display) and m.final] == [
            "⏰ Reminder: tea (late: the server was down)"]
        fired = [m["content"] for m in await system.history("tea") if "Timer fired" in m["content"]]
        assert len(fired) == 1 and "late" in fired[0], fired
    calls = len(backend.calls)
    async with inproc_system(tmp_path, backend=backend, clock=clock, execute_substituted_calls=True) as system:
        await system.turn("tea", "thanks")  # loads the session: a timer due again would fire before this is done
        history = await system.history("tea")
    assert len(backend.calls) == calls + 1, "a timer fires once, not again at the next start"
    assert sum("Timer fired" in m["content"] for m in history) == 1


async def test_an_event_resent_after_a_restart_is_not_run_twice(tmp_path):
    backend = ScriptedBackend()
    async with inproc_system(tmp_path, backend=backend) as system:
        reply = await system.deliver("d1", "hello there", event_id="ev-1")
        assert isinstance(reply, p.EventAccepted) and not reply.duplicate
        await system.actors["glasses"].wait_event_done("d1", "ev-1")
    calls = len(backend.calls)
    async with inproc_system(tmp_path, backend=backend) as system:
        reply = await system.deliver("d1", "hello there", event_id="ev-1")  # the phone never saw the ack
        assert isinstance(reply, p.EventAccepted) and reply.duplicate
        await system.turn("d1", "and then?")  # after the resend: had it been run, it would have been first
        assert len(backend.calls) == calls + 1
        assert _user_texts_dicts(await system.history("d1")) == ["[User said] hello there", "[User said] and then?"]


async def test_a_finished_event_sent_again_is_answered_with_its_answer_and_a_turn_done(tmp_path):
    """What a phone asks after a reconnect (the TurnDone may have died with the bridge): told
    again, not run again; an event still being worked on is not told before it is done."""
    backend = ScriptedBackend()
    async with inproc_system(tmp_path, backend=backend) as system:
        glasses = system.actors["glasses"]
        await system.turn("again", "what is a haiku", timeout=10)
        first = [m for m in glasses.shown["again"] if isinstance(m, p.TurnDone)][0]
        calls = len(backend.calls)
        reply = await system.deliver("again", "what is a haiku", event_id=first.event_ids[0])
        assert isinstance(reply, p.EventAccepted) and reply.duplicate
        with anyio.fail_after(5):
            while sum(isinstance(m, p.TurnDone) for m in glasses.shown["again"]) < 2:
                await glasses.changed.wait()
        told = glasses.shown["again"][-2:]
        assert isinstance(told[0], p.Display) and told[0].final and told[0].text == "Sure. Here is a short answer to: what is a haiku"
        assert told[1].event_ids == first.event_ids and len(backend.calls) == calls

    slow = ScriptedBackend(first_token_delay_s=0.5)
    async with inproc_system(tmp_path / "slow", backend=slow) as system:
        glasses = system.actors["glasses"]
        assert isinstance(await system.deliver("busy", "what is a haiku", event_id="ev-busy"), p.EventAccepted)
        reply = await system.deliver("busy", "what is a haiku", event_id="ev-busy")  # while it runs
        assert isinstance(reply, p.EventAccepted) and reply.duplicate
        await glasses.wait_event_done("busy", "ev-busy")
        await system.turn("busy", "and then?")  # a second TurnDone for the resend would have come before this one's
        assert sum(isinstance(m, p.TurnDone) and "ev-busy" in m.event_ids for m in glasses.shown["busy"]) == 1


async def test_a_resend_of_an_event_not_yet_on_disk_is_acked_only_once_it_is(tmp_path):
    """Under load a phone resends before the first copy's commit: acking the copy at once
    promised an event that a crash before the commit lost (the phone stopped resending; found
    killing the session actor in a 10,000-session run)."""
    import sqlite3
    import time

    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        await system.turn("r", "hello")
        unstored = system.actors["session"].store._unstored  # noqa: SLF001 - the events waiting for their commit
        replies: dict[str, tuple[p.Msg, float]] = {}

        async def deliver(copy: str) -> None:
            reply = await system.deliver("r", "what is a haiku", event_id="ev-resent")
            replies[copy] = (reply, time.monotonic())

        holder = sqlite3.connect(tmp_path / "porfiry.sqlite3", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the file: the journal's commit waits
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(deliver, "first")
                await until(lambda: ("r", "ev-resent") in unstored)  # the first copy waits for the commit
                tg.start_soon(deliver, "resend")
                await until(lambda: len(unstored[("r", "ev-resent")].then) == 2)  # the resend waits for the same one
                assert not replies, "nothing is acked before the event is on disk"
                released = time.monotonic()
                holder.execute("ROLLBACK")
        finally:
            holder.close()
        (first, _), (resend, resend_at) = replies["first"], replies["resend"]
        assert isinstance(first, p.EventAccepted) and not first.duplicate, first
        assert isinstance(resend, p.EventAccepted) and resend.duplicate and resend_at >= released, resend
        await system.actors["glasses"].wait_event_done("r", "ev-resent")
        assert _user_texts_dicts(await system.history("r"))[-1] == "[User said] what is a haiku"


async def test_every_session_a_restart_cut_comes_back_and_finishes_its_turn(tmp_path):
    """More sessions than one chunk of the read-back (`SessionActor.bring_back_chunk`), read back
    while the actor already serves: none is skipped, and a new session is answered meanwhile."""
    from actors.session import SessionActor

    sessions = [f"cut-{i}" for i in range(2 * SessionActor.bring_back_chunk + 7)]
    async with inproc_system(tmp_path, backend=ScriptedBackend(first_token_delay_s=60)) as system:
        for sid in sessions:
            assert isinstance(await system.deliver(sid, "what is a haiku", event_id=f"ev-{sid}"), p.EventAccepted)
    # the runtime stopped with every turn cut in the middle of its model call
    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        glasses = system.actors["glasses"]
        await system.turn("newcomer", "hello", timeout=20)
        for sid in sessions:
            await glasses.wait_event_done(sid, f"ev-{sid}", timeout=20)
        for sid in sessions[::20]:
            assert _user_texts_dicts(await system.history(sid)) == ["[User said] what is a haiku"], sid


async def _gone_from_memory(system, sid: str) -> bool:
    return not (await system.info(sid)).resident


def _user_texts_dicts(history) -> list[str]:
    return [m["content"] for m in history if m["role"] == "user"]


async def test_a_turn_cut_during_the_reply_goes_on_after_the_restart_as_if_the_reply_had_not_been_lost(tmp_path):
    slow = ScriptedBackend(first_token_delay_s=60)
    async with inproc_system(tmp_path, backend=slow) as system:
        reply = await system.deliver("cut", "what is a haiku", event_id="ev-cut")
        assert isinstance(reply, p.EventAccepted)
        await until(lambda: slow.calls)
    backend = ScriptedBackend(first_token_delay_s=0.3)
    async with inproc_system(tmp_path, backend=backend) as system:
        # the phone, connected again, asks about the event while the continued turn runs: not
        # told "done" before it is (an empty answer and a TurnDone, then the real one)
        reply = await system.deliver("cut", "what is a haiku", event_id="ev-cut")
        assert isinstance(reply, p.EventAccepted) and reply.duplicate
        shown = await system.actors["glasses"].wait_event_done("cut", "ev-cut")
        assert [m.text for m in shown if isinstance(m, p.Display) and m.final] == ["Sure. Here is a short answer to: what is a haiku"], shown
        # the same request again: no notice (one made the model redo the turn its own way)
        assert _user_texts(backend.calls[0]) == ["[User said] what is a haiku"]
        history = await system.history("cut")
        await system.turn("cut", "and then?")  # a second TurnDone for the resend would have come before this one's
        assert sum(isinstance(m, p.TurnDone) and "ev-cut" in m.event_ids for m in system.actors["glasses"].shown["cut"]) == 1
    assert not any(RESTART_NOTICE in m["content"] for m in history)


async def test_a_300_turn_conversation_always_fits_a_2048_token_context_and_history_search_finds_turn_3(tmp_path, inproc_config):
    profiles = {**inproc_config.llm.profiles, "test": ProfileConfig(kind="scripted", context_tokens=2048)}
    config = override(inproc_config, llm={"profiles": profiles})
    words = {3: "aquamarine"}

    def model(messages):
        last = messages[-1]
        if last.role == "tool":
            return "Found it: " + next((line for line in last.content.splitlines() if "fact 3:" in line), "nothing")
        if "which code word" in last.content:
            return "TOOL_CALL: history_search|fact 3"
        return "Noted. " + "I will remember that fact carefully and bring it up when it matters. " * 3

    backend = ScriptedBackend(reply_fn=model, context_tokens=2048)
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        for k in range(1, 301):
            await system.turn("long", f"fact {k}: the code word is {words.get(k, f'word{k}')}; please keep it in mind", timeout=20)
        shown = await system.turn("long", "which code word did I give in fact 3?", timeout=20)
        history = await system.history("long")
    finals = [m.text for m in system.actors["glasses"].shown["long"] if isinstance(m, p.Display) and m.final]
    assert not [(i, t) for i, t in enumerate(finals) if "unavailable" in t], "no request was refused for its length"
    assert len(finals) == 301
    last_request = backend.calls[-2]
    fold_line = next(m.content for m in last_request if m.content.startswith("[") and "earlier turns are not shown" in m.content)
    assert fold_line == FOLD_LINE.format(n=int(fold_line[1:].split()[0]))
    assert "fact 3:" not in " ".join(m.content for m in last_request), "turn 3 itself is folded out of the prompt"
    assert "aquamarine" in [m for m in history if m["role"] == "tool"][-1]["content"]
    assert "aquamarine" in [m.text for m in shown if isinstance(m, p.Display) and m.final][-1]
    assert sum(m["role"] == "user" for m in history) == 301, "nothing was deleted from the history by folding"


def _cli(config_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "run.py", "--config", str(config_path), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


async def test_sessions_export_and_delete_do_what_they_say(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        await system.turn("mine", "Меня зовут Аглая")
        await system.turn("other", "hello")
    config_path = tmp_path / "porfiry.json"
    config_path.write_bytes(msgspec.json.encode({"storage": {"path": str(tmp_path / "porfiry.sqlite3")},
                                                  "topology": {"ipc_dir": str(tmp_path / "ipc")}}))  # no runtime there
    listed = _cli(config_path, "sessions", "list")
    assert listed.returncode == 0 and "mine" in listed.stdout and "other" in listed.stdout
    exported = _cli(config_path, "sessions", "export", "mine")
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(e["role"], e["content"]) for e in lines][0] == ("user", "[User said] Меня зовут Аглая")
    assert all(e["session"] == "mine" and e["time"] for e in lines) and len(lines) == 2
    deleted = _cli(config_path, "sessions", "delete", "mine")
    assert deleted.returncode == 0, deleted.stderr
    assert "mine" not in _cli(config_path, "sessions", "list").stdout
    gone = _cli(config_path, "sessions", "export", "mine")
    assert gone.returncode == 1 and "no session 'mine'" in gone.stderr
    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        assert not (await system.info("mine")).exists
        assert (await system.info("other")).exists


async def test_an_event_the_journal_cannot_store_is_a_clear_error_not_an_ack(tmp_path):
    import sqlite3

    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        await system.turn("s", "hello")
        with sqlite3.connect(tmp_path / "porfiry.sqlite3") as conn:
            conn.execute("DROP TABLE events")  # the disk lost the table under the runtime
        reply = await system.deliver("s", "are you there", event_id="ev-unstored")
        assert isinstance(reply, p.ErrorReply) and reply.code == "storage", reply
        assert "ev-unstored" in reply.detail and "events" in reply.detail


async def test_a_request_that_died_with_a_restarted_llm_worker_is_asked_again(tmp_path):
    slow_then_fast = ScriptedBackend(first_token_delay_s=0.5)
    async with inproc_system(tmp_path, backend=slow_then_fast) as system:
        reply = await system.deliver("w", "what is a haiku", event_id="ev-w")
        assert isinstance(reply, p.EventAccepted)
        await until(lambda: slow_then_fast.calls)
        # What a restarted worker says first: a later start time than the one the session knew.
        system.client.tell("session", p.ModelInfo(profile="test", context_tokens=0, worker_started=4e9))
        shown = await system.actors["glasses"].wait_event_done("w", "ev-w")
        assert [m.text for m in shown if isinstance(m, p.Display) and m.final] == ["Sure. Here is a short answer to: what is a haiku"]
        assert len(slow_then_fast.calls) == 2, "asked again of the new worker, once"


async def test_retention_days_expires_old_sessions_at_start(tmp_path, manual_clock, inproc_config):
    clock = manual_clock
    config = override(inproc_config, storage={"retention_days": 1.0})
    async with inproc_system(tmp_path, backend=ScriptedBackend(), clock=clock, config=config) as system:
        await system.turn("old", "hello from the past")
    clock.advance(2 * 86400)
    async with inproc_system(tmp_path, backend=ScriptedBackend(), clock=clock, config=config) as system:
        await system.turn("new", "hello from today")
        assert not (await system.info("old")).exists, "idle longer than storage.retention_days: deleted"
        assert (await system.info("new")).exists


async def test_a_session_deleted_while_the_runtime_holds_it_is_gone_from_memory_and_disk(tmp_path):
    from storage import journal as j

    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        await system.turn("mine", "Меня зовут Аглая")
        reply = await system.client.ask("session", p.SessionDelete(), session="mine")
        assert isinstance(reply, p.Ok) and reply.detail == "deleted"
        assert not (await system.info("mine")).exists
        await system.turn("mine", "hello again")
        assert _user_texts_dicts(await system.history("mine")) == ["[User said] hello again"]
    conn = j.connect(tmp_path / "porfiry.sqlite3")
    assert [e["content"] for e in j.session_entries(conn, "mine") if e["role"] == "user"] == ["[User said] hello again"]


async def test_a_call_interrupted_before_a_restart_gets_its_lost_result_and_the_session_can_leave_memory(tmp_path, manual_clock):
    """The journal as a crash left it: a call answered "still running" (the user said stop), its
    real result never came - the task waiting for it died with the process."""
    from core.trajectory import CUT_BY_RESTART, Trajectory
    from storage import journal as j

    clock = manual_clock
    conn = j.connect(tmp_path / "porfiry.sqlite3")
    trajectory = Trajectory(sink=lambda entry: j.insert_entry(conn, "i", clock(), entry))
    for event_id, kind, text in (("ev-find", "user_text", "find lara croft"), ("ev-stop", "user_interrupt", "stop")):
        j.insert_event(conn, "i", "", p.Event(event_id=event_id, kind=kind, source="user", channel="speech", content=text), clock())
        if kind == "user_text":
            trajectory.record_events(p.Event(event_id=event_id, kind=kind, source="user", channel="speech", content=text))
            trajectory.record_assistant("TOOL_CALL: media_search|lara croft", "c1", "media_search")
            trajectory.record_placeholder("c1")
        else:
            trajectory.record_events(p.Event(event_id=event_id, kind=kind, source="user", channel="speech", content=text))
            trajectory.record_assistant("OK, stopped.")
    j.mark_done(conn, "i", ["ev-find", "ev-stop"])
    conn.close()

    async with inproc_system(tmp_path, backend=ScriptedBackend(), clock=clock, idle_session_ttl_s=600) as system:
        await system.turn("i", "hello")
        history = await system.history("i")
        lost = [m for m in history if m["role"] == "user" and CUT_BY_RESTART.format(tool="media_search") in m["content"]]
        assert len(lost) == 1 and "late result" in lost[0]["content"], history
        clock.advance(700)
        await until(lambda: _gone_from_memory(system, "i"))


async def test_with_the_journal_off_sessions_work_in_memory_and_nothing_reaches_the_disk(tmp_path, inproc_config):
    """`storage.journal = false` (what `bench` compares the journal against): the runtime answers
    as usual, writes no session journal, and a restart forgets the conversation."""
    config = override(inproc_config, storage={"journal": False})
    backend = ScriptedBackend()
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        reply = await system.deliver("m1", "hello there", event_id="ev-1")
        assert isinstance(reply, p.EventAccepted)
        await system.actors["glasses"].wait_event_done("m1", "ev-1")
        assert _user_texts_dicts(await system.history("m1")) == ["[User said] hello there"]
    from storage.journal import connect, list_sessions
    journal = tmp_path / "porfiry.sqlite3"
    if journal.exists():  # the bridge's ownership table may share the file; no session is in it
        assert list_sessions(connect(journal)) == []
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        assert await system.history("m1") == []
