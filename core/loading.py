"""What reads the config file and the toolset records it names.

The built-in toolsets are named here by "module:ATTRIBUTE" (each folder under `toolsets/` exports
`TOOLSET`), as `actors.topology` names actor classes: core loads them by name and never imports
the toolsets above it. `load_config` is core.config's plus each toolset's own section checked, so
a wrong value fails config loading with one line naming the key, not an actor's start.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import msgspec

from core.config import Config, ConfigError
from core.config import load_config as load_config_file
from core.toolsets import Toolset

REGISTRY = (
    "toolsets.media:TOOLSET",
    "toolsets.timers:TOOLSET",
    "toolsets.channels:TOOLSET",
    "toolsets.notify:TOOLSET",
    "toolsets.tasks:TOOLSET",
    "toolsets.monitors:TOOLSET",
    "toolsets.units:TOOLSET",
)
"""Every built-in toolset, in catalog order: one line each."""


def load_config(path: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Config:
    """The config of `path` (see core.config.load_config), each toolset's section decoded against its
    record's settings: ConfigError for a wrong value or a section no toolset takes."""
    config = load_config_file(path, env)
    if config.toolsets.sections:
        try:
            load_toolsets(config)
        except ConfigError as exc:
            where = path or (env or os.environ).get("PORFIRY_CONFIG") or "porfiry.toml"
            raise ConfigError(f"config {where}: {exc}") from None
    return config


def intent_files(config: Config | None = None) -> list[Path]:
    """The local intents the runtime loads (core.local_intents): the runtime's own
    (core/intents.yaml), then each toolset folder's `intents.yaml`, in catalog order, then the
    custom sentences of each MCP server on (`mcp.servers.NAME.intents`, as Home Assistant's
    custom_sentences: a user's words for a server's tools)."""
    config = Config() if config is None else config
    files = [Path(__file__).with_name("intents.yaml")]
    for line in (*REGISTRY, *config.toolsets.extra):
        spec = importlib.util.find_spec(line.partition(":")[0])
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        files += [Path(folder, "intents.yaml") for folder in folders if Path(folder, "intents.yaml").is_file()]
    files += [config.path(server.intents) for server in config.mcp.servers.values() if server.enabled and server.intents]
    return files


def load_toolsets(config: Config | None = None) -> list[Toolset]:
    """The toolset records, in catalog order: the registry, then `toolsets.extra` ("module:ATTRIBUTE"),
    each with its config section decoded and bound to its handler (defaults without a config).
    Raises ConfigError for a wrong value or a section no toolset takes."""
    config = Config() if config is None else config
    records = []
    for line in (*REGISTRY, *config.toolsets.extra):
        module, _, attribute = line.partition(":")
        record = getattr(importlib.import_module(module), attribute or "TOOLSET")
        if not isinstance(record, Toolset):
            raise ValueError(f"toolset {line!r} is a {type(record).__name__}, not a core.toolsets.SessionToolset "
                             "or ExecutorToolset")
        if line not in REGISTRY:  # the fast path leaves to the model what its own toolsets lack (core.reflex_steps)
            record = replace(record, spec=msgspec.structs.replace(record.spec, origin="extra"))
        records.append(record.configured(config))
    unknown = set(config.toolsets.sections) - {record.spec.name for record in records}
    if unknown:
        takes = ", ".join(r.spec.name for r in records if r.settings) or "none"
        raise ConfigError(f"unknown section {', '.join(sorted(unknown))}: neither a config section nor a toolset "
                          f"(toolsets with settings: {takes})")
    return records


def default_catalog():
    """The built-in toolsets' specs, in catalog order (the toolset registry)."""
    return [record.spec for record in load_toolsets()]
