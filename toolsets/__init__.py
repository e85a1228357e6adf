"""Every built-in toolset: one folder each (`toolsets/NAME/`, exporting `TOOLSET`), one line here.

The catalog, the prompt, argument checks, routing and the toolset executor all read this list
(plus `toolsets.extra` from the config, and each `[mcp.servers.NAME]`, see toolsets.mcp).
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable

from core.toolsets import Toolset

REGISTRY = (
    "toolsets.media:TOOLSET",
    "toolsets.timers:TOOLSET",
)


def load(extra: Iterable[str] = ()) -> list[Toolset]:
    """The toolset records, in catalog order: the registry, then `extra` ("module:ATTRIBUTE")."""
    records = []
    for line in (*REGISTRY, *extra):
        module, _, attribute = line.partition(":")
        record = getattr(importlib.import_module(module), attribute or "TOOLSET")
        if not isinstance(record, Toolset):
            raise ValueError(f"toolset {line!r} is a {type(record).__name__}, not a core.toolsets.Toolset")
        records.append(record)
    return records
