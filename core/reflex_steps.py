"""The conversation's reflex steps: a plain request (core.reflex) carried out by the session
itself, and words no reflex knows put as one command by the frame (core.frame) first.

`ReflexSteps` is a part of `core.conversation.Conversation` kept in its own file: it reads the
conversation's history and timers and makes calls through its guarded call path (`_step_call`,
`_run_side_call`), and it answers a turn only from the results of those calls. Nothing here
runs without a Conversation around it.
"""
from __future__ import annotations

import datetime as dt
import functools
import itertools
import logging
import re
import zoneinfo
from collections.abc import Callable, Iterator, Sequence
from typing import get_args
from functools import partial

import msgspec

import protocol as p
from core import tracing
from core.lexicon import SENTENCE_END, alternation, digits_in_figures, fold, words
from core.fastpath import REQUEST_OF_KIND, Phrasing, Reference, last_data
from core.frame import FRAME_MAX_TOKENS, frame_messages, read_frame
from core.intent import (ActionKind, addressed_elsewhere, asks_ability, opens_an_order, remark, remark_or_wondered, requested, says_repeat, small_talk, takes_back,
                         words_offered_for)
from core.local_actions import DAY_SLOTS, LENGTH_SLOTS, reflex_intent
from core.local_intents import LocalIntents, LocalMatch, Say
from core.places import moment_there, place_name, zone_of
from core.reflex import (ANOTHER_DAY, Intent, corrected, followed, held_back, is_russian, names_a_place, names_a_skill, places_apart, put_right, recognise,
                         recognise_both, said_again_otherwise, says_not, second_thought, skill_named, tells_of_words,
                         without_polite_tail, word_put_right)
from core.reflex_answers import (day_answer, fired_timer, place_clock_answer, place_time_answer, reminder_in_russian,
                                 show_answer, tells_place_time, time_answer, time_there_answer)
from core.timers import Timer, dial_nearest
from core.timewords import amount_alone, amount_put_right, in_digits, whole_numbers_said
from core.toolcall import parse_reply
from core.toolsets import Bound, args_text
from core.turn import ModelUnavailable, TurnState, user_lines
from protocol.results import ClockRead, TextSent, TimerSet, ToolData, Watching
from protocol.tools import Serves

_log = logging.getLogger("porfiry.session")
# how many requests back a follow-up ("а какие ещё остались?") looks for the plain one it follows
# (the one just before may have been the model's: "всё, макароны сняла, убери таймер на макароны")
FOLLOW_UP_LOOKBACK = 3
PLACE_LOOKBACK = 4  # the user's requests looked back through for the place "their time" means
REMARK_PARTS_MAX = 4  # sentences and clauses request_among_remarks reads apart (each is one more match)
# commands said while the model works that are carried out at the next safe point (_step_queued_reflex):
# actions whose answer is their own; a question or a follow-up is the model's, with the earlier request
# the kinds of change the request guard knows (core.intent.requested): a frame's reading of one needs words that ask for it
_GUARDED_KINDS = frozenset(get_args(ActionKind)) - {"change"}
QUEUED_REFLEXES = frozenset({"play", "playback", "timer_set", "timer_cancel", "show"})
_POINTING = frozenset(fold(word) for word in words("requests", "pointing_words"))  # "that", "это": no message
_POINTING_PARTICLES = frozenset(fold(word) for word in words("requests", "pointing_particle_words"))  # "его тогда"
_PLACE_POINTING = frozenset(fold(word) for word in words("places", "pointing_words"))  # "туда", "that city"
_THING_NAMED = re.compile(r"^(?:(?:" + "|".join(map(re.escape, words("requests", "thing_determiners"))) + r")\s+)+")
_THING_IS = "|".join(map(re.escape, words("requests", "thing_is_words")))
FREE_TEXT_WORDS_MAX = 400  # words of a message whose free text is given back its punctuation as said
THING_NAME_WORDS_MAX = 5  # a thing's name shown by what was said of it; longer words are a text to show
QUEUED_DONE_NOTICE = ("The user's message said while you worked was already carried out: {answer} Go on with "
                      "the earlier request; in your answer, say this was done too.")


@functools.lru_cache(maxsize=1)
def builtin_local_intents() -> LocalIntents:
    """The built-in toolsets' local intents, loaded once per process (for callers with no config)."""
    from core.loading import intent_files

    return LocalIntents.load(intent_files())


def request_among_remarks(local: LocalIntents, said: str) -> LocalMatch | None:
    """A toolset's sentence said whole among remarks: "ugh, I keep forgetting things. set an
    alarm for tomorrow at 7, would you?", "разбуди меня завтра в 6:45, у меня поезд". One
    sentence or clause matches, and every other one is a remark that asks for nothing, tells of
    nobody's words and has no second thought ("no, I'm off", "wait, 15"); else None. The
    whole words are then read for a negation or a condition (core.reflex.held_back)."""
    parts = _clauses(said)
    for at in range(len(parts) - 1):  # a declared call and what it is, in the clause after it: "…, it's two fourteen"
        joined = [*parts[:at], f"{parts[at]}, {parts[at + 1]}", *parts[at + 2:]]
        match = local.match(joined[at])
        if match is not None and match.call is not None and len(joined) > 1 and _only_remarks_beside(joined, joined[at]) \
                and not _dictation_cut(match, joined[at], said, parts[at + 1]):
            return match
    matched = [(match, part) for part in parts for match in [local.match(part)] if match is not None]
    if len(matched) > 1 and len({(match.intent, repr(match.slots)) for match, _part in matched}) == 1:
        # one request said twice ("what can you monitor for me? like, which monitors are there?")
        first = parts.index(matched[0][1])  # the first saying kept, the others ("pause, pause, …": the same words) left out
        parts = [part for at, part in enumerate(parts) if at == first or part not in [said for _match, said in matched[1:]]]
        matched = matched[:1]
    if len(matched) == 1 and _only_remarks_beside(parts, matched[0][1]) \
            and not _dictation_cut(matched[0][0], matched[0][1], said, matched[0][1]):
        return matched[0][0]  # (never free text cut at a comma: "скинь … код: сто сорок семь, вызов, 228")
    sentences = _clauses(said, commas=False)  # "…, а очки уже почти сели. скинь мне на телефон списком: мука, яйца"
    whole = [(match, part) for part in sentences for match in [local.match(part)] if match is not None]
    if len(whole) == 1 and _only_remarks_beside(sentences, whole[0][1], told_before=True):
        return whole[0][0]  # (its free text runs to its sentence's end: "…. напоминай мне каждый день в девять про витамин Д")
    if whole:
        return None
    found = _clause_of_a_sentence(local, sentences) or _dictated_after_remarks(local, sentences or [said])
    if found is None and not matched and _DASH.search(said):  # "22 pounds to kilos — the gimbal case": a dash ends a clause too
        return request_among_remarks(local, _DASH.sub(", ", said))
    return found


_DASH = re.compile(r"\s+[—–]\s+")


def whole_or_among_remarks(local: LocalIntents, said: str) -> tuple[LocalMatch | None, LocalMatch | None]:
    """(the words matched whole, the request among remarks): the second read only when the first
    is None, or a free slot naming something (not a message dictated) took the remarks before its
    sentence ("всё, они в вотсап скинули. почту можешь больше не караулить" names the mail, as the
    request among remarks reads it: the whole match is then given up)."""
    match = local.match(said)
    if match is None:
        return None, request_among_remarks(local, said)
    if not match.wildcard or match.call is not None and match.call.free_text or len(_clauses(said, commas=False)) < 2:
        return match, None
    aside = request_among_remarks(local, said)
    if aside is None or aside.intent != match.intent:
        return match, None
    free = [name for name, value in match.slots.items() if isinstance(value, str) and name in aside.slots]
    took_more = free and all(fold(str(match.slots[name])).endswith(" " + fold(str(aside.slots[name]))) for name in free)
    return (None, aside) if took_more else (match, None)  # ("… at seven a.m. to walk the dog": "a.m." ends no sentence)


def _dictation_cut(match: LocalMatch, text: str, said: str, last_part: str) -> bool:
    """Whether `match` read `text` as a request whose free text, dictated after a colon, goes on past
    a comma after `last_part` in `said` ("код: сто сорок семь, вызов, 228"): reading it would cut the
    text. A clause after a value said with no colon is a remark ("send my locker number to my phone,
    it's two fourteen, I always forget it")."""
    at = said.find(last_part)
    return match.ends_free and ":" in text and at >= 0 and said[at + len(last_part):].lstrip().startswith(",")


DICTATION_REMARKS_MAX = 8  # clauses of remarks a dictated request may follow in its sentence (one match each)


def _dictated_after_remarks(local: LocalIntents, sentences: list[str]) -> LocalMatch | None:
    """A request that dictates a text after a colon, said after remarks in its own sentence:
    "пока я не забыл — а забываю я, как выяснилось, всё, что не записано, — отправь мне на
    телефон: кардамон, сливки и лимон. Это для соуса" sends what follows the colon to the end of
    its sentence (its commas are the text's); no clause before it asks for anything, every other
    sentence is a remark."""
    for sentence in sentences:
        starts = [m.end() for m in re.finditer(r"(?:,|\s[—–])\s*", sentence.split(":", 1)[0])]
        for start in starts[:DICTATION_REMARKS_MAX]:
            rest = sentence[start:].strip(" —–")
            if ":" not in rest or not opens_an_order(rest):
                continue
            match = local.match(rest)
            if match is None or match.call is None:
                continue
            # the asides before it ask for nothing ("как выяснилось", "что не записано": no remark's form, no request)
            before = [part for part in re.split(r",\s*|\s*[—–]\s*", sentence[:start]) if part.strip(" ,—–")]
            asides = all("?" not in part and local.match(part) is None and recognise(part) is None for part in before)
            others_remarks = len(sentences) == 1 or _only_remarks_beside(sentences, sentence, told_before=True)
            if not (asides and others_remarks):
                return None
            return _with_text_as_said(match, rest.split(":", 1)[1].strip(" ."))
    return None


def _with_text_as_said(match: LocalMatch, dictated: str) -> LocalMatch:
    """The match with its one free slot ending in the words after the colon as said, their commas
    kept ("код домофона у Лёши: сто сорок семь, вызов, 228"); as matched when it ends otherwise."""
    free = [name for name, value in match.slots.items() if isinstance(value, str)]
    if len(free) != 1:
        return match
    said, read = fold(dictated), fold(str(match.slots[free[0]])).split()
    tail = re.findall(r"[^\W_]+", said)
    if not tail or read[-len(tail):] != tail:
        return match
    label = " ".join(str(match.slots[free[0]]).split()[:-len(tail)])
    return msgspec.structs.replace(match, slots={**match.slots, free[0]: f"{label}: {dictated}" if label else dictated})


def _clause_of_a_sentence(local: LocalIntents, sentences: list[str]) -> LocalMatch | None:
    """A toolset's sentence said as one clause of one of several sentences, the clauses and
    sentences beside it remarks: "всё, контракт подписал, я теперь в Дубае на полгода. так что
    давай Дубай сделаем домашним городом, а то ты мне всё по Москве считаешь" (more clauses in
    all than request_among_remarks reads apart)."""
    for sentence in sentences:
        clauses = [piece for clause in _clauses(sentence) for piece in _at_a_colon_before_an_order(clause)]
        found = [(match, clause) for clause in clauses for match in [local.match(clause)] if match is not None]
        if len(found) == 1 and found[0][0].call is not None and (not found[0][0].ends_free or found[0][1] == clauses[-1]) \
                and _only_remarks_beside(clauses, found[0][1]) and _only_remarks_beside(sentences, sentence):
            # (free text at its end may go on past the comma - "скинь мне на телефон код: 147, вызов, 228" - unless
            # its clause ends the sentence)
            return found[0][0]
    return None


def _at_a_colon_before_an_order(clause: str) -> list[str]:
    """"пока помню: скинь мне на телефон — …": a remark, then the request after its colon; a colon
    before other words is the request's own ("скинь на телефон: код 147")."""
    head, colon, rest = clause.partition(":")
    return [head.strip(), rest.strip()] if colon and head.strip() and opens_an_order(rest) else [clause]


def intent_among_remarks(said: str, phrasings: Sequence[Phrasing] | None = None) -> Intent | None:
    """The same for a request the reflex reads in one clause, where no toolset's sentence
    matches it whole: "хотя знаешь, убери вообще все таймеры, сам послежу"; held back, as a
    request said alone, by a negation or a condition in the whole words."""
    shown = _shown_after_remarks(said, phrasings)
    if shown is not None:
        return None if held_back(said, "show") else shown
    found = _request_among(_clauses(said), phrasings)
    if found is None:
        # whole sentences when the clauses are too many to read apart, or one of them tells someone's words
        # ("Oh, blast. Forecast says gales off the Black Sea. Scrap that alarm."): one before may tell them
        found = _request_among(_clauses(said, commas=False), phrasings, told_before=True)
    if found is None:
        found = _request_among(_spoken_parts(said, phrasings), phrasings)
    if found is None:
        return None
    intent, request, parts = found
    if intent.kind not in _WHOLE_IN_ONE_CLAUSE or intent.kind == "play" and intent.reference is not None \
            or held_back(said, intent.kind):
        return None  # "the second Back to the Future, the one with the hoverboard. can you put it on?"
    if intent.kind == "timer_set" and not requested("timer_set", said):
        return None  # "…, будильник на четыре стоял, а я его во сне вырубила": a clause told, as the guards read it
    if intent.subject and _POINTING & set(fold(intent.subject).split()):
        return None  # "во, её и запускай": a title pointed at, not named
    asked_numbers = set(re.findall(r"\d+", in_digits(request)))
    if intent.kind.startswith("timer") and any(set(re.findall(r"\d+", in_digits(part))) - asked_numbers
                                               for part in parts if part != request):
        return None  # "one timer for 25 minutes for the laundry and, um, another for an hour": two timers
    if intent.kind == "timer_set" and not intent.every and any(says_repeat(part) for part in parts if part != request):
        return None  # "set a reminder for 8 pm, every day": its repeat said in the next clause
    return intent


def _request_among(parts: list[str], phrasings: Sequence[Phrasing] | None, *,
                   told_before: bool = False) -> tuple[Intent, str, list[str]] | None:
    """The one part of `parts` the reflex reads as a request, with that part and the parts, when
    every other part is a remark (`_only_remarks_beside`); else None."""
    read = [(intent, part) for part in parts for intent in [recognise(part, phrasings)] if intent is not None]
    if len(read) != 1 or not _only_remarks_beside(parts, read[0][1], told_before=told_before):
        return None
    return read[0][0], read[0][1], parts


def _shown_after_remarks(said: str, phrasings: Sequence[Phrasing] | None) -> Intent | None:
    """"у нас гости, уже третий спрашивает пароль. выведи на очки текст: пароль дача25": a text
    dictated after a colon, its request opening a sentence that runs to the end of the words (its
    commas and sentences are the text's), every sentence before it a remark."""
    starts = [m.end() for m in re.finditer(r"[.!?]+\s+", said)]
    for start in starts[:REMARK_PARTS_MAX]:
        rest = said[start:]
        intent = recognise(rest, phrasings) if ":" in rest else None
        if intent is not None and intent.kind == "show":
            before = [part.strip() for part in re.split(r"(?<=[.!?])\s+", said[:start]) if part.strip()]
            return intent if all(remark(part) and not tells_of_words(part) for part in before) else None
    return None


# the kinds whose request one clause says whole; not a text to show or a watch's words (what to
# show or watch for may be in the remarks: "put the wifi password up. it's sunflower42"), nor a
# reading that points back ("а в Дубае?"), nor a play of "it" ("… can you put it on?"): what it
# points at may be in the remarks. A question about "it" reads the title shown last ("cool. is it
# long? I've only got about two hours before bed"): at worst a look-up of another title
_WHOLE_IN_ONE_CLAUSE = ("time_now", "time_elsewhere", "timer_set", "timer_list", "timer_cancel", "timer_change", "unwatch",
                        "play", "playback", "search", "details")


_POLITE_ALONE = re.compile(r"(?:" + alternation("requests", "polite_tail_patterns") + "|"
                           + alternation("requests", "filler_clause_patterns") + r")", re.IGNORECASE)


def _amount_then_remarks(words: str) -> str:
    """"and 12? my brother says he curls that lol": the amount said alone in the first sentence,
    remarks after it; "" otherwise."""
    first, *rest = re.split(r"(?<=[.!?])\s+", words.strip())
    amount = amount_alone(first) if rest and first.rstrip().endswith("?") else ""
    return amount if amount and all(remark(sentence) for sentence in rest) else ""


def _clauses(said: str, *, commas: bool = True) -> list[str]:
    """Its sentences and comma clauses (`commas`; else its sentences alone), when there are 2 to
    REMARK_PARTS_MAX of them; else []."""
    ends = SENTENCE_END + r"|,\s*" if commas else SENTENCE_END
    parts = [part.strip(" ,.!?") for part in re.split(ends, without_polite_tail(said))]
    parts = [part for part in parts if part and not _POLITE_ALONE.fullmatch(part)]  # "переведи мне, пожалуйста, …"
    return parts if 2 <= len(parts) <= REMARK_PARTS_MAX else []


SPOKEN_WORDS_MAX = 24  # a longer utterance with no punctuation is the model's to read
SPOKEN_SPAN_TRIES = 30  # readings one such utterance may cost, looking for a request inside it


def _spoken_parts(said: str, phrasings: Sequence[Phrasing] | None) -> list[str]:
    """Speech written with no punctuation ("всё глаза слипаются выключай кино досмотрю уже
    завтра"): the words before a request, the request, the words after it, where the request
    opens with an order (core.intent.opens_an_order) after the first word and is the longest run
    of words from there the reflex reads; [] when there is none, or punctuation says the clauses."""
    words = said.split()
    if re.search(r"[,.!?;:—]", said) or not 3 <= len(words) <= SPOKEN_WORDS_MAX:
        return []
    tries = 0
    for start in range(1, len(words) - 1):
        if not opens_an_order(" ".join(words[start:])):
            continue
        for end in range(len(words), start + 1, -1):
            tries += 1
            if tries > SPOKEN_SPAN_TRIES:
                return []
            if (intent := recognise(" ".join(words[start:end]), phrasings)) is not None:
                if addressed_elsewhere(" ".join(words[:start]) + ","):
                    return []  # "маш выключи там телик": a person called by name, with no comma written
                if intent.kind.startswith("time") and names_a_place(" ".join(words[:start] + words[end:])):
                    return []  # "а во владике щас сколько времени": the place is in the other words
                return [part for part in (" ".join(words[:start]), " ".join(words[start:end]), " ".join(words[end:])) if part]
    return []


def _only_remarks(said: str) -> bool:
    """No clause of the words opens as a request: "my wife sent the list to my phone this morning,
    milk eggs and bread" (where "glasses are dying so, get it onto my phone, …" has one)."""
    return all(remark(part) for part in _CLAUSE_ENDS.split(said) if part.strip())


_CLAUSE_ENDS = re.compile(r"[,.!?;:—]+|\s+(?:" + alternation("requests", "consequence_joint_words") + r")\s+", re.I)


def _only_remarks_beside(parts: list[str], request: str, *, told_before: bool = False) -> bool:
    """Every clause but the request's asks for nothing and tells of nobody's words, and none
    after it takes anything back ("set it for 10, no wait, 15"); one before it may ("хотя
    знаешь, убери все таймеры": the change of mind is the request). `told_before`: the parts are
    whole sentences, and one before the request's may tell someone's words ("педиатр велела
    давать витамин Д каждое утро. напоминай мне каждый день в девять"): the request is the
    user's own sentence, not inside theirs."""
    at = parts.index(request)
    return len(parts) > 1 and all(remark(part) and (told_before and index < at or not tells_of_words(part))
                                  and (index < at or not second_thought(part))
                                  for index, part in enumerate(parts) if index != at)


def recognised(match: LocalMatch | None, said: str, *, typed_only: bool = False,
               phrasings: Sequence[Phrasing] | None = None) -> Intent | None:
    """What a plain request asks: a sentence a toolset declared, matched whole with typed slots
    (`match`, core.local_intents), first; else the reflex's reading of the words (core.reflex,
    with the toolsets' `phrasings`), which knows references ("включи его") a template does not.
    `typed_only`: the match alone."""
    first = match is not None and (not match.wildcard or match.read_first)
    intent = _unheld(said, match) if first else None
    if intent is not None or typed_only:
        return intent
    read = recognise(said, phrasings)
    if read is not None and read.kind == "timer_set" and not read.every and says_repeat(said):
        return None  # "remind me Tuesdays and Thursdays at 7": the reflex knows no such repeat; never a one-shot for it
    return read


def loosely_recognised(match: LocalMatch | None, said: str) -> Intent | None:
    """A declared sentence whose slot took free text, when no closer reading took the words and
    a word of the template's lists says what that text is: "play the tv show Breaking Bad" is
    a title. Free text alone is no request: "поставь, пожалуйста, таймер, чтобы …" is no film,
    "I'll call you back in 5 minutes" no timer."""
    return _unheld(said, match) if match is not None and match.wildcard and match.kind_named else None


def aside_or_reflex(aside: LocalMatch, read: Intent | None, said: str,
                     phrasings: Sequence[Phrasing] | None = None) -> Intent | None:
    """The request among remarks, or the reflex's reading of the whole words (`read`): the reflex's
    first, as it keeps a timer's text, unless the sentence took no free text and says another kind
    ("…. make it Mondays and Thursdays instead" is no title put on instead)."""
    if read is not None and aside.wildcard:
        return read
    own = recognised(aside, said, typed_only=True, phrasings=phrasings)
    if own is not None and own.kind == "timer_set" and not own.every and says_repeat(said):
        return None  # "Alarm for quarter past six. Weekdays only.": its repeat said in a sentence of its own, the model's
    return own if read is None or own is not None and own.kind != read.kind else read


def _unheld(said: str, match: LocalMatch) -> Intent | None:
    """A match's request, unless the words hold it back (a negation, a condition, two requests:
    core.reflex.held_back) - a template matches words, not what the user means by them."""
    intent = reflex_intent(match)
    day_read = any(slot in match.slots for slot in DAY_SLOTS)
    length_read = any(slot in match.slots for slot in LENGTH_SLOTS)
    return None if intent is None or held_back(said, intent.kind, day_read=day_read, length_read=length_read) else intent


def _undoing(before: list[tuple[str, ToolData | None]], *, russian: bool) -> Intent | None:
    """The request that takes back what the turn before set: its timer cancelled, its watch ended;
    None when it set neither (a search, a question: nothing to undo)."""
    last = last_data(before)
    if isinstance(last, TimerSet):
        return Intent(kind="timer_cancel", russian=russian, last_timer=True)
    if isinstance(last, Watching):
        return Intent(kind="unwatch", russian=russian, reference=Reference(last=True))
    return None


_ENDS = ("timer_cancel", "unwatch")  # what "drop the X one" may end: a timer named X, or a watch on X


def _other_end(tried: Intent, said: str, phrasings: Sequence[Phrasing]) -> Intent | None:
    """An end of the other kind a toolset reads in the same words, when the end tried named
    nothing: "you can drop the email one" is no timer's; the channels read it as the mail's watch."""
    if tried.kind not in _ENDS:
        return None
    for phrasing in phrasings:
        other = recognise(said, [phrasing])
        if other is not None and other.kind in _ENDS and other.kind != tried.kind:
            return other
    return None


def _sentence_instead(match: LocalMatch | None, tried: Intent, said: str) -> Intent | None:
    """A toolset's sentence that took free text, of another kind than the reflex's reading the
    session tried and found not plain: "drop the Mike one" names no timer; it is the watch's. A
    playback control is never a title ("поставь фильм на паузу, кошка орёт" with nothing playing
    searched the catalog for "на паузу кошка опять орёт")."""
    if match is None or not match.wildcard or match.read_first or tried.kind == "playback":
        return None
    other = _unheld(said, match)
    return other if other is not None and other.kind != tried.kind else None


def declared_call(match: LocalMatch | None, said: str) -> tuple[str, str] | None:
    """(tool, arguments) of a sentence whose toolset declared the call it makes ("convert 5
    miles to km": the converter's call with 5; mi; km), matched whole with typed slots (or free text
    the intent declares is the tool's own: a message) and held back by nothing; else None. A slot
    its call `refers` that still points back ("его", no place resolved: `with_referred`) is the model's."""
    if match is None or match.call is None or match.wildcard and not match.call.free_text or held_back(said, "search"):
        return None  # free text stands for a name only the model resolves, unless it is the message itself
    slots = slot_words(match)
    if any(_points_back(slots.get(slot, "")) for slot in match.call.refers):
        return None  # "сделай его домашним городом" with no place resolved
    if match.wildcard and all(_points_back(value) for name, value in slots.items() if isinstance(match.slots.get(name), str)):
        return None  # "send that to my phone": the message is what was said before (a `context`), or the model's
    if any(f"{{{name}}}" not in match.call.args and whole_numbers_said(str(value))
           for name, value in match.slots.items() if isinstance(value, str)):
        return None  # "шесть футов два дюйма в сантиметрах": words the call does not read hold a number (2 in), not its own
    try:
        return match.call.tool, match.call.args.format_map(slots)
    except (KeyError, ValueError, IndexError):  # a template naming a slot this sentence left empty
        return None


def free_text_as_said(match: LocalMatch | None, said: str) -> LocalMatch | None:
    """`match` with the free text its call takes as the user wrote it, commas and colons kept
    ("купить шкурку, зерно двести сорок, и пару струбцин": the matcher reads words only); as
    matched when its words are not found in a row in `said`."""
    if match is None or match.call is None or not match.call.free_text:
        return match
    tokens = [(found.start(), found.end(), fold(found.group())) for found in re.finditer(r"[^\W_]+", said)]
    if len(tokens) > FREE_TEXT_WORDS_MAX:
        return match  # (a message this long is sent as matched: its punctuation is not looked for)
    slots = dict(match.slots)
    for name, value in match.slots.items():
        words = re.findall(r"[^\W_]+", fold(value)) if isinstance(value, str) else []
        starts = [at for at in range(len(tokens) - len(words) + 1)  # (the first word checked first: a long message stays linear)
                  if words and tokens[at][2] == words[0] and [token[2] for token in tokens[at:at + len(words)]] == words]
        if starts:  # the last: the text is said after what asks for it
            slots[name] = said[tokens[starts[-1]][0]:tokens[starts[-1] + len(words) - 1][1]]
    return msgspec.structs.replace(match, slots=slots)


def with_referred(match: LocalMatch | None, refer: Callable[[str], str]) -> LocalMatch | None:
    """`match` with each slot its call `refers` that only points back ("то же самое", "it") put as
    what the conversation gives for it (the text the turn before sent, the place asked about), so
    the call and its answer both say it; None when one points back to nothing."""
    if match is None or match.call is None or not match.call.refers:
        return match
    slots = dict(match.slots)
    for slot, kind in match.call.refers.items():
        if slot not in slots or _points_back(str(slots[slot])):  # "send that to my phone": no slot, only "that"
            slots[slot] = refer(kind)
            if not slots[slot]:
                return None
    return msgspec.structs.replace(match, slots=slots)


def declared_answer(match: LocalMatch, result: str) -> str:
    """The answer a toolset declared for its call, worded from the slots and the tool's result;
    the result itself when the template names a slot this sentence left empty."""
    try:
        worded = match.call.answer.format_map({**slot_words(match), "result": result})
    except (KeyError, ValueError, IndexError):
        return result
    return re.sub(r"(?<=[.!?…])\.$", "", worded)  # a slot's own full stop before the template's: "… 454.2 l."


def _points_back(value: str) -> bool:
    """A slot's words that only point at something said before: "это", "it", "туда", "that city"."""
    said = fold(value).strip(" .,!?")
    if said in _POINTING or said in _PLACE_POINTING:
        return True
    kept = [word for word in re.findall(r"[^\W_]+", said) if word not in _POINTING_PARTICLES]
    return len(kept) == 1 and (kept[0] in _POINTING or kept[0] in _PLACE_POINTING)


def slot_words(match: LocalMatch) -> dict[str, str]:
    """A match's slots as words for a declared template: 5.0 is "5", 2.5 stays "2.5"; in a message
    the toolset sends as said, a code said digit by digit is in figures ("four seven one nine": 4719)."""
    free_text = match.call is not None and match.call.free_text
    return {name: f"{value:g}" if isinstance(value, float) else digits_in_figures(value) if free_text else value
            for name, value in match.slots.items()}


def _plain_request(said: str, phrasings: Sequence[Phrasing] | None = None) -> Intent | None:
    """A request as a reflex reads it, or its first sentence's when the rest is a remark ("Сколько
    сейчас в Дубае? Хочу коллеге написать": "а у нас тогда сколько?" then asks of here)."""
    sentences = [part for part in re.split(r"(?<=[.?!])\s+", said.strip()) if part.strip()]
    return recognise(said, phrasings) or (recognise(sentences[0], phrasings) if len(sentences) > 1 else None)


PUT_RIGHT_WORDS_MAX = 40  # a second thought that puts a value right is short; longer words are not read for one (a
                          # reading of 2,000 words took 4.5 s)
PLACE_WORDS_MAX = 3  # the longest run of words tried as a place's name ("los angeles", "нью-йорк")


def _and_another(intent: Intent, said: str, phrasings: Sequence[Phrasing]) -> tuple[Intent, ...] | None:
    """Two requests in one breath whose first is the one read ("stop it, I can't keep my eyes open.
    wake me in three hours" stopped the film and set no alarm): both, or None when the words hold
    one request."""
    two = recognise_both(said, phrasings)
    return two if two is not None and intent.kind in (asked.kind for asked in two) else None


def _place_opening(said: str) -> str:
    """The place the words open with ("Москве вечно я путаюсь с этой разницей": a free slot ran on
    past the sentence's end); "" when they open with none."""
    words = said.split()
    return next((" ".join(words[:length]) for length in range(1, min(PLACE_WORDS_MAX, len(words)) + 1)
                 if zone_of(" ".join(words[:length]))), "")


def _places_named(said: str) -> list[str]:
    """The places the words name, a zone once ("the London couple wants a call … their time": "London")."""
    words = re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", said)
    named: dict[str, str] = {}
    at = 0
    while at < len(words):
        runs = range(min(PLACE_WORDS_MAX, len(words) - at), 0, -1)
        found = next((length for length in runs if words[at][:1].isupper() and zone_of(" ".join(words[at:at + length]))), 0)
        if found:
            named.setdefault(zone_of(" ".join(words[at:at + found])) or "", " ".join(words[at:at + found]))
        at += found or 1
    return list(named.values())


def value_put_right(named: list[tuple[str, str]], args: dict) -> dict[str, str]:
    """The argument a second thought puts right by naming two values of one of the toolsets'
    lists (core.local_intents.LocalIntents.values_named), one the call was given and one it was
    not: "ой, не фунтов, а унций" after 120 lb were converted to kg -> {"from": "oz"}. {} when
    the words name no such pair, or more than one."""
    given = {str(value).casefold(): name for name, value in args.items()}
    changes = {}
    for listed in dict.fromkeys(name for name, _value in named):
        values = list(dict.fromkeys(value for name, value in named if name == listed))
        old = [value for value in values if value.casefold() in given]
        new = [value for value in values if value.casefold() not in given]
        if len(old) == 1 and len(new) == 1:
            changes[given[old[0].casefold()]] = new[0]
    return changes if len(changes) == 1 else {}


class ReflexSteps:
    """The reflex and frame steps of a Conversation (see the module's docstring)."""

    __slots__ = ()

    async def _step_reflex(self, turn: TurnState) -> bool:
        """A plain request (core.reflex) carried out by the session itself: its calls made and
        recorded as the model's would be, the answer worded from their results. True when the
        turn is answered; False when the model takes it, from whatever the reflex found."""
        said = self.trajectory.last()  # every turn asks: read the one message, copy no history
        if len(self.trajectory) - turn.start != 1 or said is None or said.role != "user":
            return False  # a batch, a late result: the model reads it
        fired = fired_timer(said.content)
        words = "\n".join(user_lines(said.content))
        if fired is not None:
            reminder = self._say("reminder_late" if fired.late else "reminder", reminder_in_russian(fired.text),
                                 text=fired.text)
            return reminder is not None and self._answered(turn, reminder, "timer")
        if not words:
            return False  # an event from the world (a channel, a monitor) is never a user request
        if addressed_elsewhere(words):
            return False  # "Маш, включи детям «Морозко»": said to someone in the room; the guards hold back any change
        if await self._amount_again(turn, words):
            return True  # "а пятьдесят пять?" after 65 inches were converted
        if await self._text_put_right(turn, words):
            return True  # "oops, it's room 241, not 214" after a text shown
        if (put_right_now := await self._put_right_in_one_breath(turn, words)) is not None:
            return put_right_now
        match, aside = whole_or_among_remarks(self.s.local_intents, words)
        declared = free_text_as_said(with_referred(match or aside, partial(self._referred, turn)), words)
        call = declared_call(declared, words)
        if call is None and match is None:  # "eight ounces of butter. how many grams is that?": slots from before
            declared = self.s.local_intents.match_in_context(words, remark=remark_or_wondered)
            call = declared_call(declared, words)
        if call is not None:  # a toolset's own sentence: its declared call, its declared answer
            return await self._declared_step(turn, declared, call)
        intent = recognised(match, words, phrasings=self.s.phrasings)
        if intent is not None and aside is not None and intent.kind == "timer_set" and ANOTHER_DAY.search(f" {fold(intent.text)} "):
            intent = None  # "remind me Tuesday at quarter past three to …": the sentence reads the day the reflex left in the text
        if aside is not None:
            intent = aside_or_reflex(aside, intent, words, self.s.phrasings)
        if intent is None and aside is None:  # "хотя знаешь, убери вообще все таймеры, сам послежу"
            intent = intent_among_remarks(words, self.s.phrasings)
        if intent is not None and intent.kind == "follow_up":  # "а в Дубае?": the request before, again
            intent = followed(intent, self._request_before(turn, back=FOLLOW_UP_LOOKBACK))
        both = recognise_both(words, self.s.phrasings) if intent is None else places_apart(intent) or _and_another(intent, words, self.s.phrasings)
        if intent is None and both is None and takes_back(words):  # "actually forget it, …": what was just set
            intent = _undoing(self.results_before(turn), russian=is_russian(words))
        if intent is None and both is None:
            if await self._reflex_skill(turn, said.content):
                return False  # the user's own skill: the model follows its recipe
            framed = loosely_recognised(match, words) or await self._framed(turn, words)
            if isinstance(framed, LocalMatch):  # the frame put the words as a toolset's own sentence
                call = declared_call(framed, words)
                return call is not None and await self._declared_step(turn, framed, call, guarded=True)
            if framed is None:
                return False
            intent = framed
        if await self._carry_out(turn, both or (intent,)):
            return True
        return both is None and await self._read_otherwise(turn, intent, match or aside, words)

    async def _put_right_in_one_breath(self, turn: TurnState, words: str) -> bool | None:
        """"wake me up at 6 tomorrow, no wait, make it 6:30": the request as put right, True when carried
        out, False when the model's; None when the words put nothing right in one breath (a "no" in a
        text dictated: "glasses: table twelve, nut allergy, no sesame, no pesto")."""
        halves = said_again_otherwise(words)
        read = partial(recognised, phrasings=self.s.phrasings)
        first = read(self.s.local_intents.match(halves[0]), halves[0]) if halves else None
        if first is None or first.kind == "show":
            return None
        intent = put_right(first, read(self.s.local_intents.match(halves[1]), halves[1]))
        return intent is not None and await self._carry_out(turn, (intent,))

    async def _read_otherwise(self, turn: TurnState, intent: Intent, declared: LocalMatch | None, words: str) -> bool:
        """A request read another way when the reading tried did nothing: "drop that one" with no
        timer talked about is the watch the turn before set or listed alone (the channels' step
        says whether it was one); a toolset's sentence that took free text, of another kind
        ("drop the Mike one" names no timer: the watch's)."""
        if intent.kind == "timer_cancel" and intent.last_timer:
            return await self._carry_out(turn, (Intent(kind="unwatch", russian=intent.russian, reference=Reference(last=True)),))
        instead = _sentence_instead(declared, intent, words) or _other_end(intent, words, self.s.phrasings)
        return instead is not None and await self._carry_out(turn, (instead,))

    async def _declared_step(self, turn: TurnState, declared: LocalMatch, call: tuple[str, str], *,
                             guarded: bool = False) -> bool:
        """A toolset's own sentence carried out: its declared call, its declared answer (`answer:
        ""`: the model words the result the history now holds). `guarded`: the sentence is the
        frame's reading, the model's, not the user's words: the call guards judge it first, as they
        judge the model's calls, and one they refuse leaves the turn to the model, unrecorded; a
        change needs words that ask for something, as the frame's own commands do (core.frame)."""
        spec = self.s.registry.spec(call[0])
        if spec is not None and not spec.read_only and asks_ability(spec.action or "change", self._turn_words(turn.start)):
            return False  # "can you send things to my phone, like, in general? I'm just curious" sent "things"
        if guarded:
            if spec is not None and not spec.read_only and _only_remarks(self._turn_words(turn.start)):
                return False  # "my wife sent the list to my phone this morning": a story asks for no change
            if (refusal := self._guard(*call, turn.start, ())) is not None:
                _log.info("session=%s frame's %s refused by the guards: %s", self.sid, call[0], refusal.kind)
                return False
        result = await self.call(turn, *call)
        if result is None or not declared.call.answer:
            return False
        return self._answered(turn, declared_answer(declared, result), declared.intent)

    async def _carry_out(self, turn: TurnState, requests: tuple[Intent, ...]) -> bool:
        """Each request carried out in turn, the answers said together (two requests in one
        breath); False when one is a user's skill's (the model reads its recipe) or not plain."""
        for asked in requests:
            if await self._names_a_skill(asked):
                return False  # the user's own skill, by its words: the model reads its recipe
        answers = [await self._carry_out_one(turn, asked) for asked in requests]
        return None not in answers and self._answered(turn, " ".join(answers), "+".join(a.kind for a in requests))

    async def _carry_out_one(self, turn: TurnState, intent: Intent) -> str | None:
        """One plain request carried out: by the session's own step for its kind (the clock,
        timers, watches: `_reflex_<kind>`), else by the step a toolset declares for it
        (core.fastpath); None when there is none, or it leaves the turn to the model."""
        own = getattr(self, f"_reflex_{intent.kind}", None)
        if own is not None:
            return await own(turn, intent)
        step = self.s.local_steps.get(intent.kind)
        return None if step is None else await step(self, turn, intent)

    # ---- what a toolset's step may use of the session (core.fastpath.FastPath) ----------------
    async def aside(self, turn: TurnState, tool: str, args: str) -> p.CallOutcome:
        return await self._run_side_call(turn.turn_id, tool, args)

    async def ask_aside(self, turn: TurnState, messages: list[p.ChatMessage], max_tokens: int) -> str:
        return await self._ask_quietly(turn.turn_id, messages, max_tokens)

    def messages(self) -> Sequence[p.ChatMessage]:
        return self.trajectory.messages()

    def data_at(self, index: int) -> ToolData | None:
        return self.trajectory.data_at(index)

    def turn_words(self, turn: TurnState) -> str:
        return self._turn_words(turn.start)

    def _referred(self, turn: TurnState, kind: str) -> str:
        """What a slot of `kind` points back to in this conversation (core.local_intents.REFERENCE_KINDS):
        the place the user last asked the time of, as a dictionary names it; the text the turn before
        put on the glasses or sent to the phone ("и на очки то же самое"); an "answer": that text, else
        the answer the turn before's lookup gave (shown on the glasses already: only elsewhere: "вот это
        мне на телефон скинь" after a conversion), or the reminder it set, as its time, date and text ("and
        send that to my phone as well": not the words that said it was set, which read as a claim); ""
        when none."""
        if kind in ("text", "answer"):
            results = self.results_before(turn)
            sent = [data.text for _name, data in results if isinstance(data, TextSent)]
            if sent or kind == "text":
                return sent[-1] if len(set(sent)) == 1 else ""  # two texts: which one is the model's to ask
            last = last_data(results)
            if isinstance(last, TimerSet):
                day = dt.datetime.fromtimestamp(last.due, self.s.tz).strftime("%d.%m")
                return f"{self._clock_time(last.due)} {day}: {last.text}"
            looked_up = any((spec := self.s.registry.spec(name)) is not None and spec.read_only for name, _data in results)
            return self._answer_before(turn) if looked_up else ""
        place = self.place_talked_about(turn) if kind == "place" else ""
        return place_name(place) or place

    def _answer_before(self, turn: TurnState) -> str:
        """The answer the turn before ended with (its last reply that is no call); "" when none."""
        for message in reversed(self.trajectory.messages()[:turn.start]):
            if message.role == "user" and user_lines(message.content):
                return ""
            if message.role == "assistant" and parse_reply(message.content).call is None and message.content.strip():
                return message.content.strip()
        return ""

    def place_talked_about(self, turn: TurnState) -> str:
        return next((request.subject for request in self._requests_before(turn, PLACE_LOOKBACK)  # "and in LA?" too
                     if request.kind == "time_elsewhere" or request.kind == "follow_up" and zone_of(request.subject)), "")

    def now(self) -> float:
        return self.s.clock()

    def timezone(self) -> dt.tzinfo:
        return self.s.tz

    def clock_time(self, epoch: float) -> str:
        return self._clock_time(epoch)

    def pending_timers(self) -> list[Timer]:
        return self.timers.pending()

    def _answered(self, turn: TurnState, answer: str, kinds: str) -> bool:
        """The turn's answer recorded and shown as its final display: the turn is over."""
        self.trajectory.record_assistant(answer)
        self.s.ports.send(self.sid, p.Display(turn_id=turn.turn_id, text=answer, final=True))
        _log.info("session=%s reflex %s answered without the model", self.sid, kinds)
        return True

    async def _step_queued_reflex(self, turn: TurnState, taken_at: int) -> None:
        """A plain command said while the model worked (a play, a pause, a timer, a text for the
        screen), taken into the turn at a safe point as the one new event: carried out here as at
        a turn's start, its calls recorded; the model, which goes on with the earlier request, is
        told it is done (a notice) and says so in its answer. Anything else is the model's."""
        said = self.trajectory.last()
        if len(self.trajectory) != taken_at + 1 or said is None or said.role != "user":
            return
        intent = recognise("\n".join(user_lines(said.content)), self.s.phrasings)
        if intent is None or intent.kind not in QUEUED_REFLEXES or await self._names_a_skill(intent):
            return
        answer = await self._carry_out_one(turn, intent)
        if answer:
            _log.info("session=%s reflex %s carried out a command queued into the turn", self.sid, intent.kind)
            self.s.ports.send(self.sid, p.Display(turn_id=turn.turn_id, text=answer, final=False))
            turn.notice = QUEUED_DONE_NOTICE.format(answer=answer)

    def results_before(self, turn: TurnState) -> list[tuple[str, ToolData | None]]:
        """(tool, result's payload) of the calls the turn before this one made, oldest first."""
        results = []
        messages = self.trajectory.messages()
        for index in range(turn.start - 1, -1, -1):
            message = messages[index]
            if message.role == "user" and user_lines(message.content):
                break
            if message.role == "tool":
                results.append((message.name or "", self.trajectory.data_at(index)))
        return results[::-1]

    async def _own_skills(self) -> bool:
        """Whether the user has skills of their own (not the built-in ones)."""
        return any(not e.builtin for e in (await self._skill_index()).entries)

    def names_another_toolsets_domain(self, words: str) -> bool:
        return any(spec.offered_for and words_offered_for(spec, words) for spec in self.s.registry.specs())

    async def others_could_serve(self) -> bool:
        """Whether anything beyond the fast path's own toolsets could serve a request: a toolset of
        an MCP server or of `toolsets.extra` (protocol.ToolsetSpec.origin) that the fast path does
        not itself call (a world clock it asks a city's time of is one of its own), or the user's
        own skills. Then words its own toolsets have nothing for ("find a cheap flight to Paris",
        "запусти эти три скрипта") are the model's, which sees them all: the fast path claims nothing."""
        registry = self.s.registry
        clock = self._place_clock()
        own = {registry.toolset_of(clock.name)} if clock is not None else set()
        return (any(registry.toolset(name).origin != "builtin" and name not in own for name in registry.toolset_names())
                or await self._own_skills())

    async def _names_a_skill(self, intent: Intent | None) -> bool:
        if intent is None or not intent.subject or intent.kind not in ("play", "search"):
            return False
        return names_a_skill(intent.subject, [(e.name, e.description) for e in (await self._skill_index()).entries
                                              if not e.builtin])

    async def _reflex_skill(self, turn: TurnState, recorded: str) -> bool:
        """Words that name one of the user's skills ("start my morning workout"): its recipe is read
        for the model first (a lookup, recorded as the model's read would be), so the model follows
        it instead of wandering through toolsets (the local model listed timers and tasks)."""
        entries = (await self._skill_index()).entries
        name = skill_named("\n".join(user_lines(recorded)), [e.name for e in entries if not e.builtin])
        if name is not None:
            await self.call(turn, "read_skill", name)
        return name is not None

    async def _framed(self, turn: TurnState, words: str) -> Intent | LocalMatch | None:
        """Words no reflex recognises, put by the model as one command of the loaded toolsets' list (core.frame)
        and taken only when every name and number in it is the user's: a reflex's intent, or a
        toolset's sentence that declares its call; None: the model's turn.
        Not asked when a toolset beyond the built-in ones or a user's skill could serve the words:
        the model, which sees them all, reads them anyway, and a question about the built-in
        commands first would cost the turn a model call more ("book a table for two tonight")."""
        if not (self.s.config.frame and self.s.model.frame) or not words.strip() or small_talk(words):
            return None
        if not self.s.local_intents.frame.commands or await self.others_could_serve():  # nothing to put them as
            return None
        earlier = next((m.content for m in reversed(self.trajectory.messages()[:turn.start]) if m.role == "user"), "")
        before = "\n".join(user_lines(earlier))
        said, words = words, in_digits(words)  # the model copies "20:45", it does not count it from "quarter to nine"
        try:
            reply = await self._ask_quietly(turn.turn_id, frame_messages(
                words, before[:300], nearest=self.s.config.frame_examples, spec=self.s.local_intents.frame))
        except ModelUnavailable:
            return None  # the model's own step says so, or works again
        frame = read_frame(reply, words, before[:300], self.s.phrasings, self.s.local_intents.frame, self.s.local_intents)
        turn.remark = frame.refused == "none" and remark(words)  # "я сегодня встал в семь": nothing to look up
        turn.routed_to = self._toolset_of(frame.routing)
        if frame.intent is not None and frame.intent.kind in _GUARDED_KINDS and not requested(frame.intent.kind, said):
            # h84: "сестра пишет: «включи мне „Бриллиантовую руку“» — вот смешная": the model put a quote as a play
            _log.info("session=%s frame's %s: the words ask for none", self.sid, frame.intent.kind)
            return None
        _log.info("session=%s frame %r -> %s", self.sid, frame.command, frame.intent.kind if frame.intent else
                  frame.declared.intent if frame.declared else f"the model ({frame.refused})")
        return frame.intent or frame.declared

    def _toolset_of(self, reading: Intent | LocalMatch | None) -> str:
        """The toolset whose tool a reading of the words calls ("": none, or the runtime's own)."""
        if isinstance(reading, LocalMatch):
            tool = reading.call.tool if reading.call is not None else ""
        else:
            tool = self.tool(REQUEST_OF_KIND.get(reading.kind, "")) if reading is not None else ""
        return self.s.registry.toolset_of(tool) or "" if tool else ""

    async def _ask_quietly(self, turn_id: str, messages: list[p.ChatMessage], max_tokens: int = FRAME_MAX_TOKENS) -> str:
        """One short generation nobody sees (no Display): counted and observed as a model call."""
        self._model_calls += 1
        text = ""
        with self.s.observer.model_call(self, turn_id, self._model_calls, messages, []) as observed, \
                tracing.tracer.model_call(self._model_calls) as traced:
            watching = traced.watching(observed)
            async with self.s.ports.generate(self.sid, messages, [], max_tokens) as pieces:
                async for piece in pieces:
                    watching.piece(piece)
                    text += piece
            watching.done(pieces)
        return text

    def tool(self, request: Serves) -> str:
        """The tool a toolset here declares for `request` (protocol.ToolSpec.serves); "": none, and
        the reflex that needs it leaves the turn to the model."""
        return self.s.registry.serving(request)

    async def call(self, turn: TurnState, tool: str, args: str) -> str | None:
        """One call of a reflex (`_reflex_outcome`): its result's text, or None unless it ran."""
        outcome = await self._reflex_outcome(turn, tool, args)
        return None if outcome is None else outcome.text

    async def data(self, turn: TurnState, tool: str, args: str) -> ToolData | None:
        """One call of a reflex (`_reflex_outcome`): its result's typed payload (protocol.results),
        or None unless it ran and its tool gave one."""
        outcome = await self._reflex_outcome(turn, tool, args)
        return None if outcome is None else outcome.data

    async def _amount_again(self, turn: TurnState, words: str) -> bool:
        """"а пятьдесят пять?", "and minus forty?" right after a conversion: the call the turn before
        made, again, with the amount said now in the argument a user's number fills
        (ToolSpec.said_number_args) of a lookup, answered with its result. False when the words say
        more than an amount, or the turn before made no such call. "ой, не двести тридцать, а двести
        десять": the amount a second thought puts right."""
        amount = amount_alone(words) or _amount_then_remarks(words)
        if not amount and not second_thought(words) and not says_not(words):
            return False  # most turns: no history read (this runs on every user turn)
        before = self._last_call_before(turn)
        spec = self.s.registry.spec(before.name) if before is not None else None
        # a lookup only: another amount said alone never repeats a change
        bound = self.s.registry.validate(spec.name, before.raw_args) \
            if spec is not None and spec.said_number_args and spec.read_only else None
        if not isinstance(bound, Bound):
            return False
        amount = amount or amount_put_right(words, str(bound.args[spec.said_number_args[0]]))
        changed = {spec.said_number_args[0]: amount} if amount else {}
        if (not amount or not amount_alone(words)) and len(words.split()) <= PUT_RIGHT_WORDS_MAX:
            # "не фунтов, а унций": a unit put right, its amount kept or not
            changed |= value_put_right(self.s.local_intents.values_named(words), bound.args)
        if not changed:
            return False
        args = args_text({**bound.args, **changed})
        outcome = await self._reflex_outcome(turn, spec.name, args)
        return outcome is not None and self._answered(turn, outcome.text.rstrip(" .") + ".", "amount_again")

    async def _text_put_right(self, turn: TurnState, words: str) -> bool:
        """"oops, it's room 241, not 214" right after a text was shown or sent: the same call again
        with the word the second thought names put right, when the text holds it once; answered as
        the turn before was, that word put right. False when the words say no such pair, or the
        turn before sent no text."""
        if not says_not(words) or len(words.split()) > PUT_RIGHT_WORDS_MAX:
            return False  # most turns: no history read
        pair = word_put_right(words)
        last = last_data(self.results_before(turn))
        before = self._last_call_before(turn) if pair is not None and isinstance(last, TextSent) else None
        if before is None:
            return False
        wrong, right = (re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])", re.IGNORECASE) for word in pair)
        if len(wrong.findall(last.text)) != 1 or len(wrong.findall(before.raw_args)) != 1 or right.search(last.text):
            return False
        outcome = await self._reflex_outcome(turn, before.name, wrong.sub(lambda _m: pair[1], before.raw_args, count=1))
        if outcome is None or not isinstance(outcome.data, TextSent):
            return False
        said = self._answer_before(turn)  # the answer that told of the text ("Отправил на телефон: …"), put right too
        answer = wrong.sub(lambda _m: pair[1], said, count=1) if len(wrong.findall(said)) == 1 else outcome.data.text
        return self._answered(turn, answer, "text_put_right")

    def _last_call_before(self, turn: TurnState):
        """The last call the turn before this one made (core.toolcall.ToolCall), or None."""
        for message in reversed(self.trajectory.messages()[:turn.start]):
            if message.role == "user" and user_lines(message.content):
                return None
            if message.role == "assistant" and (parsed := parse_reply(message.content)).call is not None:
                return parsed.call
        return None

    async def _reflex_outcome(self, turn: TurnState, tool: str, args: str) -> p.CallOutcome | None:
        """One call of a reflex through the ordinary call path (its toolset turned on first, as
        reading its skill would); its outcome, or None unless it ran (an "ok" outcome)."""
        if self.s.registry.spec(tool) is None:
            return None  # not in this runtime's catalog: the model answers
        toolset = self.s.registry.toolset_of(tool)
        if toolset is not None and toolset not in self.activity.active():
            enabled = self.activity.enable(toolset)
            self.s.observer.tool_finished(self, turn.turn_id, "", "enable_toolset", toolset, "invisible", enabled)
        parsed = parse_reply(f"TOOL_CALL: {tool}|{args}")
        if parsed.call is None:
            return None
        outcome = await self._step_call(turn, parsed, by_reflex=True)
        if outcome is not None and outcome.kind == "error" and self.s.registry.spec(tool).read_only:
            # a lookup that failed (its executor lost with the call): asked again once, as the
            # model would be told to; changing calls are not repeated here
            outcome = await self._step_call(turn, parse_reply(f"TOOL_CALL: {tool}|{args}"), by_reflex=True)
        return outcome if outcome is not None and outcome.kind == "ok" else None

    async def _reflex_repeat(self, turn: TurnState, intent: Intent) -> str | None:
        """"Eh? say that again", "чего? громче, не слышу": the answer the turn before ended with, again
        (none: the model's)."""
        return self._answer_before(turn) or None

    async def _reflex_time_now(self, turn: TurnState, intent: Intent) -> str | None:
        clock = await self.data(turn, "get_current_time", "")
        if not isinstance(clock, ClockRead):
            return None
        if intent.when:  # "а завтра какое число?": the date that many days from the user's today
            day = dt.datetime.fromtimestamp(self.s.clock(), self.s.tz) + dt.timedelta(days=int(intent.when))
            return day_answer(self.speaker(intent.russian), day, int(intent.when), intent.russian)
        return time_answer(self.speaker(intent.russian), dt.datetime.fromtimestamp(clock.at, self.s.tz), intent.russian)

    async def _reflex_time_elsewhere(self, turn: TurnState, intent: Intent) -> str | None:
        """Another place's time: the user's own clock (get_current_time) is withheld this turn and
        a read-only tool that tells places' time is asked about the place - by its IANA zone
        when the tool takes a zone (mcp-server-time) and the place is known (core.places). The
        answer is worded from a moment the result names; else the model words it (or, when the
        tool wanted another form of place, asks again)."""
        tool = self._place_clock()
        if tool is None:  # no world clock configured: the built-in clock of the place, when the place is known
            clock = await self.data(turn, "get_current_time", intent.subject) if zone_of(intent.subject) else None
            return place_clock_answer(self.speaker(intent.russian), intent, clock) if isinstance(clock, ClockRead) and clock.place else None
        turn.withheld.add("get_current_time")
        zone = zone_of(intent.subject) if re.search(r"zone|tz", tool.args[0].name) else None
        # a city tool gets the city as a dictionary names it: "дубае" is "дубай"
        result = await self.call(turn, tool.name, zone or place_name(intent.subject) or intent.subject)
        answer = None if result is None else place_time_answer(self.speaker(intent.russian), intent, result)
        if answer is None and zone_of(intent.subject):  # the world clock does not know the place; the built-in clock does
            clock = await self.data(turn, "get_current_time", intent.subject)
            return place_clock_answer(self.speaker(intent.russian), intent, clock) if isinstance(clock, ClockRead) and clock.place else None
        return answer

    async def _reflex_time_there(self, turn: TurnState, intent: Intent) -> str | None:
        """"what's 9 pm London time for me?", "сколько будет у меня, когда в Лондоне девять вечера?":
        the next moment the place's clock (get_current_time for the place) reads the time said, on
        the user's clock; a time said with no half of the day, the next such reading of a 12-hour
        dial there. The place said, or the one place the words name ("the London couple … nine
        o'clock their time"), else the place the conversation asked the time of ("у них стендап в час дня
        по-ихнему" after New York's time); None when there is none, or more than one: the model's."""
        if intent.text and not self._on_my_clock(_place_opening(intent.text)):
            return None  # "…, это во сколько по Дубаю?": asked on a third place's clock, the model's
        # a place named on the user's own clock ("… по их времени. это во сколько по Москве?") is here, not there
        named = [place for place in _places_named(self.turn_words(turn)) if not self._on_my_clock(place)] \
            if not intent.subject else []
        place = intent.subject or (named[0] if len(named) == 1 else "" if named else self.place_talked_about(turn))
        clock = await self.data(turn, "get_current_time", place) if place and zone_of(place) else None
        if not isinstance(clock, ClockRead) or not clock.place:
            return None
        zone = zoneinfo.ZoneInfo(clock.place)
        when = dial_nearest(intent.when, clock.at, zone) if intent.dial else intent.when
        moment = moment_there(when, clock.place, clock.at)
        if moment is None:
            return None
        here, today = dt.datetime.fromtimestamp(moment, self.s.tz), dt.datetime.fromtimestamp(clock.at, self.s.tz).date()
        return time_there_answer(self.speaker(intent.russian), place, dt.datetime.fromtimestamp(moment, zone), here, today,
                                 intent.russian)

    def _on_my_clock(self, place: str) -> bool:
        """Whether a place is in the user's own time zone (their city named: "по Москве"); Istanbul,
        on the same offset as Moscow today, is another place (the user's zone by its name, where
        it has one; else by its offset now)."""
        zone, mine = zone_of(place), getattr(self.s.tz, "key", None)
        if zone is None or mine is not None:
            return zone is not None and zone == mine
        now = dt.datetime.fromtimestamp(self.now(), dt.timezone.utc)
        return zoneinfo.ZoneInfo(zone).utcoffset(now) == now.astimezone(self.s.tz).utcoffset()

    def _place_clock(self):
        """The read-only tool that tells a place's time (its one required argument the place)."""
        registry = self.s.registry
        tools = [t for name in registry.toolset_names() for t in registry.toolset(name).tools
                 if t.read_only and t.args and tells_place_time(t.summary)]
        return min(tools, key=lambda t: sum(arg.required for arg in t.args), default=None)

    def _say(self, response: str, russian: bool, /, **slots: object) -> str | None:
        """A toolset's words for what the session did itself (core.local_intents.respond); None
        when none words it: the model answers."""
        return self.s.local_intents.respond(response, "ru" if russian else "en", **slots)

    def speaker(self, russian: bool) -> Say:
        return self.s.local_intents.speaker("ru" if russian else "en")

    def _said_before(self, turn: TurnState, name: str) -> str | None:
        """"wifi password: bassline77" for the name "the wifi password" when an earlier user message
        said "the hotel wifi password is bassline77, just so you know" (the latest such); None when
        none did, or the name is long or holds a figure (a text to show, not a name). Words with no
        determiner ("код от домофона") are a name only when what was said of them holds a figure:
        "put milk and eggs on my screen" after "milk and eggs are on the list" shows them as said."""
        pointed = _THING_NAMED.match(fold(name)) is not None
        key = _THING_NAMED.sub("", fold(name)).strip(" .,!?")
        if not key or len(key.split()) > THING_NAME_WORDS_MAX or re.search(r"\d", key):
            return None
        told = re.compile(r"(?<!\w)" + re.escape(key) + r"(?:\s+(?:" + _THING_IS + r"))?\s*[:—–=-]?\s*(?P<value>[^,.;!?]{1,60})")
        for message in reversed(self.trajectory.messages()[:turn.start]):
            for line in user_lines(message.content) if message.role == "user" else ():
                found = told.search(fold(line))
                if found is not None and found["value"].strip() and (pointed or re.search(r"\d", found["value"])):
                    value = line[found.start("value"):found.end("value")] if len(fold(line)) == len(line) else found["value"]
                    return f"{key}: {value.strip()}"
        return None

    def _request_before(self, turn: TurnState, back: int = 1) -> Intent | None:
        """The user's last plain request before this turn among the `back` last ones, as a reflex
        reads it (None: none of them is plain)."""
        return next(self._requests_before(turn, back), None)

    def _requests_before(self, turn: TurnState, back: int) -> Iterator[Intent]:
        """The user's plain requests among their `back` last messages before this turn, latest
        first, as a reflex reads them."""
        said = (user_lines(m.content) for m in reversed(self.trajectory.messages()[:turn.start]) if m.role == "user")
        earlier = itertools.islice((lines for lines in said if lines), back)  # no copy of the history
        return (intent for lines in earlier for intent in [_plain_request("\n".join(lines), self.s.phrasings)]
                if intent is not None)

    async def _reflex_correction(self, turn: TurnState, intent: Intent) -> str | None:
        """"не Дюну, а Бегущего по лезвию": the user's last request again, with the title put right."""
        request = corrected(intent, self._request_before(turn))
        return None if request is None else await self._carry_out_one(turn, request)

    async def _reflex_show(self, turn: TurnState, intent: Intent) -> str | None:
        """"выведи на очки: …": the text on the glasses, and left there as the answer; a code said
        digit by digit in figures ("gate code four four oh seven": 4407), as a message sent has it.
        A thing shown by its name ("put the wifi password on my glasses"): what the user said it is
        earlier ("wifi password: bassline77"); none said, and the name only points: the model's."""
        said = self._said_before(turn, intent.text)
        if said is None and _THING_NAMED.match(fold(intent.text)):
            return None
        intent = msgspec.structs.replace(intent, text=digits_in_figures(said or intent.text))
        return None if await self.call(turn, "show_text", intent.text) is None else show_answer(intent)


