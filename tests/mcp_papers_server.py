"""A real MCP server (stdio) for issue 53's made-up id: a paper search that lists ids, and an
abstract by id (`paperId`, as arXiv servers name it). Every abstract asked for is appended to
the file named by PAPERS_LOG, so a test sees whether a call reached the server at all.

    PAPERS_LOG=/tmp/papers.log python tests/mcp_papers_server.py
"""
import os
import pathlib

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("papers", instructions="Scientific papers: search, then read an abstract by its id.")
PAPERS = {"1706.03762": "Attention Is All You Need", "1810.04805": "BERT: Pre-training of Deep Bidirectional Transformers"}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def search(query: str) -> str:
    """Search papers by words of their title; each line: id, title."""
    words = query.lower().split()
    found = [f"{paper} {title}" for paper, title in PAPERS.items() if any(w in title.lower() for w in words)]
    return "\n".join(found) or "no paper matches"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def abstract(paperId: str) -> str:  # noqa: N803 - the server's own name, as arXiv servers spell it
    """The abstract of a paper, by its id."""
    with pathlib.Path(os.environ["PAPERS_LOG"]).open("a", encoding="utf-8") as log:
        log.write(paperId + "\n")
    return f"{paperId}: {PAPERS.get(paperId, 'no such paper')}: the abstract."


if __name__ == "__main__":
    server.run()
