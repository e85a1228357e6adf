"""A real MCP server (stdio) in a domain no built-in toolset has: flights and the weather. Its
requests ("find a cheap flight to Paris") are the model's, never the fast path's (issue 50)."""
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("travel", instructions="Flights and the weather for a trip.")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def flights(destination: str) -> str:
    """Find flights to a city, the cheapest first."""
    return f"flights to {destination}: AF1234 at 07:10, 89 EUR; SU2450 at 12:40, 120 EUR"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def weather(city: str) -> str:
    """The weather forecast for a city."""
    return f"{city}: +18, light rain"


if __name__ == "__main__":
    server.run()
