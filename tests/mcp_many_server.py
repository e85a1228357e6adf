"""A real MCP server on the SDK's low-level `Server` (stdio) that lists `MANY_TOOLS` tools (default
10,000), named t0, t1, …, each taking an optional `text` and answering `tN <text>` (issue 53: a
server far bigger than any prompt). The low-level API because `MCPServer` takes a minute to
register 10,000 tools; the listing is the same protocol.

    MANY_TOOLS=10000 python tests/mcp_many_server.py
"""
import os

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

COUNT = int(os.environ.get("MANY_TOOLS", "10000"))
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
READ_ONLY = types.ToolAnnotations(read_only_hint=True)  # a lookup: no request guard stands between a test and its call
TOOLS = [types.Tool(name=f"t{n}", description=f"The tool number {n}.", input_schema=SCHEMA, annotations=READ_ONLY)
         for n in range(COUNT)]


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params) -> types.CallToolResult:
    text = f"{params.name} {(params.arguments or {}).get('text', '')}".strip()
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("many", instructions="Very many numbered tools.", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
