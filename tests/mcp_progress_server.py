"""A real MCP server (stdio) whose one tool reports `notifications/progress` while it works, each
step when the test creates its gate files."""
import pathlib

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("jobs", instructions="Long jobs that report progress.")


@server.tool()
async def migrate(steps: int, gate: str, ctx: Context) -> str:
    """Migrate the photo library; reports progress (once `GATE.start` exists), ends once `GATE` exists."""
    while not pathlib.Path(gate + ".start").exists():
        await anyio.sleep(0.05)
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"copied batch {step}")
        await anyio.sleep(0.05)
    while not pathlib.Path(gate).exists():
        await anyio.sleep(0.05)
    return f"migrated {steps} batches"


if __name__ == "__main__":
    server.run()
