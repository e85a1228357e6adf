"""An in-process Porfiry for tests: real actors over real inproc:// ZeroMQ sockets, a scripted
model injected into the real LLMWorker, and a recording stand-in for the glasses edge when a
test does not need the phone bridge."""
from __future__ import annotations

import inspect
import os
import random
import socket
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import msgspec
import zmq

import protocol as p
from actors.base import Actor, Endpoint, Inbound
from core.config import Config, SkillsConfig, StorageConfig, TopologyConfig, apply_env
from llm.scripted import ScriptedBackend


class RecordingGlasses(Actor):
    """Stands in for GlassesBridge: records what the session shows, per session."""

    name = "glasses"

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self.shown: dict[str, list[p.Msg]] = {}
        self.forgotten: list[str] = []
        self.changed = anyio.Event()

    async def handle(self, msg: Inbound) -> None:
        if isinstance(msg.body, (p.Display, p.TurnDone)):
            self.shown.setdefault(msg.session, []).append(msg.body)
            self.changed.set()
            self.changed = anyio.Event()
        elif isinstance(msg.body, p.SessionsForgotten):
            self.forgotten += msg.body.sessions
        elif isinstance(msg.body, p.PhoneCommand):
            msg.reply(self, p.PlaybackStatus(event_id=p.new_id(), ts=time.time(), task_id=msg.body.command.task_id, state="started"))
        else:
            await super().handle(msg)

    async def wait_event_done(self, session: str, event_id: str, timeout: float = 10) -> list[p.Msg]:
        """Everything shown for the session up to the TurnDone that covers `event_id`."""
        with anyio.fail_after(timeout):
            while True:
                shown = self.shown.get(session, [])
                for index, msg in enumerate(shown):
                    if isinstance(msg, p.TurnDone) and event_id in msg.event_ids:
                        return shown[: index + 1]
                await self.changed.wait()

    async def wait_turns(self, session: str, count: int, timeout: float = 10) -> list[p.Msg]:
        with anyio.fail_after(timeout):
            while sum(isinstance(m, p.TurnDone) for m in self.shown.get(session, [])) < count:
                await self.changed.wait()
        return self.shown[session]


def make_config(tmp: Path, **session) -> Config:
    """In one process, every file under `tmp`, the environment ignored; `session` keys changed."""
    base = Config(
        topology=TopologyConfig(mode="inproc"),
        skills=SkillsConfig(user_dir=str(tmp / "user-skills")),
        storage=StorageConfig(path=str(tmp / "porfiry.sqlite3")),
    ).with_section("media", db_path=str(tmp / "media.sqlite3"))
    # the frame (core.frame) asks the model one question more: a scripted model's replies are
    # written for the turn itself, so it is on only where a test asks for it
    # no warm-up of the embedded model at start (llm.warmup): minutes of CPU no test here needs
    return override(apply_env(base, {}), session={"frame": False, **session}, llm={"warmup": False})


def override(config: Config, **sections: dict) -> Config:
    """`config` with some keys of some sections changed: `override(c, phone={"curve": False})`."""
    replace = msgspec.structs.replace
    return replace(config, **{name: replace(getattr(config, name), **keys) for name, keys in sections.items() if keys})


# How long a test's own asks (an event delivered, a session's info) wait: the runtime's default (2 s)
# is the runtime's bound, and the suite runs three workers on two cores, where a first turn's
# session open in PostgreSQL or a loop busy with 1,500 turns has answered after it (CI, twice). A
# test's bound on what it checks is its own (anyio.fail_after, `until`).
HELPER_ASK_TIMEOUT_S = 15.0


class System:
    def __init__(self, config: Config, ctx: zmq.Context, actors: dict[str, Actor], client: Endpoint):
        self.config = config
        self.zmq = ctx
        self.actors = actors
        self.client = client

    def deliver(self, session: str, text: str = "", kind: str = "user_text", event_id: str | None = None,
                timeout: float | None = None, **data):
        event = p.Event(event_id=event_id or p.new_id(), kind=kind, source="user", channel="speech", content=text, ts=time.time(), data=data)
        return self.client.ask("session", p.DeliverEvent(event=event), session=session,
                               timeout=HELPER_ASK_TIMEOUT_S if timeout is None else timeout)

    async def turn(self, session: str, text: str, kind: str = "user_text", timeout: float = 10) -> list[p.Msg]:
        """Deliver one event and wait until the session has handled it."""
        event_id = p.new_id()
        reply = await self.deliver(session, text, kind=kind, event_id=event_id)
        assert isinstance(reply, p.EventAccepted), reply
        return await self.actors["glasses"].wait_event_done(session, event_id, timeout=timeout)

    async def history(self, session: str) -> list[dict[str, str]]:
        info = await self.client.ask("session", p.SessionInfoRequest(), session=session, timeout=HELPER_ASK_TIMEOUT_S)
        return info.history

    async def info(self, session: str) -> p.SessionInfo:
        return await self.client.ask("session", p.SessionInfoRequest(), session=session, timeout=HELPER_ASK_TIMEOUT_S)

    async def queued(self, session: str, count: int = 1) -> bool:
        """Whether at least `count` events wait in the session's queue (for `until`)."""
        return (await self.info(session)).queued >= count


def _port_share() -> range | None:
    """Where this test process picks its ports: below the system's ephemeral range (an outgoing
    connection, a browser's or a database client's, takes one of those at any moment: a port
    found free there was taken before a server bound it), and a share of its own per
    pytest-xdist worker, so that two workers never pick the same. None where the system leaves
    too little room below that range (then the system picks)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    first, workers = 20_000, max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:]
    share = (low - first) // workers
    if share < 500:
        return None
    start = first + (int(worker) % workers if worker.isdigit() else 0) * share
    return range(start, start + share)


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(size: int = 1) -> int:
    """The first of `size` consecutive TCP ports on loopback nobody listens on now (`_port_share`)."""
    share = _port_share()
    for _ in range(200):
        if share is None:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                base = sock.getsockname()[1]
        else:
            base = random.randrange(share.start, share.stop - size)
        if base + size < 65_000 and all(_bindable(port) for port in range(base, base + size)):
            return base
    raise RuntimeError(f"no {size} free consecutive ports")


def free_port() -> int:
    """A TCP port on loopback nobody listens on now."""
    return free_port_block(1)


def free_endpoint() -> str:
    """A tcp:// endpoint on loopback nobody listens on now."""
    return f"tcp://127.0.0.1:{free_port()}"


async def until(predicate, timeout: float = 30.0, every_s: float = 0.01):
    """Wait until `predicate()` (a plain or an async function) is truthy, and return its value;
    TimeoutError after `timeout` seconds. The timeout is generous on purpose: the machine that
    runs the suite may be loaded, and a condition met early ends the wait at once."""
    with anyio.fail_after(timeout):
        while True:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            await anyio.sleep(every_s)  # the poll's own step: nothing else to wait on


async def session_knows(system: System, toolset: str, tool: str | None = None, timeout: float = 30.0) -> p.ToolsetSpec:
    """Until the session actor's catalog has `toolset` (and `tool` of it, if named): its spec."""
    def known() -> p.ToolsetSpec | None:
        settings = system.actors["session"].settings
        spec = settings.registry.toolset(toolset) if settings is not None else None
        return spec if spec is not None and (tool is None or any(t.name == tool for t in spec.tools)) else None

    return await until(known, timeout=timeout)


def poll(predicate, timeout: float = 60.0, every_s: float = 0.3):
    """`until` for tests that drive other processes from plain (blocking) code."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)  # the poll's own step
    raise AssertionError("condition not met in time")


def _address_in_use(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_address_in_use(one) for one in exc.exceptions)
    if isinstance(exc, zmq.ZMQError):
        return exc.errno == zmq.EADDRINUSE
    # the bridge's ZAP handler wraps its bind error ("cannot serve ZAP in this zmq context")
    cause = exc.__cause__ or exc.__context__
    return cause is not None and _address_in_use(cause)


async def start_killable(tg, actor: Actor):
    """Start `actor` in `tg` so that the returned `kill()` ends it the way a SIGKILL does (what it
    was asked is never answered) and `restart(successor)` starts another on its address once the
    killed one has let go of it; `restart` returns the successor's own `(kill, restart)`."""
    scope, gone = anyio.CancelScope(), anyio.Event()

    async def run(*, task_status=anyio.TASK_STATUS_IGNORED):
        try:
            with scope:
                await actor.run(task_status=task_status)
        finally:
            gone.set()

    async def restart(successor: Actor):
        await gone.wait()  # the killed one's inbox is closed once its task has ended
        return await start_when_free(lambda: start_killable(tg, successor))

    await tg.start(run)
    return scope.cancel, restart


async def start_when_free(start):
    """`await start()`, tried again while the address it binds is still in use (ZeroMQ lets go
    of a closed socket's address a moment after the close, and says nothing when); its result."""
    async def attempt():
        try:
            return (await start(),)
        except BaseException as exc:
            if not _address_in_use(exc):
                raise
            return None

    return (await until(attempt, timeout=10))[0]


@asynccontextmanager
async def inproc_system(tmp: Path | None = None, *, backend=None, clock=time.time, glasses: Actor | None = None,
                        actors=None, config: Config | None = None,
                        stand_ins: dict[str, type] | None = None, **session):
    """`stand_ins` replaces named actors by test classes (constructed like the real ones)."""
    from actors.llm_worker import LLMWorker
    from actors.session import SessionActor
    from actors.topology import ACTORS, actor_class

    actors = ACTORS if actors is None else actors
    tmp = tmp or Path(tempfile.mkdtemp(prefix="pf"))
    config = config or make_config(tmp, **session)
    if backend is not None:
        config = override(config, llm={"profile": "test"})
    ctx = zmq.Context()
    built: dict[str, Actor] = {}
    for name in actors:
        if stand_ins and name in stand_ins:
            built[name] = stand_ins[name](config, zmq_context=ctx)
        elif name == "llm":
            built[name] = LLMWorker(config, zmq_context=ctx, backends={"test": backend} if backend else None)
        elif name == "session":
            built[name] = SessionActor(config, zmq_context=ctx, clock=clock)
        elif name == "glasses" and glasses is None:
            built[name] = RecordingGlasses(config, zmq_context=ctx)
        elif name == "glasses":
            built[name] = glasses
        else:
            built[name] = actor_class(name)(config, zmq_context=ctx)
    try:
        async with anyio.create_task_group() as tg:
            for actor in built.values():
                await tg.start(actor.run)
            client = Endpoint(config, zmq_context=ctx, name="test")
            async with client.running():
                yield System(config, ctx, built, client)
            tg.cancel_scope.cancel()
    finally:
        ctx.destroy(linger=0)


class ToolsSeen(ScriptedBackend):
    """A scripted model that also records the tools each request offered."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.offered: list[list[str]] = []
        self.choices: list[dict[str, list[str]]] = []  # each request's arguments allowed, per tool
        self.last_read: list[str] = []  # each request's last message as sent (a closing notice included)

    def stream(self, messages, *, tools, max_tokens, arg_choices=None):
        self.offered.append(list(tools))
        self.last_read.append(messages[-1].content if messages else "")
        self.choices.append({tool: list(allowed) for tool, allowed in (arg_choices or {}).items()})
        return super().stream(messages, tools=tools, max_tokens=max_tokens, arg_choices=arg_choices)


async def collect_turn(incoming, event_id: str, timeout: float = 10.0) -> list[p.Msg]:
    """Everything a phone receives up to the TurnDone covering `event_id`."""
    got: list[p.Msg] = []
    with anyio.fail_after(timeout):
        async for env in incoming:
            got.append(env.body)
            if isinstance(env.body, p.TurnDone) and event_id in env.body.event_ids:
                return got
    raise AssertionError("stream ended")


def call_what_is_said(messages) -> str:
    """A scripted model: calls what the user says after "call ", answers a tool result with
    "ok: <result>", anything else with "plain answer"."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool":
        return "ok: " + last.content
    words = last.content.split("] ", 1)[-1]
    return "TOOL_CALL: " + words[len("call "):] if words.startswith("call ") else "plain answer"
