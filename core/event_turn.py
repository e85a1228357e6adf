"""What the user hears of a turn nobody asked for (issue 52): a channel message, a monitor, a
late result woke the session, and the turn decides. Its final reply is shown (or, the glasses
off, kept as a note) once, unless the turn already reached the user through a tool that notifies
(`action="notify"`: the reply would say it twice, "Готово: пользователь уведомлён." under the
notice) or ended with the tool that serves `event_silent` ("handled, nothing for the user", with
a reason): then the reply is recorded in the history and the journal, with the reason in the
log, and nothing is shown or kept. Which tools those are, their toolset declares
(protocol.ToolSpec); this module names none.

A turn with the user's own words in it always shows its answer: they asked.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from protocol.tools import FAILED_KINDS, ToolSpec

_FAILED = FAILED_KINDS | {"cancelled", "placeholder"}
SpecOf = Callable[[str], ToolSpec | None]  # a tool's declaration by its name (ToolsetRegistry.spec)


def quiet_reason(said: str, results: Iterable[tuple[str, str, str]], spec_of: SpecOf) -> str:
    """Why this turn's final reply is not for the user ("" when it is). `said`: the user's words
    in the turn; `results`: (tool, result, outcome kind) of the turn's calls."""
    if said.strip():
        return ""
    for tool, result, kind in results:
        spec = spec_of(tool)
        if kind in _FAILED or spec is None:
            continue
        if spec.serves == "event_silent":
            return "handled silently: " + result.split(": ", 1)[-1]
        if spec.action == "notify":
            return "the user was notified"
    return ""


def silent_end(tool: str, kind: str, spec_of: SpecOf) -> bool:
    """Whether the call just made ends the turn with nothing for the user."""
    spec = spec_of(tool)
    return spec is not None and spec.serves == "event_silent" and kind not in _FAILED
