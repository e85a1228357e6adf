"""Failures a restart cannot fix (a corrupt database, a database another runtime holds, a bad
config value): the process says so in one line and exits with EXIT_PERMANENT, and the supervisor
stops the system instead of restarting the process in a loop (actors/supervisor.py)."""
from __future__ import annotations

EXIT_PERMANENT = 2  # "bad configuration or storage: do not restart"


class PermanentFailure(Exception):
    """The message is the one line an operator reads: what (the file, the key) and why."""


def permanent_cause(exc: BaseException) -> PermanentFailure | None:
    """The PermanentFailure inside `exc` (itself, or one wrapped by task groups), else None."""
    if isinstance(exc, PermanentFailure):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = permanent_cause(inner)
            if found is not None:
                return found
    return None
