"""A warning that can repeat without end (an MCP server re-listed every 10 s with the same
thousands of bad tools) is logged once per interval per key; the next line it is allowed says
how many like it were held back, so the count is never lost and the log stays readable."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class _Slot:
    last: float
    held: int = 0


class RateLimitedLog:
    """`log(key, level, msg, *args)`: at most one line per `interval_s` for each key."""

    def __init__(self, logger: logging.Logger, interval_s: float, *, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 1024):
        self.logger = logger
        self.interval_s = interval_s
        self.clock = clock
        self.max_keys = max_keys  # keys are few (one per server); a bound all the same
        self._slots: dict[str, _Slot] = {}

    def log(self, key: str, level: int, msg: str, *args: object) -> bool:
        """Log the line unless one of this key was logged less than `interval_s` ago; True if logged."""
        now = self.clock()
        slot = self._slots.get(key)
        if slot is not None and now - slot.last < self.interval_s:
            slot.held += 1
            return False
        held = slot.held if slot is not None else 0
        if held:
            msg += " (%d more like this in the last %.0f s not logged)"
            args = (*args, held, now - slot.last)
        if slot is None and len(self._slots) >= self.max_keys:
            self._slots.pop(next(iter(self._slots)))
        self._slots[key] = _Slot(last=now)
        self.logger.log(level, msg, *args)
        return True

    def warning(self, key: str, msg: str, *args: object) -> bool:
        return self.log(key, logging.WARNING, msg, *args)
