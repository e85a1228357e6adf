"""PhoneClient against a fake runtime (a bare ROUTER scripted per test), and the phone tools:
`say` (in process and as `python run.py say`), the console, the screen renderer, key files."""
from __future__ import annotations

import io
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Callable

import anyio
import pytest
import zmq

import protocol as p
from harness import free_endpoint, poll, start_when_free, until
from transport.zmqio import AsyncSocket
from transport import keys as keyfiles
from phone.client import DeliveryFailed, EventRejected, PhoneClient, PhoneUnreachable
from phone.credentials import SessionTokens
from phone.console import Screen, parse_command, run_console
from phone.say import EXIT_OK, EXIT_REFUSED, EXIT_TIMEOUT, say

REPO = Path(__file__).resolve().parent.parent


class FakeRuntime:
    """Answers Hello with Ok; every event goes to `policy(identity, envelope)`; the default acks
    it and answers a text with a partial, a final display and TurnDone."""

    def __init__(self, sock: AsyncSocket, policy: Callable[["FakeRuntime", bytes, p.Envelope], None] | None = None):
        self.sock = sock
        self.codec = p.Codec()
        self.policy = policy or FakeRuntime.echo
        self.received: list[p.Envelope] = []

    def send(self, identity: bytes, body: p.Msg, *, session: str = "", corr: str = "") -> None:
        self.sock.send_nowait([identity, self.codec.encode(p.Envelope(body=body, session=session, corr=corr))])

    def events(self, kind: type = p.Msg) -> list[p.Msg]:
        return [env.body for env in self.received if isinstance(env.body, kind) and not isinstance(env.body, p.Hello)]

    def echo(self, identity: bytes, env: p.Envelope) -> None:
        self.send(identity, p.Ack(event_id=env.body.event_id), session=env.session, corr=env.id)
        if isinstance(env.body, p.UserText):
            self.send(identity, p.Display(turn_id="t", text="ec"), session=env.session)
            self.send(identity, p.Display(turn_id="t", text=f"echo: {env.body.text}", final=True), session=env.session)
            self.send(identity, p.TurnDone(turn_id="t", event_ids=[env.body.event_id]), session=env.session)

    async def serve(self) -> None:
        while True:
            identity, payload = await self.sock.recv()
            env = self.codec.decode(payload)
            self.received.append(env)
            if isinstance(env.body, p.Hello):
                self.send(identity, p.Ok(), corr=env.id)
            else:
                self.policy(self, identity, env)


@asynccontextmanager
async def fake_runtime(policy=None):
    ctx = zmq.Context()
    endpoint = free_endpoint()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(endpoint)
    try:
        async with AsyncSocket(router) as sock, anyio.create_task_group() as tg:
            fake = FakeRuntime(sock, policy)
            fake.endpoint = endpoint
            tg.start_soon(fake.serve)
            yield fake
            tg.cancel_scope.cancel()
    finally:
        ctx.destroy(linger=0)


class EverySessionOpen(SessionTokens):
    """The fake runtime hands out no tokens: as if every session had been opened before, so
    events are pipelined from the first one (the opening wait is tested on its own)."""

    def get(self, session: str) -> str:
        return "token-" + session


def client(fake: FakeRuntime, **kwargs) -> PhoneClient:
    kwargs.setdefault("ack_timeout_s", 0.1)
    kwargs.setdefault("tokens", EverySessionOpen())
    return PhoneClient(fake.endpoint, client_id="test-phone", **kwargs)


def text_ids(fake: FakeRuntime) -> list[str]:
    return [body.text for body in fake.events(p.UserText)]


# ---- delivery ---------------------------------------------------------------------------------
async def test_unacked_events_are_resent_with_the_same_id_in_their_order():
    seen: set[str] = set()

    def ack_only_resends(fake, identity, env):
        if env.body.event_id in seen:
            FakeRuntime.echo(fake, identity, env)
        seen.add(env.body.event_id)

    async with fake_runtime(ack_only_resends) as fake, client(fake) as phone:
        ids = [await phone.send_text("s1", t, wait=False) for t in ("one", "two", "three")]
        with anyio.fail_after(5):
            for event_id in ids:
                assert (await phone.acked(event_id)).event_id == event_id
        assert text_ids(fake) == ["one", "two", "three", "one", "two", "three"]
        assert [b.event_id for b in fake.events(p.UserText)][3:] == ids
        assert phone.resends == 3 and phone.pending == 0


async def test_busy_backs_off_and_holds_newer_events_of_that_session_only():
    busy_once: set[str] = set()

    def busy_first(fake, identity, env):
        if env.session == "s1" and not busy_once:
            busy_once.add(env.body.event_id)
            fake.send(identity, p.Busy(event_id=env.body.event_id, detail="full"), session=env.session, corr=env.id)
        else:
            FakeRuntime.echo(fake, identity, env)

    async with fake_runtime(busy_first) as fake, client(fake, busy_backoff_s=0.3) as phone:
        first = await phone.send_text("s1", "first", wait=False)
        await until(lambda: phone.busy_received)
        second = await phone.send_text("s1", "second", wait=False)
        await phone.send_text("s2", "elsewhere")  # another session is not held back
        assert text_ids(fake) == ["first", "elsewhere"]
        with anyio.fail_after(5):
            await phone.acked(first), await phone.acked(second)
        assert text_ids(fake) == ["first", "elsewhere", "first", "second"]


async def test_gives_up_after_max_resends_with_a_clear_error():
    async with fake_runtime(lambda fake, identity, env: None) as fake, client(fake, ack_timeout_s=0.05, max_resends=3) as phone:
        with anyio.fail_after(5), pytest.raises(DeliveryFailed, match="not acknowledged after 3 resends"):
            await phone.send_text("s1", "hello?")
        assert text_ids(fake) == ["hello?"] * 4


async def test_an_error_reply_fails_the_event_without_resending():
    def refuse(fake, identity, env):
        fake.send(identity, p.ErrorReply(code="forbidden", detail="not yours"), session=env.session, corr=env.id)

    async with fake_runtime(refuse) as fake, client(fake) as phone:
        async with phone.events() as incoming:
            with pytest.raises(EventRejected) as rejected:
                await phone.send_text("s1", "hi")
            assert (rejected.value.code, rejected.value.detail) == ("forbidden", "not yours")
            assert (await incoming.receive()).body.code == "forbidden"  # subscribers see it too
        assert phone.pending == 0, "nothing is left to send again"
        assert text_ids(fake) == ["hi"]


async def test_unreachable_runtime_is_reported():
    with anyio.fail_after(5), pytest.raises(PhoneUnreachable, match="no answer from the runtime"):
        async with PhoneClient(free_endpoint(), connect_timeout_s=0.2):
            pass


async def test_playback_commands_are_answered_by_the_handler():
    answers = {"t1": ("started", ""), "t2": None, "t3": ("stopped", "")}

    async with fake_runtime() as fake, client(fake, playback_handler=lambda s, c: answers[c.task_id]) as phone:
        async with phone.events("s1") as incoming:
            await phone.start("s1")
            fake.send(phone.identity, p.PlaybackCommand(task_id="t1", action="play", title="Solaris"), session="s1")
            fake.send(phone.identity, p.PlaybackCommand(task_id="t2", action="stop"), session="s1")
            fake.send(phone.identity, p.PlaybackCommand(task_id="t3", action="stop"), session="s1")
            got = [(await incoming.receive()).body for _ in range(3)]
        assert [c.task_id for c in got] == ["t1", "t2", "t3"]
        # each command is answered in its own task: t2's (no answer) is done before t3's status is out
        await until(lambda: len(fake.events(p.PlaybackStatus)) >= 2 and not phone.pending)
        statuses = fake.events(p.PlaybackStatus)
        assert sorted((s.task_id, s.state) for s in statuses) == [("t1", "started"), ("t3", "stopped")]  # None: no answer


async def test_turn_collects_displays_until_its_turn_done():
    async with fake_runtime() as fake, client(fake) as phone:
        seen: list[str] = []
        turn = await phone.turn("s1", "hello", on_message=lambda body: seen.append(type(body).__name__))
        assert turn.final_text == "echo: hello"
        assert [d.final for d in turn.displays] == [False, True]
        assert seen == ["Display", "Display", "TurnDone"]


async def test_a_turn_whose_final_display_was_lost_shows_the_copy_its_turn_done_carries():
    # a bridge killed between them: the Display died in it, the TurnDone reached its successor
    def display_lost(fake, identity, env):
        fake.send(identity, p.Ack(event_id=env.body.event_id), session=env.session, corr=env.id)
        if isinstance(env.body, p.UserText):
            fake.send(identity, p.TurnDone(turn_id="t", event_ids=[env.body.event_id], final="echo: hi"), session=env.session)

    async with fake_runtime(display_lost) as fake, client(fake) as phone:
        turn = await phone.turn("s1", "hi")
        out, err = io.StringIO(), io.StringIO()
        code = await say(lambda: client(fake), "s1", "hi", timeout=5, out=out, err=err)
    assert turn.displays == [] and turn.final_text == "echo: hi"
    assert code == EXIT_OK and out.getvalue() == "echo: hi\n", "say prints it as the answer"


# ---- say ----------------------------------------------------------------------------------------
async def test_say_prints_partials_prefixed_and_the_final_line_plainly():
    async with fake_runtime() as fake:
        out, err = io.StringIO(), io.StringIO()
        code = await say(lambda: client(fake), "s1", "hello", timeout=5, out=out, err=err)
        assert code == EXIT_OK
        assert out.getvalue() == "… ec\necho: hello\n" and err.getvalue() == ""


async def test_say_times_out_and_reports_refusals():
    def ack_never_answer(fake, identity, env):
        fake.send(identity, p.Ack(event_id=env.body.event_id), session=env.session, corr=env.id)

    async with fake_runtime(ack_never_answer) as fake:
        err = io.StringIO()
        assert await say(lambda: client(fake), "s1", "hello", timeout=0.3, out=io.StringIO(), err=err) == EXIT_TIMEOUT
        assert err.getvalue().startswith("say: timeout:")

    def refuse(fake, identity, env):
        fake.send(identity, p.ErrorReply(code="forbidden", detail="session s1 belongs to another phone"), session=env.session, corr=env.id)

    async with fake_runtime(refuse) as fake:
        err = io.StringIO()
        assert await say(lambda: client(fake), "s1", "hello", timeout=5, out=io.StringIO(), err=err) == EXIT_REFUSED
        assert "forbidden: session s1 belongs to another phone" in err.getvalue()


async def test_run_py_say_end_to_end(tmp_path):
    async with fake_runtime() as fake:
        env = {**os.environ, "PORFIRY_PHONE_ENDPOINT": fake.endpoint, "PYTHONPATH": str(REPO)}
        (tmp_path / "porfiry.toml").write_text(f"[storage]\npath = \"{tmp_path / 'porfiry.sqlite3'}\"\n")
        with anyio.fail_after(30):
            result = await anyio.run_process(
                [sys.executable, str(REPO / "run.py"), "--config", str(tmp_path / "porfiry.toml"),
                 "say", "--session", "cli", "--timeout", "10", "what", "time?"],
                cwd=tmp_path, env=env, check=False)
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout.decode() == "… ec\necho: what time?\n"
        assert fake.events(p.UserText)[0].text == "what time?"


# ---- the console ----------------------------------------------------------------------------------
def test_screen_rewrites_partials_in_place_for_people():
    screen = Screen(live=True)
    assert screen.render(p.Display(turn_id="t", text="It is")) == "\r\x1b[K… It is"
    assert screen.render(p.Display(turn_id="t", text="It is\nnoon")) == "\r\x1b[K… It is noon"
    assert screen.render(p.PlaybackCommand(task_id="k", action="play", title="Solaris")) == "\n[playback] play Solaris (task k)\n"
    assert screen.render(p.Display(turn_id="t", text="It is noon.", final=True)) == "\r\x1b[KIt is noon.\n"
    assert screen.render(p.Display(turn_id="t", text="Partial")) == "\r\x1b[K… Partial"
    assert screen.render(p.Display(turn_id="t", text="", clear=True)) == "\r\x1b[K"
    assert screen.render(p.ErrorReply(code="busy", detail="later")) == "[error busy] later\n"
    assert screen.render(p.TurnDone(turn_id="t")) == ""
    # a TurnDone's copy of the final display is shown only when that display did not come
    assert screen.render(p.Display(turn_id="v", text="Done.", final=True)) == "\r\x1b[KDone.\n"
    assert screen.render(p.TurnDone(turn_id="v", final="Done.")) == ""
    assert screen.render(p.TurnDone(turn_id="u", final="Lost on the way.")) == "\r\x1b[KLost on the way.\n"


def test_typed_lines_become_commands():
    assert parse_command("hello there\n") == ("say", "hello there")
    assert parse_command("/stop") == ("stop", "")
    assert parse_command("/QUIT") == ("quit", "")
    assert parse_command("/button photo") == ("button", "photo")
    assert parse_command("/button")[0] == "unknown"
    assert parse_command("/dance")[0] == "unknown" and "/stop" in parse_command("/dance")[1]
    assert parse_command("  ") == ("empty", "")
    assert parse_command("/glasses OFF") == ("glasses", "off") and parse_command("/glasses on") == ("glasses", "on")
    assert parse_command("/glasses dim") == ("unknown", "usage: /glasses off|on")


async def test_console_talks_interrupts_and_quits():
    out = io.StringIO()
    lines = iter(["hello\n", "/stop\n", "/quit\n"])

    def read_line() -> str:  # runs in a thread, like stdin
        line = next(lines)
        if line == "/stop\n":
            poll(lambda: "echo: hello" in out.getvalue(), timeout=30, every_s=0.01)
        return line

    async with fake_runtime() as fake, client(fake) as phone:
        with anyio.fail_after(10):
            assert await run_console(phone, "s1", read_line=read_line, out=out) == 0
        await until(lambda: len(fake.events()) >= 4)
    # /quit leaves at once: the glasses are off (no model turn, nothing stopped), not a stop
    assert [type(b).__name__ for b in fake.events()] == ["SessionStart", "UserText", "UserInterrupt", "GlassesState"]
    assert fake.events()[-1].state == "off"
    assert "… thinking\n" in out.getvalue() and "echo: hello\n" in out.getvalue()


# ---- key files ------------------------------------------------------------------------------------
def test_key_files_round_trip_and_explain_what_is_missing(tmp_path):
    with pytest.raises(keyfiles.KeyFileError, match="run.py keys"):
        keyfiles.load_phone_keys(tmp_path, "pixel")
    made = keyfiles.generate(tmp_path, "pixel")
    assert made.server_created and Path(made.authorized).name == "pixel.key"
    again = keyfiles.generate(tmp_path)
    assert not again.server_created  # the server pair is never replaced
    keys = keyfiles.load_phone_keys(tmp_path, "pixel")
    assert keys.server_public == keyfiles.load_server_keys(tmp_path)[0]
    assert keyfiles.load_allowed_keys(tmp_path) == {keys.public}
    assert (os.stat(made.phone_secret).st_mode & 0o077) == 0  # secrets readable by the owner only
    with pytest.raises(keyfiles.KeyFileError, match="already exists"):
        keyfiles.generate(tmp_path, "pixel")
    with pytest.raises(ValueError):
        keyfiles.generate(tmp_path, "../evil")
    keyfiles.generate(tmp_path, "spare", authorize=False)
    assert len(keyfiles.load_allowed_keys(tmp_path)) == 1


async def test_after_a_reconnect_events_still_waiting_for_their_turn_done_are_asked_about_again():
    """A bridge that dies holding a TurnDone cannot tell it again: the phone, connected again,
    sends every acked event still waiting for its TurnDone once more (the runtime answers a
    finished one with its answer and a TurnDone); a turn already closed is not asked about, even
    when its ack came after its TurnDone."""
    endpoint, codec, seen = free_endpoint(), p.Codec(), []
    ctx = zmq.Context()

    async def runtime(answer_turns: bool, *, task_status=anyio.TASK_STATUS_IGNORED):
        router = ctx.socket(zmq.ROUTER)
        router.setsockopt(zmq.LINGER, 0)
        router.bind(endpoint)
        async with AsyncSocket(router) as sock:
            task_status.started()
            while True:
                identity, payload = await sock.recv()
                env = codec.decode(payload)
                reply = lambda body, corr="": sock.send_nowait([identity, codec.encode(p.Envelope(body=body, session=env.session, corr=corr))])  # noqa: E731
                if isinstance(env.body, p.Hello):
                    reply(p.Ok(), env.id)
                    continue
                seen.append(env.body.text)
                if env.body.text == "closed before":  # its ack after its TurnDone, as in one process
                    reply(p.Display(turn_id="t", text="answer to closed before", final=True))
                    reply(p.TurnDone(turn_id="t", event_ids=[env.body.event_id]))
                reply(p.Ack(event_id=env.body.event_id), env.id)
                if answer_turns and env.body.text != "closed before":
                    reply(p.Display(turn_id="t", text=f"answer to {env.body.text}", final=True))
                    reply(p.TurnDone(turn_id="t", event_ids=[env.body.event_id]))

    try:
        async with anyio.create_task_group() as tg:
            first, first_gone = anyio.CancelScope(), anyio.Event()

            async def first_life(*, task_status=anyio.TASK_STATUS_IGNORED):
                try:
                    with first:
                        await runtime(False, task_status=task_status)
                finally:
                    first_gone.set()

            await tg.start(first_life)
            async with PhoneClient(endpoint, client_id="test-phone", ack_timeout_s=0.2, tokens=EverySessionOpen()) as phone:
                await phone.turn("s1", "closed before", timeout=5)
                turn: list = []

                async def ask():
                    turn.append(await phone.turn("s1", "what is a haiku", timeout=10))

                tg.start_soon(ask)
                await until(lambda: "what is a haiku" in seen and not phone.pending)  # acked; its TurnDone never comes from this runtime
                first.cancel()  # the bridge dies
                await first_gone.wait()
                await start_when_free(lambda: tg.start(runtime, True))  # and comes back on the same endpoint
                await until(lambda: turn)
                assert turn[0].final_text == "answer to what is a haiku"
                assert seen.count("what is a haiku") == 2 and seen.count("closed before") == 1, seen
                assert phone.asked_again == 1
            tg.cancel_scope.cancel()
    finally:
        ctx.destroy(linger=0)
