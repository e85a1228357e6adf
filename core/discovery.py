"""Tool discovery (issue 53; seed 003, experiment 4-6): what the model always sees fits a budget,
the rest is found by need.

- `DiscoveryIndex`: BM25 (bm25s) over every toolset, tool and skill, on Snowball stems of Russian
  and English words (PyStemmer), with a word list (discovery_words.tsv) that adds the English
  words a Russian one may mean, so a need said in Russian finds a tool an MCP server described in
  English. `discover_tools|<need>` asks it; the answer is a tool result, at the end of the
  conversation, never in the prompt's static prefix (prefix caching). The need is searched by
  its own words and, with a smaller weight, by the model's short English rewording of it
  (`rewording_messages`, `session.discover_rewording`): the word list cannot know every way
  people say a thing ("скинь эсэмэску", "телега"), the model that reads the user does.
- `disclose`: which toolsets and skills the prompt lists under `session.index_budget_tokens`
  (the rest: one line saying how many and how to find them), and which tools of a big active
  toolset are shown. The static part's catalog depends on the registry and the budget alone;
  what depends on the conversation (its recent words, what it used) goes to the state part.
"""
from __future__ import annotations

import difflib
import functools
import math
import re
import tomllib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from core.lexicon import alternation
from core.toolsets import ToolsetRegistry
from protocol import ChatMessage
from core.translit import transliterate

WORDS_FILE = Path(__file__).with_name("discovery_words.tsv")
MAX_NEED_CHARS = 300  # a need longer than this is cut (its first words say what is needed)
MAX_RESULTS = 5
MIN_RESULTS = 3
CLOSE_ENOUGH = 0.35  # past the first MIN_RESULTS, a match scoring under this share of the best is left out
REWORDED_WEIGHT = 0.5  # the rewording adds what the need's own words miss; the need's words count more
REWORDING_MAX_TOKENS = 24
THIN_NEED_WORDS = 2
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*|\d+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
Kind = Literal["toolset", "tool", "skill"]


class _Words(NamedTuple):
    stop: frozenset[str]  # stop words, stemmed
    english: dict[str, tuple[str, ...]]  # a Russian stem -> the English stems it may mean


@functools.cache
def _stemmers():
    import Stemmer  # PyStemmer: Snowball in C

    return Stemmer.Stemmer("russian"), Stemmer.Stemmer("english")


def _stem(word: str) -> str:
    russian, english = _stemmers()
    return (russian if _CYRILLIC.search(word) else english).stemWord(word)


def _split(text: str) -> list[str]:
    """Words, lower-case: `stock_quote` and `stockQuote` are two words; ё is е."""
    text = _CAMEL.sub(" ", text).replace("_", " ")
    return [word.lower().replace("ё", "е") for word in _WORD.findall(text)]


@functools.cache
def _words() -> _Words:
    stop: set[str] = set()
    english: dict[str, tuple[str, ...]] = {}
    for line in WORDS_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#") or "\t" not in line:
            continue
        word, meaning = line.split("\t", 1)
        stems = [_stem(w) for w in _split(word)]
        if meaning.strip() == "-":
            stop.update(stems)
        elif stems:
            english[stems[0]] = tuple(dict.fromkeys(english.get(stems[0], ()) + tuple(_stem(w) for w in _split(meaning))))
    return _Words(frozenset(stop), english)


def stems(text: str) -> list[str]:
    """The terms BM25 matches: every word stemmed (Russian or English), stop words left out, and a
    Russian word's English meanings added after it."""
    words = _words()
    terms: list[str] = []
    for word in _split(text):
        stem = _stem(word)
        if stem in words.stop or word in words.stop:
            continue
        terms.append(stem)
        terms += words.english.get(stem, ())
        if "-" in word:  # "веб-приложение": its parts too
            terms += [part for piece in word.split("-") for part in stems(piece) if part != stem]
    return terms


def content_words(text: str) -> list[str]:
    """The words of `text` that say what is needed (stop words left out), as said."""
    words = _words()
    return [word for word in _split(text) if word not in words.stop and _stem(word) not in words.stop]


def thin(need: str) -> bool:
    """A need of THIN_NEED_WORDS words or fewer ("weather", "transformer"): a small model's
    need often names the topic and drops the task, so the request it came from is reworded."""
    return len(set(content_words(need))) <= THIN_NEED_WORDS


@functools.cache
def _part_ends() -> re.Pattern[str]:
    """Where a request's parts meet: a sentence's end, or "and" (`and_words` of each language)."""
    return re.compile(r"[.!?;]+\s*|,?\s+(?:" + alternation("requests", "and_words") + r")\s+", re.I)


def request_parts(said: str) -> list[str]:
    """The parts of a request said in one breath ("get Apple's stock price and find news about
    the company"): split at sentence ends and at "and"; a part of fewer than two content words
    ("and then", "please") joins the one before."""
    parts: list[str] = []
    for piece in (piece.strip(" ,") for piece in _part_ends().split(said)):
        if len(content_words(piece)) >= 2 or not parts:
            parts.append(piece)
        elif piece:
            parts[-1] = f"{parts[-1]} {piece}"
    return [part for part in parts if part]


def part_tools(index: "DiscoveryIndex", parts: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Each part of a request with the tools its own words find (best first, at most MIN_RESULTS),
    when the parts' best tools differ: a request of several tasks. [] for one task."""
    found = [(part, tuple(entry.name for entry in index.search(part, limit=MIN_RESULTS, kinds=("tool",))))
             for part in parts]
    found = [(part, tools) for part, tools in found if tools]
    return found if len({tools[0] for _, tools in found}) > 1 else []


def part_left(index: "DiscoveryIndex", parts: Sequence[str], called: Iterable[str]) -> str:
    """Of a request's parts (`part_tools`), the first no call of the turn served; "" when each
    was. A call, in the order made, serves the part not yet served whose words score its tool
    highest ("find arXiv papers and download the top one": the download serves the second part,
    though "arXiv" scores it higher on the first)."""
    at = {entry.name: position for position, entry in enumerate(index.entries) if entry.kind == "tool"}
    scores = [index.fused_scores(part) for part in parts]
    served: set[int] = set()
    for tool in (tool for tool in called if tool in at):
        open_parts = [part for part in range(len(parts)) if part not in served and scores[part][at[tool]] > 0]
        if open_parts:
            served.add(max(open_parts, key=lambda part: scores[part][at[tool]]))
    return next((part for number, part in enumerate(parts) if number not in served), "")


COGNATE_RATIO = 0.75  # how alike a Russian stem spelled in Latin letters and an English one must be
_CYRILLIC_WORD = re.compile(r"[а-яё]")


def words_name_tool(spec, toolset: str, said: str) -> bool:
    """Whether the user's words share a term with what a tool is (its toolset's and its own name,
    its summary, its arguments' names), in either language: "set my home city to Kursk" names
    worldclock_set_home, "plan a route to Kursk" does not. A change the words say nothing of is
    a side effect nobody asked for (core.intent.check_call)."""
    tool_text = " ".join((toolset, spec.name.replace("_", " "), spec.summary, *(arg.name for arg in spec.args)))
    said_terms, tool_terms = set(stems(said)), set(stems(tool_text))
    # its verb alone names no tool: "set a reminder for then" shares "set" with worldclock_set_home
    # (the local model set the home city to Tokyo), "make" with "Make a city the home city"
    if not said_terms.isdisjoint((tool_terms - _verbs_of(spec, toolset)) or tool_terms):
        return True
    # a Russian word the word list lacks, of the same root as the tool's English one: "анализ"/"analyze", "архив"/"archive"
    spelled = {transliterate(term) for term in said_terms if _CYRILLIC_WORD.search(term) and len(term) >= 3}
    return any(difflib.SequenceMatcher(None, word, term).ratio() >= COGNATE_RATIO
               for word in spelled for term in tool_terms if len(term) >= 3)


def _verbs_of(spec, toolset: str) -> set[str]:
    """The stems of the words that say what a tool does rather than to what, when its own name says
    both ("set" of worldclock_set_home, and its summary's first word: "Make a city the home city of
    the clock"); none when the name is one word ("notes_add": "add milk" names it; "flights")."""
    own = _split(spec.name[len(toolset) + 1:] if spec.name.startswith(toolset + "_") else spec.name)
    return {_stem(word) for word in own[:1] + _split(spec.summary)[:1]} if len(own) > 1 else set()


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing discover_tools can find: a toolset, a tool (of `toolset`) or a skill."""

    kind: Kind
    name: str
    toolset: str  # a tool's toolset, a toolset's own name; "" for a skill
    line: str  # how the result shows it: the one-line schema and how to use it


class DiscoveryIndex:
    """BM25 over the entries' texts; built once per catalog and skills (`index_for`)."""

    def __init__(self, entries: Sequence[Entry], texts: Sequence[str]):
        import bm25s

        self.entries = list(entries)
        self._bm25 = bm25s.BM25()
        # an entry with no term gets a placeholder: bm25s needs every document to have one
        self._bm25.index([stems(text) or ["\x00"] for text in texts], show_progress=False)

    def scores(self, text: str) -> list[float]:
        """Each entry's BM25 score for `text` (0: no term in common)."""
        terms = stems(text[:MAX_NEED_CHARS])
        if not terms:  # stop words only ("the", "мне нужно"): bm25s would fail on an empty query
            return [0.0] * len(self.entries)
        return [float(score) for score in self._bm25.get_scores(terms)]

    def fused_scores(self, need: str, reworded: str = "") -> list[float]:
        """The need's own BM25 scores plus REWORDED_WEIGHT times the rewording's: both on one
        index, so a word rare among the entries counts more whichever side said it ("director"
        in a rewording outweighs "long" in the need)."""
        own = self.scores(need)
        if not reworded.strip():  # nothing more to search by (also the rewording off)
            return own
        return [mine + REWORDED_WEIGHT * theirs for mine, theirs in zip(own, self.scores(reworded))]

    def search(self, need: str, limit: int = MAX_RESULTS, kinds: Iterable[Kind] | None = None,
               reworded: str = "") -> list[Entry]:
        """The best matches for `need` (and its rewording, `fused_scores`), best first: at most
        `limit`, at least MIN_RESULTS when that many match at all, the ones past that only while
        they score close to the best."""
        allowed = set(kinds) if kinds is not None else None
        ranked = sorted(((score, index) for index, score in enumerate(self.fused_scores(need, reworded))
                         if score > 0 and (allowed is None or self.entries[index].kind in allowed)),
                        key=lambda pair: (-pair[0], pair[1]))
        if not ranked:
            return []
        best = ranked[0][0]
        kept = [index for rank, (score, index) in enumerate(ranked[:limit])
                if rank < MIN_RESULTS or score >= CLOSE_ENOUGH * best]
        return [self.entries[index] for index in kept]


REWORDING_FILE = Path(__file__).with_name("discovery_rewording.toml")


@functools.cache
def _rewording() -> tuple[str, tuple[tuple[str, str], ...]]:
    """The instruction and worked examples (need, query) of `rewording_messages`, from REWORDING_FILE."""
    data = tomllib.loads(REWORDING_FILE.read_text(encoding="utf-8"))
    return data["instruction"], tuple((example["need"], example["query"]) for example in data.get("example", ()))


def rewording_messages(need: str) -> list[ChatMessage]:
    """One short question to the model: the need as a plain English query (`reworded`), after
    worked examples (the form: the kind of tool, never an answer)."""
    instruction, examples = _rewording()
    shown = [ChatMessage(role=role, content=text) for example in examples
             for role, text in zip(("user", "assistant"), example)]
    return [ChatMessage(role="system", content=instruction), *shown,
            ChatMessage(role="user", content=need[:MAX_NEED_CHARS])]


def reworded(reply: str) -> str:
    """The query in the model's reply: its first line, without quotes; "" when the reply is
    not one (empty, or a tool call the model wrote out of habit)."""
    line = next((line.strip() for line in reply.splitlines() if line.strip()), "")
    if not line or "TOOL_CALL" in line or "|" in line:
        return ""
    return line.strip("\"'`«»“” ")[:MAX_NEED_CHARS]


def entries_of(registry: ToolsetRegistry, skills: Iterable[tuple[str, str]]) -> tuple[list[Entry], list[str]]:
    """Every toolset, toolset tool and skill (name, description) as an entry, with the text it is
    found by: a tool by its name, summary, arguments and toolset (a server by name: "github")."""
    entries: list[Entry] = []
    texts: list[str] = []
    for spec in registry.specs():
        entries.append(Entry("toolset", spec.name, spec.name,
                             f"{spec.name} — {spec.summary} (toolset: enable_toolset|{spec.name})"))
        texts.append(f"{spec.name} {spec.summary}")
        for tool in spec.tools:
            entries.append(Entry("tool", tool.name, spec.name, f"{registry.tool_line(tool.name)} (toolset {spec.name})"))
            verb = tool.name[len(spec.name) + 1:]
            texts.append(" ".join([verb, verb, tool.summary, *(arg.name for arg in tool.args), spec.name]))
    toolsets = {entry.name: at for at, entry in enumerate(entries) if entry.kind == "toolset"}
    for name, description in skills:
        if name in toolsets:  # a toolset's own skill: found as the toolset (one line, enable_toolset), by its words too
            texts[toolsets[name]] += f" {description}"
            continue
        entries.append(Entry("skill", name, "", f"{name}: {description} (skill: read_skill|{name})"))
        texts.append(f"{name.replace('-', ' ')} {description}")
    return entries, texts


INDEXES_KEPT = 8
_indexes: OrderedDict[tuple[ToolsetRegistry, tuple[tuple[str, str], ...]], DiscoveryIndex] = OrderedDict()


def index_for(registry: ToolsetRegistry, skills: tuple[tuple[str, str], ...]) -> DiscoveryIndex:
    """The index of one catalog and one skills index (both change rarely: an MCP server's list,
    a skill edited), kept so a step pays for a lookup, not for indexing (10,000 tools take about
    a second: the session builds it in a worker thread first, `has_index`)."""
    key = (registry, skills)
    index = _indexes.get(key)
    if index is None:
        index = DiscoveryIndex(*entries_of(registry, skills))
        _indexes[key] = index
        while len(_indexes) > INDEXES_KEPT:
            _indexes.popitem(last=False)
    return index


def has_index(registry: ToolsetRegistry, skills: tuple[tuple[str, str], ...]) -> bool:
    return (registry, skills) in _indexes


@functools.lru_cache(maxsize=16)
def needs_index(registry: ToolsetRegistry, skills: tuple[tuple[str, str], ...], budget: int, max_tools: int) -> bool:
    """Whether a prompt of this catalog and skills may rank by the index: past the budget, or
    with a toolset bigger than `max_tools`. Kept per catalog and skills (asked at every step of a
    turn that reaches the model; both change rarely), as `static_catalog` is."""
    if max_tools and any(len(spec.tools) > max_tools for spec in registry.specs()):
        return True
    if not budget:
        return False
    lines = [f"{spec.name} — {spec.summary}" for spec in registry.specs()] + [f"{n}: {d}" for n, d in skills]
    return sum(tokens(line) for line in lines) > budget


# --- what discover_tools answers -----------------------------------------------------------------
EMPTY_NEED_TEXT = ("say what you need in a few words: discover_tools|<the capability you are missing>, "
                   "e.g. discover_tools|stock prices")
NOTHING_FOUND_TEXT = ("nothing matches «{need}»; say it in other words, or answer the user without a tool")


def same_verbs(found: Sequence[Entry]) -> dict[str, list[str]]:
    """Tool names (less their toolset prefix) that more than one toolset has among `found`:
    two servers' `search` are told apart by their server (seed 003: tool shadowing)."""
    by_verb: dict[str, list[str]] = {}
    for entry in found:
        if entry.kind == "tool":
            by_verb.setdefault(entry.name[len(entry.toolset) + 1:], []).append(entry.toolset)
    return {verb: toolsets for verb, toolsets in by_verb.items() if len(set(toolsets)) > 1}


def result_text(need: str, found: Sequence[Entry], callable_now: Iterable[str] = ()) -> str:
    """discover_tools' answer: one line per match, how to use each; `callable_now`: the tools it
    made callable (their toolsets turned on)."""
    shown = " ".join(need.split())[:80]
    if not found:
        return NOTHING_FOUND_TEXT.format(need=shown)
    now = set(callable_now)
    lines = [f"{len(found)} match(es) for «{shown}», best first:"]
    lines += [f"- {entry.line}" for entry in found]
    for verb, toolsets in same_verbs(found).items():
        lines.append(f"(several servers have a tool named {verb}: {', '.join(f'{t}_{verb} of {t}' for t in toolsets)};"
                     " call the one of the server you mean)")
    if now:
        lines.append(f"Callable now: {', '.join(sorted(now))}. Call the one the request needs.")
    return "\n".join(lines)


# --- what the prompt shows under the budget --------------------------------------------------------
_TOKEN_PIECES = re.compile(r"[A-Za-z]+|\d|[^\sA-Za-z\d]")
TOKENS_PER_ESTIMATE = 1.05  # estimate_tokens counts about 3 % under Gemma's tokenizer (`run.py prompt`)


def estimate_tokens(text: str) -> int:
    """A rough token count for Gemma/Qwen-style tokenizers: one per word, digit and punctuation
    mark (`notes_add` counts 3). For budgets and logs, not billing."""
    return len(_TOKEN_PIECES.findall(text))


def tokens(text: str) -> int:
    """A line's cost in the embedded model's tokens, a little over rather than under."""
    return math.ceil(estimate_tokens(text) * TOKENS_PER_ESTIMATE) + 1  # and its line break


@functools.lru_cache(maxsize=16)
def static_catalog(registry: ToolsetRegistry, budget: int) -> tuple[str, ...]:
    """The toolsets the static catalog lists: all of them when their lines take at most half the
    budget, else those (in catalog order) that fit in half of it. Depends on the catalog and the
    budget alone: the static prefix stays the same turn to turn (prefix caching)."""
    names = registry.toolset_names()
    if budget <= 0:
        return tuple(names)
    kept, used = [], 0
    for spec in registry.specs():
        cost = tokens(f"{spec.name} — {spec.summary}")
        if used + cost > budget // 2:
            break
        kept.append(spec.name)
        used += cost
    return tuple(kept)


class Disclosure(NamedTuple):
    """What the state part lists of the catalog and skills (`disclose`)."""

    toolsets: tuple[str, ...]  # toolsets the static catalog leaves out, listed for this conversation
    skills: tuple[str, ...] | None  # the skills listed (None: every visible one)
    hidden: int  # toolsets and skills listed nowhere


IndexOf = Callable[[], DiscoveryIndex]  # the index, built only when asked


def disclose(registry: ToolsetRegistry, visible: Sequence[tuple[str, str]], budget: int, recent: str,
             used: Iterable[str], index: IndexOf | None, headers: int = 0) -> Disclosure:
    """Past the budget, what the state part lists: the toolsets off the static catalog and the
    visible skills (name, description) that fit what the budget leaves, those the conversation used
    first, then those most like its recent words, then catalog order; shown in catalog order.
    `headers`: what the sections' header lines cost, counted in the budget too."""
    catalog = static_catalog(registry, budget)
    off_catalog = [spec for spec in registry.specs() if spec.name not in catalog]
    static_cost = sum(tokens(f"{name} — {registry.toolset(name).summary}") for name in catalog)
    lines = {("toolset", spec.name): f"{spec.name} — {spec.summary}" for spec in off_catalog}
    lines.update({("skill", name): f"{name}: {description}" for name, description in visible})
    static_cost += headers
    if budget <= 0 or static_cost + sum(tokens(line) for line in lines.values()) <= budget:
        return Disclosure(tuple(spec.name for spec in off_catalog), None, 0)
    score: dict[tuple[str, str], float] = {}
    if index is not None and recent.strip():
        found = index()
        for entry, value in zip(found.entries, found.scores(recent)):
            if entry.kind != "tool":
                score[(entry.kind, entry.name)] = value
    used = set(used)
    order = {key: position for position, key in enumerate(lines)}
    ranked = sorted(lines, key=lambda key: (key[1] not in used, -score.get(key, 0.0), order[key]))
    left = budget - static_cost - tokens(more_line(len(lines)))
    chosen = set()
    for key in ranked:
        cost = tokens(lines[key])
        if cost <= left:
            chosen.add(key)
            left -= cost
    return Disclosure(tuple(spec.name for spec in off_catalog if ("toolset", spec.name) in chosen),
                      tuple(name for name, _ in visible if ("skill", name) in chosen), len(lines) - len(chosen))


def more_line(hidden: int) -> str:
    """The line that says the index is not all there is."""
    return (f"({hidden} more toolsets and skills are not listed here: discover_tools|<what you need> "
            "finds them, in any words)")


def shown_tools(registry: ToolsetRegistry, toolset: str, cap: int, first: int, made_active: Sequence[str],
                recent: str, index: IndexOf | None) -> tuple[str, ...] | None:
    """The tools of an active toolset the prompt shows: all of them (None) when it has at most
    `cap`; else the ones made active (discovered, called), topped up to `first` with those most
    like the recent words, in catalog order."""
    spec = registry.toolset(toolset)
    if spec is None or len(spec.tools) <= cap:
        return None
    names = [tool.name for tool in spec.tools]
    chosen = [name for name in made_active if name in set(names)]
    if len(chosen) < first and index is not None and recent.strip():
        index = index()
        ranked = sorted(((value, position) for position, (entry, value) in enumerate(zip(index.entries, index.scores(recent)))
                         if value > 0 and entry.kind == "tool" and entry.toolset == toolset),
                        key=lambda pair: (-pair[0], pair[1]))
        for value, position in ranked:
            if len(chosen) >= first or value < CLOSE_ENOUGH * ranked[0][0]:
                break
            if index.entries[position].name not in chosen:
                chosen.append(index.entries[position].name)
    if not chosen:  # nothing made active, nothing like the words: the first of its catalog
        chosen = names[:first]
    keep = set(chosen)
    return tuple(name for name in names if name in keep)


def hidden_tools_line(toolset: str, hidden: int) -> str:
    return f"{toolset}: {hidden} more tools not shown; discover_tools|<what you need> finds them"


def used_names(calls: Iterable[tuple[str, str]], registry: ToolsetRegistry) -> set[str]:
    """Toolsets and skills the conversation used, from its calls (tool, raw arguments)."""
    used: set[str] = set()
    for tool, raw in calls:
        if tool == "read_skill":
            used.add(raw.strip().strip("\"'").lower())
        elif tool == "enable_toolset":
            used.add(raw.strip().lower())
        elif registry.toolset_of(tool):
            used.add(registry.toolset_of(tool))
    return used
