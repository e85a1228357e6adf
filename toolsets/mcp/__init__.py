"""MCP servers as toolsets: each `[mcp.servers.NAME]` of the config is the toolset NAME.

    [mcp.servers.notes]
    command = ["python", "notes_server.py"]   # stdio; or url = "http://127.0.0.1:8931/mcp"
    env = { NOTES_DIR = "var/notes" }
    timeout_s = 10.0
    long_running = ["notes_export"]
    enabled = true

The toolset executor hosts one `McpServer` per entry (toolsets.mcp.server); its tools are named
`NAME_<tool>`, shown only while the toolset is active, like any toolset's.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

log = logging.getLogger("porfiry.mcp")
_NAME = re.compile(r"[a-z][a-z0-9]*")


def servers(config, taken: Iterable[str], on_change: Callable[[], None]) -> list:
    """One McpServer per configured server whose name is usable; a refused one is logged."""
    from toolsets.mcp.server import McpServer

    taken = set(taken)
    hosted = []
    for name, cfg in config.mcp.servers.items():
        refused = ""
        if not _NAME.fullmatch(name):
            refused = "a toolset name is lower-case letters and digits, no '_'"
        elif name in taken:
            refused = "a toolset of that name exists already"
        elif bool(cfg.command) == bool(cfg.url):
            refused = "give either command (stdio) or url (streamable HTTP)"
        if refused:
            log.error("mcp server %r refused: %s", name, refused)
        taken.add(name)
        hosted.append(McpServer(name, cfg, config.mcp, config.path, on_change, refused=refused))
    return hosted
