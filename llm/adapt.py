"""Turn the model-neutral history into what each model family accepts, and clean model output.

Neither target has a native tool role here (we speak the `TOOL_CALL:` text protocol, SPEC S12),
so tool results become user turns that are clearly labelled as tool output, never as the user's
words (SPEC E9). Rendering is deterministic so the same history always yields the same prompt
prefix: that is what keeps vLLM's and llama.cpp's prefix caches effective.
"""
from __future__ import annotations

import re

from protocol import ChatMessage

ROLES = ("system", "user", "assistant", "tool")


def tool_result_text(message: ChatMessage) -> str:
    """A tool result as user-turn text, labelled so it cannot pass for the user speaking."""
    name = message.name or "unknown tool"
    return f"[Tool result from {name}]\n{message.content}"


def _check_roles(messages: list[ChatMessage]) -> None:
    for index, message in enumerate(messages):
        if message.role not in ROLES:
            raise ValueError(f"message {index} has role {message.role!r}; expected one of {', '.join(ROLES)}")


def _merge_same_role(turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: list[tuple[str, str]] = []
    for role, text in turns:
        if merged and merged[-1][0] == role:
            merged[-1] = (role, merged[-1][1] + "\n\n" + text)
        else:
            merged.append((role, text))
    return merged


def to_openai_messages(messages: list[ChatMessage]) -> list[dict[str, str]]:
    """OpenAI chat messages: tool results become labelled user turns; consecutive user turns merge.

    System messages stay system messages where they are (Qwen's template renders them anywhere).
    """
    _check_roles(messages)
    turns: list[tuple[str, str]] = []
    for message in messages:
        if message.role == "tool":
            turns.append(("user", tool_result_text(message)))
        elif message.role == "assistant":
            turns.append(("assistant", strip_think(message.content)))
        else:
            turns.append((message.role, message.content))
    merged: list[tuple[str, str]] = []
    for role, text in turns:
        if merged and role == "user" and merged[-1][0] == "user":
            merged[-1] = ("user", merged[-1][1] + "\n\n" + text)
        else:
            merged.append((role, text))
    return [{"role": role, "content": text} for role, text in merged]


def to_gemma_turns(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """Gemma 3 turns as (role, text) with role "user" | "model", strictly alternating, user first.

    Gemma has no system role: the leading system text is prepended to the first user turn; a
    system message later in the history becomes a user turn labelled "[System]". Tool results
    become labelled user turns. Consecutive same-role turns merge.
    """
    _check_roles(messages)
    leading_system: list[str] = []
    turns: list[tuple[str, str]] = []
    for message in messages:
        if message.role == "system":
            if not turns:
                leading_system.append(message.content)
            else:
                turns.append(("user", f"[System]\n{message.content}"))
        elif message.role == "tool":
            turns.append(("user", tool_result_text(message)))
        elif message.role == "assistant":
            turns.append(("model", strip_think(message.content)))
        else:
            turns.append(("user", message.content))
    if leading_system:
        system_text = "\n\n".join(leading_system)
        if turns and turns[0][0] == "user":
            turns[0] = ("user", system_text + "\n\n" + turns[0][1])
        else:
            turns.insert(0, ("user", system_text))
    turns = _merge_same_role(turns)
    if not turns:
        raise ValueError("cannot build a prompt from an empty history")
    if turns[0][0] != "user":
        raise ValueError("the history starts with an assistant turn and has no system text to put before it")
    if turns[-1][0] != "user":
        raise ValueError("the history ends with an assistant turn; Gemma needs a user or tool turn last")
    return turns


def render_gemma_prompt(messages: list[ChatMessage]) -> str:
    """The Gemma 3 chat format, ready for a raw completion (llama.cpp adds <bos> itself)."""
    parts = [f"<start_of_turn>{role}\n{text.strip()}<end_of_turn>\n" for role, text in to_gemma_turns(messages)]
    return "".join(parts) + "<start_of_turn>model\n"


_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>\s*|\Z)", re.DOTALL)


def strip_think(text: str) -> str:
    """Remove Qwen3 `<think>…</think>` blocks (an unterminated one runs to the end) and stray closers."""
    return _THINK_BLOCK.sub("", text).replace("</think>", "")


class ThinkFilter:
    """Streaming version of `strip_think`: feed pieces, get the visible text, tags split anywhere.

    Text that might be the start of a tag is held back until the next piece decides it.
    Whitespace right after a closing tag is dropped (Qwen emits `</think>\\n\\n`).
    """

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self, *, starts_inside: bool = False):
        self._inside = starts_inside
        self._pending = ""
        self._after_close = False

    def feed(self, piece: str) -> str:
        self._pending += piece
        visible: list[str] = []
        while self._pending:
            if self._inside:
                end = self._pending.find(self.CLOSE)
                if end < 0:
                    keep = _partial_suffix(self._pending, self.CLOSE)
                    self._pending = self._pending[len(self._pending) - keep:]
                    break
                self._pending = self._pending[end + len(self.CLOSE):]
                self._inside, self._after_close = False, True
                continue
            if self._after_close:
                stripped = self._pending.lstrip()
                if not stripped:
                    self._pending = ""
                    break
                self._pending, self._after_close = stripped, False
            tag_at = [i for i in (self._pending.find(self.OPEN), self._pending.find(self.CLOSE)) if i >= 0]
            if tag_at:
                start = min(tag_at)
                visible.append(self._pending[:start])
                rest = self._pending[start:]
                if rest.startswith(self.OPEN):
                    self._pending, self._inside = rest[len(self.OPEN):], True
                else:  # a stray closer: its block was never shown to us, just drop the tag
                    self._pending, self._after_close = rest[len(self.CLOSE):], True
                continue
            hold = max(_partial_suffix(self._pending, self.OPEN), _partial_suffix(self._pending, self.CLOSE))
            visible.append(self._pending[: len(self._pending) - hold])
            self._pending = self._pending[len(self._pending) - hold:]
            break
        return "".join(visible)

    def finish(self) -> str:
        """Flush what was held back: a dangling partial tag is plain text, unterminated thinking is not."""
        rest, self._pending = self._pending, ""
        if self._inside:
            return ""
        return rest.lstrip() if self._after_close else rest


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for length in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:length]):
            return length
    return 0
