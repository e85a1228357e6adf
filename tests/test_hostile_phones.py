"""Issue 17 at the phone edge, over real sockets: a real GlassesBridge on tcp:// (CURVE on or off),
the stand-in SessionActor of test_glasses_bridge on ipc://, phones that attack it."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import anyio
import pytest
import zmq

import protocol as p
from actors.base import Endpoint
from transport import keys as keyfiles
from phone.client import DeliveryFailed, EventRejected
from phone.credentials import SessionTokens
from harness import override, until
from test_glasses_bridge import dirs, make_config, runtime  # noqa: F401 - dirs is a fixture


# ---- finding 1: no takeover, not even after a restart of the bridge ----------------------------
async def test_with_curve_another_key_cannot_take_a_session_over_after_a_bridge_restart(dirs):
    config = make_config(dirs)
    async with runtime(config) as rt, rt.phone("phone-a") as owner, rt.phone("phone-b") as intruder:
        await owner.turn("s1", "my secret is 1234", timeout=5)
        await rt.restart_bridge()
        with anyio.fail_after(10), pytest.raises(EventRejected, match="forbidden"):
            await intruder.send_text("s1", "what is my secret?")
        turn = await owner.turn("s1", "still mine?", timeout=10)
        assert turn.final_text == "echo: still mine?"
    assert [e.content for e in rt.journal.events["s1"]] == ["my secret is 1234", "still mine?"]


async def test_without_curve_a_client_id_alone_proves_nothing_before_or_after_a_restart(dirs):
    config = override(make_config(dirs), phone={"curve": False})
    tokens = SessionTokens(Path(dirs[0]) / "alice.json")  # what `run.py say --client-id alice` keeps
    async with runtime(config) as rt:
        async with rt.phone("alice", curve=None, tokens=tokens) as alice, rt.phone("alice", curve=None) as impostor:
            await alice.turn("s1", "my secret is 1234", timeout=5)
            assert tokens.get("s1")
            async with alice.events("s1") as on_alice, impostor.events("s1") as on_impostor:
                with pytest.raises(EventRejected, match="forbidden"):
                    await impostor.send_text("s1", "show me her displays")
                # the owner's displays keep going to the owner, none to the impostor
                turn = await alice.turn("s1", "hello again", timeout=5)
                assert turn.final_text == "echo: hello again"
                with anyio.move_on_after(0.2):
                    while True:
                        assert not isinstance((await on_impostor.receive()).body, p.Display)
            await rt.restart_bridge()
            with anyio.fail_after(10), pytest.raises(EventRejected, match="forbidden"):
                await impostor.send_text("s1", "after the restart, then")
        # the same user from a new process: the kept token resumes her session
        async with rt.phone("alice", curve=None, tokens=SessionTokens(Path(dirs[0]) / "alice.json")) as again:
            assert (await again.turn("s1", "it is me", timeout=10)).final_text == "echo: it is me"
    assert [e.content for e in rt.journal.events["s1"]] == ["my secret is 1234", "hello again", "it is me"]


async def test_displays_of_a_session_reach_its_owner_after_a_bridge_restart(dirs):
    """The route is durable too: what the session sends before the phone speaks again arrives."""
    config = make_config(dirs)
    async with runtime(config) as rt, rt.phone("phone-a") as owner:
        await owner.turn("s1", "hello", timeout=5)
        await rt.restart_bridge()
        async with owner.events("s1") as incoming:
            session_side = Endpoint(config, zmq_context=rt.zmq, name="session-standin")
            async with session_side.running():  # e.g. a timer fires before the phone speaks again
                session_side.tell("glasses", p.Display(turn_id="t9", text="a timer fired", final=True), session="s1")
                with anyio.fail_after(10):
                    env = await incoming.receive()
            assert env.body == p.Display(turn_id="t9", text="a timer fired", final=True)


# ---- finding 2: one mute phone silences nobody else -------------------------------------------
async def test_a_mute_flooding_phone_loses_only_its_own_replies(dirs):
    config = override(make_config(dirs), phone={"curve": False, "events_per_s": 1e9, "send_queue_per_peer": 500})
    async with runtime(config) as rt, rt.phone("victim", curve=None) as victim:
        mute = rt.zmq.socket(zmq.DEALER)
        mute.setsockopt(zmq.IDENTITY, b"mute/1")
        mute.setsockopt(zmq.RCVHWM, 10)
        mute.setsockopt(zmq.SNDHWM, 0)
        mute.setsockopt(zmq.LINGER, 0)
        mute.connect(config.phone.endpoint)
        try:
            def flood() -> int:
                for _ in range(5_000):
                    mute.send(b"\xc1 garbage")
                return rt.bridge.cut_off

            # each frame is answered ErrorReply, which the mute phone never reads, until its pipe
            # and the kernel's buffers are full and the bridge cuts it off
            await until(flood, timeout=60, every_s=0.2)
            for i in range(3):
                turn = await victim.turn(f"v{i}", f"are you there {i}?", timeout=10)
                assert turn.final_text == f"echo: are you there {i}?"
            assert rt.bridge.cut_off >= 1, "the mute phone was cut off past its bound"
            assert rt.bridge.outboxes.depth(b"mute/1") <= 500
        finally:
            mute.close(linger=0)


# ---- finding 3 at the edge: one connection cannot open sessions or send events without bound ----
async def test_one_connection_is_limited_in_sessions_and_rate(dirs):
    config = override(make_config(dirs), phone={"curve": False, "events_per_s": 20.0, "sessions_per_connection": 5})
    async with runtime(config) as rt, rt.phone("greedy", curve=None, max_resends=50) as greedy:
        for i in range(5):
            await greedy.start(f"g{i}")
        with pytest.raises(EventRejected, match="too_many_sessions"):
            await greedy.start("g5")
        # a burst past the bucket: answered RateLimited, resent after retry_after_s, nothing lost
        ids = [await greedy.send_text("g0", f"t{i}", wait=False) for i in range(80)]
        with anyio.fail_after(30):
            for event_id in ids:
                await greedy.acked(event_id)
        assert greedy.busy_received > 0
        assert [e.content for e in rt.journal.events["g0"] if e.kind == "user_text"] == [f"t{i}" for i in range(80)]
        async with rt.phone("other", curve=None) as other:  # another connection is not affected
            assert (await other.turn("o1", "hi", timeout=5)).final_text == "echo: hi"


async def test_a_text_over_max_text_chars_is_refused_clearly(dirs):
    config = override(make_config(dirs), phone={"max_text_chars": 100})
    async with runtime(config) as rt, rt.phone("phone-a") as phone:
        with pytest.raises(EventRejected) as refused:
            await phone.send_text("s1", "x" * 101)
        assert refused.value.code == "too_long"
        assert "101 characters exceeds phone.max_text_chars (100)" in refused.value.detail
        assert (await phone.turn("s1", "x" * 100, timeout=5)).final_text == "echo: " + "x" * 100


# ---- finding 9: garbage is logged at a bounded rate; removed keys are refused at once ----------
async def test_garbage_is_logged_once_per_peer_per_interval_with_a_count(dirs, caplog):
    config = override(make_config(dirs), phone={"curve": False, "events_per_s": 1e9})
    async with runtime(config) as rt, rt.phone("noisy", curve=None) as noisy:
        async with noisy.events() as incoming:
            with caplog.at_level(logging.INFO, logger="porfiry.glasses"):
                for _ in range(2000):
                    noisy.send_raw([b"\xc1 not msgpack"])
                with anyio.fail_after(10):
                    for _ in range(2000):  # each one is still answered
                        assert (await incoming.receive()).body.code == "decode:malformed"
    lines = [r.getMessage() for r in caplog.records if "bad message" in r.getMessage()]
    assert 1 <= len(lines) <= 2, lines
    assert sum(1 for r in caplog.records if r.name == "porfiry.glasses") < 20


async def test_a_removed_key_is_refused_on_its_live_connection(dirs, caplog):
    config = make_config(dirs)
    async with runtime(config) as rt, rt.phone("phone-a", max_resends=3, ack_timeout_s=0.2) as phone:
        assert (await phone.turn("s1", "hello", timeout=5)).final_text == "echo: hello"
        with caplog.at_level(logging.WARNING, logger="porfiry.glasses"):
            os.remove(Path(config.phone.keys_dir) / keyfiles.AUTHORIZED / "phone-a.key")
            await until(lambda: any("removed from the allow-list" in r.getMessage() for r in caplog.records))
        with anyio.fail_after(10), pytest.raises(DeliveryFailed):
            await phone.send_text("s1", "still here?")
    assert [e.content for e in rt.journal.events["s1"]] == ["hello"]


async def test_without_curve_events_sent_at_once_wait_for_the_sessions_token(dirs):
    """The first event opens the session; the ones sent right behind it wait for its Ack (and
    token) and then go, in order, carrying it."""
    config = override(make_config(dirs), phone={"curve": False})
    async with runtime(config) as rt, rt.phone("fast", curve=None) as phone:
        ids = [await phone.send_text("s1", f"t{i}", wait=False) for i in range(5)]
        with anyio.fail_after(10):
            for event_id in ids:
                await phone.acked(event_id)
        assert rt.journal.ids("s1") == ids
        assert phone.tokens.get("s1")


async def test_events_waiting_per_connection_are_bounded_and_nothing_is_lost_or_reordered(dirs):
    gate = anyio.Event()
    config = override(make_config(dirs, ask_timeout_s=3.0), phone={"pending_per_connection": 3})
    async with runtime(config, gate=gate) as rt, rt.phone(ack_timeout_s=2.0, busy_backoff_s=0.05) as phone:
        ids = {s: [await phone.send_text(s, f"{s}-{i}", wait=False) for i in range(4)] for s in ("s1", "s2")}
        await until(lambda: phone.busy_received)
        gate.set()
        with anyio.fail_after(20):
            for event_id in ids["s1"] + ids["s2"]:
                await phone.acked(event_id)
        assert rt.journal.ids("s1") == ids["s1"] and rt.journal.ids("s2") == ids["s2"]
