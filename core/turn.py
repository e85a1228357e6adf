"""What one turn of a conversation remembers from step to step, and what a step may raise
when the model cannot answer; shared by the conversation's loop (core/conversation.py) and its
reflex steps (core/reflex_steps.py)."""
from __future__ import annotations

import dataclasses
import functools
import re


class ModelUnavailable(Exception):
    pass


class GenerationLost(ModelUnavailable):
    """The model's worker died while it answered: what it had shown is wiped and the step is
    asked again, once, of its successor."""


# the user's own lines of a recorded batch: "[User said] …", "[Unprocessed event 1/2] User said: …"
_USER_LINE = re.compile(r"(?m)^(?:\[Unprocessed event \d+/\d+\] )?\[?User[^\]:\n]*[\]:]\s*(.*)$")


@functools.lru_cache(maxsize=256)  # every step and every guarded call of a turn reads its messages again
def user_lines(content: str) -> tuple[str, ...]:
    return tuple(_USER_LINE.findall(content))


@dataclasses.dataclass
class TurnState:
    """What one turn's steps remember from step to step."""
    turn_id: str
    start: int  # where the turn begins in the trajectory
    notice: str = ""  # the answer to an invisible call: shown to the next request only, never stored
    repeated: str = ""  # the tool whose result the last step brought (not offered again right away)
    echo_retried: bool = False
    lost_once: bool = False  # a generation lost with the LLM worker was asked again (GenerationLost)
    recipe_tools: list[str] = dataclasses.field(default_factory=list)  # tools the skills read in this turn name
    read_this_turn: set[str] = dataclasses.field(default_factory=set)  # skills read in this turn (not offered again in it)
    recipe: str = ""  # the recipe skill (not a toolset's own) this turn read and follows
    acted: set[str] = dataclasses.field(default_factory=set)  # kinds of action the calls of this turn made (core.intent)
    toggled: int = 0  # enable_toolset/disable_toolset calls this turn; after a disable, no more (a loop: h19)
    turned_off: bool = False
    recipe_retried: bool = False  # a bare "OK" after a recipe read, none of its calls made, was asked again once
    claim_retried: bool = False  # a reply that claimed an action nobody made was asked again once
    withheld: set[str] = dataclasses.field(default_factory=set)  # tools not offered in this turn (core.reflex)
    remark: bool = False  # words that ask for nothing, and the frame found no command in them: a plain answer
    routed_to: str = ""  # the toolset whose request the frame read the words as (the only one the model may turn on)
    parts: list[str] = dataclasses.field(default_factory=list)  # a request of several tasks, each its own tools (core.discovery.part_tools)
    parts_told: set[str] = dataclasses.field(default_factory=set)  # parts the model was told were left (once each)
