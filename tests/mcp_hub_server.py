"""A real MCP server (the SDK's `MCPServer`, stdio) with the 120 tools of evals/discovery/hub_tools.tsv
(issue 53: a server too big to show whole). Each tool answers `<tool>: <its arguments>`, so a test
sees the call arrived with what the model gave it.

    python tests/mcp_hub_server.py
"""
import inspect
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from evals.discovery import HUB_SUMMARY, hub_rows  # noqa: E402 - the catalog is data the eval reads too

server = MCPServer("hub", instructions=f"Tools of many services: {HUB_SUMMARY.split(': ', 1)[1]}.")


def make_tool(name: str, args: list[tuple[str, bool]]):
    def tool(**kwargs: str) -> str:
        given = "; ".join(f"{key}={value}" for key, value in kwargs.items() if value)
        return f"{name}: {given}"
    tool.__signature__ = inspect.Signature([
        inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=str,
                          default=inspect.Parameter.empty if required else "") for arg, required in args])
    tool.__name__ = name
    return tool


for tool_name, arguments, description in hub_rows():
    server.add_tool(make_tool(tool_name, arguments), name=tool_name, description=description)


if __name__ == "__main__":
    server.run()
