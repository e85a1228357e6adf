"""The frame: a turn no reflex recognises, rewritten by the model as one plain command.

The reflexes (core.reflex) read requests said in the forms their patterns know; people say
the same things in endless other ways ("could you put Back to the Future on for me?", "минут
на восемь поставь, а то макароны варю", "my sister lives in Tokyo, what time is it over
there?"). Letting the small model act on such a turn means three or four free steps, and that
is where the wrong film, the missing last step and the made-up id came from. So the model is
asked one narrow question first: say this as one command of a short list, or "-". The
command is read by the same reflex patterns and carried out by the session; the model decides
nothing else. The list and its worked examples are the loaded intents files' (`frame:` in
core/intents.yaml and in each toolset's intents.yaml, core.local_intents.FrameSpec): a toolset
added brings its commands, and one left out takes its commands away.

A guarantee, not luck: a command is taken only when every word it adds beyond the list's own
words is the user's (a title, a city, a timer's text, in any grammatical case; said now, or for a
question about a title in the request before) and every number in it was said (as digits or a
word). A command the model copied from the examples, or a title
it made up, names words the user never said, and the turn goes to the model as before. A command
that changes something is taken only when the words ask for that change, now (`_asked_for`,
core.reflex.held_back), and a title shown only when the words say which.

After the fixed examples the question shows the requests of a bank most like the user's words
(core.frame_bank): a small model puts words as a command far better right after seeing words like
them put so.

Pure functions: `frame_messages` builds the request, `read_frame` checks and reads the reply.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import lru_cache

import msgspec

from core.fastpath import Phrasing
from core.frame_bank import Bank, default_bank
from core.loading import intent_files
from core.local_intents import NO_COMMAND, FrameSpec, LocalIntents, LocalMatch, language_of, read_frame_spec
from core.intent import ActionKind, remark, requested, same_word
from core.lexicon import alternation, fold, words
from core.timewords import numbers_said
from core.reflex import Intent, Reference, ReflexKind, builtin_phrasings, held_back, is_russian, recognise
from protocol import ChatMessage

FRAME_MAX_TOKENS = 48
NEAREST_EXAMPLES = 4  # the bank's requests shown after the fixed examples (the default of session.frame_examples)
NONE = NO_COMMAND

_SYSTEM = ("You turn what a user of a voice assistant said into ONE command from this list, in English, "
           "copying titles, names, cities and reminder texts exactly as the user said them (in their "
           "language and case). Answer with the command only. If it is none of these, or several at once, "
           "or small talk, a story, or a question about the assistant, answer " + NONE + ".\n\n"
           "Commands:\n")


@lru_cache(maxsize=1)
def builtin_frame() -> FrameSpec:
    """The commands and examples of the runtime's own and the built-in toolsets' intents files."""
    return read_frame_spec(intent_files())


@lru_cache(maxsize=8)
def _system(spec: FrameSpec) -> str:
    return _SYSTEM + "\n".join(spec.commands)


@lru_cache(maxsize=8)
def _command_words(spec: FrameSpec) -> frozenset[str]:
    """The list's own words: a word of a command outside these must be the user's."""
    return frozenset(re.findall(r"[a-z']+", "\n".join((*spec.commands, *spec.own_words)).casefold()))


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")


class Frame(msgspec.Struct, frozen=True):
    """What the model's command came to: the intent a reflex carries out, a toolset's declared
    sentence (`declared`: its call the session makes, after the call guards), or why none."""

    command: str
    intent: Intent | None
    refused: str = ""  # why not: "none", "unknown", "unsaid: <word>", "unrequested", "held back", "several"
    declared: LocalMatch | None = None
    # what the command reads as, taken or not: a reading refused for a word the user did not say
    # still tells which toolset's request the words are (`routing`)
    read_as: Intent | LocalMatch | None = None

    @property
    def routing(self) -> Intent | LocalMatch | None:
        """Whose request the words are, as the command reads: taken, or refused for its words alone
        (a word or a number the model changed); words that ask for nothing ("-", "unrequested",
        "held back") or for two things route nowhere."""
        return self.intent or self.declared or (self.read_as if self.refused.startswith("unsaid") else None)

    @property
    def taken(self) -> bool:
        return self.intent is not None or self.declared is not None


def frame_messages(said: str, before: str = "", *, nearest: int = NEAREST_EXAMPLES,
                   bank: Bank | None = None, spec: FrameSpec | None = None) -> list[ChatMessage]:
    """The question: the instructions with the commands and examples of the loaded intents files
    (`spec`, the built-in ones by default: a prefix the backend can keep), the `nearest` requests of
    the bank most like `said` with their commands (core.frame_bank), then the user's words (and the
    request before them, which "and what about here?" needs)."""
    spec = spec or builtin_frame()
    messages = [ChatMessage(role="system", content=_system(spec))]
    chosen = _bank_of(spec, bank or default_bank()).nearest(said, nearest) if nearest > 0 else []
    for asked, command in (*spec.examples, *chosen):
        messages += [ChatMessage(role="user", content=asked), ChatMessage(role="assistant", content=command)]
    context = f"(before that the user said: {before})\n" if before else ""
    return messages + [ChatMessage(role="user", content=context + said)]


@lru_cache(maxsize=8)
def _bank_of(spec: FrameSpec, bank: Bank) -> Bank:
    """The bank's requests whose command is one of `spec`'s list (or "-"): a toolset left out takes
    its examples away with its commands."""
    starts = tuple(alternative.split("<")[0].strip().casefold() for line in spec.commands
                   for alternative in line.split(" | "))
    kept = [(said, command) for said, command in bank.pairs if command == NONE or command.casefold().startswith(starts)]
    return bank if len(kept) == len(bank.pairs) else Bank(kept)


def read_frame(reply: str, said: str, before: str = "", phrasings: Sequence[Phrasing] | None = None,
               spec: FrameSpec | None = None, local: LocalIntents | None = None) -> Frame:
    """The reply read as a command of the list whose every added word and number the user said,
    now or in the request `before` ("who directed it?" after "find Kin-dza-dza": "who directed
    Kin-dza-dza"); the answer's language is that of `said`. A command no reflex reads may be one
    of the `local` intents' sentences that declares its call ("convert 350 fahrenheit to
    celsius": the converter's own sentence), so a toolset's sentences are the frame's targets
    with no code here. A reply of several lines is taken only when exactly one of them holds up
    (the local model put the request before on a line of its own); two that do are two
    requests, the model's to take."""
    lines = [line for line in reply.strip().splitlines() if line.strip()][:_MAX_LINES] or [NONE]
    own = _command_words(spec or builtin_frame())
    frames = [_read_line(line, said, before, phrasings, own, local) for line in lines]
    taken = [frame for frame in frames if frame.taken]
    if len(taken) > 1:
        return Frame(reply.strip(), None, "several")
    return taken[0] if taken else frames[0]


_MAX_LINES = 3


def _read_line(line: str, said: str, before: str, phrasings: Sequence[Phrasing] | None,
               own: frozenset[str], local: LocalIntents | None) -> Frame:
    command = " ".join(line.split())
    command = command.strip(" \"'`«»")
    if command in (NONE, "", "none", "None"):
        return Frame(command, None, "none")
    intent = recognise(command, phrasings)
    if (intent is None or intent.kind not in _FRAMED_KINDS) and local is not None:
        declared = _declared(command, said, own, local)
        if declared is not None:
            return declared
    # the request before may name the title a question is about ("who directed it?"), never what
    # to do now: a timer or a play grounded in it is the last request said again
    unsaid = _unsaid(command, f"{said}\n{before}" if intent is not None and intent.kind in _ASKING else said, own)
    if unsaid:
        framed = intent if intent is not None and intent.kind in _FRAMED_KINDS else None
        return Frame(command, None, f"unsaid: {unsaid}", read_as=framed)
    if intent is None or intent.kind not in _FRAMED_KINDS:
        return Frame(command, None, "unknown")
    if intent.reference is not None and not intent.subject and not _reference_said(intent.reference, said):
        return Frame(command, None, "unsaid: reference", read_as=intent)  # "включи мне Назад в будущее" is no "the oldest one"
    if intent.kind in _ACTION_OF and not _asked_for(_ACTION_OF[intent.kind], said, before):
        return Frame(command, None, "unrequested")  # "мне через 10 минут выходить": a timer's words, no request
    if intent.kind in _ACTION_OF and held_back(said, intent.kind):
        return Frame(command, None, "held back")  # "maybe later play X", "если я усну выключи фильм"
    if intent.kind == "timer_cancel" and intent.all_timers and not _EVERY_TIMER.search(_fold(said)):
        return Frame(command, None, "unsaid: all", read_as=intent)  # "cancel all timers" needs words that say all of them
    russian = is_russian(said)
    if intent.kind == "timer_set" and set(_WORD.findall(_fold(intent.text))) <= _ADDRESS:
        intent = msgspec.structs.replace(intent, text="")  # "порфирий, поставь таймер": the name is no reminder
    if intent.kind == "watch":  # "Катя writes": said back, and watched for, in the user's language
        who = re.sub(r"\s*\bwrites\b\s*", " ", intent.subject).strip()
        subject = f"напишет {who}" if russian else f"{who} writes"
        return Frame(command, msgspec.structs.replace(intent, russian=russian, subject=subject,
                                                      text=("когда " if russian else "when ") + subject))
    return Frame(command, msgspec.structs.replace(intent, russian=russian))


def _declared(command: str, said: str, own: frozenset[str], local: LocalIntents) -> Frame | None:
    """`command` as a toolset's sentence that declares its call, when every word and number it
    adds is the list's or the user's now; None when no such sentence matches it. Whether the call
    may be made is the call guards' (the session asks them first)."""
    match = local.match(command, language="en")  # the list's language; the names in it the user's
    if match is None or match.call is None:
        return None
    unsaid = _unsaid(command, said, own)
    if unsaid:
        return Frame(command, None, f"unsaid: {unsaid}", read_as=match)
    spoken = language_of(said)  # answered in the user's language, where the toolset words it so
    match = msgspec.structs.replace(match, language=spoken, call=local.calls.get((match.intent, spoken), match.call))
    return Frame(command, None, declared=match)


def _any(key: str) -> str:
    """The list `key` of the frame topic (core/words/<language>/frame.toml) as one alternation."""
    return alternation("frame", key)


_EVERY_TIMER = re.compile(r"(?<!\w)(?:" + _any("every_timer_words") + r")(?!\w)")
_ADDRESS = frozenset(words("frame", "address_words"))
_FRAMED_KINDS: frozenset[ReflexKind] = frozenset({
    "time_now", "time_elsewhere", "timer_set", "timer_list", "timer_cancel", "play", "playback", "search", "details",
    "show", "watch", "unwatch"})


# a command that changes something is taken only when the user's words ask for that kind of change
_ACTION_OF: dict[ReflexKind, ActionKind] = {
    "timer_set": "timer_set", "timer_cancel": "timer_cancel", "play": "play", "playback": "playback", "show": "show",
    "watch": "watch", "unwatch": "change"}


# which title shown a reference means, in the user's words: a number in a title ("Один дома 2")
# is no ordinal, and a title said is no "the last one"
_REFERENCE_CUES = {cue: re.compile(_any(f"{cue}_cue_patterns"), re.I) for cue in ("ordinal", "oldest", "newest", "last")}


def _reference_said(reference: Reference, said: str) -> bool:
    cue = ("ordinal" if reference.ordinal else "oldest" if reference.oldest else "newest" if reference.newest
           else "last" if reference.last else "")
    return not cue or bool(_REFERENCE_CUES[cue].search(said))


_ANOTHER = re.compile(r"\b(?:" + _any("another_patterns") + r")\b", re.I)


def _asked_for(kind: ActionKind, said: str, before: str) -> bool:
    """Whether the words ask for this kind of change (core.intent.requested), or ask for one more
    of what the request before asked ("and another one, half an hour, to move the car"). Words the
    lexicons do not know ask for a play, a pause, a watch or a text on the glasses unless they are a
    plain statement ("put Toy Story on for the kids, would you", "как Катя напишет в телеге, сразу
    скажи мне" do; "Гладиатор у меня на втором месте" does not); a timer is asked for only in words
    the lexicons know ("I need to leave in ten minutes, ugh" is no statement to core.intent.remark)."""
    if requested(kind, said) or before and _ANOTHER.search(said) and requested(kind, before):
        return True
    if kind == "show":  # "давай-ка мою зарядку для спины, как доктор прописал" is no text for the glasses
        return bool(_SCREEN_WORD.search(_fold(said)))
    return kind != "timer_set" and not remark(said)


# where a text is put, said in any words: "кинь на экран очков", "throw it up on my screen"
_SCREEN_WORD = re.compile(r"(?<!\w)(?:" + _any("screen_word_patterns") + r")(?!\w)")


_ASKING: frozenset[ReflexKind] = frozenset({"details", "search"})


def _unsaid(command: str, said: str, own: frozenset[str]) -> str:
    """The first word or number of `command` that is neither the list's nor the user's; "" if none."""
    words = [w for w in _WORD.findall(_fold(said))]
    numbers = numbers_said(words) | ({1} if _ONE_UNIT.intersection(words) else set())
    for word in _WORD.findall(_fold(command)):
        if word.isdigit():
            if int(word) not in numbers and not (int(word) > 12 and int(word) - 12 in numbers):
                return word  # "20" of 21:30 may be said as "eight"/"восемь ... вечера"; "00" is a clock's
        elif word not in own and not any(_same_stem(word, w) for w in words):
            return word
    return ""


# a unit said alone is one of it: "через минуту", "in an hour", "на часок"
_ONE_UNIT = frozenset(words("frame", "one_unit_words"))


def _same_stem(a: str, b: str) -> bool:
    """core.intent.same_word, or one stem in two parts of speech ("проветрить"/"проветривание")."""
    common = len(os.path.commonprefix((a, b)))
    return same_word(a, b) or not any(c.isdigit() for c in a + b) and common >= 5 and common * 5 >= min(len(a), len(b)) * 3


def _fold(text: str) -> str:
    return fold(text)


# ---- an intent said as the list's command (the frame bank's examples are written with it) ------
def command_of(intent: Intent, phrasings: Sequence[Phrasing] | None = None) -> str | None:
    """The command of the frame's list that says `intent`: the runtime's own (the clock, the
    screen), else the one its toolset's phrasing says (`Phrasing.commanded`); None where the list
    has none for it (a correction, a follow-up, a reference only the reflexes know)."""
    command = _own_command(intent) or next(
        filter(None, (phrasing.commanded(intent) for phrasing in (phrasings or builtin_phrasings()))), None)
    return " ".join(command.split()) if command else None


def _own_command(intent: Intent) -> str | None:
    match intent.kind:
        case "time_now":
            return {"": "what time is it", "+1": "what is the date tomorrow", "-1": "what is the date yesterday"}.get(
                intent.when)
        case "time_elsewhere":
            return f"what time is it in {intent.subject}"
        case "show":
            return f"show on the screen: {intent.text}"
    return None
