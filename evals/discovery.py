"""`run.py discover-eval`: how often discover_tools puts what a need asks for in its top 3
(issue 53), on a labelled set of needs (evals/discovery/needs.toml, Russian and English, written
apart from the descriptions, split dev/test by intent) over a catalog of the built-in toolsets,
the 120 tools of the test MCP server "hub" (evals/discovery/hub_tools.tsv) and 16 skills the size
of the public Agent Skills (evals/discovery/skills/) beside the built-in ones.

Without `--profile` no model is involved: this measures the need's own words alone. With it,
each need is also reworded by that profile's model, as discover_tools does in a session
(`session.discover_rewording`: core.discovery.rewording_messages), and both figures are printed.
The same files make the fixtures of tests/test_discovery.py (the real MCP server reads hub_tools.tsv).
"""
from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from core.discovery import REWORDING_MAX_TOKENS, index_for, reworded, rewording_messages
from core.loading import default_catalog
from core.skills import SkillRepository
from core.toolsets import ToolsetRegistry
from protocol import ArgSpec, ToolsetSpec, ToolSpec

HERE = Path(__file__).resolve().parent / "discovery"
HUB_TOOLS = HERE / "hub_tools.tsv"
SKILLS_DIR = HERE / "skills"
NEEDS = HERE / "needs.toml"
SPLITS = ("dev", "test", "holdout", "holdout2", "holdout3", "holdout4", "holdout5", "holdout6")
HUB = "hub"
HUB_SUMMARY = "tools of many services: markets, web, papers, code, files, weather, maps, mail, travel"


def _hub_table() -> list[list[str]]:
    """hub_tools.tsv's rows, each its columns (name, arguments, description, and "change" or none)."""
    return [line.split("\t") for line in HUB_TOOLS.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def hub_changes() -> frozenset[str]:
    """The hub's tools that change something (the tsv's fourth column); the others are lookups."""
    return frozenset(columns[0] for columns in _hub_table() if columns[3:] == ["change"])


def hub_rows() -> list[tuple[str, list[tuple[str, bool]], str]]:
    """The hub server's tools: (name, [(argument, required)], description)."""
    rows = []
    for name, args, description, *_kind in _hub_table():
        arguments = [(arg.strip().rstrip("?"), not arg.strip().endswith("?")) for arg in args.split(",") if arg.strip()]
        rows.append((name, arguments, description))
    return rows


def hub_spec() -> ToolsetSpec:
    """The hub server's toolset as the MCP toolset makes it (names prefixed, optional args last)."""
    changes = hub_changes()
    tools = [ToolSpec(name=f"{HUB}_{name}", summary=description,
                      args=[ArgSpec(name=arg, required=required) for arg, required in args], read_only=name not in changes)
             for name, args, description in hub_rows()]
    return ToolsetSpec(name=HUB, summary=HUB_SUMMARY, tools=tools)


def catalog() -> tuple[ToolsetRegistry, tuple[tuple[str, str], ...]]:
    """The registry (built-in toolsets and hub) and the skills (name, description): built-in and the 16."""
    from core.config import Config

    config = Config()
    registry = ToolsetRegistry([*default_catalog(), hub_spec()])
    repo = SkillRepository(config.builtin_skill_dirs(), SKILLS_DIR)
    return registry, tuple((entry.name, entry.description) for entry in repo.index("eval"))


@dataclass(frozen=True)
class Need:
    text: str
    expect: tuple[str, ...]
    lang: str
    split: str


def needs(path: Path = NEEDS) -> list[Need]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Need(n["text"], tuple(n["expect"]), n["lang"], n["split"]) for n in data["need"]]


@dataclass(frozen=True)
class Score:
    hits: int
    total: int
    misses: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]  # need, expected, top 3 found

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else 0.0


def score(split: str, lang: str = "", top: int = 3, rewordings: Mapping[str, str] | None = None) -> Score:
    """Top-`top` hit rate of discover_tools on one split (and language, "" for both); with
    `rewordings` (need -> the model's rewording), searched as a session searches."""
    registry, skills = catalog()
    index = index_for(registry, skills)
    hits, total, misses = 0, 0, []
    for need in needs():
        if need.split != split or (lang and need.lang != lang):
            continue
        total += 1
        also = (rewordings or {}).get(need.text, "")
        found = tuple(entry.name for entry in index.search(need.text, limit=top, reworded=also))
        if set(found) & set(need.expect):
            hits += 1
        else:
            misses.append((need.text, need.expect, found))
    return Score(hits, total, tuple(misses))


def report(splits=SPLITS, verbose: bool = False,
           rewordings: Mapping[str, str] | None = None, model: str = "") -> str:
    registry, skills = catalog()
    tools = sum(len(spec.tools) for spec in registry.specs())
    lines = [f"catalog: {len(registry.toolset_names())} toolsets, {tools} tools, {len(skills)} skills"]
    searches = [("words", None)] + ([(f"+{model}", rewordings)] if rewordings is not None else [])
    for split in splits:
        for lang in ("ru", "en", ""):
            for label, reworded_by in searches:
                result = score(split, lang, rewordings=reworded_by)
                lines.append(f"{split:8} {lang or 'all':4} {label:12} top-3 hit rate {result.rate:6.1%} "
                             f"({result.hits}/{result.total})")
                if verbose and lang == "":
                    lines += [f"    miss: {text!r}{_reworded_as(reworded_by, text)} expected {'/'.join(expect)}; "
                              f"found {', '.join(found) or '-'}" for text, expect, found in result.misses]
    return "\n".join(lines)


def _reworded_as(rewordings: Mapping[str, str] | None, text: str) -> str:
    return f" (reworded {rewordings.get(text, '')!r})" if rewordings is not None else ""


async def reword_all(backend, texts) -> dict[str, str]:
    """Each need reworded by the model, as discover_tools asks it in a session."""
    rewordings = {}
    for text in texts:
        async with backend.stream(rewording_messages(text), tools=[], max_tokens=REWORDING_MAX_TOKENS) as pieces:
            rewordings[text] = reworded("".join([piece async for piece in pieces]))
    return rewordings




def register(sub, load_config) -> None:
    parser = sub.add_parser("discover-eval", help="top-3 hit rate of discover_tools on the labelled needs "
                                                  "(words alone; with --profile, also with that model's rewording)")
    _arguments(parser)
    parser.set_defaults(func=lambda args: _run(args, load_config))


def _arguments(parser) -> None:
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all",
                        help="dev: tuned on; test: the figure to report; holdout: written last, never tuned on; holdout2: written blind (the rewording tuned on it since); holdout3: written blind (the word list pruned on it since); holdout4: written blind (seen since); holdout5: written blind, never tuned on")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the needs missed")
    parser.add_argument("--profile", default="", help="also search with this model profile's rewording of each "
                                                      "need (e.g. local: the embedded model, a few minutes on CPU)")


def _run(args, load_config=None) -> int:
    splits = SPLITS if args.split == "all" else (args.split,)
    rewordings = None
    if args.profile:
        import sys

        import anyio

        from core.loading import load_config as default_loader
        from llm.backends import make_backend

        config = (load_config or (lambda _args: default_loader(None)))(args)
        if args.profile not in config.llm.profiles:
            sys.exit(f"porfiry: no profile {args.profile!r}; profiles: {', '.join(sorted(config.llm.profiles))}")
        backend = make_backend(config.llm.profiles[args.profile], name=args.profile)

        async def reword() -> dict[str, str]:
            try:
                return await reword_all(backend, [need.text for need in needs() if need.split in splits])
            finally:
                await backend.aclose()

        rewordings = anyio.run(reword)
    print(report(splits, args.verbose, rewordings, args.profile))
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="run.py discover-eval", description=__doc__.splitlines()[0])
    _arguments(parser)
    return _run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
