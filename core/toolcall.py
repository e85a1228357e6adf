"""The tool-call line protocol (S12): find one `TOOL_CALL:` line in a model reply, bind its args.

Grammar (one line; the model writes it, the runtime parses it):

    TOOL_CALL: name|args
    name  = [a-z][a-z0-9_]*            e.g. notes_add, get_current_time
    args  = ""                         no arguments: `TOOL_CALL: get_current_time`
          | value; key=value; ...      leading values fill the tool's declared arguments in order,
                                       `key=value` sets one by name; `;` separates
          | {"key": "value", ...}      a JSON object, by name

    A tool with exactly ONE declared argument takes the whole args string as its value, so
    `TOOL_CALL: show_text|Milk; eggs = 2` shows "Milk; eggs = 2".

The parser forgives what small models do to that line: spaces around `:` and `|`, any case of
`tool_call:` (also `TOOL CALL:`), quotes, backticks or `**` around the line, a ``` code fence
around it, text before it (kept: it is what the user sees) and after it (dropped), a name without
`|`, `name args` with a space, `name(args)` in function style, `|` or `;` between values, quotes
around values, `key: value`, and a `<think>…</think>` block (ignored). Only the first call counts:
one call per turn; `extra_calls` says how many more were ignored so the result can say so.

Given the names of the catalog's tools (`tools`), a line with no marker that opens with one of
them in capitals and `:` is a call too ("TIMERS_SET: in 23:00; торт", "TIMERS_CANCEL: t1"): the
small model writes the name where the marker goes, and the line would otherwise reach the glasses.
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

# The marker: tool_call / toolcall in any case, or upper-case "TOOL CALL" (prose says "tool call:"),
# with optional markdown bold, and a quote/backtick opener after the colon kept as `inner`.
# A marker escaped by core.fence (`\TOOL_CALL:`, `\**TOOL_CALL**:`) is data the model copied, not a call.
_MARKER = re.compile(r"(?<![A-Za-z0-9\\])(?<!\\\*)(?<!\\\*\*)\**(?:(?i:tool_?call)|TOOL[ -]CALL)\**[ \t]*:\s*\**"
                     r"(?P<inner>[\"'`]*)[ \t]*")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_LINE = re.compile(r"^[ \t]*```[A-Za-z0-9_-]*[ \t]*$")
_WRAP_OPENERS = {'"': '"', "'": "'", "`": "`", "“": "”", "«": "»"}
_LIST_MARKER = re.compile(r"[\s>*•·-]*|\s*\d+[.)]\s*")
_KEYED = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*[=:]\s*(.*)$", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    name: str
    raw_args: str


@dataclass(frozen=True)
class ParsedReply:
    """text_before: what precedes the call (shown to the user); call: the first call or None;
    extra_calls: how many further calls were ignored; text_after: dropped text, for logs."""

    text_before: str
    call: ToolCall | None
    extra_calls: int = 0
    text_after: str = ""


class ArgumentError(ValueError):
    """The args of a call do not fit the tool's declared arguments; str() says why."""


def _strip_think(text: str) -> str:
    if "<" not in text:
        return text  # no <think> block, opened or closed
    text = _THINK.sub("", text)
    closing = text.lower().rfind("</think>")  # the template may have opened the block for us
    return text[closing + len("</think>"):] if closing >= 0 else text


def _line_bounds(text: str, index: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return start, len(text) if end < 0 else end


def _may_hold_marker(text: str) -> bool:
    """Every spelling of the marker holds "tool" in some case (the regex's scan is left to text
    that does: an answer streamed in pieces is asked at every piece)."""
    return "tool" in text.lower()


def _find_marker_with_name(text: str, start: int = 0) -> re.Match | None:
    """The first marker followed by a tool name."""
    for marker in _MARKER.finditer(text, start):
        if _NAME.match(text, marker.end()) and not _MARKER.match(text, marker.end()):
            return marker
    return None


def _split_rest(rest: str) -> str:
    """What follows the name on the call line -> the raw args."""
    stripped = rest.strip()
    if not stripped:
        return ""
    if stripped[0] in "|:":
        return stripped[1:].strip()
    if stripped[0] == "(" and stripped.endswith(")"):
        inner = stripped[1:-1].strip()
        return inner if inner.startswith("{") else _commas_to_semicolons(inner)
    return stripped  # `name dune`: the space form


def _commas_to_semicolons(text: str) -> str:
    """`"a, b", page=2` -> `"a, b"; page=2`: function-style args use commas outside quotes."""
    out, quote = [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == ",":
            out.append(";")
            continue
        out.append(char)
    return "".join(out)


def _unwrap(prefix: str, args: str, bold: bool) -> tuple[str, str]:
    """Drop what wraps the call: quote/backtick openers before the marker and their closers at
    the line end, markdown bold, and a bare list or quote marker (`- `, `> `) starting the line."""
    trimmed = prefix.rstrip()
    args = args.rstrip()
    while trimmed and trimmed[-1] in _WRAP_OPENERS:
        opener = trimmed[-1]
        run = len(trimmed) - len(trimmed.rstrip(opener)) if opener == "`" else 1
        trimmed = trimmed[:-run].rstrip()
        closer = _WRAP_OPENERS[opener] * run
        if args.endswith(closer):
            args = args[: -len(closer)].rstrip()
    if bold and args.endswith("**"):
        args = args[:-2].rstrip()
    if _LIST_MARKER.fullmatch(trimmed):
        trimmed = ""
    return trimmed, args


# a call line without the marker: a tool's name in capitals, as the marker is written, then `:`
# ("TIMERS_SET: …"); not `name|…`, the form every catalog and discover_tools line shows, which a
# reply quoting them would make a call
_NAMED_LINE = re.compile(r"^[ \t>*•·`\"'-]*(?P<name>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\**[ \t]*:(?P<args>[^\n]*)$",
                         re.MULTILINE)


def parse_reply(text: str, tools: Collection[str] = ()) -> ParsedReply:
    """Split a model reply into visible text and at most one tool call; `tools`: the catalog's
    tool names, whose call lines may come without the marker (`_named_call`)."""
    text = _strip_think(text)
    marker = _find_marker_with_name(text) if _may_hold_marker(text) else None
    if marker is None:
        return (_named_call(text, tools) if tools else None) or ParsedReply(text_before=text.strip(), call=None)
    line_start = _line_bounds(text, marker.start())[0]
    name_match = _NAME.match(text, marker.end())
    line_end = _line_bounds(text, name_match.start())[1]  # the name may sit on the next line
    name = name_match.group(0).lower().replace("-", "_").strip("_")
    prefix = text[line_start:marker.start()] + marker.group("inner")
    args = _split_rest(text[name_match.end():line_end])
    prefix, args = _unwrap(prefix, args, bold=text.startswith("*", marker.start()))
    if args.startswith("|"):  # `name||x` or a pipe left after an unwrapped opener
        args = args[1:].strip()
    before_lines = text[:line_start].rstrip("\n").split("\n")
    if prefix.strip() == "" and before_lines and _FENCE_LINE.match(before_lines[-1]):
        before_lines.pop()  # the fence opening the call's code block is not for the user
    before = "\n".join(before_lines).rstrip()
    if prefix.strip():
        before = (before + "\n" + prefix.strip()).strip() if before else prefix.strip()
    after = text[line_end:].strip()
    if after.startswith("```"):  # the fence closing the call's code block
        after = after[3:].strip()
    extra = 0
    position = line_end
    while (found := _find_marker_with_name(text, position)) is not None:
        extra += 1
        position = _line_bounds(text, found.start())[1]
    return ParsedReply(text_before=before.strip(), call=ToolCall(name, args),
                       extra_calls=extra, text_after=after)


def _named_call(text: str, tools: Collection[str]) -> ParsedReply | None:
    """The first line that opens with a tool's name in capitals and `:` ("TIMERS_SET: in
    23:00; торт"), as the call it means; None when there is none."""
    for line in _NAMED_LINE.finditer(text):
        name = line["name"].lower()
        if name in tools:
            args = line["args"].strip().strip("`*").strip()
            return ParsedReply(text_before=text[:line.start()].strip(), call=ToolCall(name, args),
                               text_after=text[line.end():].strip())
    return None


def find_call_start(text: str) -> int | None:
    """Where a (possible) call line begins, so a streaming display can show only text[:index].

    Covers a complete marker and a partial one at the very end of the stream ("TOOL_C"), plus a
    quote/backtick/bold opener or a ``` fence line right before it. None: show everything."""
    marker = _MARKER.search(text) if _may_hold_marker(text) else None
    index = marker.start() if marker else _partial_marker_start(text)
    if index is None:
        return None
    line_start = text.rfind("\n", 0, index) + 1
    prefix = text[line_start:index]
    trimmed = prefix.rstrip()
    while trimmed and (trimmed[-1] in _WRAP_OPENERS or trimmed[-1] == "*"):
        trimmed = trimmed[:-1].rstrip()
    if trimmed and not _LIST_MARKER.fullmatch(trimmed):
        return line_start + len(trimmed)
    index = line_start
    if index > 0:
        previous_start = text.rfind("\n", 0, index - 1) + 1
        if _FENCE_LINE.match(text[previous_start:index - 1]):
            index = previous_start
    return index


_MARKER_FORMS = "toolcall:"
_SQUEEZED = re.compile(r"[ _*-]")


def _partial_marker_start(text: str) -> int | None:
    """Start of a tail that could still grow into the marker, e.g. "…here: TOOL_CA"."""
    for start in range(max(0, len(text) - 14), len(text)):
        if text[start] not in "tT":
            continue  # only a tail starting with the marker's t can grow into it
        if start > 0 and text[start - 1].isalnum():
            continue
        tail = text[start:]
        if not tail or "\n" in tail:
            continue
        squeezed = _SQUEEZED.sub("", tail.lower())
        if squeezed and tail[0] not in " _*-" and _MARKER_FORMS.startswith(squeezed):
            return start
    return None


# --- binding args to declared arguments --------------------------------------------------------
def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] in _WRAP_OPENERS and value[-1] == _WRAP_OPENERS[value[0]]:
        return value[1:-1].strip()
    return value


def _json_object(raw: str) -> dict | None:
    if not raw.startswith("{"):
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _json_value(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def bind_args(raw_args: str, arg_names: Sequence[str], required: Collection[str]) -> dict[str, str]:
    """Map raw args onto declared argument names (in declaration order); raise ArgumentError.

    Empty values count as absent. A tool without arguments ignores whatever args came."""
    raw = raw_args.strip()
    names = list(arg_names)
    if not names:
        return {}
    values: dict[str, str] = {}
    json_args = _json_object(raw)
    if json_args is not None and set(json_args) <= set(names):
        for key, value in json_args.items():
            text = _json_value(value)
            if text is not None:
                values[key] = text.strip()
    elif json_args is not None and len(names) > 1:
        unknown = sorted(set(json_args) - set(names))
        raise ArgumentError(f"unknown argument {', '.join(unknown)}")
    elif len(names) == 1:
        keyed = _KEYED.match(raw)
        values[names[0]] = _unquote(keyed.group(2) if keyed and keyed.group(1).lower() == names[0] else raw)
    else:
        _bind_pieces(re.split(r"[;|]", raw), names, values)
    values = {key: value for key, value in values.items() if value != ""}
    missing = [name for name in names if name in required and name not in values]
    if missing:
        raise ArgumentError(f"missing {', '.join(missing)}")
    return {name: values[name] for name in names if name in values}


def _bind_pieces(pieces: list[str], names: list[str], values: dict[str, str]) -> None:
    positional: list[str] = []
    for piece in pieces:
        keyed = _KEYED.match(piece)
        key = keyed.group(1).lower() if keyed else ""
        if keyed and key in names:
            if key in values:
                raise ArgumentError(f"argument {key} given twice")
            values[key] = _unquote(keyed.group(2))
        else:
            positional.append(_unquote(piece))
    while positional and positional[-1] == "":
        positional.pop()  # a trailing `;`
    free = [name for name in names if name not in values]
    if len(positional) > len(free):
        raise ArgumentError(f"too many values: {len(positional)} given, {len(free)} expected")
    for name, value in zip(free, positional):
        values[name] = value
