"""Where every actor's inbox lives, from one config, so the same actor code runs in one process
(inproc://), a process per actor (ipc://) or across hosts (tcp://)."""
from __future__ import annotations

from pathlib import Path

from core.config import TopologyConfig

ACTORS = ("skills", "toolsets", "llm", "media", "session", "glasses")
"""The six actors, in start order: leaves first, the edge last. `supervisor` is the seventh inbox."""

CONTROL = "supervisor"


class Topology:
    def __init__(self, config: TopologyConfig):
        if config.mode not in ("inproc", "ipc", "tcp"):
            raise ValueError(f"topology mode must be inproc, ipc or tcp, not {config.mode!r}")
        self.config = config
        self.mode = config.mode

    def address(self, actor: str) -> str:
        if actor in self.config.addresses:
            return self.config.addresses[actor]
        names = (CONTROL, *ACTORS)
        if actor not in names:
            raise KeyError(f"unknown actor {actor!r}; actors: {', '.join(names)}")
        if self.mode == "inproc":
            return f"inproc://porfiry-{actor}"
        if self.mode == "ipc":
            return f"ipc://{Path(self.config.ipc_dir) / actor}.sock"
        return f"tcp://{self.config.tcp_host}:{self.config.tcp_base_port + names.index(actor)}"

    def bind_address(self, actor: str) -> str:
        """tcp binds on all interfaces of the configured host; others bind what they connect to."""
        if self.mode == "ipc":
            Path(self.config.ipc_dir).mkdir(parents=True, exist_ok=True)
        return self.address(actor)
