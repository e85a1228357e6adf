"""The channels toolset's fast path (issue 50): a watch set or ended by the session itself ("let
me know when Anya writes on telegram", "stop watching for Dave"), through the tools that serve
"watch_set", "watch_list" and "watch_end" (core.fastpath), worded by this folder's responses
(intents.yaml). Each step returns None to leave the turn to the model.
"""
from __future__ import annotations

import re

from core.fastpath import FastPath, Intent, last_data
from core.local_intents import Say
from core.reflex import CHANNELS, FUNCTION_WORDS, near_word, norm_words
from core.turn import TurnState
from protocol.results import ToolData, WatchEnded, Watching, WatchesListed, WatchRef
from toolsets.channels.phrasing import channel_said

# the user's words about themselves, said back to them: "when Anya writes to me" -> "to you"
_TO_YOU_RU = {"мне": "вам", "меня": "вас", "мой": "ваш", "моя": "ваша", "мою": "вашу", "мое": "ваше", "моё": "ваше",
              "мои": "ваши"}


_TO_YOU_EN = {"me": "you", "my": "your", "i": "you", "i'm": "you're", "mine": "yours", "myself": "yourself"}


def watch_answer(say: Say, intent: Intent) -> str | None:
    """"Хорошо, скажу, когда вам напишет Анна." - the user's condition, said back to them."""
    swaps = _TO_YOU_RU if intent.russian else _TO_YOU_EN
    condition = re.sub(r"[^\W\d_]+(?:'[a-z]+)?", lambda w: swaps.get(w.group(0).casefold(), w.group(0)), intent.text)
    return say("watch_set", condition=condition)


def watch_to_end(subject: str, listed: ToolData | None, named_only: bool = False) -> WatchRef | None:
    """The watch `subject` names among those the watches' list showed (its payload): the only one, or
    the only one sharing a word with it; None when not plain. `named_only`: the one it names, even
    when there is one ("drop the pasta one" ends no watch for Mike)."""
    watches = listed.watches if isinstance(listed, WatchesListed) else []
    if len(watches) == 1 and not named_only:
        return watches[0]
    channel = next((name for name, pattern in CHANNELS if pattern.search(" " + norm_words(subject))), "")
    if channel:  # "перестань следить за почтой": the watches of that channel
        of_channel = [watch for watch in watches if watch.channel == channel]
        return of_channel[0] if len(of_channel) == 1 else None
    words = [w for w in norm_words(subject).split() if len(w) > 2 and w not in FUNCTION_WORDS]
    named = [watch for watch in watches
             if any(near_word(w, x) or w == x for w in words for x in norm_words(f"{watch.channel} {watch.what}").split())]
    return named[0] if len(named) == 1 else None


def unwatch_answer(say, ended: WatchRef | None) -> str | None:
    what = ended.what.strip() if ended is not None else ""
    return say("watch_ended", what=what) if what else say("watch_ended_plain")


async def watch(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    if intent.action == "move":
        return await _moved(fast, turn, intent)
    what = " ".join(intent.subject.split())
    result = await fast.data(turn, fast.tool("watch_set"), f"{intent.channel}; {what}")
    return watch_answer(fast.speaker(intent.russian), intent) if isinstance(result, Watching) and not result.already else None


async def _moved(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    """"а, не, они ж в телеге пишут. перекинь на телегу": the watch the turn before set, set again
    on the one app the words name (the new one first: if it cannot be set, the old one stays), then
    the old one ended; "switch it to that" names the one app a remark before it did ("they moved the
    chat to Telegram, …"). No such watch, no app or the same one: the model's."""
    last = last_data(fast.results_before(turn))
    old = last.watch if isinstance(last, Watching) else None
    if old is None:
        return None
    named = [name for name, pattern in CHANNELS if pattern.search(" " + intent.subject)] or [
        name for name, pattern in CHANNELS if name != old.channel and pattern.search(" " + norm_words(fast.turn_words(turn)))]
    if len(named) != 1 or named[0] == old.channel:
        return None
    moved = await fast.data(turn, fast.tool("watch_set"), f"{named[0]}; {old.what}")
    if not isinstance(moved, Watching) or moved.already:
        return None
    if not isinstance(await fast.data(turn, fast.tool("watch_end"), old.id), WatchEnded):
        return None
    where = channel_said(named[0], intent.russian) or named[0]
    return fast.speaker(intent.russian)("watch_moved", where=where, what=old.what)


def watch_talked_about(results: list[tuple[str, ToolData | None]]) -> WatchRef | None:
    """The watch the turn before set, or the only one it listed: "эту слежку убери" right after;
    None when that turn was about something else (a monitor, the tasks: "this watch" is theirs)."""
    last = last_data(results)
    if isinstance(last, Watching):
        return last.watch
    return last.watches[0] if isinstance(last, WatchesListed) and len(last.watches) == 1 else None


async def unwatch(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    """"stop watching for Dave": the one watch the words name ended; "this watch": the one the turn
    before was about; not plain which: the model."""
    if intent.reference is not None and intent.reference.last:
        watch = watch_talked_about(fast.results_before(turn))
    else:
        watch = watch_to_end(intent.subject, await fast.data(turn, fast.tool("watch_list"), ""), named_only=intent.found_only)
    if watch is None:
        return None
    ended = await fast.data(turn, fast.tool("watch_end"), watch.id)
    return unwatch_answer(fast.speaker(intent.russian), ended.watch) if isinstance(ended, WatchEnded) else None


STEPS = {"watch": watch, "unwatch": unwatch}
