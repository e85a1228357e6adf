"""What to do with an incoming event: cancel the step, queue it, answer in parallel, or start now.

E3-E5: an urgent event cancels the current step, an ordinary one waits for the next safe point,
an independent light question gets its own quick run. `decide` is a small rule engine whose
rules are data (`RULES`), tried in order, first match wins:

  interrupt      user_interrupt                          -> cancel
  stop_word      user_text that is only stop words        -> cancel  ("stop the music" is not)
  urgent_flag    any event with data["urgent"] = true/1/yes -> cancel (supervisor, urgent alert)
  light_request  user_text fully matching a light pattern -> parallel (only while busy)
  busy           anything else while a step runs          -> queue
  idle           anything else                            -> now

Rules cannot read meaning, so `LLMRouter` may ask a small classifier model for user text while
busy; any answer it cannot use falls back to the rules.
"""
import re
import string
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

import anyio

from core.batching import event_label
from protocol import Event

Strategy = Literal["cancel", "queue", "parallel", "now"]
CANCEL: Strategy = "cancel"
QUEUE: Strategy = "queue"
PARALLEL: Strategy = "parallel"
NOW: Strategy = "now"

DEFAULT_URGENT_WORDS = ("стоп", "stop", "отмена", "cancel", "хватит", "остановись", "прекрати", "stop it")
DEFAULT_PARALLEL_PATTERNS = (
    r"который (?:сейчас )?час",
    r"сколько (?:сейчас )?времени",
    r"какое (?:сегодня |сейчас )?число(?: сегодня)?",
    r"какая (?:сегодня )?дата(?: сегодня)?",
    r"какой (?:сегодня )?день(?: недели)?(?: сегодня)?",
    r"what time is it(?: now)?",
    r"what(?:'s| is) the time(?: now)?",
    r"what(?:'s| is) (?:the |today's )?date(?: today)?",
    r"what day is (?:it|today)(?: today)?",
)
# Politeness around a light question does not make it a different request.
_LEAD_IN = r"(?:(?:порфирий|porfiry|скажи(?:те)?|подскажи(?:те)?|пожалуйста|а|и|hey|ok|okay|please|tell me|so)[\s,]+)*"
_TRAIL = r"(?:[\s,]+(?:пожалуйста|please))?"
_EDGE_PUNCT = string.punctuation.replace("'", "") + "«»„“”…—–¿¡ \t\r\n"


def normalize_utterance(text: str) -> str:
    """Trimmed, case-folded, edge punctuation stripped, inner whitespace collapsed."""
    text = text.replace("’", "'").replace("ё", "е").replace("Ё", "Е")
    return " ".join(text.casefold().strip(_EDGE_PUNCT).split())


@dataclass(frozen=True)
class UrgencyConfig:
    """Stop words (whole utterance) and light-request patterns (full match, regex, case-insensitive)."""

    urgent_words: tuple[str, ...] = DEFAULT_URGENT_WORDS
    parallel_patterns: tuple[str, ...] = DEFAULT_PARALLEL_PATTERNS
    _words: frozenset[str] = field(init=False, repr=False, compare=False)
    _patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_words", frozenset(normalize_utterance(w) for w in self.urgent_words))
        compiled = []
        for pattern in self.parallel_patterns:
            try:
                compiled.append(re.compile(_LEAD_IN + "(?:" + pattern + ")" + _TRAIL, re.IGNORECASE))
            except re.error as exc:
                raise ValueError(f"parallel pattern {pattern!r} is not a valid regex: {exc}") from None
        object.__setattr__(self, "_patterns", tuple(compiled))

    @classmethod
    def from_mapping(cls, raw: Mapping[str, object] | None) -> "UrgencyConfig":
        """From a config section {urgent_words: [...], parallel_patterns: [...]}; missing keys keep defaults."""
        raw = raw or {}
        unknown = set(raw) - {"urgent_words", "parallel_patterns"}
        if unknown:
            raise ValueError(f"unknown urgency settings {sorted(unknown)}; known: urgent_words, parallel_patterns")
        kwargs = {}
        for key in ("urgent_words", "parallel_patterns"):
            if key in raw:
                value = raw[key]
                if isinstance(value, str) or not isinstance(value, Iterable):
                    raise ValueError(f"urgency setting {key} must be a list of strings")
                kwargs[key] = tuple(str(v) for v in value)
        return cls(**kwargs)

    def is_stop(self, text: str) -> bool:
        """The whole utterance is a stop word/phrase, or only stop words ("стоп, стоп!")."""
        said = normalize_utterance(text)
        if not said:
            return False
        if said in self._words:
            return True
        words = [w.strip(_EDGE_PUNCT) for w in said.split()]
        return all(w in self._words for w in words if w) and any(words)

    def is_light(self, text: str) -> bool:
        said = normalize_utterance(text)
        return bool(said) and any(p.fullmatch(said) for p in self._patterns)


DEFAULT_CONFIG = UrgencyConfig()

_TRUE = {"1", "true", "yes"}


class Rule(NamedTuple):
    """when(event, session_busy, config) -> bool; the first rule that matches gives the strategy."""

    name: str
    when: Callable[[Event, bool, UrgencyConfig], bool]
    strategy: Strategy


RULES: tuple[Rule, ...] = (
    Rule("interrupt", lambda e, busy, c: e.kind == "user_interrupt", CANCEL),
    Rule("stop_word", lambda e, busy, c: e.kind == "user_text" and c.is_stop(e.content), CANCEL),
    Rule("urgent_flag", lambda e, busy, c: e.data.get("urgent", "").strip().lower() in _TRUE, CANCEL),
    Rule("light_request", lambda e, busy, c: busy and e.kind == "user_text" and c.is_light(e.content), PARALLEL),
    Rule("busy", lambda e, busy, c: busy, QUEUE),
    Rule("idle", lambda e, busy, c: True, NOW),
)


class Decision(NamedTuple):
    strategy: Strategy
    rule: str  # which rule decided, for logs


def decide_why(event: Event, session_busy: bool, config: UrgencyConfig | None = None,
               rules: Iterable[Rule] = RULES) -> Decision:
    """The strategy and the name of the rule that chose it."""
    cfg = config or DEFAULT_CONFIG
    for rule in rules:
        if rule.when(event, session_busy, cfg):
            return Decision(rule.strategy, rule.name)
    return Decision(QUEUE if session_busy else NOW, "fallback")


def decide(event: Event, session_busy: bool, config: UrgencyConfig | None = None) -> Strategy:
    """cancel | queue | parallel | now for this event (see the module's rule table)."""
    return decide_why(event, session_busy, config).strategy


class Router(Protocol):
    """Chooses a strategy per incoming event. Async so a model-backed router fits the same slot."""

    async def route(self, event: Event, session_busy: bool) -> Strategy: ...


class RuleRouter:
    """The default router: the rule table, no model."""

    __slots__ = ("config",)

    def __init__(self, config: UrgencyConfig | None = None) -> None:
        self.config = config or DEFAULT_CONFIG

    def decide(self, event: Event, session_busy: bool) -> Strategy:
        return decide(event, session_busy, self.config)

    async def route(self, event: Event, session_busy: bool) -> Strategy:
        return self.decide(event, session_busy)


ROUTER_PROMPT = """You route one incoming event for a voice assistant that is busy with a task.
Event: {label}: {content}
Answer with exactly one word:
cancel - the user wants the current task stopped or changed right now;
parallel - an independent quick question that can be answered now, alongside the task;
queue - anything else: it is handled after the current step.
Answer:"""

_ANSWERS: dict[str, Strategy] = {
    "cancel": CANCEL, "queue": QUEUE, "parallel": PARALLEL,
    "отмена": CANCEL, "очередь": QUEUE, "параллельно": PARALLEL,
}


def parse_route_answer(reply: str) -> Strategy | None:
    """The strategy named by the first word of a classifier's reply, or None if it names none."""
    match = re.search(r"[^\W\d_]+", reply or "")
    return _ANSWERS.get(match.group(0).casefold()) if match else None


class LLMRouter:
    """Asks a small classifier model about user text while busy (where semantics matter).

    Sure cases stay with the rules: interrupts, stop words and urgent flags cancel, non-text
    events queue, an idle session starts now. A reply that names no strategy, an error, or no
    reply within `timeout_s` falls back to the rules' verdict; `fallbacks` counts those.
    """

    __slots__ = ("classify", "rules", "timeout_s", "fallbacks")

    def __init__(self, classify: Callable[[str], Awaitable[str]], rules: RuleRouter | None = None,
                 timeout_s: float = 1.5) -> None:
        self.classify = classify
        self.rules = rules or RuleRouter()
        self.timeout_s = timeout_s
        self.fallbacks = 0

    def prompt_for(self, event: Event) -> str:
        return ROUTER_PROMPT.format(label=event_label(event), content=" ".join(event.content.split()))

    async def route(self, event: Event, session_busy: bool) -> Strategy:
        verdict = decide_why(event, session_busy, self.rules.config)
        if verdict.strategy in (CANCEL, NOW) or event.kind != "user_text":
            return verdict.strategy
        reply = None
        try:
            with anyio.move_on_after(self.timeout_s):
                reply = await self.classify(self.prompt_for(event))
        except Exception:  # a broken classifier must not break the session
            reply = None
        strategy = parse_route_answer(reply) if isinstance(reply, str) else None
        if strategy is None or strategy == NOW:
            self.fallbacks += 1
            return verdict.strategy
        return strategy
