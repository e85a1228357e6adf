"""A real MCP server (stdio) whose one tool reports `notifications/progress` while it works, each
step when the test creates its gate files."""
import pathlib

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("jobs", instructions="Long jobs that report progress.")


async def _until_exists(path: pathlib.Path) -> None:
    """The test's gate: a file it creates (this server is another process: nothing else to wait on)."""
    while not path.exists():
        await anyio.sleep(0.05)


@server.tool()
async def migrate(steps: int, gate: str, ctx: Context) -> str:
    """Migrate the photo library; reports progress (once `GATE.start` exists), ends once `GATE` exists."""
    await _until_exists(pathlib.Path(gate + ".start"))
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"copied batch {step}")
        await anyio.sleep(0.05)  # a step of the job takes time: progress comes in over a while
    await _until_exists(pathlib.Path(gate))
    return f"migrated {steps} batches"


@server.tool()
async def count(seconds: float, every: float, ctx: Context) -> str:
    """Count for SECONDS, reporting progress every EVERY seconds (a script that prints as it goes)."""
    started = anyio.current_time()
    steps = 0
    while (elapsed := anyio.current_time() - started) < seconds:
        await anyio.sleep(min(every, seconds - elapsed))
        steps += 1
        await ctx.report_progress(min(100.0, 100 * (anyio.current_time() - started) / seconds), 100, f"step {steps}")
    return f"counted {steps} steps in {seconds:g} s"


@server.tool()
async def analyze(name: str, rate: float, ctx: Context, gate: str = "") -> str:
    """Analyse NAME at RATE percent a second, reporting progress as it goes (seed 003's analysis
    scripts); with GATE it ends only once that file exists."""
    started, percent = anyio.current_time(), 0.0
    while percent < 100:
        await anyio.sleep(0.2)
        percent = min(100.0, rate * (anyio.current_time() - started))
        await ctx.report_progress(round(percent), 100, f"analysis {name}")
    if gate:
        await _until_exists(pathlib.Path(gate))
    return f"analysis {name} done: 100%"


if __name__ == "__main__":
    server.run()
