"""A deterministic stand-in model for tests and `run.py bench`: replies from rules, simulated latency.

The default rules play the media round trip of SPEC S14 the way a well-behaved model would:

    user asks about films/music/...      -> TOOL_CALL: read_skill|media
    result of read_skill                 -> TOOL_CALL: enable_toolset|media
    result of enable_toolset             -> TOOL_CALL: media_search|<the user's last words>
    result of media_search               -> a final answer quoting the first result line
    result of any other tool             -> a short acknowledgement
    "search X" (habit, media inactive)   -> TOOL_CALL: media_search|X at once; the runtime
                                            substitutes (S8) and the model repeats the call
    "tell me a long story ..."           -> a long streamed answer (something to interrupt)
    a call cut off by a runtime restart  -> the same call again
    the runtime restarted mid-turn       -> what the message before that notice asked for
    the user interrupted                 -> a short acknowledgement (unless a request followed)
    any other user message               -> a plain answer (no tool call)

A rule's pattern is a regex searched in the last non-assistant message (a batch of events: its
latest event, `latest_event`); `role`/`tool` narrow which messages it applies to. The reply is
a string (with `{user}`, `{content}` and `{first_line}` placeholders) or a callable taking the
history.
"""
from __future__ import annotations

import collections
import itertools
import operator
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass

import anyio
import anyio.lowlevel

from llm.base import Generation, LLMError
from protocol import ChatMessage

_ROLE, _CONTENT = operator.attrgetter("role"), operator.attrgetter("content")

# how the session's closing notices begin, after a tool result or a skill's recipe
# (core.prompt.AFTER_RESULT_NOTICE, RECIPE_NOTICE): what they close is what a rule answers
CLOSING_START = "[System notice] Above is the "
# how the notice that continues a turn cut by a crash begins (core.resume.RESTART_NOTICE):
# "continue it where it stopped" - a rule answers what was said before it
RESTART_START = "[System notice] The runtime restarted while this turn"

ReplyFn = Callable[[list[ChatMessage]], str]


@dataclass(frozen=True)
class Rule:
    pattern: str  # regex, searched (case-insensitive) in the last user/tool/system message
    reply: str | ReplyFn
    role: str = "any"  # "user", "tool" or "any"
    tool: str = ""  # with role "tool": only results of this tool


MEDIA_WORDS = r"\b(film|films|movie|movies|music|song|songs|album|video|videos|podcast|series|watch|listen|play)\b"

def toolset_active(messages: list[ChatMessage], toolset: str) -> bool:
    """What the prompt's state part says (the runtime's system messages, S7), as a model reads it."""
    system = "\n".join(m.content for m in messages if m.role == "system")
    return re.search(rf"^Active toolsets:.*\b{re.escape(toolset)}\b", system, re.MULTILINE) is not None


def media_active(messages: list[ChatMessage]) -> bool:
    return toolset_active(messages, "media")


def _after_read_skill(messages: list[ChatMessage]) -> str:
    """enable_toolset calls never enter the history (S7): the system prompt tells whether media is
    already active, exactly as it tells a real model."""
    if media_active(messages):
        return f"TOOL_CALL: media_search|{_last_user_text(messages)}"
    return "TOOL_CALL: enable_toolset|media"


LONG_STORY = " ".join(["Once upon a time there was a story that went on and on."] * 12)


def _search_words(messages: list[ChatMessage]) -> str:
    return re.sub(r"^search\s+", "", _last_user_text(messages), flags=re.IGNORECASE)


def _repeat_last_call(messages: list[ChatMessage]) -> str:
    """core.trajectory.CUT_BY_RESTART says "call it again if it is still needed": it is."""
    call = next((m.content for m in reversed(messages) if m.role == "assistant" and m.content.startswith("TOOL_CALL:")), "")
    return call.splitlines()[0] if call else "Sorry, I lost track of that."


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(r"cut off by a runtime restart", _repeat_last_call, role="tool"),
    Rule(r"", _after_read_skill, role="tool", tool="read_skill"),
    # S8: the runtime activated media instead of searching; a good model repeats the call.
    Rule(r"has NOT been executed", lambda messages: f"TOOL_CALL: media_search|{_search_words(messages)}", role="tool", tool="media_search"),
    # The runtime answers enable_toolset with a one-off notice, not a history entry (S7).
    Rule(r"^\[System notice\] Toolset media activated", "TOOL_CALL: media_search|{user}", role="user"),
    Rule(r"", "TOOL_CALL: media_search|{user}", role="tool", tool="enable_toolset"),
    Rule(r"", "Here is what I found: {first_line}", role="tool", tool="media_search"),
    Rule(r"", "Done.", role="tool"),
    Rule(r"\bUser interrupted\b", "OK, stopped.", role="user"),
    Rule(r"^\[User said\]:?\s*search\s+\S", lambda messages: f"TOOL_CALL: media_search|{_search_words(messages)}", role="user"),
    Rule(r"\blong story\b", LONG_STORY, role="user"),
    Rule(MEDIA_WORDS, "TOOL_CALL: read_skill|media", role="user"),
    Rule(r"", "Sure. Here is a short answer to: {user}", role="user"),
)


def one_system_message(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The prompt as rules read it: every later system message (the state part before the current
    turn, core.prompt.layout) joined to the leading one, and the closing notice after a tool
    result or a recipe left out (what it closes is what a rule answers), so that a rule sees the
    whole prompt in messages[0] and what was last said (the user's words, a tool result, a
    notice) in messages[-1]."""
    if messages and messages[-1].role == "user" and messages[-1].content.startswith(CLOSING_START):
        messages = messages[:-1]
    if len(messages) < 2 or messages[0].role != "system":
        return messages
    rest = messages[1:]
    roles = list(map(_ROLE, rest))  # the loops in C: a long conversation's every call passes here
    if "system" not in roles:
        return messages
    later = list(itertools.compress(map(_CONTENT, rest), map("system".__eq__, roles)))
    head = ChatMessage(role="system", content="\n\n".join([messages[0].content, *later]))
    return [head, *itertools.compress(rest, map("system".__ne__, roles))]


def split_into_tokens(text: str) -> list[str]:
    """Word-sized pieces (each word with its trailing whitespace), like a tokenizer would stream."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


_BATCHED = re.compile(r"^\[Unprocessed event \d+/\d+\] ([^:\n]+): (.*(?:\n  .*)*)", re.MULTILINE)


def latest_event(content: str) -> str:
    """A user message as one event's line ("[User said] ..."): a batch (core.batching) is read
    as its latest event that is not a runtime notice - what the user wants now (a "stop" replayed
    after a crash before the next request, a restart notice before it); else `content` itself."""
    events = [(label, body) for label, body in _BATCHED.findall(content) if label != "System notice"]
    if not events:
        return content
    label, body = events[-1]
    return f"[{label}] {body}"


def _last_user_text(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user" and not message.content.startswith("[System notice]"):
            # The runtime labels events by source ("[User said] ..."); the words are after it.
            content = latest_event(message.content)
            return " ".join(re.sub(r"^\[[^\]]*\]:?\s*", "", content.strip()).split())
    return ""


class ScriptedBackend:
    """Replies by the first matching rule (or `reply_fn`), streamed word by word with fixed delays."""

    def __init__(
        self,
        rules: tuple[Rule, ...] | list[Rule] = DEFAULT_RULES,
        *,
        reply_fn: ReplyFn | None = None,
        name: str = "scripted",
        first_token_delay_s: float = 0.0,
        token_delay_s: float = 0.0,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        fallback: str = "I have nothing to say to that.",
        keep_calls: int = 1000,
        context_tokens: int = 0,
    ):
        self.name = name
        self.rules = tuple(rules)
        self.reply_fn = reply_fn
        self.first_token_delay_s = first_token_delay_s
        self.token_delay_s = token_delay_s
        self.fallback = fallback
        self.context_tokens = context_tokens  # 0: no limit; else refuses longer prompts, like a real model
        self._sleep = sleep
        # the latest histories it was asked about, for assertions (bounded: bench runs are long)
        self.calls: collections.deque[list[ChatMessage]] = collections.deque(maxlen=keep_calls)

    def reply_for(self, messages: list[ChatMessage]) -> str:
        """The full reply text the rules give for this history (no latency)."""
        if self.reply_fn is not None:
            return self.reply_fn(messages)
        # the last thing said: not the prompt's state part, a system message; after a restart
        # notice, what it asks to continue
        last = next((m for m in reversed(messages) if m.role not in ("assistant", "system")
                     and not m.content.startswith(RESTART_START)), None)
        if last is None:
            return self.fallback
        said = latest_event(last.content) if last.role == "user" else last.content
        for rule in self.rules:
            if rule.role != "any" and rule.role != last.role:
                continue
            if rule.tool and rule.tool != last.name:
                continue
            if not re.search(rule.pattern, said, re.IGNORECASE):
                continue
            if callable(rule.reply):
                return rule.reply(messages)
            # the result's first line: not the runtime's "(toolset media was enabled on the way)"
            first_line = next((line.strip() for line in said.splitlines()
                               if line.strip() and not (line.startswith("(") and line.rstrip().endswith(")"))), "")
            return rule.reply.format(user=_last_user_text(messages), content=said, first_line=first_line)
        return self.fallback

    def stream(self, messages: list[ChatMessage], *, tools: list[str], max_tokens: int,
               arg_choices: Mapping[str, list[str]] | None = None) -> Generation:
        messages = one_system_message(messages)
        self.calls.append(list(messages))
        return Generation(lambda generation: self._produce(generation, messages, max_tokens))

    async def _produce(self, generation: Generation, messages: list[ChatMessage], max_tokens: int) -> AsyncIterator[str]:
        tokens = split_into_tokens(self.reply_for(messages))
        # an estimate (~4 characters a token): counting words of the whole history on every call
        # would make the stand-in model's own cost grow with the conversation
        generation.prompt_tokens = sum(map(len, map(_CONTENT, messages))) // 4
        if self.context_tokens and generation.prompt_tokens + max_tokens > self.context_tokens:
            raise LLMError(f"prompt of {generation.prompt_tokens} tokens plus {max_tokens} to generate "
                           f"exceeds the context of {self.context_tokens} tokens")
        instant = self.first_token_delay_s == 0 and self.token_delay_s == 0
        for index, token in enumerate(tokens[:max_tokens]):
            if not instant:
                await self._sleep(self.first_token_delay_s if index == 0 else self.token_delay_s)
            elif index % 16 == 0:
                # no delay to simulate (the bench's default): a checkpoint now and then keeps the
                # stream cancellable without a scheduler round trip per word
                await anyio.lowlevel.checkpoint()
            generation.completion_tokens = index + 1
            yield token
        generation.finish_reason = "length" if len(tokens) > max_tokens else "stop"

    async def health(self) -> tuple[bool, str]:
        return True, f"scripted backend with {len(self.rules)} rules"

    async def aclose(self) -> None:
        pass
