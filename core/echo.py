"""Replies that only repeat what the model was just shown, or refuse what a tool just did.

A small model sometimes "answers" with the user's own words ("Который час?") or with the
prompt's state part ("Active toolsets: notes …"): text that tells the user nothing. The session
does not show such a reply as the answer; it asks the model once more with a notice (measured
with `run.py eval`).
"""
from __future__ import annotations

import re

from core.prompt import ACTIVE_HEADER
from core.skills_notice import SKILLS_HOWTO

ECHO_NOTICE = ("Your last reply only repeated {what}. Answer the user's request now, in plain text, "
               "using the results above.")
# Qwen's canned refusals, which it also gives right after a call that worked ("play «…» sent to
# the phone" -> "I'm sorry, but I can't assist with that."); asked again once, the local model
# said what the call did (run.py eval, followup-pause-en)
CANNED_REFUSALS = ("I'm sorry, but I can't assist", "I'm sorry, but I cannot assist",
                   "I'm sorry, but I don't have enough information")
REFUSAL_NOTICE = ("Your last reply refused, but the tool call above worked. Tell the user its result now, in "
                  "plain text, in {language}.")
_LABEL = re.compile(r"^\[[^\]]*\]\s*")
_NOT_WORD = re.compile(r"[\W_]+")


def _words(text: str) -> str:
    return _NOT_WORD.sub(" ", text).strip().casefold()


def refused(reply: str) -> bool:
    """A canned refusal instead of an answer (see CANNED_REFUSALS)."""
    return reply.strip().startswith(CANNED_REFUSALS)


def echoed(reply: str, said: str) -> str:
    """What `reply` merely repeats ("the user's words", "the tool list"), or "" for a real reply.
    `said`: the user's last message as recorded (its "[User said]" label is ignored)."""
    text = reply.strip()
    if text.startswith((ACTIVE_HEADER.strip(), SKILLS_HOWTO.split("(")[0].strip())):
        return "the tool list"
    words = _words(text)
    if words and words == _words(_LABEL.sub("", said.strip())):
        return "the user's words"
    return ""
