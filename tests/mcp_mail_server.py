"""A real MCP server (stdio) for seed 003's experiment 4-4: a test mailbox's calendar and actions.
Every action is appended to the file named by MAIL_LOG, so the test sees what the agent did."""
import os
import pathlib

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("mail", instructions="The user's mailbox: calendar, drafts, flags, archive.")
BUSY = {"2026-12-08 15:00"}  # the calendar's one meeting


def _log(line: str) -> None:
    with pathlib.Path(os.environ["MAIL_LOG"]).open("a", encoding="utf-8") as log:
        log.write(line + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def calendar(when: str) -> str:
    """Whether the user's calendar is free at WHEN (YYYY-MM-DD HH:MM)."""
    return f"busy at {when}: a meeting" if when.strip() in BUSY else f"free at {when}"


@server.tool()
def draft(mail_id: str, text: str) -> str:
    """Save a draft reply to mail MAIL_ID (not sent)."""
    _log(f"draft {mail_id}: {text}")
    return f"draft for {mail_id} saved"


@server.tool()
def flag(mail_id: str, priority: str) -> str:
    """Flag mail MAIL_ID with a priority (high, normal)."""
    _log(f"flag {mail_id}: {priority}")
    return f"{mail_id} flagged {priority}"


@server.tool()
def archive(mail_id: str) -> str:
    """Archive mail MAIL_ID."""
    _log(f"archive {mail_id}")
    return f"{mail_id} archived"


if __name__ == "__main__":
    server.run()
