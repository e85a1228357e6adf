"""SkillStore: the actor that serves skills to sessions and admins (S1, S4, S10, V1-V4).

A thin shell around one core.skills.SkillRepository: built-in skills from `skills.builtin_dir`,
the user's from `skills.user_dir`, exclusions from `skills.exclusions`. Hot reload is the
repository's check-on-use plus a look every refresh interval of its own, so every answer reflects
the files as they are now.

Sessions keep their skills index between steps; whenever what some session may see changes
(a file, an exclusion, a restart of this actor) the store tells the SessionActor `SkillsChanged`
and each session asks again on its next step. So a step costs no round trip to this actor.

A call that will read the folders (a refresh is due) runs in a worker thread: in a one-process
topology the other actors keep running meanwhile; the rest answer from memory at once. Calls are
still one at a time (each handler awaits its call), so the repository needs no lock.
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
        config.builtin_skill_dirs(),
        config.path(config.skills.user_dir),
        exclusions=config.skills.exclusions,
        refresh_interval_s=refresh_interval_s,
        max_skill_bytes=config.skills.max_skill_bytes,
        read_timeout_s=config.skills.read_timeout_s,
    )


class SkillStore(Actor):
    name = "skills"

    def __init__(self, config: Config, *, zmq_context: zmq.Context | None = None,
                 clock: Callable[[], float] = time.time, refresh_interval_s: float = REFRESH_INTERVAL_S):
        super().__init__(config, zmq_context=zmq_context, clock=clock)
        self.refresh_interval_s = refresh_interval_s
        self.repo: SkillRepository | None = None
        self._announced = -1  # the repository generation the sessions were last told about

    async def on_start(self) -> None:
        self.repo = await anyio.to_thread.run_sync(
            lambda: build_repository(self.config, refresh_interval_s=self.refresh_interval_s))
        skills = self.repo.skills()
        self.log.info("actor=%s serving %d skills: %s", self.name, len(skills),
                      ", ".join(s.name for s in skills) or "(none)")
        self._announce()  # a restarted store may serve other skills than the sessions cached
        self.spawn(self._watch, name="skills-watch")

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
        assert self.repo is not None
        if self.repo.refresh_due():
            result = await anyio.to_thread.run_sync(fn, *args)
        else:
            result = fn(*args)
        self._announce()
        return result

    async def _watch(self) -> None:
        """Notice edits even while no session asks, so cached indexes never stay stale for long."""
        assert self.repo is not None
        while True:
            await anyio.sleep(self.refresh_interval_s)
            try:
                await anyio.to_thread.run_sync(self.repo.refresh)
            except Exception:  # noqa: BLE001 - the next look (or the next request) tries again
                self.log.exception("actor=skills could not re-read the skill folders")
                continue
            self._announce()

    def _announce(self) -> None:
        assert self.repo is not None
        if self.repo.generation != self._announced:
            self._announced = self.repo.generation
            try:
                self.tell("session", p.SkillsChanged(generation=self._announced))
            except Exception as exc:  # noqa: BLE001 - the session re-asks after its own restart anyway
                self.log.warning("actor=skills could not tell the sessions about a change: %s", exc)

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
