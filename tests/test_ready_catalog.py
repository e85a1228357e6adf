"""Issue 51, finding 16: when `run.py status` says the runtime is ready, a session's catalog holds
every MCP toolset that can start - the model is never told "toolset notes does not exist" in the
first seconds after a start."""
import sys

import anyio

import protocol as p
from core.config import load_config
from test_process_mode import REPO, served  # noqa: F401 - served is a fixture


def slow_notes(delay_s: float) -> str:
    """A server that takes `delay_s` before it lists its tools (the sleep is the behaviour under
    test: a slow start), and one that cannot start."""
    return f"""
[mcp.servers.notes]
command = ["sh", "-c", "sleep {delay_s:g}; exec {sys.executable} {REPO / 'tests' / 'mcp_notes_server.py'}"]
env = {{ NOTES_DIR = "var/notes" }}
timeout_s = {delay_s + 10:g}

[mcp.servers.ghost]
command = ["no-such-mcp-server-binary"]
"""


def _catalog(config) -> p.Catalog:
    """The catalog a session gets (what the session actor fetches at its start and on a change)."""
    from actors.base import Endpoint

    async def ask() -> p.Catalog:
        client = Endpoint(load_config(str(config), env={}), name="test")
        async with client.running():
            return await client.ask("toolsets", p.CatalogRequest(), timeout=5)

    return anyio.run(ask, backend="trio")


def _names(catalog: p.Catalog) -> list[str]:
    return [spec.name for spec in catalog.toolsets]


def test_when_serve_is_ready_the_catalog_holds_every_mcp_toolset_that_can_start(served):
    config, _ = served(extra=slow_notes(2))  # returns as soon as status says every actor is alive
    names = _names(_catalog(config))
    assert "notes" in names, names
    assert "ghost" not in names  # one that cannot start does not hold the runtime back


def test_a_toolset_still_starting_is_said_to_be_starting_not_missing(served):
    from harness import poll

    config, _ = served(extra=slow_notes(10) + "\n[mcp]\nstart_wait_s = 0.0\n")  # ready without waiting for it
    first = _catalog(config)
    assert "notes" in first.starting and "notes" not in _names(first)
    later = poll(lambda: (c := _catalog(config)) and "notes" in _names(c) and c)
    assert later.starting == [], "listed, or (ghost) failed: neither is starting"


def test_the_model_is_told_a_starting_toolset_is_starting():
    from core.toolsets import ToolsetRegistry

    registry = ToolsetRegistry([], starting=["notes"])
    assert registry.unknown_toolset_text("notes") == ("toolset notes is still starting (its server has not listed "
                                                      "its tools yet); it will be available in a moment: try again shortly")
    assert registry.unknown_tool_text("notes_add") == registry.unknown_toolset_text("notes")
    assert registry.unknown_toolset_text("lab").startswith("toolset lab does not exist")
