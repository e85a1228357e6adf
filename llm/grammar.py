"""GBNF for the small model: either exactly one `TOOL_CALL: name|args` line or plain text.

Built per request from the tool names valid in the current prompt, so a constrained model can
only call a tool that exists right now (SPEC S12). Plain text may not contain a line starting
with `TOOL_CALL`, so a half-formed call cannot slip through as prose.
"""
from __future__ import annotations

import re

TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tool_call_grammar(tool_names: list[str]) -> str:
    """GBNF source. With no tools, only plain text is admitted."""
    names = sorted(set(tool_names))
    for name in names:
        if not TOOL_NAME.match(name):
            raise ValueError(f"tool name {name!r} is not a plain identifier; cannot put it in a grammar")
    plain = "\n".join(
        [
            # a line is empty or starts with anything but the T of TOOL_CALL, or with T not followed by OOL_CALL
            "text ::= line (\"\\n\" line)*",
            "line ::= \"\" | [^T\\n] [^\\n]* | \"T\" ([^O\\n] [^\\n]*)? | \"TO\" ([^O\\n] [^\\n]*)?"
            " | \"TOO\" ([^L\\n] [^\\n]*)? | \"TOOL\" ([^_\\n] [^\\n]*)?",
        ]
    )
    if not names:
        return "root ::= text\n" + plain + "\n"
    call = "\n".join(
        [
            "call ::= \"TOOL_CALL: \" name \"|\" args",
            "name ::= " + " | ".join(_literal(name) for name in names),
            "args ::= [^\\n]*",
        ]
    )
    return "root ::= call | text\n" + call + "\n" + plain + "\n"


_CALL = re.compile(r"^TOOL_CALL: ([A-Za-z_][A-Za-z0-9_]*)\|([^\n]*)$")


def parse_constrained_output(text: str, tool_names: list[str]) -> tuple[str, str] | str:
    """What the grammar admits, read back: (name, args) for a call, else the text itself.

    Raises ValueError for text the grammar would not admit (a test oracle for the grammar).
    """
    match = _CALL.match(text)
    if match:
        if match.group(1) not in tool_names:
            raise ValueError(f"call to unknown tool {match.group(1)!r}")
        return match.group(1), match.group(2)
    for line in text.split("\n"):
        if line.startswith("TOOL_"):
            raise ValueError(f"plain text contains a TOOL_ line: {line!r}")
    return text
