"""GBNF for the small model: either exactly one `TOOL_CALL: name|args` line or plain text.

Built per request from the tool names valid in the current prompt, so a constrained model can
only call a tool that exists right now (SPEC S12), and from the arguments some tools can only
take (`read_skill` a skill this session sees, `enable_toolset` a toolset that exists), so a
small model cannot ask for a skill or toolset that is not there. Plain text may not contain a line starting
with `TOOL_CALL`, so a half-formed call cannot slip through as prose.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tool_call_grammar(tool_names: list[str], arg_choices: Mapping[str, list[str]] | None = None) -> str:
    """GBNF source. With no tools, only plain text is admitted. A tool listed in `arg_choices`
    takes exactly one of its choices (a tool whose choices are empty cannot be called; one whose
    only choice is "" is called by its name alone)."""
    choices = {name: sorted(set(values)) for name, values in (arg_choices or {}).items()}
    names = sorted(name for name in set(tool_names) if choices.get(name, True))
    for name in names:
        if not TOOL_NAME.match(name):
            raise ValueError(f"tool name {name!r} is not a plain identifier; cannot put it in a grammar")
    plain = "\n".join(
        [
            # a line is empty or does not start with "tool" in any case: the session's parser also
            # reads "TOOLCALL:" and "TOOL CALL:" as a call (core/toolcall.py), and a small model
            # kept from "TOOL_CALL" wrote "TOOLCALL: say_thanks" (issue 33, the traps set); nor with
            # a capital "TO" at all: kept from those, it wrote "TOO_CALL:" and "TOOOL_CALL:"
            "text ::= line (\"\\n\" line)*",
            "line ::= \"\" | [^Tt\\n] [^\\n]* | \"t\" after-t | \"T\" after-cap-t",
            "after-t ::= \"\" | [^Oo\\n] [^\\n]* | [Oo] after-to",
            "after-cap-t ::= \"\" | [^Oo\\n] [^\\n]* | \"o\" after-to",
            "after-to ::= \"\" | [^Oo\\n] [^\\n]* | [Oo] (\"\" | [^Ll\\n] [^\\n]*)",
        ]
    )
    if not names:
        return "root ::= text\n" + plain + "\n"
    free = [name for name in names if name not in choices]
    rules = []
    alternatives = []
    if free:
        alternatives.append("name \"|\" args")
        rules += ["name ::= " + " | ".join(_literal(name) for name in free), "args ::= [^\\n<>]*"]
    for name in names:
        if choices.get(name) == [""]:
            alternatives.append(_literal(name))  # no arguments: the name alone ends the reply
        elif name in choices:
            alternatives.append(_literal(f"{name}|") + " (" + " | ".join(_literal(value) for value in choices[name]) + ")")
    call = "\n".join(["call ::= \"TOOL_CALL: \" (" + " | ".join(alternatives) + ")", *rules])
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
        if line.lower().startswith("tool") or line.startswith("TO"):
            raise ValueError(f"plain text contains a TOOL_ line (one starting with tool or TO): {line!r}")
    return text
