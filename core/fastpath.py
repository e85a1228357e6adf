"""The fast path's seam with the toolsets (issue 50): a plain request a toolset carries out for
the session itself, as Home Assistant's integrations carry out the intents they register.

The session (core.reflex_steps) recognises a request (core.reflex: its kind, e.g. "play", and
its words) and, for a kind no step of its own handles, calls the step the toolset record declares
for it (`core.toolsets.SessionToolset` / `ExecutorToolset`, `steps={"play": play}`). A step gets
a `FastPath`: the session's calls made through the ordinary guarded call path (recorded in the
history as the model's would be), lookups asked aside (nothing recorded), the history as read,
and the toolsets' responses; it returns the answer the user is shown, or None to leave the turn to
the model, which then reads whatever the step already found. A step names tools only through what
they serve (`FastPath.tool`), so a toolset with other names serves the same requests.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from protocol import CallOutcome, ChatMessage
from protocol.results import ToolData
from protocol.tools import Serves

if TYPE_CHECKING:
    from core.local_intents import Say
    from core.reflex import Intent
    from core.turn import TurnState


class FastPath(Protocol):
    """What a toolset's step may use of the session it runs in."""

    def tool(self, request: Serves) -> str:
        """The tool that serves `request` in this runtime's catalog; "" when none does."""

    async def call(self, turn: TurnState, tool: str, args: str) -> str | None:
        """One call, recorded as the model's would be; its result's text, or None unless it ran."""

    async def data(self, turn: TurnState, tool: str, args: str) -> ToolData | None:
        """The same call; its result's typed payload (protocol.results), or None."""

    async def aside(self, turn: TurnState, tool: str, args: str) -> CallOutcome:
        """A read-only call asked aside: nothing recorded, so the model never reads it."""

    async def others_could_serve(self) -> bool:
        """Whether a toolset beyond the built-in ones, or a user's skill, could serve a request."""

    async def ask_aside(self, turn: TurnState, messages: list[ChatMessage], max_tokens: int) -> str:
        """One short generation nobody sees; raises core.turn.ModelUnavailable."""

    def speaker(self, russian: bool) -> Say:
        """The toolsets' responses in the user's language (core.local_intents.LocalIntents.respond)."""

    def messages(self) -> Sequence[ChatMessage]:
        """The conversation's history as recorded, oldest first (read it, never change it)."""

    def data_at(self, index: int) -> ToolData | None:
        """The typed payload of the result at `index` of `messages()`, if it has one."""


Step = Callable[[FastPath, "TurnState", "Intent"], Awaitable["str | None"]]
