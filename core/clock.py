"""Injectable time. Production reads `time.time`; tests drive a `ManualClock`."""
from __future__ import annotations

import time
from typing import Callable


class ManualClock:
    """A clock the test moves. Call it like `time.time`; `advance()` also wakes whoever sleeps
    on it (the SessionActor's timer wheel registers itself with `on_change`)."""

    def __init__(self, start: float | None = None):
        self.now = time.time() if start is None else start
        self._listeners: list[Callable[[], None]] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for listener in list(self._listeners):
            listener()

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)
