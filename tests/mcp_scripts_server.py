"""A real MCP server (stdio) that runs analysis scripts, as seed 003's experiment 4-5 (4) has three:
each call of `run` works until the test says it is done, reporting `notifications/progress` in
percent whenever the test moves it on (SCRIPTS_DIR/<script>.progress holds the percent, and
SCRIPTS_DIR/<script>.done ends it). The test is the clock: nothing here depends on time."""
import os
import pathlib

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("scripts", instructions="Analysis scripts that run for a while and report their progress.")


@server.tool()
async def run(script: str, ctx: Context) -> str:
    """Run an analysis script (its name) until it finishes; reports its progress in percent."""
    folder = pathlib.Path(os.environ["SCRIPTS_DIR"])
    (folder / f"{script}.started").write_text("started")
    reported = -1
    while not (folder / f"{script}.done").exists():
        progress = folder / f"{script}.progress"
        percent = int(progress.read_text() or 0) if progress.exists() else 0
        if percent != reported:
            await ctx.report_progress(percent, 100, f"{script} analysing")
            reported = percent
        await anyio.sleep(0.02)  # another process's files: nothing else to wait on
    return f"script {script}: analysis finished, report: {script}-report.txt"


@server.tool()
async def logs(script: str) -> str:
    """The last lines a script printed."""
    return f"{script}: analysing…"


if __name__ == "__main__":
    server.run()
