"""GlassesBridge over real sockets: phones on tcp:// with CURVE on, actors on ipc://, and a
stand-in SessionActor that accepts DeliverEvent, drops duplicates and answers every text with a
partial display, a final display and TurnDone (the real SessionActor is tested elsewhere)."""
from __future__ import annotations

import shutil
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import msgspec
import pytest
import zmq
from zmq.utils import z85

import protocol as p
from actors.base import Actor, Endpoint, Inbound
from actors.glasses import GlassesBridge, Lanes, Pending, SessionTable, owner_key, to_event, zap_answer
from core.config import Config, PhoneConfig, StorageConfig, SupervisorConfig, TopologyConfig
from harness import collect_turn, free_port, override, start_killable, until
from transport import keys as keyfiles
from phone.credentials import SessionTokens
from phone.client import DeliveryFailed, EventRejected, PhoneClient, PhoneError, PhoneRefused


# ---- the stand-in session ---------------------------------------------------------------------
class Journal:
    """What the session received, kept outside the actor so it survives the actor's restart."""

    def __init__(self) -> None:
        self.events: dict[str, list[p.Event]] = {}
        self.phone_keys: dict[str, str] = {}
        self.duplicates = 0
        self.changed = anyio.Event()

    def ids(self, session: str) -> list[str]:
        return [e.event_id for e in self.events.get(session, [])]

    def record(self, session: str, event: p.Event, phone_key: str) -> bool:
        if event.event_id in self.ids(session):
            self.duplicates += 1
            return False
        self.events.setdefault(session, []).append(event)
        self.phone_keys[session] = phone_key
        self.changed.set()
        self.changed = anyio.Event()
        return True

    async def wait_for(self, session: str, count: int, timeout: float = 30.0) -> list[p.Event]:
        with anyio.fail_after(timeout):
            while len(self.events.get(session, [])) < count:
                await self.changed.wait()
        return self.events[session]


class StandInSession(Actor):
    name = "session"

    def __init__(self, config: Config, journal: Journal, *, zmq_context: zmq.Context, gate: anyio.Event | None = None,
                 busy_sessions: set[str] = frozenset()):
        super().__init__(config, zmq_context=zmq_context)
        self.journal = journal
        self.gate = gate
        self.busy_sessions = busy_sessions

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if not isinstance(body, p.DeliverEvent):
            return await super().handle(msg)
        if self.gate is not None:
            await self.gate.wait()
        event = body.event
        if msg.session in self.busy_sessions:
            msg.reply(self, p.Busy(event_id=event.event_id, detail="stand-in is full"))
            return
        fresh = self.journal.record(msg.session, event, body.phone_key)
        msg.reply(self, p.EventAccepted(event_id=event.event_id, duplicate=not fresh))
        if fresh and event.kind == "user_text":
            turn = p.new_id()
            self.tell("glasses", p.Display(turn_id=turn, text=f"echo: {event.content[:3]}"), session=msg.session)
            self.tell("glasses", p.Display(turn_id=turn, text=f"echo: {event.content}", final=True), session=msg.session)
            self.tell("glasses", p.TurnDone(turn_id=turn, event_ids=[event.event_id]), session=msg.session)


# ---- the system under test --------------------------------------------------------------------
@pytest.fixture
def dirs(ipc_dir, tmp_path):
    """The sockets' directory, and a keys directory with the phones phone-a and phone-b allowed."""
    keys = tmp_path / "keys"
    keyfiles.generate(keys, "phone-a")
    keyfiles.generate(keys, "phone-b")
    return ipc_dir, keys


def make_config(dirs, *, ask_timeout_s=0.5, pending=16, playback_wait_s=0.3) -> Config:
    ipc, keys = dirs
    return Config(
        storage=StorageConfig(path=str(Path(ipc) / "porfiry.sqlite3")),
        topology=TopologyConfig(mode="ipc", ipc_dir=ipc),
        supervisor=SupervisorConfig(ask_timeout_s=ask_timeout_s),
        phone=PhoneConfig(endpoint=f"tcp://127.0.0.1:{free_port()}", curve=True, keys_dir=str(keys),
                          pending_per_session=pending, playback_wait_s=playback_wait_s),
    )


class Runtime:
    """A real GlassesBridge and the stand-in session actor, each of which a test may stop and
    start again (a new GlassesBridge object: nothing of the old one's memory survives, only the
    database)."""

    def __init__(self, config: Config, ctx: zmq.Context, journal: Journal, tg):
        self.config, self.zmq, self.journal, self._tg = config, ctx, journal, tg
        self._session: tuple | None = None  # (kill, restart) of the running stand-in session
        self._bridge: tuple | None = None
        self.bridge: GlassesBridge | None = None

    def phone(self, name: str = "phone-a", **kwargs) -> PhoneClient:
        if "curve" not in kwargs:
            kwargs["curve"] = keyfiles.load_phone_keys(self.config.phone.keys_dir, name)
        kwargs.setdefault("ack_timeout_s", 0.3)
        kwargs.setdefault("max_resends", 20)
        return PhoneClient(self.config.phone.endpoint, client_id=name, **kwargs)

    async def start_session(self, **kwargs) -> None:
        """The stand-in session, the first or (after `stop_session`) again on the same address."""
        session = StandInSession(self.config, self.journal, zmq_context=self.zmq, **kwargs)
        self._session = await (self._session[1](session) if self._session else start_killable(self._tg, session))

    def stop_session(self) -> None:
        assert self._session is not None
        self._session[0]()

    async def start_bridge(self) -> None:
        self.bridge = GlassesBridge(self.config, zmq_context=self.zmq)
        self._bridge = await start_killable(self._tg, self.bridge)

    async def restart_bridge(self) -> None:
        """A new GlassesBridge once the old one has let go of its sockets."""
        kill, restart = self._bridge
        kill()
        self.bridge = GlassesBridge(self.config, zmq_context=self.zmq)
        self._bridge = await restart(self.bridge)


@asynccontextmanager
async def runtime(config: Config, **session_kwargs):
    ctx = zmq.Context()
    try:
        async with anyio.create_task_group() as tg:
            rt = Runtime(config, ctx, Journal(), tg)
            await rt.start_session(**session_kwargs)
            await rt.start_bridge()
            yield rt
            tg.cancel_scope.cancel()
    finally:
        ctx.destroy(linger=0)



async def edge_stats(rt: Runtime) -> p.EdgeStats:
    """The bridge's counters, asked as /metrics asks them."""
    client = Endpoint(rt.config, zmq_context=rt.zmq, name="metrics")
    async with client.running():
        return await client.ask("glasses", p.EdgeStatsRequest())


# ---- end to end -------------------------------------------------------------------------------
async def test_two_phones_with_several_sessions_each_interleaved(dirs):
    config = make_config(dirs)
    async with runtime(config) as rt, rt.phone("phone-a") as a, rt.phone("phone-b") as b:
        sessions = {a: ["a1", "a2", "a3"], b: ["b1", "b2", "b3"]}
        sent: dict[str, list[str]] = {}
        texts: dict[str, list[str]] = {}
        async with a.events() as from_a, b.events() as from_b:
            async with anyio.create_task_group() as tg:
                async def talk(phone: PhoneClient, session: str) -> None:
                    for i in range(5):
                        text = f"{session} says {i}"
                        texts.setdefault(session, []).append(text)
                        sent.setdefault(session, []).append(await phone.send_text(session, text, wait=False))
                        await anyio.lowlevel.checkpoint()  # let the other sessions' talks in between
                    for event_id in sent[session]:
                        await phone.acked(event_id)

                for phone, names in sessions.items():
                    for name in names:
                        tg.start_soon(talk, phone, name)

            async def finals(incoming, count):
                shown: dict[str, list[str]] = {}
                with anyio.fail_after(5):
                    while sum(len(v) for v in shown.values()) < count:
                        env = await incoming.receive()
                        if isinstance(env.body, p.Display) and env.body.final:
                            shown.setdefault(env.session, []).append(env.body.text)
                return shown

            shown_a, shown_b = await finals(from_a, 15), await finals(from_b, 15)
    for session, ids in sent.items():
        assert rt.journal.ids(session) == ids  # in order, each exactly once
        assert [e.content for e in rt.journal.events[session]] == texts[session]
    assert rt.journal.events["a1"][0].kind == "user_text" and rt.journal.events["a1"][0].source == "user"
    # each phone sees only its own sessions' displays, each line once, in order
    assert shown_a == {s: [f"echo: {t}" for t in texts[s]] for s in ("a1", "a2", "a3")}
    assert shown_b == {s: [f"echo: {t}" for t in texts[s]] for s in ("b1", "b2", "b3")}
    # with CURVE the phone key given to the session is the phone's public key
    assert rt.journal.phone_keys["a1"] == keyfiles.load_phone_keys(config.phone.keys_dir, "phone-a").public.decode()


async def test_lost_ack_is_resent_and_the_duplicate_dropped(dirs):
    async with runtime(make_config(dirs)) as rt, rt.phone(ack_timeout_s=0.2) as phone:
        async with phone.events("s1") as incoming:
            phone.drop_next_acks(1)
            event_id = await phone.send_text("s1", "hello")
            got = await collect_turn(incoming, event_id, timeout=5.0)
        assert phone.acks_dropped == 1 and phone.resends >= 1
        assert rt.journal.ids("s1") == [event_id]
        assert rt.journal.duplicates >= 1  # the resend reached the session and was dropped there
        assert [type(m).__name__ for m in got] == ["Display", "Display", "TurnDone"]


async def test_curve_refuses_an_unknown_key_and_accepts_a_known_one(dirs, tmp_path):
    config = make_config(dirs)
    stranger_dir = tmp_path / "stranger"
    keyfiles.generate(stranger_dir, "stranger", authorize=False)
    stranger = keyfiles.load_phone_keys(stranger_dir, "stranger")
    server_public = keyfiles.load_phone_keys(config.phone.keys_dir, "phone-a").server_public
    async with runtime(config) as rt:
        unknown = msgspec.structs.replace(stranger, server_public=server_public)
        with anyio.fail_after(5):
            with pytest.raises(PhoneRefused, match="refused"):
                async with rt.phone(curve=unknown):
                    pass
            with pytest.raises(PhoneError):  # no CURVE at all: no way in either
                async with rt.phone(curve=None, connect_timeout_s=0.5):
                    pass
        async with rt.phone("phone-b") as known:
            assert await known.send_text("s1", "hi")
        # the allow-list is read on each handshake: authorizing the stranger lets it in, no restart
        shutil.copyfile(stranger_dir / "phones" / "stranger.key", Path(config.phone.keys_dir) / "authorized" / "stranger.key")
        async with rt.phone(curve=unknown) as now_known:
            assert await now_known.send_text("s2", "hi")


async def test_malformed_frames_get_an_error_while_other_sessions_keep_working(dirs):
    async with runtime(make_config(dirs)) as rt, rt.phone("phone-a") as a, rt.phone("phone-b") as b:
        async with a.events() as from_a, b.events("b1") as from_b:
            bad = [
                ([b"\xc1 not msgpack at all"], "decode:malformed"),
                ([b"one", b"two"], "malformed"),
                ([msgspec.msgpack.encode({"body": {"type": "Teleport"}, "v": 1})], "decode:unknown_type"),
                ([p.Codec().encode(p.Envelope(body=p.Display(turn_id="t", text="x"), session="a1"))], "wrong_direction"),
                ([p.Codec().encode(p.Envelope(body=p.UserText(event_id="e", ts=0, text="x")))], "no_session"),
            ]
            for frames, code in bad:
                a.send_raw(frames)
                with anyio.fail_after(5):
                    env = await from_a.receive()
                assert isinstance(env.body, p.ErrorReply) and env.body.code == code, env.body
                assert env.body.detail
            event_id = await b.send_text("b1", "still there?")
            got = await collect_turn(from_b, event_id, timeout=5.0)
            assert got[-2] == p.Display(turn_id=got[-1].turn_id, text="echo: still there?", final=True)
            assert await a.send_text("a1", "me too")  # the sender of garbage is served as well
        assert (await edge_stats(rt)).dropped_frames == 4  # not msgpack, two frames, an unknown type, a runtime-only type


async def test_someone_elses_session_is_refused(dirs):
    async with runtime(make_config(dirs)) as rt, rt.phone("phone-a") as a, rt.phone("phone-b") as b:
        await a.send_text("mine", "first")
        with pytest.raises(EventRejected) as refused:
            await b.send_text("mine", "let me in")
        assert refused.value.code == "forbidden"
        assert [e.content for e in rt.journal.events["mine"]] == ["first"]
        assert await b.send_text("theirs", "own session works")


async def test_busy_when_a_session_queue_is_full_and_nothing_is_lost(dirs):
    gate = anyio.Event()
    config = make_config(dirs, ask_timeout_s=3.0, pending=3)
    async with runtime(config, gate=gate) as rt, rt.phone(ack_timeout_s=2.0, busy_backoff_s=0.05) as phone:
        ids = [await phone.send_text("s1", f"t{i}", wait=False) for i in range(8)]
        await until(lambda: phone.busy_received)
        assert rt.journal.ids("s1") == []  # the session has not taken anything yet
        gate.set()
        with anyio.fail_after(10):
            for event_id in ids:
                await phone.acked(event_id)
        assert rt.journal.ids("s1") == ids


async def test_session_busy_answer_reaches_the_phone(dirs):
    async with runtime(make_config(dirs), busy_sessions={"full"}) as rt, rt.phone(max_resends=2, busy_backoff_s=0.02) as phone:
        with pytest.raises(DeliveryFailed, match="not acknowledged after 2 resends"):
            await phone.send_text("full", "anyone?")
        assert phone.busy_received == 3
        assert await phone.send_text("other", "fine")
        stats = await edge_stats(rt)
        assert (stats.busy, stats.sessions) == (3, 2)


async def test_session_actor_down_for_a_moment_loses_no_event(dirs):
    config = make_config(dirs, ask_timeout_s=0.3)
    async with runtime(config) as rt, rt.phone(ack_timeout_s=0.3, max_resends=40) as phone:
        sent: dict[str, list[str]] = {"s1": [], "s2": []}

        async def talk(first: int) -> None:
            for i in range(first, first + 4):
                for session in sent:
                    sent[session].append(await phone.send_text(session, f"{session}-{i}", wait=False))

        await talk(0)
        await rt.journal.wait_for("s1", 3)
        rt.stop_session()
        resends = phone.resends
        await talk(4)  # while the session actor is down
        await until(lambda: phone.resends > resends)  # down long enough that the phone had to send again
        await rt.start_session()
        await talk(8)
        with anyio.fail_after(60):
            for ids in sent.values():
                for event_id in ids:
                    await phone.acked(event_id)
        assert rt.journal.ids("s1") == sent["s1"]
        assert rt.journal.ids("s2") == sent["s2"]


# ---- PhoneCommand ------------------------------------------------------------------------------
async def _command(rt: Runtime, session: str, task_id: str, wait_s: float) -> p.Msg:
    asker = Endpoint(rt.config, zmq_context=rt.zmq, name="media")
    async with asker.running():
        command = p.PlaybackCommand(task_id=task_id, action="play", media_id="m1", title="Solaris")
        return await asker.ask("glasses", p.PhoneCommand(command=command, wait_s=wait_s), session=session, timeout=5)


async def test_phone_command_answered_in_time(dirs):
    async with runtime(make_config(dirs)) as rt, rt.phone() as phone:
        await phone.start("s1")
        async with phone.events("s1") as incoming:
            reply = await _command(rt, "s1", "task-1", 2.0)
            shown = await incoming.receive()
        assert isinstance(reply, p.PlaybackStatus) and (reply.task_id, reply.state) == ("task-1", "started")
        assert shown.body == p.PlaybackCommand(task_id="task-1", action="play", media_id="m1", title="Solaris")
        await until(lambda: not phone.pending)  # the status was acked to the phone
        assert [e.kind for e in rt.journal.events["s1"]] == ["session_start"]  # the asker had it, not the session


async def test_phone_command_refused_by_the_phone(dirs):
    async with runtime(make_config(dirs)) as rt, rt.phone(playback_handler=lambda s, c: ("failed", "no player app")) as phone:
        await phone.start("s1")
        reply = await _command(rt, "s1", "task-2", 2.0)
        assert isinstance(reply, p.PlaybackStatus) and (reply.state, reply.detail) == ("failed", "no player app")


async def test_phone_command_answered_late_becomes_a_playback_event(dirs):
    told_pending = anyio.Event()

    async def slow(session, command):
        await told_pending.wait()  # the phone answers only after the asker gave up waiting
        return ("started", "after buffering")

    async with runtime(make_config(dirs)) as rt, rt.phone(playback_handler=slow) as phone:
        await phone.start("s1")
        reply = await _command(rt, "s1", "task-3", 0.1)
        assert reply == p.Ok(detail="pending")
        told_pending.set()
        events = await rt.journal.wait_for("s1", 2)
        late = events[1]
        assert (late.kind, late.source, late.channel) == ("playback", "phone", "phone")
        assert late.data == {"task_id": "task-3", "state": "started", "detail": "after buffering"}


async def test_phone_command_for_a_session_without_phone(dirs):
    async with runtime(make_config(dirs)) as rt:
        reply = await _command(rt, "nobody", "task-4", 0.5)
        assert isinstance(reply, p.ErrorReply) and reply.code == "no_phone"


# ---- pure logic ----------------------------------------------------------------------------------
def test_phone_messages_become_structured_events():
    assert to_event(p.UserText(event_id="e1", ts=5.0, text="hi")) == p.Event(
        event_id="e1", kind="user_text", source="user", channel="speech", content="hi", ts=5.0)
    assert (to_event(p.UserInterrupt(event_id="e2", ts=1)).kind, to_event(p.UserInterrupt(event_id="e2", ts=1)).source) == ("user_interrupt", "user")
    assert to_event(p.ButtonPress(event_id="e3", ts=1, button="photo")).content == "photo"
    start = to_event(p.SessionStart(event_id="e4", ts=1))
    assert (start.kind, start.source, start.channel) == ("session_start", "phone", "phone")
    assert to_event(p.SessionEnd(event_id="e5", ts=1)).kind == "session_end"
    status = to_event(p.PlaybackStatus(event_id="e6", ts=1, task_id="t", state="failed", detail="no app"))
    assert status.content == "playback t: failed (no app)" and status.data["state"] == "failed"
    with pytest.raises(TypeError):
        to_event(p.Hello())


def test_owner_is_the_curve_key_or_the_client_id():
    assert owner_key(b"pixel/abc123", b"") == "pixel"
    assert owner_key(b"pixel/abc123", b"KEYZ85") == "KEYZ85"
    table = SessionTable()
    assert table.admit("s", b"pixel/1", key="KEY-A") == (True, "")
    assert table.admit("s", b"pixel/2", key="KEY-A") == (True, "")
    assert table.route("s") == b"pixel/2"  # displays follow the owner's latest connection
    assert table.admit("s", b"pixel/3", key="KEY-B") == (False, "") and table.route("s") == b"pixel/2"


def test_without_curve_a_session_belongs_to_whoever_holds_its_token():
    table = SessionTable()
    allowed, token = table.admit("s", b"pixel/1", event_id="e1")
    assert allowed and len(token) >= 32
    assert table.admit("s", b"pixel/1", event_id="e2") == (False, ""), "a client id alone proves nothing"
    assert table.admit("s", b"pixel/9", token="guess", event_id="e2") == (False, "")
    assert table.admit("s", b"pixel/2", token=token, event_id="e2") == (True, "")
    assert table.route("s") == b"pixel/2"
    assert table.admit("s", b"pixel/3", event_id="e1") == (False, ""), "the opening event's id is no secret: its resend proves nothing"
    table.forget(["s"], idle_s=0)
    assert table.admit("s", b"pixel/4", token=token, event_id="e7") == (True, ""), "a forgotten session is reopened with the token in hand"
    assert table.admit("t", b"pixel/5", token="t" * 24, event_id="f1") == (True, "t" * 24), "an opening event may offer its token"


def test_an_idle_session_is_forgotten_unless_it_came_alive_again():
    now = [1000.0]
    table = SessionTable(clock=lambda: now[0])
    table.admit("old", b"pixel/1", key="K")
    table.admit("busy", b"pixel/1", key="K")
    now[0] += 3600
    table.route("busy")  # a display went out just now (e.g. a timer fired)
    assert table.forget(["old", "busy", "unknown"], idle_s=3000) == ["old"]
    assert len(table) == 1 and table.route("busy") == b"pixel/1"
    assert table.route("old") == b"pixel/1", "forgotten from memory, not from the table: its route holds"
    assert not table.admit("old", b"intruder/1", key="K2")[0], "a forgotten id stays its owner's (the journal keeps it)"
    assert table.admit("old", b"pixel/2", key="K")[0]


def test_zap_admits_only_allowed_keys():
    public, _ = zmq.curve_keypair()
    raw = z85.decode(public)
    request = [b"peer", b"", b"1.0", b"7", b"porfiry", b"127.0.0.1", b"", b"CURVE", raw]
    reply, admitted, key = zap_answer(request, {public})
    assert admitted and reply == [b"peer", b"", b"1.0", b"7", b"200", b"OK", public, b""] and key == public.decode()
    reply, admitted, _ = zap_answer(request, set())
    assert not admitted and reply[4] == b"400"
    assert not zap_answer([b"peer", b"", b"1.0", b"7", b"d", b"a", b"", b"NULL"], {public})[1]
    assert zap_answer([b"peer"], {public})[0][4] == b"500"


def _pending(event_id: str) -> Pending:
    return Pending(event=p.Event(event_id=event_id, kind="user_text", source="user", channel="speech"), identity=b"x", corr="", phone_key="k")


def test_lanes_are_bounded_fifo_and_hold_after_a_timeout():
    now = [0.0]
    lanes = Lanes(limit=2, hold_s=10, clock=lambda: now[0])
    assert lanes.offer("s", _pending("e1")) == "start"
    assert lanes.offer("s", _pending("e2")) == "queued"
    assert lanes.offer("s", _pending("e1")) == "pending"  # a resend of what is queued is absorbed
    assert lanes.offer("s", _pending("e3")).startswith("busy")
    assert lanes.offer("other", _pending("e3")) == "start"  # sessions are independent
    assert lanes.head("s").event.event_id == "e1"
    lanes.done("s")  # e1 timed out: later events are flushed and the lane waits for e1
    assert [i.event.event_id for i in lanes.flush("s")] == ["e2"]
    lanes.block("s", "e1")
    assert "waits for the resend of earlier event e1" in lanes.offer("s", _pending("e2"))
    assert lanes.offer("s", _pending("e1")) == "queued"  # the delivery task still runs
    assert lanes.offer("s", _pending("e2")) == "queued"
    lanes.done("s"), lanes.done("s")
    lanes.stop("s")
    assert lanes.depth("s") == 0
    lanes.block("other", "e9")
    now[0] = 11.0  # the hold expires if the event never comes back
    assert lanes.offer("other", _pending("e10")) == "queued"


async def test_without_curve_a_session_belongs_to_a_client_id(dirs):
    config = override(make_config(dirs), phone={"curve": False})
    async with runtime(config) as rt:
        tokens = SessionTokens()  # the same user's phone, e.g. `run.py say` and `run.py phone` sharing var/
        async with rt.phone("pixel", curve=None, tokens=tokens) as first, rt.phone("pixel", curve=None, tokens=tokens) as second, \
                rt.phone("other", curve=None) as other, rt.phone("pixel", curve=None) as impostor:
            await first.turn("s1", "from the first connection", timeout=5)
            async with first.events("s1") as on_first, second.events("s1") as on_second:
                event_id = await second.send_text("s1", "same client id, second connection")
                await collect_turn(on_second, event_id, timeout=5.0)  # displays follow the latest connection
                with anyio.move_on_after(0.2):
                    assert (await on_first.receive()) is None
            with pytest.raises(EventRejected, match="forbidden"):
                await other.send_text("s1", "not mine")
            with pytest.raises(EventRejected, match="forbidden"):  # the same client id without the token
                await impostor.send_text("s1", "I am pixel too")
        assert rt.journal.phone_keys["s1"] == "pixel"
