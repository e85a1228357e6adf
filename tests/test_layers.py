"""The import graph of the code: no circles, and no import from a lower layer to a higher one.

Layers, lowest first (a module may import its own layer and those below):
  protocol < transport < core, storage, llm, toolsets < actors < phone, web < bench, evals, cli, cluster, tools, run.py
Imports under `if TYPE_CHECKING:` are edges too: a circle a type checker needs is a circle of the
design (a lower module naming a higher one's type), even though it never runs.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAYERS = (("protocol",), ("transport",), ("core", "storage", "llm", "toolsets"), ("actors",), ("phone", "web"),
          ("bench", "evals", "cli", "cluster", "tools", "run"))
RANK = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}
SKIP = {".venv", "tests", "var", "skills", "docs"}


def modules(root: Path = REPO) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0] in SKIP or parts[0].startswith("."):
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imported(tree: ast.AST, package: str) -> list[str]:
    """Every module name an import statement of `tree` names (relative ones made absolute), those
    in functions and under `if TYPE_CHECKING:` included."""
    names: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names += [base] + [f"{base}.{alias.name}" for alias in node.names]
        stack.extend(ast.iter_child_nodes(node))
    return names


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """module -> the modules of this repository it imports."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for target in _imported(ast.parse(path.read_text(encoding="utf-8")), package):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower layer to a higher one, as "importer -> imported"."""
    return sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                  if RANK[source.split(".")[0]] < RANK[target.split(".")[0]])


def test_every_package_has_a_layer():
    assert {name.split(".")[0] for name in modules()} <= set(RANK)


def test_no_import_circles():
    assert cycles(import_graph()) == []


def test_no_import_from_a_lower_layer_to_a_higher_one():
    assert wrong_way(import_graph()) == []


def test_the_check_finds_a_circle_and_a_wrong_way_arrow(tmp_path):
    for name, text in {"core/__init__.py": "", "core/a.py": "from core import b\n", "core/b.py": "import core.a\n",
                       "actors/__init__.py": "", "actors/x.py": "", "protocol/__init__.py": "import actors.x\n",
                       "core/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core import d\n",
                       "core/d.py": "from core import c\n", "core/e.py": "import typing\nif typing.TYPE_CHECKING:\n"
                       "    import actors.x\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path)
    assert sorted(cycles(graph)) == [["core.a", "core.b"], ["core.c", "core.d"]]  # c -> d only for a type checker: a circle still
    assert wrong_way(graph) == ["core.e -> actors.x", "protocol -> actors.x"]


MAX_FUNCTION_LINES = 60  # the team's guide: a function longer than this is split into named pieces


def long_functions(root: Path = REPO) -> list[str]:
    """Every function or method of the code outside tests longer than MAX_FUNCTION_LINES, as
    "path:line name (lines)"."""
    found = []
    for path in sorted(modules(root).values()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines})")
    return found


def test_no_function_outside_tests_is_over_sixty_lines():
    assert long_functions() == []


def test_the_check_finds_a_long_function(tmp_path):
    (tmp_path / "core").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (tmp_path / "core" / "long.py").write_text(f"def fits():\n{body}\n\ndef too_long():\n{body}    return 0\n")
    assert long_functions(tmp_path) == [f"core/long.py:{MAX_FUNCTION_LINES + 3} too_long ({MAX_FUNCTION_LINES + 1})"]
