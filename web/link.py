"""The console's connections to a running Porfiry: a phone (events the page sends), an admin client
(asks of any actor), and the session actor's fact stream (`Observe`), kept subscribed across
restarts of the session actor."""
from __future__ import annotations

import logging
from typing import Callable

import anyio

import protocol as p
from actors.base import AskTimeout, Endpoint
from core.config import Config
from phone.client import PhoneClient, PhoneError

_log = logging.getLogger("porfiry.web")

LEASE_S = 15.0  # the subscription's lease; renewed every LEASE_S / 3


class RuntimeLink:
    def __init__(self, config: Config, on_fact: Callable[[p.Msg], None], on_sessions: Callable[[list[p.SessionSummary]], None],
                 phone: PhoneClient | None, watched: Callable[[], list[str]] = lambda: [], lease_s: float = LEASE_S):
        self.config = config
        self.lease_s = lease_s
        self.watched = watched  # sessions pages show: only their prompts are sent (the bulk of the bytes)
        self._poke = anyio.Event()
        self.on_fact = on_fact
        self.on_sessions = on_sessions
        self.phone = phone
        self.admin = Endpoint(config, name="web")
        self.subscribed = anyio.Event()

    async def run(self, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        async with self.admin.running():
            task_status.started()
            while True:
                try:
                    await self._observe()
                except Exception as exc:  # noqa: BLE001 - the runtime restarts; subscribe again
                    _log.warning("web: observation interrupted (%s); subscribing again", exc)
                await anyio.sleep(1.0)

    async def _observe(self) -> None:
        observe = p.Observe(lease_s=self.lease_s, prompt_sessions=self.watched())
        async with self.admin.ask_stream("session", observe, buffer=8192) as replies:
            first = None
            with anyio.move_on_after(5.0):
                first = (await replies.receive()).body
            if not isinstance(first, p.Observing):
                _log.info("web: the session actor answered %s to Observe; retrying", type(first).__name__ if first else "nothing")
                return
            self.on_sessions(first.sessions)
            self.subscribed.set()
            async with anyio.create_task_group() as tg:
                async def renew() -> None:
                    while True:
                        with anyio.move_on_after(self.lease_s / 3):
                            await self._poke.wait()
                        self._poke = anyio.Event()
                        renewal = p.ObserveRenew(subscription_id=first.subscription_id, prompt_sessions=self.watched())
                        try:
                            reply = await self.admin.ask("session", renewal, timeout=self.lease_s / 3)
                        except AskTimeout:
                            continue
                        if isinstance(reply, p.ErrorReply):
                            _log.info("web: subscription lost (%s); subscribing again", reply.detail)
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(renew)
                async for envelope in replies:
                    try:
                        self.on_fact(envelope.body)
                    except Exception:  # noqa: BLE001 - one odd fact must not end the stream
                        _log.exception("web: could not take fact %s", type(envelope.body).__name__)

    def watch_changed(self) -> None:
        """A page opened another session: say so now (its prompts start with its next request)."""
        self._poke.set()

    # ---- what the page asks -------------------------------------------------------------------
    async def send(self, session: str, action: str, value: str = "") -> str:
        """text | stop | button | glasses (on/off): an event from the page's phone; returns its event
        id once acked."""
        assert self.phone is not None, "this link has no phone"
        if action == "text":
            return await self.phone.send_text(session, value)
        if action == "stop":
            return await self.phone.interrupt(session)
        if action == "button":
            return await self.phone.button(session, value)
        if action == "glasses":
            return await self.phone.glasses(session, value)
        raise ValueError(f"unknown action {action!r}")

    async def ask(self, target: str, body: p.Msg, timeout: float = 5.0) -> p.Msg:
        return await self.admin.ask(target, body, timeout=timeout)

    async def ask_quietly(self, target: str, body: p.Msg, timeout: float = 2.0) -> p.Msg | None:
        try:
            return await self.admin.ask(target, body, timeout=timeout)
        except (AskTimeout, PhoneError):
            return None
