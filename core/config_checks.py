"""What a config value must be beyond its type, checked at load (before anything starts), each
mistake one line naming the key: msgspec's ValidationError said as `key must be ... (got ...)`,
and the checks msgspec cannot make: regexes compile, endpoints parse, paths are usable, the time
zone exists. core/config.py calls these; they know nothing of the runtime."""
from __future__ import annotations

import re
from typing import Any

import msgspec

IPC_PATH_MAX = 107  # a unix socket's path (sun_path) holds at most 107 bytes on Linux

_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\[\.\.\.\]")
_MISSING = object()


def explain(exc: msgspec.ValidationError, root: type, tables: Any) -> str:
    """msgspec's message as one line naming the dotted key, its allowed values and what was given."""
    text = str(exc)
    message, _, where = text.partition(" - at `$")
    steps = _steps(where.rstrip("`"))
    key = ".".join(name for name, _ in steps) or "(the whole file)"
    got = _lookup(tables, steps)
    shown = f" (got {_show(got)})" if got is not _MISSING else ""
    unknown = re.match(r"Object contains unknown field `(.+)`", message)
    if unknown:
        return f"unknown key {key + '.' if steps else ''}{unknown.group(1)}"
    info = _type_at(msgspec.inspect.type_info(root), steps)
    enum = re.match(r"Invalid enum value", message)
    if enum and isinstance(info, msgspec.inspect.LiteralType):
        return f"{key} must be one of {', '.join(map(str, info.values))}{shown}"
    if re.match(r"Expected `\w+` (>|<|>=|<=) ", message) and info is not None:
        return f"{key} must be {bounds(info)}{shown}"
    length = re.match(r"Expected `str` of length (>=|<=) (\d+)", message)
    if length:
        return f"{key} must not be empty{shown}" if length.groups() == (">=", "1") else f"{key} must be of length {length.group(1)} {length.group(2)}{shown}"
    wrong_type = re.match(r"Expected `(.+?)`, got `(.+?)`", message)
    if wrong_type:
        return f"{key} must be {wrong_type.group(1)}, not {wrong_type.group(2)}{shown}"
    return f"{key}: {message}"


def bounds(info: Any) -> str:
    """`> 0`, `>= 1 and <= 65535`: a numeric type's range as an operator reads it."""
    parts = [f"{op} {_number(getattr(info, name))}" for name, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
             if getattr(info, name, None) is not None]
    return " and ".join(parts) or "a number"


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _show(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return repr(value)


def _steps(path: str) -> list[tuple[str, str]]:
    """`.session.x[0]` -> [("session", "field"), ("x", "field"), ("[0]", "index")]."""
    steps = []
    for match in _STEP.finditer(path):
        field, index = match.groups()
        if field is not None:
            steps.append((field, "field"))
        elif index is not None:
            steps.append((f"[{index}]", "index"))
        else:
            steps.append(("[...]", "value"))
    return steps


def _lookup(tables: Any, steps: list[tuple[str, str]]) -> Any:
    value = tables
    for name, kind in steps:
        if kind == "field" and isinstance(value, dict) and name in value:
            value = value[name]
        elif kind == "index" and isinstance(value, list) and int(name[1:-1]) < len(value):
            value = value[int(name[1:-1])]
        else:
            return _MISSING  # a dict's value (msgspec does not say which key): not shown
    return value


def _type_at(info: Any, steps: list[tuple[str, str]]) -> Any:
    for name, kind in steps:
        info = _unwrap(info)
        if kind == "field" and isinstance(info, msgspec.inspect.StructType):
            info = next((f.type for f in info.fields if f.name == name), None)
        elif kind != "field" and isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.DictType)):
            info = info.item_type if isinstance(info, msgspec.inspect.ListType) else info.value_type
        else:
            return None
    return _unwrap(info)


def _unwrap(info: Any) -> Any:
    """A key's type without its Meta (description, bounds live on the inner type)."""
    while isinstance(info, msgspec.inspect.Metadata):
        info = info.type
    return info


# ---- checks msgspec cannot make ------------------------------------------------------------------
def check_regexes(key: str, patterns: list[str]) -> None:
    for index, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{key}[{index}] is not a valid regular expression ({exc}): {pattern!r}") from None


def check_endpoint(key: str, value: str, kinds: tuple[str, ...] = ("tcp", "ipc", "inproc")) -> None:
    """tcp://HOST:PORT (PORT 1..65535; HOST a name, an address or *), ipc://PATH, inproc://NAME."""
    scheme, sep, rest = value.partition("://")
    allowed = " or ".join(f"{kind}://" for kind in kinds)
    if not sep or scheme not in kinds:
        raise ValueError(f"{key} must be {allowed}... (got {_show(value)})")
    if scheme == "tcp":
        host, colon, port = rest.rpartition(":")
        if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f"{key} must be tcp://HOST:PORT with PORT in 1..65535 (got {_show(value)})")
    elif not rest:
        raise ValueError(f"{key} must name {'a path' if scheme == 'ipc' else 'a name'} after {scheme}:// (got {_show(value)})")
    elif scheme == "ipc" and len(rest.encode()) > IPC_PATH_MAX:
        raise ValueError(f"{key}: an ipc:// path is at most {IPC_PATH_MAX} bytes (got {len(rest.encode())})")


def check_url(key: str, value: str) -> None:
    if value and not re.match(r"https?://[^/\s]+", value, re.IGNORECASE):
        raise ValueError(f"{key} must be an http:// or https:// URL (got {_show(value)})")


def check_timezone(key: str, value: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{key} is not a known time zone (got {_show(value)}); e.g. \"Europe/Moscow\" or \"UTC\"") from None


def check_file_path(key: str, resolved: Any) -> None:
    """A path the runtime creates a file at: not a directory (an empty value resolves to one)."""
    if resolved.is_dir():
        raise ValueError(f"{key} must name a file, not the directory {resolved}")


def check_readable_file(key: str, resolved: Any) -> None:
    """A file the runtime reads at start (an MCP server's sentences): there, and a file."""
    if not resolved.is_file():
        raise ValueError(f"{key}: no such file: {resolved}")


def check_name(key: str, name: str, kind: str) -> None:
    """A monitor's or channel's name as the runtime spells it: the model's and a phone's names are
    lower-cased (and their spaces joined), so one spelt otherwise could never be named."""
    spelt = " ".join(name.casefold().split())
    if name != spelt or not name:
        raise ValueError(f"{key}: a {kind}'s name must be lower-case with no surrounding or double spaces "
                         f"(names are lower-cased when used, so {name!r} could never be used); write {spelt!r}")


def check_monitor(key: str, command: list[str], url: str) -> None:
    """Exactly one of command and url; a url is http(s) (not file://, not another scheme)."""
    if bool(command) == bool(url):
        raise ValueError(f"{key} needs either command (argv) or url, not {'both' if command else 'neither'}")
    if url:
        check_url(f"{key}.url", url)


def check_secret(key: str, secret: str, min_chars: int) -> None:
    if len(secret) < min_chars:
        raise ValueError(f"{key} is {len(secret)} characters; a webhook secret has at least {min_chars} "
                         "(channels.min_secret_chars), e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`")
