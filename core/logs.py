"""Structured log lines: `time level logger key=value ...`, to stderr. PORFIRY_LOG_LEVEL sets the level.

A log line is one line, whatever a message's arguments hold: a session id, a webhook's sender or a
model's words may carry a line break or a terminal escape (`ESC[2J`), which would forge a line of
their own or drive the operator's terminal. `printable` escapes every control character (C0, DEL,
C1) and every line break Unicode knows as `\\xNN`/`\\uNNNN`; a traceback's own lines are kept."""
import logging
import os
import re

# C0 and C1 controls, DEL, and the Unicode line/paragraph separators (core.fence.LINE_BREAKS' others are C0/C1)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str, keep: str = "") -> str:
    """`text` with every control character escaped (`\\n`, `\\x1b`, `\\u2028`), those in `keep`
    excepted: safe to print on a terminal and to write as one log line."""
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else _escaped(m.group()), text)


def _escaped(char: str) -> str:
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or ascii(char)[1:-1]


class OneLineFormatter(logging.Formatter):
    """The message escaped (`printable`); the exception's traceback, if any, as logging writes it."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))


def setup_logging(level: str | None = None) -> None:
    level = (level or os.environ.get("PORFIRY_LOG_LEVEL", "INFO")).upper()
    logging.basicConfig(level=getattr(logging, level, logging.INFO))
    for handler in logging.getLogger().handlers:
        handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
