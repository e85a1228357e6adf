"""An MCP server's tools as a Porfiry toolset, and their results as text (pure, no I/O).

A server is untrusted: its tool names get the toolset's prefix (it cannot name a tool outside
it), a name that would collide is refused, descriptions are cut to their first sentence and
fenced as untrusted text (core.fence.fence_untrusted: labels and tool-call markers escaped on
every line break Unicode knows), and so are results; the session fences them again as data.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any

from core.fence import fence_untrusted
from core.toolsets import ToolResult, invalid_args_text
from protocol import ArgSpec, ToolSpec

_ARG_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# an argument that names a thing by its id (our snake names: `id`, `paperId` -> paper_id, `message_ids`,
# `uuid`, `slug`), or a string of format uuid: its value must be one the conversation showed
# (core.intent.unshown_id). Not `key`: a note's or a setting's key is often new, chosen by the model.
_ID_ARG = re.compile(r"(?:[a-z0-9_]*_)?(?:id|uuid|guid|slug)s?")


def snake(name: str) -> str:
    """`maxResults` -> `max_results`, `add-note` -> `add_note`: the form our names take."""
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name.strip())
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def first_sentence(text: str | None, limit: int) -> str:
    """One line: the text's first sentence, at most `limit` characters (cut visibly with `…`),
    fenced (`split` breaks at every Unicode line break, the fence escapes labels within it)."""
    line = " ".join((text or "").split())
    line = _SENTENCE_END.split(line, maxsplit=1)[0]
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "\u2026"
    return fence_untrusted(line)


@dataclass(slots=True)
class McpTool:
    """One server tool as we show it: our spec, and how to call the server's own tool."""

    spec: ToolSpec
    remote: str  # the server's name for it
    arg_names: dict[str, str]  # our argument name -> the server's property name
    types: dict[str, Any] = field(default_factory=dict)  # our argument name -> its JSON Schema


def tools_from_listing(toolset: str, listed: list[Any], *, long_running: set[str], max_tools: int,
                       max_description_chars: int) -> tuple[list[McpTool], list[str]]:
    """The listed tools (mcp_types.Tool) as ours, and one problem line per tool refused."""
    tools: dict[str, McpTool] = {}
    problems: list[str] = []
    surplus: list[str] = []
    for tool in listed:
        if len(tools) >= max_tools:
            surplus.append(tool.name)
            continue
        verb = snake(tool.name)
        name = f"{toolset}_{verb}"
        if not verb or not _ARG_NAME.fullmatch(name):
            problems.append(f"tool {tool.name!r} refused: its name cannot become a tool name")
            continue
        if name in tools:
            problems.append(f"tool {tool.name!r} refused: {name} is already {tools[name].remote!r}")
            continue
        schema = tool.input_schema or {}
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        args: list[ArgSpec] = []
        names: dict[str, str] = {}
        types: dict[str, Any] = {}
        bad = ""
        # required first: the terse signature lists optional arguments last
        for prop in sorted(properties, key=lambda key: key not in required):
            arg = snake(prop)
            if not _ARG_NAME.fullmatch(arg) or arg in names:
                bad = f"argument {prop!r} cannot become an argument name"
                break
            names[arg] = prop
            types[arg] = properties[prop] if isinstance(properties[prop], dict) else {}
            args.append(ArgSpec(name=arg, required=prop in required))
        if bad:
            problems.append(f"tool {tool.name!r} refused: {bad}")
            continue
        summary = first_sentence(tool.description, max_description_chars) or fence_untrusted(f"the server's {tool.name}")
        annotations = getattr(tool, "annotations", None)
        read_only = bool(getattr(annotations, "read_only_hint", False))
        # MCP's defaults: a tool not read-only is taken as destructive unless it says otherwise
        destructive = not read_only and getattr(annotations, "destructive_hint", None) is not False
        spec = ToolSpec(name=name, summary=summary, args=args, long_running=bool({name, tool.name} & long_running),
                        read_only=read_only, idempotent=bool(getattr(annotations, "idempotent_hint", False)),
                        destructive=destructive, action="none" if read_only else "change",
                        id_args=[a.name for a in args if _ID_ARG.fullmatch(a.name) or types[a.name].get("format") == "uuid"])
        tools[name] = McpTool(spec, tool.name, names, types)
    if surplus:  # one problem, however many: a server listing 10,000 tools is one line, not 9,936
        more = f" and {len(surplus) - 1} more" if len(surplus) > 1 else ""
        problems.append(f"tool {surplus[0]!r}{more} refused: more than mcp.max_tools ({max_tools}) tools")
    return list(tools.values()), problems


def to_arguments(tool: McpTool, args: dict[str, str]) -> dict[str, Any] | ToolResult:
    """Our string arguments as the JSON values the tool's schema asks for, or the error to show."""
    values: dict[str, Any] = {}
    for arg, text in args.items():
        if arg not in tool.arg_names:
            continue
        try:
            values[tool.arg_names[arg]] = _convert(text, tool.types.get(arg, {}))
        except ValueError as exc:
            return ToolResult(False, invalid_args_text(tool.spec, f"{arg} {exc}"))
    return values


def _convert(text: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError("must be a whole number") from None
    if kind == "number":
        try:
            return float(text.strip().replace(",", "."))
        except ValueError:
            raise ValueError("must be a number") from None
    if kind == "boolean":
        word = text.strip().lower()
        if word in ("true", "yes", "1", "on", "да"):
            return True
        if word in ("false", "no", "0", "off", "нет"):
            return False
        raise ValueError("must be true or false")
    if kind in ("array", "object"):
        stripped = text.strip()
        if stripped[:1] in ("[", "{"):
            try:
                return json.loads(stripped)
            except json.JSONDecodeError:
                raise ValueError("is not valid JSON") from None
        if kind == "array":
            return [item.strip() for item in stripped.split(",") if item.strip()]
        raise ValueError("must be a JSON object")
    return text


def result_text(result: Any) -> ToolResult:
    """A CallToolResult as text: the server's text fenced, anything else one `[image/png, 12 KB]` line."""
    parts = [_content_text(block) for block in result.content or []]
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(fence_untrusted(json.dumps(result.structured_content, ensure_ascii=False)))
    text = "\n".join(part for part in parts if part)
    if result.is_error:
        return ToolResult(False, text or "the server reported an error without a message")
    return ToolResult(True, text or "(no content)")


def _content_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return fence_untrusted(block.text)
    if kind in ("image", "audio"):
        return f"[{fence_untrusted(block.mime_type)}, {_size(block.data)}]"
    if kind == "resource":
        resource = block.resource
        if hasattr(resource, "text"):
            return fence_untrusted(resource.text)
        kind, uri = fence_untrusted(resource.mime_type or "binary"), fence_untrusted(str(resource.uri))
        return f"[{kind}, {_size(resource.blob)}: {uri}]"
    if kind == "resource_link":
        return f"[link: {fence_untrusted(str(block.uri))}]"
    return f"[{kind or 'unknown'} content]"


def _size(data: str) -> str:
    try:
        size = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        size = len(data)
    return f"{size} B" if size < 1024 else f"{round(size / 1024)} KB"
