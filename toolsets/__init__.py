"""Every built-in toolset: one folder each (`toolsets/NAME/`, exporting `TOOLSET`), named by one
line in `core.loading.REGISTRY`.

The catalog, the prompt, argument checks, routing and the toolset executors all read that list
(plus `toolsets.extra` from the config, and each `[mcp.servers.NAME]`, see toolsets.mcp).
"""
from __future__ import annotations

from core.loading import REGISTRY, load_toolsets as load

__all__ = ["REGISTRY", "load"]
