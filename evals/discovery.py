"""`run.py discover-eval`: how often discover_tools puts what a need asks for in its top 3
(issue 53), on a labelled set of needs (evals/discovery/needs.toml, Russian and English, written
apart from the descriptions, split dev/test by intent) over a catalog of the built-in toolsets,
the 120 tools of the test MCP server "hub" (evals/discovery/hub_tools.tsv) and 16 skills the size
of the public Agent Skills (evals/discovery/skills/) beside the built-in ones.

No model is involved: this measures the retrieval alone. The same files make the fixtures of
tests/test_discovery.py (the real MCP server reads hub_tools.tsv).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from core.discovery import index_for
from core.loading import default_catalog
from core.skills import SkillRepository
from core.toolsets import ToolsetRegistry
from protocol import ArgSpec, ToolsetSpec, ToolSpec

HERE = Path(__file__).resolve().parent / "discovery"
HUB_TOOLS = HERE / "hub_tools.tsv"
SKILLS_DIR = HERE / "skills"
NEEDS = HERE / "needs.toml"
HUB = "hub"
HUB_SUMMARY = "tools of many services: markets, web, papers, code, files, weather, maps, mail, travel"


def hub_rows() -> list[tuple[str, list[tuple[str, bool]], str]]:
    """The hub server's tools: (name, [(argument, required)], description)."""
    rows = []
    for line in HUB_TOOLS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, args, description = line.split("\t")
        arguments = [(arg.strip().rstrip("?"), not arg.strip().endswith("?")) for arg in args.split(",") if arg.strip()]
        rows.append((name, arguments, description))
    return rows


def hub_spec() -> ToolsetSpec:
    """The hub server's toolset as the MCP toolset makes it (names prefixed, optional args last)."""
    tools = [ToolSpec(name=f"{HUB}_{name}", summary=description,
                      args=[ArgSpec(name=arg, required=required) for arg, required in args], read_only=True)
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


def score(split: str, lang: str = "", top: int = 3) -> Score:
    """Top-`top` hit rate of discover_tools on one split (and language, "" for both)."""
    registry, skills = catalog()
    index = index_for(registry, skills)
    hits, total, misses = 0, 0, []
    for need in needs():
        if need.split != split or (lang and need.lang != lang):
            continue
        total += 1
        found = tuple(entry.name for entry in index.search(need.text, limit=top))
        if set(found) & set(need.expect):
            hits += 1
        else:
            misses.append((need.text, need.expect, found))
    return Score(hits, total, tuple(misses))


def report(splits=("dev", "test", "holdout", "holdout2"), verbose: bool = False) -> str:
    registry, skills = catalog()
    tools = sum(len(spec.tools) for spec in registry.specs())
    lines = [f"catalog: {len(registry.toolset_names())} toolsets, {tools} tools, {len(skills)} skills"]
    for split in splits:
        for lang in ("ru", "en", ""):
            result = score(split, lang)
            lines.append(f"{split:7} {lang or 'all':4} top-3 hit rate {result.rate:6.1%} ({result.hits}/{result.total})")
            if verbose and lang == "":
                lines += [f"    miss: {text!r} expected {'/'.join(expect)}; found {', '.join(found) or '-'}"
                          for text, expect, found in result.misses]
    return "\n".join(lines)


SPLITS = ("dev", "test", "holdout", "holdout2")


def register(sub, load_config) -> None:
    parser = sub.add_parser("discover-eval", help="top-3 hit rate of discover_tools on the labelled needs (no model)")
    _arguments(parser)
    parser.set_defaults(func=_run)


def _arguments(parser) -> None:
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all",
                        help="dev: tuned on; test: the figure to report; holdout: written last, never tuned on; holdout2: written blind, never tuned on")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the needs missed")


def _run(args) -> int:
    print(report(SPLITS if args.split == "all" else (args.split,), args.verbose))
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="run.py discover-eval", description=__doc__.splitlines()[0])
    _arguments(parser)
    return _run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
