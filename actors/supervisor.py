"""Supervision after Erlang/OTP: one_for_one restarts with an intensity/period limit.

The supervisor starts the six actors (in their own OS processes over ipc:// or tcp://, or as
tasks in this process over inproc://) and restarts one that dies. Actors of one process group
(`topology.groups`) share a process and so live, die and restart together. More than `intensity` restarts
within `period_s` seconds means something is wrong that restarting will not fix: the system stops
with a clear message instead of looping. The supervisor is itself an actor ("supervisor") so
`run.py status` can ask it how everyone is.
"""
from __future__ import annotations

import collections
import os
import signal
import sys
import time
from typing import Callable

import anyio
import anyio.abc

import protocol as p
from actors.base import Actor, AskTimeout, Inbound
from actors.topology import ACTORS, actor_class, process_groups
from core.config import Config, to_json
from core.lifeline import Lifeline, kill_group
from core.permanent import EXIT_PERMANENT, permanent_cause


class RestartBudget:
    """OTP's restart intensity: at most `intensity` restarts in any window of `period` seconds."""

    def __init__(self, intensity: int, period: float, clock: Callable[[], float] = time.monotonic):
        self.intensity = intensity
        self.period = period
        self.clock = clock
        self._restarts: collections.deque[float] = collections.deque()

    def record(self) -> bool:
        """Record one restart; False when the budget is exceeded (the system must stop)."""
        now = self.clock()
        self._restarts.append(now)
        while self._restarts and now - self._restarts[0] > self.period:
            self._restarts.popleft()
        return len(self._restarts) <= self.intensity


class _Child:
    """One supervised unit: an actor task (inproc), or an OS process running one or more actors."""

    __slots__ = ("name", "members", "pid", "restarts", "alive", "last_exit", "permanent")

    def __init__(self, members: tuple[str, ...]):
        self.name = "+".join(members)
        self.members = members
        self.pid = 0
        self.restarts = 0
        self.alive = False
        self.last_exit = ""
        self.permanent = ""  # why restarting it cannot help (core/permanent.py); "" otherwise


class Supervisor(Actor):
    name = "supervisor"

    def __init__(self, config: Config, *, actors: tuple[str, ...] = ACTORS, in_process: bool | None = None, **kwargs):
        super().__init__(config, **kwargs)
        self.actor_names = actors
        self.in_process = config.topology.mode == "inproc" if in_process is None else in_process
        self.budget = RestartBudget(config.supervisor.intensity, config.supervisor.period_s)
        if self.in_process:
            units = [(name,) for name in actors]
        else:
            units = [tuple(n for n in group if n in actors) for group in process_groups(config.topology)]
        self.children = {child.name: child for child in (_Child(u) for u in units if u)}
        self._child_of = {name: child for child in self.children.values() for name in child.members}
        self.failure: str = ""
        self._stop = anyio.Event()
        self._lifeline: Lifeline | None = None  # made with the first child process

    async def on_start(self) -> None:
        self.spawn(self._supervise_all, name="supervise")

    async def _supervise_all(self) -> None:
        async with anyio.create_task_group() as tg:
            if self.in_process:
                for child in self.children.values():  # leaves first: each starts on a running system
                    await tg.start(self._supervise, child)
            else:
                # Processes start together: a process group may hold an actor whose start waits
                # for an actor of a later group (the session waits for the toolset catalog).
                async with anyio.create_task_group() as starting:
                    for child in self.children.values():
                        starting.start_soon(tg.start, self._supervise, child)
            if self.in_process:
                from actors.host import freeze_startup_objects

                freeze_startup_objects()
            self.log.info("actor=supervisor all actors started mode=%s", "inproc" if self.in_process else self.config.topology.mode)
            if "llm" in self._child_of and self.config.llm.warmup:
                tg.start_soon(self._say_ready)

    async def _say_ready(self) -> None:
        """"ready" once the LLM worker's warm-up (llm.warmup) is over, or llm.warmup_wait_s passed."""
        deadline = anyio.current_time() + self.config.llm.warmup_wait_s
        warm = "warming"
        while warm == "warming" and anyio.current_time() < deadline:
            try:
                warm = getattr(await self.ask("llm", p.LLMStatusRequest(), timeout=5.0), "warm", "none")
            except AskTimeout:
                pass
            if warm == "warming":
                await anyio.sleep(0.5)
        self.log.info("actor=supervisor ready model=%s", warm if warm != "warming" else "still warming (llm.warmup_wait_s)")

    def _give_up(self, reason: str) -> None:
        """Escalate, OTP-style: stop everything with a clear message instead of looping."""
        self.failure = reason
        self.log.critical("actor=supervisor %s", reason)
        self._stop.set()

    async def _supervise(self, child: _Child, *, task_status: anyio.abc.TaskStatus = anyio.TASK_STATUS_IGNORED) -> None:
        first = True
        while True:
            try:
                if self.in_process:
                    await self._run_task(child, task_status if first else anyio.TASK_STATUS_IGNORED)
                else:
                    await self._run_process(child, task_status if first else anyio.TASK_STATUS_IGNORED)
            except Exception as exc:  # noqa: BLE001 - any crash of a child is a restart
                cause = permanent_cause(exc)
                child.last_exit = f"crashed: {type(exc).__name__}: {exc}"
                if cause is not None:
                    child.permanent = str(cause)
                elif not child.permanent:  # a child that exited 2 during its start said why already
                    self.log.exception("actor=supervisor child=%s crashed", child.name)
            first = False
            child.alive = False
            if self._stop.is_set():
                return
            if child.permanent:
                self._give_up(f"{child.name}: {child.permanent}")
                await anyio.sleep_forever()  # the stop cancels this (a start that returned would be an error)
            if not self.budget.record():
                self._give_up(
                    f"{child.name} died ({child.last_exit}); more than {self.budget.intensity} restarts within "
                    f"{self.budget.period:g} s - stopping the system instead of restarting in a loop"
                )
                return
            child.restarts += 1
            self.log.warning("actor=supervisor restarting child=%s restarts=%d last_exit=%s", child.name, child.restarts, child.last_exit)

    async def _run_task(self, child: _Child, task_status) -> None:
        actor = actor_class(child.members[0])(self.config, zmq_context=self.zmq)
        child.pid = os.getpid()
        async with anyio.create_task_group() as tg:
            await tg.start(actor.run)
            child.alive = True
            task_status.started()
        child.last_exit = "stopped"

    async def _run_process(self, child: _Child, task_status) -> None:
        if self._lifeline is None:
            self._lifeline = Lifeline()
        env = dict(os.environ, PORFIRY_CONFIG_JSON=to_json(self.config).decode(), **self._lifeline.env())
        # Its own process group, and a lifeline (core/lifeline.py): if this process dies, even by
        # SIGKILL, the child kills its group (itself and what it started) at once.
        process = await anyio.open_process(
            [sys.executable, "-m", "actors.host", ",".join(child.members)], env=env, stdin=None, stdout=None, stderr=None,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), start_new_session=True,
            pass_fds=(self._lifeline.fd,),
        )
        child.pid = process.pid
        try:
            await self._await_ready(child, process)
            child.alive = True
            task_status.started()
            hung: list[str] = []
            async with anyio.create_task_group() as tg:
                if self.config.supervisor.hung_after_s > 0:
                    tg.start_soon(self._watch, child, process, hung)
                code = await process.wait()
                tg.cancel_scope.cancel()
            child.last_exit = (hung[0] if hung else f"exit code {code}" if code >= 0
                               else f"killed by signal {signal.Signals(-code).name}")
        finally:
            if process.returncode == EXIT_PERMANENT:  # it said why, in one line on stderr
                child.permanent = "a permanent failure (exit status 2, its reason in the line above); not restarted"
            if process.returncode is None:
                with anyio.CancelScope(shield=True):
                    await _terminate(process)
            kill_group(process.pid)  # what it left in its process group goes with it

    async def _watch(self, child: _Child, process: anyio.abc.Process, hung: list[str]) -> None:
        """OTP's heartbeat for what does not die: every `watchdog_every_s` each actor of the
        process is pinged (through its mailbox, so a handler that never returns counts too); one
        silent for `hung_after_s` means the process is hung, and it is killed to be restarted."""
        cfg = self.config.supervisor
        answered = dict.fromkeys(child.members, anyio.current_time())

        async def ping(name: str) -> None:
            with anyio.move_on_after(cfg.watchdog_every_s):  # the send too: a hung process's link may be full
                try:
                    await self.ask(name, p.Ping(), timeout=cfg.watchdog_every_s)
                    answered[name] = anyio.current_time()
                except AskTimeout:
                    pass

        while True:
            await anyio.sleep(cfg.watchdog_every_s)
            async with anyio.create_task_group() as tg:
                for name in child.members:
                    tg.start_soon(ping, name)
            now = anyio.current_time()
            silent = max(child.members, key=lambda name: now - answered[name])
            if now - answered[silent] >= cfg.hung_after_s:
                hung.append(f"hung: {silent} answered no Ping for {now - answered[silent]:.0f} s (supervisor.hung_after_s)")
                self.log.error("actor=supervisor child=%s is %s: killing it", child.name, hung[0])
                try:
                    process.kill()
                except ProcessLookupError:  # it died meanwhile: restarted all the same
                    pass
                return

    async def _await_ready(self, child: _Child, process: anyio.abc.Process) -> None:
        """A child is up when its actors answer Ping (inboxes bound, loop running)."""
        deadline = time.monotonic() + 60
        waiting = list(child.members)
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise RuntimeError(f"{child.name} exited during start with code {process.returncode}")
            try:
                await self.ask(waiting[0], p.Ping(), timeout=0.5)
                waiting.pop(0)
                if not waiting:
                    return
            except AskTimeout:
                continue
        raise RuntimeError(f"{child.name} did not become ready within 60 s")

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.StatusRequest):
            self.spawn(self._reply_status, msg)
        elif isinstance(body, p.Shutdown):
            msg.reply(self, p.Ok(detail="stopping"))
            self._stop.set()
        else:
            await super().handle(msg)

    async def status(self) -> p.SystemStatus:
        rows: dict[str, p.ActorStatus] = {}

        async def probe(name: str) -> None:
            child = self._child_of[name]
            try:
                pong = await self.ask(name, p.Ping(), timeout=1.0)
                alive, depth, pid = True, getattr(pong, "inbox_depth", 0), getattr(pong, "pid", child.pid)
            except AskTimeout:
                alive, depth, pid = False, 0, child.pid
            rows[name] = p.ActorStatus(
                name=name, alive=alive and child.alive, pid=pid, restarts=child.restarts, inbox_depth=depth,
                detail=child.last_exit,
            )

        async with anyio.create_task_group() as tg:
            for name in self.actor_names:
                tg.start_soon(probe, name)
        mode = "inproc" if self.in_process else self.config.topology.mode
        return p.SystemStatus(mode=mode, actors=[rows[name] for name in self.actor_names])

    async def _reply_status(self, msg: Inbound) -> None:
        msg.reply(self, await self.status())

    async def run_until_stopped(self) -> None:
        """Run the supervisor and its children until Shutdown, a signal, or the restart limit
        (then `failure` says why)."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.run)

            async def watch_stop() -> None:
                await self._stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(watch_stop)


async def _terminate(process: anyio.abc.Process) -> None:
    try:
        process.terminate()
    except ProcessLookupError:
        return
    with anyio.move_on_after(5):
        await process.wait()
        return
    try:
        process.kill()
    except ProcessLookupError:
        return
    await process.wait()
