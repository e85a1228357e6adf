"""SkillStore: the actor that serves skills to sessions and admins (S1, S4, S10, V1-V4).

A thin shell around one core.skills.SkillRepository: built-in skills from `skills.builtin_dir`,
the user's from `skills.user_dir`, exclusions from `skills.exclusions`. Hot reload is the
repository's check-on-use, so every answer reflects the files as they are now.

Repository calls stat (and sometimes parse) files, so they run in a worker thread: in a
one-process topology the other actors keep running meanwhile. They are still one at a time
(each handler awaits its call), so the repository needs no lock.
"""
from __future__ import annotations

import time
from typing import Callable

import anyio
import zmq

import protocol as p
from actors.base import Actor, Inbound
from core.config import Config
from core.skills import REFRESH_INTERVAL_S, SkillRepository
from core.skills_admin import run_admin


def build_repository(config: Config, *, refresh_interval_s: float = REFRESH_INTERVAL_S) -> SkillRepository:
    """The repository the config describes. A malformed exclusions table raises ValueError."""
    return SkillRepository(
        config.path(config.skills.builtin_dir),
        config.path(config.skills.user_dir),
        exclusions=config.skills.exclusions,
        refresh_interval_s=refresh_interval_s,
    )


class SkillStore(Actor):
    name = "skills"

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.time, refresh_interval_s: float = REFRESH_INTERVAL_S):
        super().__init__(config, zmq_context=zmq_context, clock=clock)
        self.refresh_interval_s = refresh_interval_s
        self.repo: SkillRepository | None = None

    async def on_start(self) -> None:
        self.repo = await anyio.to_thread.run_sync(
            lambda: build_repository(self.config, refresh_interval_s=self.refresh_interval_s))
        skills = self.repo.skills()
        self.log.info("actor=%s serving %d skills: %s", self.name, len(skills),
                      ", ".join(s.name for s in skills) or "(none)")

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.SkillIndexRequest):
            msg.reply(self, await self._run(self.index, msg.session, body.phone_key))
        elif isinstance(body, p.SkillRead):
            msg.reply(self, await self._run(self.read, body.name, msg.session, body.phone_key))
        elif isinstance(body, p.SkillsAdmin):
            text = await self._run(run_admin, self.repo, body.op, body.name, body.target)
            msg.reply(self, p.SkillsAdminReply(text=text))
        else:
            await super().handle(msg)

    async def _run(self, fn, *args):
        return await anyio.to_thread.run_sync(fn, *args)

    # --- the answers (plain functions of the repository, run in a worker thread) ----------------
    def index(self, session_id: str, phone_key: str) -> p.SkillIndex:
        assert self.repo is not None
        snapshot = self.repo.snapshot(session_id, phone_key)
        return p.SkillIndex(version=snapshot.version, entries=snapshot.entries,
                            body_versions=snapshot.body_versions)

    def read(self, name: str, session_id: str, phone_key: str) -> p.SkillBody:
        assert self.repo is not None
        found, text, body_version = self.repo.read(name, session_id, phone_key)
        version = self.repo.skills_version(session_id, phone_key)
        return p.SkillBody(name=name, found=found, text=text, version=version, body_version=body_version)
