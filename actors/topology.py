"""Where every actor's inbox lives, from one config, so the same actor code runs in one process
(inproc://), a process per actor (ipc://), across hosts (tcp://), or in process groups: actors
grouped in `topology.groups` share an OS process and reach each other at their inproc://
address (actors/local.py delivers there without ZeroMQ), while everyone else reaches them over
ipc/tcp (an inbox binds both)."""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import NamedTuple

from core.config import TopologyConfig


class ChildSpec(NamedTuple):
    """One supervised actor: its inbox name, its class ("module:Class"), and its port in tcp
    mode (`topology.tcp_base_port` + port; given, not taken from the position, so a port never
    moves when an actor is added or removed)."""

    name: str
    actor: str
    port: int


CHILDREN: tuple[ChildSpec, ...] = (
    ChildSpec("skills", "actors.skill_store:SkillStore", port=1),
    ChildSpec("toolsets", "actors.toolsets:ToolsetSupervisor", port=2),
    ChildSpec("media", "actors.media_executor:MediaExecutor", port=4),
    ChildSpec("llm", "actors.llm_worker:LLMWorker", port=3),
    ChildSpec("session", "actors.session:SessionActor", port=5),
    ChildSpec("glasses", "actors.glasses:GlassesBridge", port=6),
)
"""The actors, in start order: leaves first, the edge last."""

EXECUTORS: dict[str, str] = {"media": "media"}
"""Toolsets whose calls run in an executor actor of their own (toolset -> actor); every other
executor toolset, the MCP servers included, runs in the ToolsetSupervisor ("toolsets")."""

CONTROL = "supervisor"
CONTROL_PORT = 0
ACTORS = tuple(child.name for child in CHILDREN)
_BY_NAME = {child.name: child for child in CHILDREN}


def executor_of(toolset: str | None) -> str:
    """The actor that runs the calls of `toolset` (the ToolsetSupervisor unless it has its own)."""
    return EXECUTORS.get(toolset or "", "toolsets")


def actor_class(name: str):
    """The class that runs the actor `name` (KeyError for an unknown one)."""
    module, _, cls = _BY_NAME[name].actor.partition(":")
    return getattr(importlib.import_module(module), cls)


def process_groups(config: TopologyConfig) -> list[tuple[str, ...]]:
    """The OS processes of ipc/tcp mode, in start order: each configured group, then every other
    actor alone. A group names known actors, each once; otherwise ValueError says what is wrong."""
    seen: set[str] = set()
    groups: list[tuple[str, ...]] = []
    for group in config.groups:
        for name in group:
            if name not in ACTORS:
                raise ValueError(f"topology.groups: unknown actor {name!r}; actors: {', '.join(ACTORS)}")
            if name in seen:
                raise ValueError(f"topology.groups: {name!r} is in more than one group")
            seen.add(name)
        if group:
            groups.append(tuple(name for name in ACTORS if name in group))
    groups += [(name,) for name in ACTORS if name not in seen]
    return sorted(groups, key=lambda group: min(ACTORS.index(name) for name in group))


class Topology:
    def __init__(self, config: TopologyConfig, owner: str = ""):
        """`owner`: the actor using this view; actors in its process group are reached in-process."""
        if config.mode not in ("inproc", "ipc", "tcp"):
            raise ValueError(f"topology mode must be inproc, ipc or tcp, not {config.mode!r}")
        self.config = config
        self.mode = config.mode
        self.groups = process_groups(config)
        self.local: tuple[str, ...] = ()
        if self.mode != "inproc":
            self.local = next((group for group in self.groups if owner in group and len(group) > 1), ())

    def address(self, actor: str) -> str:
        if actor in self.config.addresses:
            return self.config.addresses[actor]
        names = (CONTROL, *ACTORS)
        if actor not in names:
            raise KeyError(f"unknown actor {actor!r}; actors: {', '.join(names)}")
        if self.mode == "inproc" or actor in self.local:
            return f"inproc://porfiry-{actor}"
        return self._external(actor)

    def _external(self, actor: str) -> str:
        if self.mode == "ipc":
            return f"ipc://{Path(self.config.ipc_dir) / actor}.sock"
        port = CONTROL_PORT if actor == CONTROL else _BY_NAME[actor].port
        return f"tcp://{self.config.tcp_host}:{self.config.tcp_base_port + port}"

    def local_address(self, actor: str) -> str | None:
        """The inproc:// address the actors of its own process reach `actor` at, or None when it
        shares its process with nobody (actors/local.py delivers there without ZeroMQ)."""
        if actor in self.config.addresses:
            address = self.config.addresses[actor]
            return address if address.startswith("inproc://") else None
        if self.mode == "inproc" or any(actor in group and len(group) > 1 for group in self.groups):
            return f"inproc://porfiry-{actor}"
        return None

    def bind_addresses(self, actor: str) -> list[str]:
        """Where the inbox binds: what others connect to, plus inproc:// for its process group."""
        if self.mode == "ipc":
            Path(self.config.ipc_dir).mkdir(parents=True, exist_ok=True)
        if actor in self.config.addresses or self.mode == "inproc":
            return [self.address(actor)]
        grouped = any(actor in group and len(group) > 1 for group in self.groups)
        return [self._external(actor)] + ([f"inproc://porfiry-{actor}"] if grouped else [])
