"""What the user hears of a turn nobody asked for (issue 52): a channel message, a monitor, a
late result woke the session, and the turn decides. Its final reply is shown (or, the glasses
off, kept as a note) once, unless the turn already reached the user with `notify_user` (the
reply would say it twice: "Готово: пользователь уведомлён." under the notice) or ended with
`notify_nothing|reason` ("handled, nothing for the user"): then the reply is recorded in the
history and the journal, with the reason in the log, and nothing is shown or kept.

A turn with the user's own words in it always shows its answer: they asked.
"""
from __future__ import annotations

from collections.abc import Iterable

from protocol.tools import FAILED_KINDS

SILENT_TOOL = "notify_nothing"
NOTIFY_TOOL = "notify_user"
_FAILED = FAILED_KINDS | {"cancelled", "placeholder"}


def quiet_reason(said: str, results: Iterable[tuple[str, str, str]]) -> str:
    """Why this turn's final reply is not for the user ("" when it is). `said`: the user's words
    in the turn; `results`: (tool, result, outcome kind) of the turn's calls."""
    if said.strip():
        return ""
    for tool, result, kind in results:
        if kind in _FAILED:
            continue
        if tool == SILENT_TOOL:
            return "handled silently: " + result.split(": ", 1)[-1]
        if tool == NOTIFY_TOOL:
            return "the user was notified"
    return ""


def silent_end(tool: str, kind: str) -> bool:
    """Whether the call just made ends the turn with nothing for the user."""
    return tool == SILENT_TOOL and kind not in _FAILED
