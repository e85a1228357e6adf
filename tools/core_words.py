"""`python -m tools.core_words [REV]`: how much of what users say is still written into core/'s
Python (issue 50: phrasing is data, in core/words/ and the toolsets' folders, not literals in
core/). For each core/*.py: its lines, and the lines of its code (docstrings and comments aside)
that hold a string literal in Russian, or a string literal of alternatives ("a|b") with two words
or more of three letters or more (a regular expression of words). English words in a literal
without "|" (a tuple of words, a space-separated list) are not counted: the figure is a floor,
comparable between revisions. REV reads the files as a git revision has them."""
from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_WORDS = re.compile(r"[a-zа-яё]{3,}", re.IGNORECASE)


def _sources(rev: str | None) -> dict[str, str]:
    if rev is None:
        return {str(p): p.read_text(encoding="utf-8") for p in sorted(Path("core").glob("*.py"))}
    names = subprocess.run(["git", "ls-tree", "--name-only", rev, "core/"], capture_output=True, text=True,
                           check=True).stdout.split()
    return {name: subprocess.run(["git", "show", f"{rev}:{name}"], capture_output=True, text=True, check=True).stdout
            for name in names if name.endswith(".py")}


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def worded_lines(text: str) -> tuple[int, int]:
    """(lines with a Russian literal, lines with a literal of words) in the code of `text`."""
    skip = _docstring_lines(ast.parse(text))
    russian: set[int] = set()
    worded: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.STRING or token.start[0] in skip:
            continue
        lines = range(token.start[0], token.end[0] + 1)
        if _CYRILLIC.search(token.string):
            russian.update(lines)
        if len(_WORDS.findall(token.string)) >= 2 and ("|" in token.string or _CYRILLIC.search(token.string)):
            worded.update(lines)
    return len(russian), len(worded | russian)


def main(argv: list[str]) -> int:
    rev = argv[0] if argv else None
    total = [0, 0, 0]
    rows = []
    for name, text in _sources(rev).items():
        russian, worded = worded_lines(text)
        rows.append((worded, russian, len(text.splitlines()), name))
        total = [total[0] + len(text.splitlines()), total[1] + russian, total[2] + worded]
    for worded, russian, lines, name in sorted(rows, reverse=True)[:15]:
        print(f"{name:28} {lines:5} lines {russian:4} with Russian literals {worded:4} with literals of words")
    print(f"core/*.py: {total[0]} lines, {total[1]} with Russian literals, {total[2]} with literals of words")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
