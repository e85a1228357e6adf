"""`core.conversation.Ports` without sockets, for a Conversation run in one task: the benchmarks
(`run.py bench --prompts`), the evals (`run.py eval`) and tests."""
from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

import anyio
import msgspec

import protocol as p
from core.skills import SkillRepository
from core.toolsets import ToolResult
from llm.scripted import ScriptedBackend
from toolsets.media.provider import MediaProvider
from toolsets.media.tools import MEDIA_INFO, MEDIA_PLAY, MEDIA_SEARCH, play_started, run_info, run_search, validate_play


class RecordedRequest(msgspec.Struct, kw_only=True):
    turn: int
    step: int
    messages: list[p.ChatMessage]
    tools: list[str]
    arg_choices: dict[str, list[str]] | None = None  # what the grammar of a llamacpp backend admits
    reply: str = ""  # what the model answered


class InProcessPorts:
    """`core.conversation.Ports` without sockets: skills from a SkillRepository, the media tools
    run directly, a scripted model; every request is recorded with its turn and step."""

    def __init__(self, repo: SkillRepository, provider: MediaProvider, backend: ScriptedBackend):
        self.repo = repo
        self.provider = provider
        self.backend = backend
        self.requests: list[RecordedRequest] = []
        self.shown: list[p.Msg] = []
        self.turn = 0
        self._step = 0
        self._plays = 0
        self.turn_done = anyio.Event()

    def begin_turn(self, turn: int) -> None:
        self.turn, self._step = turn, 0
        self.turn_done = anyio.Event()

    async def skills(self, session: str, phone_key: str) -> p.SkillIndex:
        snapshot = self.repo.snapshot(session, phone_key)
        return p.SkillIndex(version=snapshot.version, entries=snapshot.entries, body_versions=snapshot.body_versions)

    async def read_skill(self, session: str, phone_key: str, name: str) -> p.SkillBody:
        found, text, body_version = self.repo.read(name, session, phone_key)
        return p.SkillBody(name=name, found=found, text=text, version=self.repo.skills_version(session, phone_key),
                           body_version=body_version)

    @asynccontextmanager
    async def generate(self, session: str, messages: list[p.ChatMessage], tools: list[str],
                       max_tokens: int, arg_choices: dict[str, list[str]] | None = None) -> AsyncIterator[AsyncIterator[str]]:
        self._step += 1
        request = RecordedRequest(turn=self.turn, step=self._step, messages=list(messages), tools=list(tools),
                                  arg_choices=arg_choices)
        self.requests.append(request)
        async with self.backend.stream(messages, tools=tools, max_tokens=max_tokens, arg_choices=arg_choices) as pieces:
            try:
                yield pieces
            finally:
                request.reply = pieces.text

    async def invoke(self, session: str, call: p.ToolInvoke) -> p.ToolOutcome:
        tool, args = call.tool, call.args
        if tool == MEDIA_SEARCH.name:  # the media toolset's own specs: no tool named here
            reply = run_search(self.provider, args)
        elif tool == MEDIA_INFO.name:
            reply = run_info(self.provider, args)
        elif tool == MEDIA_PLAY.name:
            checked = validate_play(args, self.provider)
            if isinstance(checked, ToolResult):
                reply = checked
            else:
                self._plays += 1  # a fixed task id per play keeps the prompts deterministic
                reply = play_started(checked, f"task{self._plays:04d}")
        else:
            reply = ToolResult(False, f"tool {tool} is not part of this benchmark")
        return p.ToolOutcome(call_id=call.call_id, ok=reply.ok, text=reply.text, data=reply.data)

    def cancel_tool(self, session: str, call_id: str) -> None:
        pass

    def send(self, session: str, body: p.Msg) -> None:
        self.shown.append(body)
        if isinstance(body, p.TurnDone):
            self.turn_done.set()
