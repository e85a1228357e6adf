"""Coalescing streamed pieces into fewer chunks.

A model streams a piece per token; each piece relayed alone costs a message through the worker,
the session and the glasses bridge, and glasses redraw no faster than a few dozen times a second
anyway. So the first piece goes out at once (time to first display is what the user feels) and
later pieces go out together, at most one chunk per `interval_s`. A piece held back leaves with
the next piece past the interval or at the end of the generation, whichever comes first; with a
steady token stream that is within one token gap.
"""
from __future__ import annotations

from typing import Callable


class ChunkCoalescer:
    def __init__(self, interval_s: float, clock: Callable[[], float]):
        self.interval_s = interval_s
        self.clock = clock
        self._held: list[str] = []
        self._last_sent = -float("inf")

    def add(self, piece: str) -> str:
        """The text to send now ('' to hold it back for now)."""
        self._held.append(piece)
        now = self.clock()
        if now - self._last_sent < self.interval_s:
            return ""
        self._last_sent = now
        return self.flush()

    def flush(self) -> str:
        """Everything held back (at the end of the generation)."""
        text = "".join(self._held)
        self._held.clear()
        return text
