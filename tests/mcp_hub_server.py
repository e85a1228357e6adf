"""A real MCP server (the SDK's `MCPServer`, stdio) with the 120 tools of evals/discovery/hub_tools.tsv
(issue 53: a server too big to show whole). Each tool answers `<tool>: <its arguments>`, so a test
sees the call arrived with what the model gave it; a service's tools that take no id list two
(`found: arxiv-1, arxiv-2`) for its tools that take one.

    python tests/mcp_hub_server.py
"""
import inspect
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from evals.discovery import HUB_SUMMARY, hub_changes, hub_rows  # noqa: E402 - the catalog is data the eval reads too

server = MCPServer("hub", instructions=f"Tools of many services: {HUB_SUMMARY.split(': ', 1)[1]}.")


def make_tool(name: str, args: list[tuple[str, bool]], listed: str = ""):
    def tool(**kwargs: str) -> str:
        given = "; ".join(f"{key}={value}" for key, value in kwargs.items() if value)
        return f"{name}: {given}{listed}"
    tool.__signature__ = inspect.Signature([
        inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=str,
                          default=inspect.Parameter.empty if required else "") for arg, required in args])
    tool.__name__ = name
    return tool


def _takes_id(arguments: list[tuple[str, bool]]) -> bool:
    return any(arg == "id" or arg.endswith("_id") for arg, _required in arguments)


ROWS = hub_rows()
# a service whose tools take an id (arxiv_abstract|paper_id) has its other tools (arxiv_search) list
# two, as a real search would: the model may only name an id a result showed (core.intent.unshown_id)
WITH_IDS = {name.split("_")[0] for name, arguments, _description in ROWS if _takes_id(arguments)}
CHANGES = hub_changes()  # a lookup is marked read-only, as a well-kept server marks it; a change is not
for tool_name, arguments, description in ROWS:
    service = tool_name.split("_")[0]
    listed = f"; found: {service}-1, {service}-2" if service in WITH_IDS and not _takes_id(arguments) else ""
    server.add_tool(make_tool(tool_name, arguments, listed), name=tool_name, description=description,
                    annotations=ToolAnnotations(readOnlyHint=tool_name not in CHANGES))


if __name__ == "__main__":
    server.run()
