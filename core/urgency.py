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

  interrupt      user_interrupt (the /stop button)            -> cancel
  only_stop      user_text that says nothing but stop         -> cancel  ("Стоп-стоп!", "всё, хватит",
                                                                 "нет, не надо", "scrap that")
  urgent_flag    any event with data["urgent"] = true/1/yes   -> cancel (supervisor, urgent alert)
  light_request  user_text fully matching a light pattern     -> parallel (only while busy)
  learned        user_text while busy: the shipped classifier -> its label (core.router_model:
                                                                 normalised words, n-grams, and
                                                                 the phrase lists as features)
  stop_phrase    user_text STARTING with a stop phrase        -> cancel  ("Стоп! Я неправильно
                                                                 сказал": the rest is the new request)
  priority       user_text starting with an interrupt phrase  -> interrupt (only while busy)
  urgent_source  an event whose source says urgency "high"    -> interrupt (only while busy): a channel
                                                                  event (core.channels) is handled at once,
                                                                  the user's running tools keep running
  busy           anything else while a step runs              -> queue
  idle           anything else                                -> now

The phrase rules are the fast path and the fallback (classifier off: `classifier = false`, or
its weights missing). The default phrase lists (`DEFAULT_STOP_PHRASES`,
`DEFAULT_INTERRUPT_PHRASES`, every language joined) are read from core/words/<language>/urgency.toml
and only there; the config's defaults are these tuples. `LLMRouter` may also ask a model about user text the rules would not cancel; any
answer it cannot use, or none within its timeout, falls back to the rules' verdict.
docs/interruptions.md has the design and the figures (`python run.py eval-router`).
"""
import logging
import re
import string
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import anyio

from core import lexicon, router_model
from protocol import Event
from protocol.session import Strategy

CANCEL: Strategy = "cancel"
INTERRUPT: Strategy = "interrupt"
QUEUE: Strategy = "queue"
PARALLEL: Strategy = "parallel"
NOW: Strategy = "now"

# The phrase lists and the words around them are data (core/words/<language>/urgency.toml, every
# language joined); the grammar - where a phrase must stand, what may surround it - is here.
# An utterance that STARTS with one of these cancels (whatever follows is the new request).
DEFAULT_STOP_PHRASES = lexicon.words("urgency", "stop_phrases")
# An utterance made ONLY of these (and the stop phrases, and GLUE words) cancels: "всё, хватит",
# "нет, не надо", "отмени это". As a lead they would be too eager ("не надо так официально").
DEFAULT_STOP_ONLY_PHRASES = lexicon.words("urgency", "stop_only_phrases")
_GLUE = frozenset(lexicon.words("urgency", "stop_glue_words"))
# While a tool runs, an utterance that STARTS with one of these is a priority request (interrupt).
DEFAULT_INTERRUPT_PHRASES = lexicon.words("urgency", "interrupt_phrases")
DEFAULT_URGENT_WORDS = DEFAULT_STOP_PHRASES  # the name the config key `session.urgent_words` keeps
DEFAULT_PARALLEL_PATTERNS = lexicon.words("urgency", "light_question_patterns")  # regexes
_NAMES = lexicon.words("urgency", "assistant_names")
# Politeness around a light question does not make it a different request (the lead-in list
# holds regex fragments: "скажи(?:те)?").
_LEAD_IN = (r"(?:(?:" + "|".join((*map(re.escape, _NAMES), *lexicon.words("urgency", "light_lead_in_patterns")))
            + r")[\s,]+)*")
_TRAIL = r"(?:[\s,]+(?:" + lexicon.alternation("urgency", "light_trail_words") + "))?"
_EDGE_PUNCT = string.punctuation.replace("'", "") + "«»„“”…—–¿¡ \t\r\n"


def normalize_utterance(text: str) -> str:
    """Trimmed, case-folded, edge punctuation stripped, inner whitespace collapsed."""
    text = text.replace("’", "'").replace("ё", "е").replace("Ё", "Е")
    return " ".join(text.casefold().strip(_EDGE_PUNCT).split())


_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
# Who the user addresses before the stop phrase does not change it: "Порфирий, стоп!"
_ADDRESS = frozenset((*_NAMES, *lexicon.words("urgency", "address_words")))


def utterance_words(text: str) -> list[str]:
    """The words of an utterance, normalized, punctuation dropped ("Стоп! Я" -> ["стоп", "я"])."""
    return _WORD.findall(normalize_utterance(text))


PhraseTable = Mapping[str, tuple[tuple[str, ...], ...]]
"""Phrases as word tuples by their first word, longest first (so "stop it" wins over "stop"): a
phrase can only match where its first word is, so a word is compared with its own few, not all."""


def _by_first_word(phrases: Iterable[tuple[str, ...]]) -> PhraseTable:
    table: dict[str, list[tuple[str, ...]]] = {}
    for phrase in sorted(set(phrases) - {()}, key=len, reverse=True):
        table.setdefault(phrase[0], []).append(phrase)
    return {first: tuple(group) for first, group in table.items()}


def _phrase_table(phrases: Iterable[str]) -> PhraseTable:
    return _by_first_word(tuple(utterance_words(p)) for p in phrases)


def _leading_phrase(words: list[str], table: PhraseTable) -> int:
    """How many words the leading phrase of `words` takes (after an address), 0 if none leads."""
    start = 0
    while start < len(words) - 1 and words[start] in _ADDRESS:
        start += 1
    for phrase in table.get(words[start], ()) if words else ():
        if tuple(words[start:start + len(phrase)]) == phrase:
            return start + len(phrase)
    return 0


def _token_table(phrases: Iterable[str]) -> PhraseTable:
    """Phrases as normalised token tuples (core.router_model.tokens), by first word."""
    return _by_first_word(tuple(router_model.tokens(p)) for p in phrases)


_missing_weights_logged = False


def _classifier() -> router_model.Classifier | None:
    global _missing_weights_logged
    try:
        return router_model.load()
    except (OSError, ValueError, KeyError) as exc:
        if not _missing_weights_logged:
            _missing_weights_logged = True
            logging.getLogger("porfiry.session").warning(
                "router classifier unavailable (%s); the phrase rules decide (python run.py train-router)", exc)
        return None


@dataclass(frozen=True)
class UrgencyConfig:
    """Stop phrases and interrupt phrases (each matched at the START of an utterance, whole words,
    case and punctuation ignored) and light-request patterns (full match, regex, case-insensitive)."""

    urgent_words: tuple[str, ...] = DEFAULT_STOP_PHRASES
    parallel_patterns: tuple[str, ...] = DEFAULT_PARALLEL_PATTERNS
    interrupt_phrases: tuple[str, ...] = DEFAULT_INTERRUPT_PHRASES
    classifier: bool = True  # the learned classifier judges user text while busy (core.router_model)
    _stops: PhraseTable = field(init=False, repr=False, compare=False)
    _only_stops: PhraseTable = field(init=False, repr=False, compare=False)
    _interrupts: PhraseTable = field(init=False, repr=False, compare=False)
    _patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stops", _phrase_table(self.urgent_words))
        object.__setattr__(self, "_only_stops", _token_table((*self.urgent_words, *DEFAULT_STOP_ONLY_PHRASES)))
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
        known = ("urgent_words", "parallel_patterns", "interrupt_phrases", "classifier")
        unknown = set(raw) - set(known)
        if unknown:
            raise ValueError(f"unknown urgency settings {sorted(unknown)}; known: {', '.join(known)}")
        kwargs = {}
        for key in known:
            if key == "classifier" and key in raw:
                kwargs[key] = bool(raw[key])
            elif key in raw:
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

    def is_only_stop(self, text: str) -> bool:
        """The utterance says nothing but stop: "Стоп-стоп!", "всё, хватит", "нет, не надо",
        "отмени это", "scrap that", "no no, don't" (normalised by core.router_model.tokens)."""
        words = router_model.tokens(text)
        found, at = False, 0
        while at < len(words):
            taken = next((len(ph) for ph in self._only_stops.get(words[at], ()) if tuple(words[at:at + len(ph)]) == ph), 0)
            if taken:
                found, at = True, at + taken
            elif words[at] in _GLUE:
                at += 1
            else:
                return False
        return found

    def learned(self, text: str) -> Strategy | None:
        """The shipped classifier's verdict on user text said while busy (None: it is off, or its
        weights are missing - the phrase rules decide then)."""
        if not self.classifier:
            return None
        model = _classifier()
        if model is None:
            return None
        return model.predict(self.router_features(text))  # type: ignore[return-value]

    def router_features(self, text: str) -> list[str]:
        """The classifier's features: the normalised words plus what the phrase lists say."""
        flags = [name for name, on in (("lead_stop", self.is_stop(text)), ("lead_interrupt", self.is_priority(text)),
                                       ("only_stop", self.is_only_stop(text)), ("light", self.is_light(text))) if on]
        return router_model.features(router_model.tokens(text), flags)

    def is_light(self, text: str) -> bool:
        said = normalize_utterance(text)
        return bool(said) and any(p.fullmatch(said) for p in self._patterns)


DEFAULT_CONFIG = UrgencyConfig()

_TRUE = {"1", "true", "yes"}


class Rule(NamedTuple):
    """when(event, session_busy, config) -> bool; the first rule that matches gives the strategy.
    A `when` may instead return the strategy itself (the learned rule), or None for no match."""

    name: str
    when: Callable[[Event, bool, UrgencyConfig], bool]
    strategy: Strategy


def _learned(event: Event, busy: bool, config: UrgencyConfig) -> Strategy | None:
    return config.learned(event.content) if busy and event.kind == "user_text" else None


RULES: tuple[Rule, ...] = (
    Rule("interrupt", lambda e, busy, c: e.kind == "user_interrupt", CANCEL),
    Rule("only_stop", lambda e, busy, c: e.kind == "user_text" and c.is_only_stop(e.content), CANCEL),
    Rule("urgent_flag", lambda e, busy, c: e.data.get("urgent", "").strip().lower() in _TRUE, CANCEL),
    Rule("light_request", lambda e, busy, c: busy and e.kind == "user_text" and c.is_light(e.content), PARALLEL),
    Rule("learned", _learned, QUEUE),  # its `when` names the strategy (the classifier's label)
    Rule("stop_phrase", lambda e, busy, c: e.kind == "user_text" and c.is_stop(e.content), CANCEL),
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
        verdict = rule.when(event, session_busy, cfg)
        if isinstance(verdict, str):
            return Decision(verdict, rule.name)  # type: ignore[arg-type]
        if verdict:
            return Decision(rule.strategy, rule.name)
    return Decision(QUEUE if session_busy else NOW, "fallback")


def decide(event: Event, session_busy: bool, config: UrgencyConfig | None = None) -> Strategy:
    """cancel | interrupt | queue | parallel | now for this event (see the module's rule table)."""
    return decide_why(event, session_busy, config).strategy


class Router(Protocol):
    """Chooses a strategy per incoming event. `sure` answers at once when no model is needed
    (None: ask `route_why`, which may take up to the router's timeout)."""

    def sure(self, event: Event, session_busy: bool) -> Decision | None: ...

    def fallback(self, event: Event, session_busy: bool) -> Decision:
        """The verdict without waiting for anything (the rules'): when a stop will not wait."""
        ...

    async def route_why(self, event: Event, session_busy: bool) -> Decision: ...


class RuleRouter:
    """The default router (`session.router = "rules"`): the rule table, no model."""

    __slots__ = ("config",)

    def __init__(self, config: UrgencyConfig | None = None) -> None:
        self.config = config or DEFAULT_CONFIG
        if self.config.classifier:
            _classifier()  # loaded now, not on the first event said while busy

    def decide(self, event: Event, session_busy: bool) -> Strategy:
        return decide(event, session_busy, self.config)

    def sure(self, event: Event, session_busy: bool) -> Decision:
        return decide_why(event, session_busy, self.config)

    def fallback(self, event: Event, session_busy: bool) -> Decision:
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


def _answers() -> dict[str, Strategy]:
    """A model's one-word answer in any language -> the strategy it names ("отмена" -> cancel)."""
    strategies: dict[str, Strategy] = {CANCEL: CANCEL, INTERRUPT: INTERRUPT, QUEUE: QUEUE, PARALLEL: PARALLEL}
    answers = {}
    for word, name in lexicon.table("urgency", "route_answers").items():
        if name not in strategies:
            raise ValueError(f"core/words/*/urgency.toml: route_answers {word!r} names {name!r}, not a strategy")
        answers[word] = strategies[name]
    return answers


_ANSWERS = _answers()


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

    def fallback(self, event: Event, session_busy: bool) -> Decision:
        return decide_why(event, session_busy, self.rules.config)

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
