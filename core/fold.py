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

from dataclasses import dataclass

from protocol import ChatMessage

FOLD_LINE = "[{n} earlier turns are not shown. TOOL_CALL: history_search|words finds them.]"
PER_MESSAGE_TOKENS = 4  # role markers and separators a chat template adds around each message


@dataclass
class ModelContext:
    """What the session side knows of the active model: its context (from the LLM worker) and
    how many tokens a character of prompt costs (learnt from the worker's prompt_tokens)."""

    context_tokens: int = 0  # 0: unknown, nothing is folded
    tokens_per_char: float = 0.5  # conservative until the worker reports real counts
    profile: str = ""

    def observe(self, prompt_tokens: int, chars: int) -> None:
        """Calibrate from a finished request: a little above what the model really counted."""
        if prompt_tokens > 0 and chars > 200:
            self.tokens_per_char = max(0.05, 1.1 * prompt_tokens / chars)

    def cost(self, message: ChatMessage) -> int:
        return int(len(message.content) * self.tokens_per_char) + PER_MESSAGE_TOKENS


@dataclass
class Fold:
    messages: list[ChatMessage]  # what goes after the system prompt
    cut: int  # history[:cut] is folded (keep it for the next request: the fold point is stable)
    folded_turns: int


def fold_history(history: list[ChatMessage], *, cut: int, current_start: int, other_tokens: int,
                 max_tokens: int, model: ModelContext, step_share: float = 0.25) -> Fold:
    """The history to send. `cut`: the previous fold point; `current_start`: index of the
    current turn's first message; `other_tokens`: the system prompt and anything sent after the
    history; `max_tokens`: reserved for the reply."""
    context = model.context_tokens
    cut = min(cut, len(history))
    if context <= 0:
        return Fold(history, 0, 0)
    line_cost = model.cost(ChatMessage(role="user", content=FOLD_LINE.format(n=10_000)))
    room = context - max_tokens - other_tokens - line_cost
    first = cut
    costs = [model.cost(m) for m in history[first:]]
    kept = sum(costs)
    if kept > room:
        target = room - int(step_share * context)
        starts = [i for i in range(first + 1, min(current_start, len(history)) + 1)
                  if i < len(history) and history[i].role == "user"]
        new_cut = first
        for start in starts:
            kept -= sum(costs[new_cut - first:start - first])
            new_cut = start
            if kept <= target:
                break
        cut = new_cut
    if cut == 0:
        return Fold(history, 0, 0)
    turns = sum(1 for m in history[:cut] if m.role == "user")
    line = ChatMessage(role="user", content=FOLD_LINE.format(n=turns))
    return Fold([line, *history[cut:]], cut, turns)
