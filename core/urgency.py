"""What to do with an incoming event: cancel, interrupt, queue, answer in parallel, or start now.

E3-E6 and the SPEC's clarification: two different urgent strategies, plus the queue and the side run.

  cancel     "stop" (and a stop phrase starting an utterance): the generation is discarded, the
             running tools are cancelled (their result says "cancelled by the user"), the queue
             goes into the history with the stop, and the model is called at once
  interrupt  a priority request while a tool runs ("подожди, сначала …", "wait, first …"): the
             generation is discarded, the tool keeps running (its call gets the rule-3
             placeholder) and its real result comes later as an event the agent acts on
  parallel   an independent light question while busy: a side run answers it at once (E5)
  queue      anything else while busy: it waits for the next safe point (E4)
  now        anything while idle

`decide` is a small rule engine whose rules are data (`RULES`), tried in order, first match wins:

  interrupt      user_interrupt (the /stop button)          -> cancel
  stop_phrase    user_text STARTING with a stop phrase      -> cancel  ("Стоп! Я неправильно
                                                               сказал": the rest is the new request)
  urgent_flag    any event with data["urgent"] = true/1/yes -> cancel (supervisor, urgent alert)
  light_request  user_text fully matching a light pattern   -> parallel (only while busy)
  priority       user_text starting with an interrupt phrase -> interrupt (only while busy)
  urgent_source  an event whose source says urgency "high"  -> interrupt (only while busy): a channel
                                                               event (core.channels) is handled at once,
                                                               the user's running tools keep running
  busy           anything else while a step runs            -> queue
  idle           anything else                              -> now

The default phrase lists (`DEFAULT_STOP_PHRASES`, `DEFAULT_INTERRUPT_PHRASES`, both languages) live
here and only here; the config's defaults are these tuples. Rules cannot read meaning, so
`LLMRouter` may ask a small classifier model about user text the rules would only queue; any
answer it cannot use, or none within its timeout, falls back to the rules' verdict.
"""
import re
import string
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

import anyio

from protocol import Event

Strategy = Literal["cancel", "interrupt", "queue", "parallel", "now"]
CANCEL: Strategy = "cancel"
INTERRUPT: Strategy = "interrupt"
QUEUE: Strategy = "queue"
PARALLEL: Strategy = "parallel"
NOW: Strategy = "now"

# An utterance that STARTS with one of these cancels (whatever follows is the new request).
DEFAULT_STOP_PHRASES = (
    "стоп", "стой", "хватит", "отмена", "остановись", "прекрати", "перестань", "замолчи", "забудь",
    "stop", "stop it", "cancel", "enough", "halt", "never mind", "nevermind", "forget it",
)
# While a tool runs, an utterance that STARTS with one of these is a priority request (interrupt).
DEFAULT_INTERRUPT_PHRASES = (
    "подожди", "погоди", "сначала", "а сначала", "но сначала", "прежде всего", "секунду", "срочно",
    "wait", "hold on", "but first", "first of all", "before that", "one moment", "one sec", "urgent",
)
DEFAULT_URGENT_WORDS = DEFAULT_STOP_PHRASES  # the name the config key `session.urgent_words` keeps
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


_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
# Who the user addresses before the stop phrase does not change it: "Порфирий, стоп!"
_ADDRESS = frozenset({"порфирий", "porfiry", "эй", "hey", "ok", "okay", "ну", "а", "so", "oh"})


def utterance_words(text: str) -> list[str]:
    """The words of an utterance, normalized, punctuation dropped ("Стоп! Я" -> ["стоп", "я"])."""
    return _WORD.findall(normalize_utterance(text))


def _phrase_table(phrases: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """Phrases as word tuples, longest first (so "stop it" wins over "stop")."""
    table = {tuple(utterance_words(p)) for p in phrases}
    table.discard(())
    return tuple(sorted(table, key=len, reverse=True))


def _leading_phrase(words: list[str], table: tuple[tuple[str, ...], ...]) -> int:
    """How many words the leading phrase of `words` takes (after an address), 0 if none leads."""
    start = 0
    while start < len(words) - 1 and words[start] in _ADDRESS:
        start += 1
    for phrase in table:
        if tuple(words[start:start + len(phrase)]) == phrase:
            return start + len(phrase)
    return 0


@dataclass(frozen=True)
class UrgencyConfig:
    """Stop phrases and interrupt phrases (each matched at the START of an utterance, whole words,
    case and punctuation ignored) and light-request patterns (full match, regex, case-insensitive)."""

    urgent_words: tuple[str, ...] = DEFAULT_STOP_PHRASES
    parallel_patterns: tuple[str, ...] = DEFAULT_PARALLEL_PATTERNS
    interrupt_phrases: tuple[str, ...] = DEFAULT_INTERRUPT_PHRASES
    _stops: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)
    _interrupts: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)
    _patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stops", _phrase_table(self.urgent_words))
        object.__setattr__(self, "_interrupts", _phrase_table(self.interrupt_phrases))
        compiled = []
        for pattern in self.parallel_patterns:
            try:
                compiled.append(re.compile(_LEAD_IN + "(?:" + pattern + ")" + _TRAIL, re.IGNORECASE))
            except re.error as exc:
                raise ValueError(f"parallel pattern {pattern!r} is not a valid regex: {exc}") from None
        object.__setattr__(self, "_patterns", tuple(compiled))

    @classmethod
    def from_mapping(cls, raw: Mapping[str, object] | None) -> "UrgencyConfig":
        """From a config section {urgent_words, parallel_patterns, interrupt_phrases: [...]};
        missing keys keep the defaults."""
        raw = raw or {}
        known = ("urgent_words", "parallel_patterns", "interrupt_phrases")
        unknown = set(raw) - set(known)
        if unknown:
            raise ValueError(f"unknown urgency settings {sorted(unknown)}; known: {', '.join(known)}")
        kwargs = {}
        for key in known:
            if key in raw:
                value = raw[key]
                if isinstance(value, str) or not isinstance(value, Iterable):
                    raise ValueError(f"urgency setting {key} must be a list of strings")
                kwargs[key] = tuple(str(v) for v in value)
        return cls(**kwargs)

    def is_stop(self, text: str) -> bool:
        """The utterance starts with a stop phrase: "стоп", "Стоп! Я неправильно сказал",
        "stop, wrong film" ("stopwatch" and "cancellation policy" do not: whole words only)."""
        return _leading_phrase(utterance_words(text), self._stops) > 0

    def is_priority(self, text: str) -> bool:
        """The utterance starts with an interrupt phrase: "Подожди, сначала погода", "wait, first …"."""
        return _leading_phrase(utterance_words(text), self._interrupts) > 0

    def after_stop(self, text: str) -> str:
        """What follows the leading stop phrases ("Стоп! Я неправильно сказал" -> "я неправильно
        сказал"); "" when the utterance is only a stop."""
        words = utterance_words(text)
        while (taken := _leading_phrase(words, self._stops)) > 0:
            words = words[taken:]
        return " ".join(words)

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
    Rule("stop_phrase", lambda e, busy, c: e.kind == "user_text" and c.is_stop(e.content), CANCEL),
    Rule("urgent_flag", lambda e, busy, c: e.data.get("urgent", "").strip().lower() in _TRUE, CANCEL),
    Rule("light_request", lambda e, busy, c: busy and e.kind == "user_text" and c.is_light(e.content), PARALLEL),
    Rule("priority", lambda e, busy, c: busy and e.kind == "user_text" and c.is_priority(e.content), INTERRUPT),
    Rule("urgent_source", lambda e, busy, c: busy and e.data.get("urgency") == "high", INTERRUPT),
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
    """cancel | interrupt | queue | parallel | now for this event (see the module's rule table)."""
    return decide_why(event, session_busy, config).strategy


class Router(Protocol):
    """Chooses a strategy per incoming event. `sure` answers at once when no model is needed
    (None: ask `route_why`, which may take up to the router's timeout)."""

    def sure(self, event: Event, session_busy: bool) -> Decision | None: ...

    async def route_why(self, event: Event, session_busy: bool) -> Decision: ...


class RuleRouter:
    """The default router (`session.router = "rules"`): the rule table, no model."""

    __slots__ = ("config",)

    def __init__(self, config: UrgencyConfig | None = None) -> None:
        self.config = config or DEFAULT_CONFIG

    def decide(self, event: Event, session_busy: bool) -> Strategy:
        return decide(event, session_busy, self.config)

    def sure(self, event: Event, session_busy: bool) -> Decision:
        return decide_why(event, session_busy, self.config)

    async def route_why(self, event: Event, session_busy: bool) -> Decision:
        return self.sure(event, session_busy)

    async def route(self, event: Event, session_busy: bool) -> Strategy:
        return self.decide(event, session_busy)


ROUTER_PROMPT = """You route one message a user said to a voice assistant that is busy with a task.
Message: {content}
Answer with exactly one word:
cancel - the user wants the current task stopped or takes back what they said;
interrupt - a new request that must be handled right now, before the task finishes;
parallel - an independent quick question, answered now while the task goes on;
queue - anything else: more details for the task or a request that can wait.
Answer:"""

_ANSWERS: dict[str, Strategy] = {
    "cancel": CANCEL, "interrupt": INTERRUPT, "queue": QUEUE, "parallel": PARALLEL,
    "отмена": CANCEL, "прервать": INTERRUPT, "очередь": QUEUE, "параллельно": PARALLEL,
}


def parse_route_answer(reply: str) -> Strategy | None:
    """The strategy named by the first word of a classifier's reply, or None if it names none."""
    match = re.search(r"[^\W\d_]+", reply or "")
    return _ANSWERS.get(match.group(0).casefold()) if match else None


class LLMRouter:
    """`session.router = "model"`: asks a small classifier model about user text while busy, where
    the rules can only queue or guess (seed 003: "отчёт пришли мне на китайском" queues, "какая
    сегодня погода" runs in parallel).

    Sure cases stay with the rules: the stop button, stop phrases and urgent flags cancel, events
    that are not user text follow the table, an idle session starts now. A reply that names no
    strategy, an error, or no reply within `timeout_s` falls back to the rules' verdict; the
    returned Decision says which decided ("model", or the rule and why the model did not).
    """

    __slots__ = ("classify", "rules", "timeout_s", "fallbacks")

    def __init__(self, classify: Callable[[str], Awaitable[str]], rules: RuleRouter | None = None,
                 timeout_s: float = 1.5) -> None:
        self.classify = classify
        self.rules = rules or RuleRouter()
        self.timeout_s = timeout_s
        self.fallbacks = 0

    def prompt_for(self, event: Event) -> str:
        return ROUTER_PROMPT.format(content=" ".join(event.content.split()))

    def sure(self, event: Event, session_busy: bool) -> Decision | None:
        verdict = decide_why(event, session_busy, self.rules.config)
        if verdict.strategy in (CANCEL, NOW) or event.kind != "user_text":
            return verdict
        return None

    async def route_why(self, event: Event, session_busy: bool) -> Decision:
        verdict = decide_why(event, session_busy, self.rules.config)
        if self.sure(event, session_busy) is not None:
            return verdict
        reply, why = None, "timeout"
        try:
            with anyio.move_on_after(self.timeout_s):
                reply = await self.classify(self.prompt_for(event))
        except Exception as exc:  # noqa: BLE001 - a broken classifier must not break the session
            reply, why = None, f"error: {type(exc).__name__}"
        strategy = parse_route_answer(reply) if isinstance(reply, str) else None
        if strategy is None or strategy == NOW:
            self.fallbacks += 1
            if isinstance(reply, str):
                why = f"nonsense: {reply.strip()[:40]!r}"
            return Decision(verdict.strategy, f"{verdict.rule} (model fell back: {why})")
        return Decision(strategy, "model")

    async def route(self, event: Event, session_busy: bool) -> Strategy:
        return (await self.route_why(event, session_busy)).strategy
