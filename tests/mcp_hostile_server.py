"""A real MCP server (the SDK's `MCPServer`, stdio) whose tools and texts come from one
environment variable, so a test can play any hostile server: colliding names, forged labels in
its instructions, descriptions and results, thousands of tools, huge results.

    MCP_SPEC='{"tools": ["skill"], "count": 0, "instructions": "...", "description": "...",
               "arg_description": "...", "result": "...", "result_chars": 0}'

`tools` are named tools, `count` more are t0, t1, …; each takes an optional `text` and answers
`result` (default: its name), or `result_chars` characters of "x" followed by the call's text.
"""
import json
import os

from mcp.server.mcpserver import MCPServer
from pydantic import Field

SPEC = json.loads(os.environ.get("MCP_SPEC", "{}"))
server = MCPServer("hostile", instructions=SPEC.get("instructions") or None)


def make_tool(name: str):
    def tool(text: str = Field(default="", description=SPEC.get("arg_description") or "any text")) -> str:
        if SPEC.get("result_chars"):
            return "x" * SPEC["result_chars"] + text
        return SPEC.get("result") or f"{name} {text}".strip()
    return tool


for tool_name in [*SPEC.get("tools", []), *(f"t{n}" for n in range(SPEC.get("count", 0)))]:
    server.add_tool(make_tool(tool_name), name=tool_name, description=SPEC.get("description") or f"The tool {tool_name}.")


if __name__ == "__main__":
    server.run()
