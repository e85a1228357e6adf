"""`python -m tools.fuzzy_compare`: the media catalog's typo matcher against another, on the same queries.

The queries: (a) every search the media tests make (`tests/test_media*.py`: `.search("…")`,
`query="…"`, `{"query": "…"}`, the `queries` lists) and every user line of the eval sets
(`evals/*.toml` `say`, whole and each of its word tails, since a model passes the title part of
what was said, which is usually its end, and the call hints `media_search|…`); (b) one typo per
name of every shipped title (a letter dropped, swapped with the next or doubled, seeded), whose
right answer is that title.

For each query it reports whether the two matchers agree, on the matcher's own answer (`match()`
of the catalog's typo pass: the same top title, the same set) and on what the user sees
(`EmbeddedCatalog.search`: the same first title, the same first page); whether each found the
expected title (the tests' assertions, the typo's source) on the first page; and the time per
`match()` (each query timed `--rounds` times, alternating the matchers, the fastest kept; p50,
p95 and mean over the queries). `--extra N` times both on the shipped titles plus N made up of
their words (a user's bigger catalog); the answers are still judged on the shipped ones.

A matcher is `module:Class` (importable, e.g. `toolsets.media.fuzzy:FuzzyIndex`, the default
`--new`) or `git:REV`: the `FuzzyIndex` of `toolsets/media/fuzzy.py` at that commit, read with
`git show` (the default `--old` is the difflib matcher the rapidfuzz one replaced).
"""
from __future__ import annotations

import argparse
import ast
import importlib
import random
import statistics
import subprocess
import sys
import time
import tomllib
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from toolsets.media.catalog import EmbeddedCatalog, fuzzy_query, normalize

REPO = Path(__file__).resolve().parent.parent
BASELINE = "git:ab6f555"  # the last commit with the difflib + letter-pair matcher


class Query(NamedTuple):
    source: str  # "tests", "evals" or "typos"
    text: str
    expected: tuple[str, ...] = ()  # title ids that belong on the first page; () when not judged


class Verdict(NamedTuple):
    query: Query
    match_top: bool  # the matchers' best titles are the same
    match_set: bool
    search_top: bool  # EmbeddedCatalog.search's first titles are the same
    search_page: bool  # and its first pages
    old_right: bool | None  # None: nothing expected
    new_right: bool | None
    old_page: list[str]
    new_page: list[str]


# --- queries ---------------------------------------------------------------------------------------
def from_tests(known: set[str], root: Path = REPO) -> list[Query]:
    """The searches of the media tests, with the ids of `known` their assertions expect."""
    found: dict[str, set[str]] = {}
    for path in sorted((root / "tests").glob("test_media*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for text in _searched(node):
                found.setdefault(text, set())
            if isinstance(node, ast.Compare):
                searched = [text for part in ast.walk(node) for text in _searched(part)]
                expected = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value in known}
                for text in searched:
                    found[text] = found.get(text, set()) | expected
    return [Query("tests", text, tuple(sorted(ids))) for text, ids in found.items()]


def _searched(node: ast.AST) -> list[str]:
    """The query strings one node of a test passes to a search."""
    if isinstance(node, ast.Call):
        texts = [k.value for k in node.keywords if k.arg == "query"]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "search" and node.args:
            texts.append(node.args[0])
    elif isinstance(node, ast.Dict):
        texts = [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "query"]
    elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "queries" for t in node.targets):
        value = node.value.left if isinstance(node.value, ast.BinOp) else node.value
        texts = list(value.elts) if isinstance(value, ast.List) else []
    else:
        return []
    return [t.value for t in texts if isinstance(t, ast.Constant) and isinstance(t.value, str)]


def from_evals(root: Path = REPO) -> list[Query]:
    """The eval sets' user lines, whole and their word tails, and the search hints of their calls."""
    texts: dict[str, None] = {}
    for path in sorted((root / "evals").glob("*.toml")):
        for scenario in tomllib.loads(path.read_text(encoding="utf-8")).get("scenario", []):
            for turn in scenario.get("turns", []):
                words = turn.get("say", "").split()
                texts.update(dict.fromkeys(" ".join(words[i:]) for i in range(len(words))))
                for call in turn.get("calls", []):
                    tool, _, argument = call.partition("|")
                    if tool == "media_search" and argument:
                        texts[argument] = None
    return [Query("evals", text) for text in texts]


def from_typos(catalog: EmbeddedCatalog, seed: int) -> list[Query]:
    """One typo per name of every shipped title (Russian and English), right answer that title."""
    rng = random.Random(seed)
    queries = []
    for media_id in catalog.all_ids():
        title = catalog.info(media_id)
        for name in dict.fromkeys((title.title_ru, title.title_en)):
            queries.append(Query("typos", typo(rng, name), (media_id,)))
    return queries


def typo(rng: random.Random, text: str) -> str:
    """A letter dropped, swapped with the next one or doubled, at a letter of the text."""
    letters = [i for i, ch in enumerate(text) if ch.isalpha()]
    i = rng.choice(letters) if letters else rng.randrange(len(text))
    kind = rng.choice(("drop", "swap", "double"))
    if kind == "drop":
        return text[:i] + text[i + 1:]
    if kind == "swap" and i + 1 < len(text):
        return text[:i] + text[i + 1] + text[i] + text[i + 2:]
    return text[:i] + text[i] + text[i:]


# --- matchers --------------------------------------------------------------------------------------
def load_matcher(spec: str) -> Any:
    """`module:Class`, or `git:REV` for the FuzzyIndex of toolsets/media/fuzzy.py at commit REV."""
    if spec.startswith("git:"):
        rev = spec[4:]
        source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:toolsets/media/fuzzy.py"],
                                check=True, capture_output=True, text=True).stdout
        module = types.ModuleType(f"fuzzy_at_{rev}")
        sys.modules[module.__name__] = module  # typing and dataclasses look their module up
        exec(compile(source, f"{rev}:toolsets/media/fuzzy.py", "exec"), module.__dict__)
        return module.FuzzyIndex
    module_name, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module_name), attribute or "FuzzyIndex")


def _best(matches: list[tuple[Any, float]]) -> str | None:
    """The title a matcher ranks first: the highest ratio, the earlier title on a tie."""
    return max(matches, key=lambda match: match[1])[0].title.id if matches else None


def _page(catalog: EmbeddedCatalog, text: str) -> list[str]:
    return [title.id for title in catalog.search(text, per_page=5).items]


class Contender:
    """A catalog searching with one matcher, the titles it indexed and its live index."""

    def __init__(self, matcher: Any):
        self.matcher = matcher
        self.entries: list[tuple[Any, Sequence[str]]] = []
        self.index: Any = None
        self.catalog = EmbeddedCatalog(":memory:", matcher=self._make)
        self.catalog.ensure_ready()

    def _make(self, entries):
        self.entries, self.index = list(entries), self.matcher(entries)
        return self.index


def synthetic(entries: Sequence[tuple[Any, Sequence[str]]], count: int, seed: int) -> list[tuple[str, tuple[str]]]:
    """`count` made-up titles of one to four words of the shipped names: a bigger catalog to time."""
    rng = random.Random(seed)
    words = [word for _, names in entries for name in names for word in name.split()]
    return [(f"synthetic-{i}", (" ".join(rng.choice(words) for _ in range(rng.randint(1, 4))),))
            for i in range(count)]


def judge(queries: Sequence[Query], old: Contender, new: Contender) -> list[Verdict]:
    verdicts = []
    for query in queries:
        core = fuzzy_query(normalize(query.text))
        old_matches, new_matches = old.index.match(core), new.index.match(core)
        old_ids = [record.title.id for record, _ in old_matches]
        new_ids = [record.title.id for record, _ in new_matches]
        old_page, new_page = _page(old.catalog, query.text), _page(new.catalog, query.text)
        judged = bool(query.expected)
        verdicts.append(Verdict(
            query, _best(old_matches) == _best(new_matches), set(old_ids) == set(new_ids),
            old_page[:1] == new_page[:1], old_page == new_page,
            set(query.expected) <= set(old_page) if judged else None,
            set(query.expected) <= set(new_page) if judged else None, old_page, new_page))
    return verdicts


def time_matchers(indexes: dict[str, Any], cores: Sequence[str], rounds: int) -> dict[str, list[float]]:
    """Seconds per match(), the fastest of `rounds` runs per query, the matchers alternating."""
    fastest = {name: [float("inf")] * len(cores) for name in indexes}
    for index in indexes.values():  # build the windows every matcher caches, outside the timing
        for core in cores:
            index.match(core)
    for _ in range(rounds):
        for position, core in enumerate(cores):
            for name, index in indexes.items():
                started = time.perf_counter()
                index.match(core)
                fastest[name][position] = min(fastest[name][position], time.perf_counter() - started)
    return fastest


# --- the report ------------------------------------------------------------------------------------
def _figures(seconds: Iterable[float]) -> str:
    ordered = sorted(seconds)
    if not ordered:
        return "-"
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (f"p50 {statistics.median(ordered) * 1e6:6.0f} us  p95 {p95 * 1e6:6.0f} us  "
            f"mean {statistics.fmean(ordered) * 1e6:6.0f} us")


def report(verdicts: Sequence[Verdict], times: dict[str, list[float]], show: int) -> list[str]:
    lines = []
    sources = ("tests", "evals", "typos", "all")
    for source in sources:
        chosen = [i for i, v in enumerate(verdicts) if source in ("all", v.query.source)]
        picked = [verdicts[i] for i in chosen]
        judged = [v for v in picked if v.old_right is not None]
        lines.append(f"{source}: {len(picked)} queries; match(): same top {sum(v.match_top for v in picked)}, "
                     f"same set {sum(v.match_set for v in picked)}; search(): same first "
                     f"{sum(v.search_top for v in picked)}, same first page {sum(v.search_page for v in picked)}")
        if judged:
            lines.append(f"  expected on the first page: old {sum(bool(v.old_right) for v in judged)}/{len(judged)}, "
                         f"new {sum(bool(v.new_right) for v in judged)}/{len(judged)}")
        for name, seconds in times.items():
            lines.append(f"  {name:>4} match(): {_figures(seconds[i] for i in chosen)}")
    lost = [v for v in verdicts if v.old_right and not v.new_right]
    lines.append(f"old right, new wrong: {len(lost)}")
    lines += [_disagreement(v) for v in lost]
    other = [v for v in verdicts if not v.search_page and v not in lost]
    lines.append(f"other first pages that differ: {len(other)} (up to {show} shown)")
    lines += [_disagreement(v) for v in other[:show]]
    return lines


def _disagreement(v: Verdict) -> str:
    expected = f" expected {','.join(v.query.expected)}" if v.query.expected else ""
    return f"  [{v.query.source}] {v.query.text!r}{expected}\n      old {v.old_page}\n      new {v.new_page}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.fuzzy_compare", description=__doc__.splitlines()[0])
    parser.add_argument("--old", default=BASELINE, help=f"module:Class or git:REV (default {BASELINE})")
    parser.add_argument("--new", default="toolsets.media.fuzzy:FuzzyIndex", help="module:Class or git:REV")
    parser.add_argument("--seed", type=int, default=37, help="of the typos")
    parser.add_argument("--rounds", type=int, default=5, help="timed runs per query and matcher")
    parser.add_argument("--show", type=int, default=40, help="disagreements listed beyond the lost answers")
    parser.add_argument("--extra", type=int, default=0,
                        help="made-up titles added to both matchers for the timing (a bigger catalog)")
    args = parser.parse_args(argv)
    old, new = Contender(load_matcher(args.old)), Contender(load_matcher(args.new))
    queries = from_tests(set(old.catalog.all_ids())) + from_evals() + from_typos(old.catalog, args.seed)
    verdicts = judge(queries, old, new)
    cores = [fuzzy_query(normalize(q.text)) for q in queries]
    indexes = {"old": old.index, "new": new.index}
    if args.extra:
        entries = old.entries + synthetic(old.entries, args.extra, args.seed)
        indexes = {"old": old.matcher(entries), "new": new.matcher(entries)}
    times = time_matchers(indexes, cores, args.rounds)
    print(f"old = {args.old}, new = {args.new}, typo seed {args.seed}, {args.rounds} rounds, "
          f"timed on {len(old.entries) + args.extra} titles")
    print("\n".join(report(verdicts, times, args.show)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
