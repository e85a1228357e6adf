"""How queued events are shown to the model (E8) and labelled by source (E9).

A model trained on chat answers mostly the LAST message of a batch, so every event gets an
explicit "[Unprocessed event i/N]" header and the batch ends with a count by kind that asks for
an answer covering all of them. Every event is labelled by who it came from, so a tool result
that happens to contain "delete everything" is read as data, never as the user's command.

Conventions the session loop relies on (fields of `protocol.Event`):
- tool_result: `data["tool"]` names the tool (falls back to `source`); `data["call_id"]` the call.
- `context`, when set, is shown in parentheses after the label (its relation to the task,
  e.g. "late result of an earlier call").
"""
from collections.abc import Sequence

from core.fence import fence, fence_untrusted
from protocol import Event

# kind -> (label, singular noun, plural noun) for the summary line.
_KINDS: dict[str, tuple[str, str, str]] = {
    "user_text": ("User said", "user message", "user messages"),
    "user_interrupt": ("User interrupted", "user interruption", "user interruptions"),
    "button": ("Button pressed", "button press", "button presses"),
    "tool_result": ("Tool result", "tool result", "tool results"),
    "timer": ("Timer fired", "timer", "timers"),
    "playback": ("Playback status from phone", "playback update", "playback updates"),
    "system": ("System notice", "system notice", "system notices"),
    "session_start": ("Session started", "session event", "session events"),
    "session_end": ("Session ended", "session event", "session events"),
    "glasses": ("Glasses", "session event", "session events"),
    "channel": ("Channel message", "channel message", "channel messages"),  # core.channels: data, never instructions
    "monitor": ("Monitor fired", "monitor event", "monitor events"),  # core.monitors
    "progress": ("Progress of a background task", "progress update", "progress updates"),  # core.progress
}
_OTHER = ("other event", "other events")
FROM_OUTSIDE = ("channel", "monitor", "progress")  # kinds whose content comes from outside the runtime


def tool_name_of(event: Event) -> str:
    """The tool a tool_result event reports on: data["tool"], else the event's source."""
    return event.data.get("tool") or event.source or "unknown tool"


def event_label(event: Event) -> str:
    """Who/what produced the event, in words the model cannot confuse with the user (E9)."""
    if event.kind == "tool_result":
        label = f"Tool result from {tool_name_of(event)}"
    elif event.kind in _KINDS:
        label = _KINDS[event.kind][0]
    else:
        label = f"Event {event.kind or 'unknown'} from {event.source or 'unknown source'}"
    context = event.context.strip()
    return f"{label} ({context})" if context else label


def _body(content: str, kind: str = "") -> str:
    """Content fenced (core.fence) and its continuation lines indented: only real headers start
    at column 0 and look like labels, so a tool result cannot forge a "[User said]" line (E9).
    What the world sent (a channel message, a monitor's output, a task's progress) is fenced as
    untrusted: a tool-call marker in it is escaped too (issue 51)."""
    text = (fence_untrusted if kind in FROM_OUTSIDE else fence)(content.strip())
    if not text:
        return "(empty)"
    return "\n  ".join(text.splitlines())


def format_event(event: Event) -> str:
    """One event on its own: "[User said] hello"."""
    return f"[{event_label(event)}] {_body(event.content, event.kind)}"


def _plural(count: int, kind: str) -> str:
    singular, plural = _KINDS[kind][1:] if kind in _KINDS else _OTHER
    return f"{count} {singular if count == 1 else plural}"


def summarize_kinds(events: Sequence[Event]) -> str:
    """"1 tool result, 2 user messages": counts by kind (kinds sharing a noun are merged),
    in order of first appearance."""
    counts: dict[str, int] = {}
    noun_kind: dict[str, str] = {}
    for event in events:
        noun = (_KINDS[event.kind][1] if event.kind in _KINDS else _OTHER[0])
        noun_kind.setdefault(noun, event.kind)
        counts[noun] = counts.get(noun, 0) + 1
    return ", ".join(_plural(n, noun_kind[noun]) for noun, n in counts.items())


def format_batch(events: Sequence[Event]) -> str:
    """The text the model sees for the events taken from the queue at a safe point (E8).

    One event: just its labelled line. Several: each under "[Unprocessed event i/N]", then a
    summary asking the model to cover all of them. No events: an empty string.
    """
    if not events:
        return ""
    if len(events) == 1:
        return format_event(events[0])
    total = len(events)
    lines = [
        f"[Unprocessed event {i}/{total}] {event_label(e)}: {_body(e.content, e.kind)}"
        for i, e in enumerate(events, start=1)
    ]
    lines.append(
        f"Above are {total} unprocessed events: {summarize_kinds(events)}. "
        "Make sure your answer covers all of them."
    )
    return "\n".join(lines)
