"""MediaExecutor ("media"): the media toolset's executor actor.

The media catalog (its index, its searches, `media_play` through the phone) runs in an actor of
its own, so in ipc mode it is a process of its own: a crash there is restarted alone and leaves
the calls of every other toolset (the ToolsetSupervisor's MCP servers and others) untouched.
It is one more `ToolsetExecutor`: the same call table, cancel, timeouts, stale calls and result
caps as every executor. The ToolsetSupervisor keeps the catalog and reports its state; the
session sends `media_*` ToolInvoke here (`actors.topology.executor_of`).
"""
from __future__ import annotations

from actors.toolsets import ToolsetExecutor


class MediaExecutor(ToolsetExecutor):
    name = "media"
