"""The prompt always fits: fold the oldest whole turns out of the request, never out of the journal.

`fold_history` is pure: given the history, where the current turn starts, the tokens the rest
of the request takes and the model's context, it returns the messages to send. The oldest
turns give way to one line that says how many are hidden and how to find them
(`history_search`). Cuts fall only before a user-side message, so a tool call always keeps its
result and the current turn is never folded. The cut moves in large steps (a quarter of the
context by default), and stays put between steps, so consecutive requests share their prefix
and the model server's prefix cache keeps working.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from protocol import ChatMessage

FOLD_LINE = "[{n} earlier turns are not shown. TOOL_CALL: history_search|words finds them.]"
PER_MESSAGE_TOKENS = 4  # role markers and separators a chat template adds around each message
_LONGEST_FOLD_LINE = len(FOLD_LINE.format(n=10_000))


@dataclass
class ModelContext:
    """What the session side knows of the active model: its context (from the LLM worker) and
    how many tokens a character of prompt costs (learnt from the worker's prompt_tokens)."""

    context_tokens: int = 0  # 0: unknown, nothing is folded
    tokens_per_char: float = 0.5  # conservative until the worker reports real counts
    profile: str = ""
    frame: bool = True  # the active profile's choice of core.frame (a server model: off by default)

    def observe(self, prompt_tokens: int, chars: int) -> None:
        """Calibrate from a finished request: a little above what the model really counted."""
        if prompt_tokens > 0 and chars > 200:
            self.tokens_per_char = max(0.05, 1.1 * prompt_tokens / chars)

    def cost(self, message: ChatMessage) -> int:
        return int(len(message.content) * self.tokens_per_char) + PER_MESSAGE_TOKENS

    def cost_of(self, chars: int, messages: int) -> int:
        """`messages` messages of `chars` characters in all (at least the sum of their `cost`s)."""
        return int(chars * self.tokens_per_char) + PER_MESSAGE_TOKENS * messages


@dataclass
class Fold:
    messages: list[ChatMessage]  # what goes after the system prompt
    cut: int  # history[:cut] is folded (keep it for the next request: the fold point is stable)
    folded_turns: int


def fold_history(history: list[ChatMessage], *, cut: int, current_start: int, other_tokens: int,
                 max_tokens: int, model: ModelContext, step_share: float = 0.25,
                 chars: Sequence[int] | None = None, folded_turns: int | None = None) -> Fold:
    """The history to send. `cut`: the previous fold point; `current_start`: index of the
    current turn's first message; `other_tokens`: the system prompt and anything sent after the
    history; `max_tokens`: reserved for the reply. `chars`: running totals of the history's
    content lengths (`chars[i]`: that of history[:i], as `Trajectory.chars` keeps them) and
    `folded_turns`: the user turns in history[:cut] (the previous Fold's), so that a step of a
    long conversation makes no pass over all of it; both are computed when not given."""
    context = model.context_tokens
    cut = min(cut, len(history))
    if context <= 0:
        return Fold(history, 0, 0)
    if chars is None:
        chars = list(itertools.accumulate((len(m.content) for m in history), initial=0))
    end = len(history)
    line_cost = model.cost_of(_LONGEST_FOLD_LINE, 1)  # the line's cost, however many turns it will count
    room = context - max_tokens - other_tokens - line_cost
    first = cut
    if model.cost_of(chars[end] - chars[first], end - first) > room:
        target = room - int(step_share * context)
        for start in range(first + 1, min(current_start, end - 1) + 1):
            if history[start].role == "user":
                cut = start
                if model.cost_of(chars[end] - chars[start], end - start) <= target:
                    break
    if cut == 0:
        return Fold(history, 0, 0)
    if folded_turns is None:
        first, folded_turns = 0, 0
    turns = folded_turns + sum(1 for m in history[first:cut] if m.role == "user")
    line = ChatMessage(role="user", content=FOLD_LINE.format(n=turns))
    return Fold([line, *history[cut:]], cut, turns)
