"""The scripted 20-turn conversation behind `run.py bench --prompts`, run through the real
`Conversation` loop in process (no sockets) so that every request of every step is recorded.

It holds what issue 13 asks the prefix-reuse target to survive: two enables (media at turn 3,
timers at turn 7), a disable (turn 15: the user is done with films, the model calls
`disable_toolset|media`) and an expiry (11 minutes of silence before turn 17: timers, last used
at turn 14, runs past `session.toolset_ttl_s`, 600 s, and leaves the prompt).

Deterministic: a scripted model (rules below), a movable clock (`core.clock.ManualClock`, moved
by each turn's pause), the shipped skills and media catalog, a temporary user-skills dir and
media database.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import anyio
import msgspec

import protocol as p
from core.budget import default_catalog
from core.clock import ManualClock
from core.config import Config
from core.conversation import Conversation, SessionSettings
from core.inprocess import InProcessPorts, RecordedRequest
from core.toolsets import ToolsetRegistry
from llm.scripted import MEDIA_WORDS, Rule, ScriptedBackend, toolset_active

SESSION = "bench-prompts"
FIXED_NOW = 1_741_975_200.0  # 2025-03-14 18:00 UTC: the clock at the first turn
TURN_GAP_S = 30.0  # the user's pause between two turns, unless a turn says otherwise
EXPIRY_PAUSE_S = 660.0  # 11 minutes: longer than session.toolset_ttl_s (600 s) after timers' last call
TURN_TIMEOUT_S = 30.0


class Turn(NamedTuple):
    text: str  # what the user says
    pause_s: float = TURN_GAP_S  # clock time that passes before this turn (not before the first)


# --- the scripted conversation ---------------------------------------------------------------
CONVERSATION: tuple[Turn, ...] = (
    Turn("Hi Porfiry, are you listening?"),
    Turn("What time is it?"),
    Turn("I want to watch a film tonight, find «Брат 2»."),  # read_skill, enable media, search
    Turn("Tell me more about the first one."),
    Turn("Who is the director known for?"),
    Turn("Is there a film called «Служебный роман»?"),
    Turn("Remind me in 1 hour to call mom."),  # read_skill, enable timers, timers_set
    Turn("What day is it today?"),
    Turn("Find the series «Семнадцать мгновений весны»."),
    Turn("Details of the first result, please."),
    Turn("Play it on my phone."),
    Turn("Pause it for a moment."),
    Turn("How do I say thank you in Italian?"),
    Turn("What reminders do I have?"),  # timers' last call: its deadline is now + 600 s
    Turn("No more films tonight, turn the films off."),  # disable_toolset|media
    Turn("Give me a quick pancake recipe."),
    Turn("And the time now?", pause_s=EXPIRY_PAUSE_S),  # timers has expired
    Turn("What will the weather be like tomorrow?"),
    Turn("Thanks for the help today."),
    Turn("Good night, Porfiry."),
)

_DETAILS = r"\b(more about|details?|runtime|tell me about)\b"
_PLAYBACK = r"\b(play it|pause|resume)\b"
_TIME = r"\b(time|what day|date)\b"
_REMIND = r"\bremind me\b"
_REMINDERS = r"\b(reminders|timers)\b"
_FILMS_OFF = r"\b(no more films|films off)\b"


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


def _set_timer(messages: list[p.ChatMessage]) -> str:
    """"Remind me in 1 hour to call mom" -> timers_set|in 1 hour; call mom."""
    found = re.search(r"remind me (.+?) to (.+?)[.!?]*$", _user_words(messages), re.IGNORECASE)
    when, what = found.groups() if found else ("in 10 minutes", _user_words(messages))
    return f"TOOL_CALL: timers_set|{when}; {what}"


# what the model does once a toolset is on: per toolset, from the user's words
_TOOLSET_CALL = {"media": lambda m: f"TOOL_CALL: media_search|{_query(m)}", "timers": _set_timer}


def _on_toolset_question(toolset: str):
    """The user wants a toolset's tool: call it when the toolset is on, else read its skill first."""
    return lambda m: _TOOLSET_CALL[toolset](m) if toolset_active(m, toolset) else f"TOOL_CALL: read_skill|{toolset}"


def _after_read_skill(messages: list[p.ChatMessage]) -> str:
    """The skill just read says to enable its toolset (once) and then call its tool."""
    call = next((m.content for m in reversed(messages) if m.role == "assistant" and "read_skill|" in m.content), "")
    toolset = call.rsplit("|", 1)[-1].strip() if call else "media"
    if toolset not in _TOOLSET_CALL:
        return "Done."
    return _TOOLSET_CALL[toolset](messages) if toolset_active(messages, toolset) else f"TOOL_CALL: enable_toolset|{toolset}"


def _playback(messages: list[p.ChatMessage]) -> str:
    words = _user_words(messages).lower()
    action = "pause" if "pause" in words else "resume" if "resume" in words else "play"
    media_id = _last_media_id(messages)
    return f"TOOL_CALL: media_play|{media_id}" + ("" if action == "play" else f"; action={action}")


BENCH_RULES: tuple[Rule, ...] = (
    Rule(r"", _after_read_skill, role="tool", tool="read_skill"),
    Rule(r"^\[System notice\] Toolset media activated", _TOOLSET_CALL["media"], role="user"),
    Rule(r"^\[System notice\] Toolset timers activated", _TOOLSET_CALL["timers"], role="user"),
    Rule(r"^\[System notice\] toolset media disabled", "OK, no more films tonight.", role="user"),
    Rule(r"", "Here is what I found: {first_line}", role="tool", tool="media_search"),
    Rule(r"", "{first_line}.", role="tool", tool="media_info"),
    Rule(r"", "Done: {first_line}", role="tool", tool="media_play"),
    Rule(r"", "It is {first_line}.", role="tool", tool="get_current_time"),
    Rule(r"", "I will remind you: {first_line}", role="tool", tool="timers_set"),
    Rule(r"", lambda m: "Your reminders: " + " ".join(m[-1].content.split()), role="tool", tool="timers_list"),
    Rule(r"", "Done.", role="tool"),
    Rule(_FILMS_OFF, "TOOL_CALL: disable_toolset|media", role="user"),
    Rule(_REMIND, _on_toolset_question("timers"), role="user"),
    Rule(_REMINDERS, lambda m: "TOOL_CALL: timers_list" if toolset_active(m, "timers") else "TOOL_CALL: read_skill|timers",
         role="user"),
    Rule(_PLAYBACK, _playback, role="user"),
    Rule(_DETAILS, lambda m: f"TOOL_CALL: media_info|{_last_media_id(m)}", role="user"),
    Rule(_TIME, "TOOL_CALL: get_current_time", role="user"),
    Rule(MEDIA_WORDS, _on_toolset_question("media"), role="user"),
    Rule(r"", "Sure. Here is a short answer to: {user}", role="user"),
)


async def record_conversation(config: Config, script: Sequence[Turn | str], *,
                              clock: ManualClock | None = None,
                              backend: ScriptedBackend | None = None) -> list[RecordedRequest]:
    """Run `script` (one user utterance per turn; a plain string is a Turn after TURN_GAP_S)
    through a real Conversation; every request it made. The clock (FIXED_NOW unless given) moves
    by each turn's pause before it, the first turn's excepted. `backend`: the model (the bench's
    scripted rules unless given)."""
    from toolsets.media.executor import default_provider
    from actors.skill_store import build_repository

    clock = clock if clock is not None else ManualClock(FIXED_NOW)
    provider = default_provider(config)
    ready = getattr(provider, "ensure_ready", None)
    if ready is not None:
        await anyio.to_thread.run_sync(ready)
    ports = InProcessPorts(build_repository(config), provider, backend or ScriptedBackend(BENCH_RULES))
    async with anyio.create_task_group() as tasks:
        # the model's requests are what is recorded: no reflex (core.reflex) takes a turn from it
        session_config = msgspec.structs.replace(config.session, reflexes=False)
        settings = SessionSettings(registry=ToolsetRegistry(default_catalog()), ports=ports,
                                   spawn=tasks.start_soon, config=session_config, clock=clock)
        conversation = Conversation(SESSION, settings)
        for turn, item in enumerate(script, start=1):
            said = Turn(item) if isinstance(item, str) else item
            if turn > 1:
                clock.advance(said.pause_s)
            ports.begin_turn(turn)
            event = p.Event(event_id=f"turn-{turn}", kind="user_text", source="user", channel="speech",
                            content=said.text, ts=clock())
            verdict = conversation.submit(event)
            if verdict != "accepted":
                raise RuntimeError(f"turn {turn}: the conversation answered {verdict!r}")
            with anyio.fail_after(TURN_TIMEOUT_S):
                await ports.turn_done.wait()
    return ports.requests
