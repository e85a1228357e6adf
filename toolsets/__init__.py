"""Every built-in toolset: one folder each (`toolsets/NAME/`, exporting `TOOLSET`), one line here.

The catalog, the prompt, argument checks, routing and the toolset executor all read this list
(plus `toolsets.extra` from the config, and each `[mcp.servers.NAME]`, see toolsets.mcp).
"""
from __future__ import annotations

import importlib

from core.config import Config, ConfigError
from core.toolsets import Toolset

REGISTRY = (
    "toolsets.media:TOOLSET",
    "toolsets.timers:TOOLSET",
    "toolsets.channels:TOOLSET",
    "toolsets.notify:TOOLSET",
    "toolsets.tasks:TOOLSET",
    "toolsets.monitors:TOOLSET",
)


def load(config: Config | None = None) -> list[Toolset]:
    """The toolset records, in catalog order: the registry, then `toolsets.extra` ("module:ATTRIBUTE"),
    each with its config section decoded and bound to its handler (defaults without a config).
    Raises ConfigError for a wrong value or a section no toolset takes."""
    config = Config() if config is None else config
    records = []
    for line in (*REGISTRY, *config.toolsets.extra):
        module, _, attribute = line.partition(":")
        record = getattr(importlib.import_module(module), attribute or "TOOLSET")
        if not isinstance(record, Toolset):
            raise ValueError(f"toolset {line!r} is a {type(record).__name__}, not a core.toolsets.Toolset")
        records.append(record.configured(config))
    unknown = set(config.toolsets.sections) - {record.spec.name for record in records}
    if unknown:
        takes = ", ".join(r.spec.name for r in records if r.settings) or "none"
        raise ConfigError(f"unknown section {', '.join(sorted(unknown))}: neither a config section nor a toolset "
                          f"(toolsets with settings: {takes})")
    return records
