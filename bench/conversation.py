"""The scripted 20-turn conversation behind `run.py bench --prompts`, run through the real
`Conversation` loop in process (no sockets) so that every request of every step is recorded.

Deterministic: a scripted model (rules below), a fixed clock, the shipped skills and media
catalog, a temporary user-skills dir and media database.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import asynccontextmanager
from typing import AsyncIterator

import anyio
import msgspec

import protocol as p
from core.budget import default_catalog
from core.config import Config
from core.conversation import Conversation, SessionSettings
from core.skills import SkillRepository
from core.toolsets import ToolsetRegistry
from llm.scripted import MEDIA_WORDS, Rule, ScriptedBackend, media_active
from toolsets.media.provider import MediaProvider
from core.toolsets import ToolResult
from toolsets.media.tools import play_started_text, run_info, run_search, validate_play

SESSION = "bench-prompts"
FIXED_NOW = 1_741_975_200.0  # 2025-03-14 18:00 UTC: the clock every prompt sees
TURN_TIMEOUT_S = 30.0


# --- the scripted conversation ---------------------------------------------------------------
CONVERSATION: tuple[str, ...] = (
    "Hi Porfiry, are you listening?",
    "What time is it?",
    "I want to watch a film tonight, find «Брат 2».",
    "Tell me more about the first one.",
    "Who is the director known for?",
    "Is there a film called «Служебный роман»?",
    "What is the runtime of that one?",
    "Remind me what day it is today.",
    "How do I say thank you in Italian?",
    "Find the series «Семнадцать мгновений весны».",
    "Details of the first result, please.",
    "Play it on my phone.",
    "Pause it for a moment.",
    "Give me a quick pancake recipe.",
    "Search for the movie «Джентльмены удачи».",
    "Tell me about the first result.",
    "And the time now?",
    "Resume the film.",
    "What will the weather be like tomorrow?",
    "Good night, Porfiry.",
)

_DETAILS = r"\b(more about|details?|runtime|tell me about)\b"
_PLAYBACK = r"\b(play it|pause|resume)\b"
_TIME = r"\b(time|what day|date)\b"


def _user_words(messages: list[p.ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user" and not message.content.startswith("[System notice]"):
            return re.sub(r"^\[[^\]]*\]\s*", "", message.content.strip())
    return ""


def _query(messages: list[p.ChatMessage]) -> str:
    """The title the user asked for: the «quoted» part of their words."""
    words = _user_words(messages)
    quoted = re.search(r"«([^»]+)»", words)
    return quoted.group(1) if quoted else words


def _media_active(messages: list[p.ChatMessage]) -> bool:
    return media_active(messages)


def _last_media_id(messages: list[p.ChatMessage]) -> str:
    """The id of the title talked about last: from media_info's play hint or media_search's first line."""
    for message in reversed(messages):
        if message.role != "tool":
            continue
        if message.name == "media_info":
            found = re.search(r"media_play\|(\S+)", message.content)
            if found:
                return found.group(1)
        if message.name == "media_search":
            first = message.content.split(" \u2014 ", 1)[0].strip()
            if first and " " not in first:
                return first
    return "unknown"


def _on_media_question(messages: list[p.ChatMessage]) -> str:
    if _media_active(messages):
        return f"TOOL_CALL: media_search|{_query(messages)}"
    return "TOOL_CALL: read_skill|media"


def _after_read_skill(messages: list[p.ChatMessage]) -> str:
    if _media_active(messages):
        return f"TOOL_CALL: media_search|{_query(messages)}"
    return "TOOL_CALL: enable_toolset|media"


def _playback(messages: list[p.ChatMessage]) -> str:
    words = _user_words(messages).lower()
    action = "pause" if "pause" in words else "resume" if "resume" in words else "play"
    media_id = _last_media_id(messages)
    return f"TOOL_CALL: media_play|{media_id}" + ("" if action == "play" else f"; action={action}")


BENCH_RULES: tuple[Rule, ...] = (
    Rule(r"", _after_read_skill, role="tool", tool="read_skill"),
    Rule(r"^\[System notice\] Toolset media activated", lambda m: f"TOOL_CALL: media_search|{_query(m)}", role="user"),
    Rule(r"", "Here is what I found: {first_line}", role="tool", tool="media_search"),
    Rule(r"", "{first_line}.", role="tool", tool="media_info"),
    Rule(r"", "Done: {first_line}", role="tool", tool="media_play"),
    Rule(r"", "It is {first_line}.", role="tool", tool="get_current_time"),
    Rule(r"", "Done.", role="tool"),
    Rule(_PLAYBACK, _playback, role="user"),
    Rule(_DETAILS, lambda m: f"TOOL_CALL: media_info|{_last_media_id(m)}", role="user"),
    Rule(_TIME, "TOOL_CALL: get_current_time", role="user"),
    Rule(MEDIA_WORDS, _on_media_question, role="user"),
    Rule(r"", "Sure. Here is a short answer to: {user}", role="user"),
)


class RecordedRequest(msgspec.Struct, kw_only=True):
    turn: int
    step: int
    messages: list[p.ChatMessage]
    tools: list[str]


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
        self.requests.append(RecordedRequest(turn=self.turn, step=self._step, messages=list(messages), tools=list(tools)))
        async with self.backend.stream(messages, tools=tools, max_tokens=max_tokens, arg_choices=arg_choices) as pieces:
            yield pieces

    async def invoke(self, session: str, call_id: str, tool: str, args: dict[str, str]) -> p.ToolOutcome:
        if tool == "media_search":
            reply = run_search(self.provider, args)
        elif tool == "media_info":
            reply = run_info(self.provider, args)
        elif tool == "media_play":
            checked = validate_play(args, self.provider)
            if isinstance(checked, ToolResult):
                reply = checked
            else:
                self._plays += 1  # a fixed task id per play keeps the prompts deterministic
                reply = ToolResult(True, play_started_text(checked, f"task{self._plays:04d}"))
        else:
            reply = ToolResult(False, f"tool {tool} is not part of this benchmark")
        return p.ToolOutcome(call_id=call_id, ok=reply.ok, text=reply.text)

    def cancel_tool(self, session: str, call_id: str) -> None:
        pass

    def send(self, session: str, body: p.Msg) -> None:
        self.shown.append(body)
        if isinstance(body, p.TurnDone):
            self.turn_done.set()



async def record_conversation(config: Config, script: Sequence[str], *,
                              clock: Callable[[], float] = lambda: FIXED_NOW) -> list[RecordedRequest]:
    """Run `script` (one user utterance per turn) through a real Conversation; every request it made."""
    from toolsets.media.executor import default_provider
    from actors.skill_store import build_repository

    provider = default_provider(config)
    ready = getattr(provider, "ensure_ready", None)
    if ready is not None:
        await anyio.to_thread.run_sync(ready)
    ports = InProcessPorts(build_repository(config), provider, ScriptedBackend(BENCH_RULES))
    async with anyio.create_task_group() as tasks:
        settings = SessionSettings(registry=ToolsetRegistry(default_catalog()), ports=ports,
                                   spawn=tasks.start_soon, config=config.session, clock=clock)
        conversation = Conversation(SESSION, settings)
        for turn, text in enumerate(script, start=1):
            ports.begin_turn(turn)
            event = p.Event(event_id=f"turn-{turn}", kind="user_text", source="user", channel="speech",
                            content=text, ts=clock())
            verdict = conversation.submit(event)
            if verdict != "accepted":
                raise RuntimeError(f"turn {turn}: the conversation answered {verdict!r}")
            with anyio.fail_after(TURN_TIMEOUT_S):
                await ports.turn_done.wait()
    return ports.requests
