"""Does this turn's user text ask for an action? Pure functions, no model.

A small model sets a timer after "thank you" (its text copied from a worked example), puts a
compliment on the screen with show_text, plays the last film again after "stop". The session
(core.conversation) therefore runs a call that *changes something* only when the user's own
words in this turn ask for an action of that kind, or a recipe the turn follows names the call;
otherwise the call is not made and the model is told why (`Refusal`). It also catches the
opposite lie: a final answer that says an action was done ("Таймер установлен", "Playing …")
in a turn where no call did it (`claimed_action`).

The words are data (core/words/<language>/guards.toml, read through core.lexicon): stems,
matched on word starts, lower-cased, `ё` read as `е`, every language at once. Each kind has its
verbs; a request to *explain* ("объясни, как работает таймер", "what is a timer") asks for no
action whatever verb it holds.
"""
from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from typing import Literal

import msgspec

from core.lexicon import alternation, fold, words
from core.timewords import (clock_without_length, no_length_said, signed_numbers_said, unsaid_length, unsaid_number,
                            whole_numbers_said)
from protocol.tools import ToolSpec, ToolsetSpec

ActionKind = Literal["timer_set", "timer_cancel", "play", "playback", "show", "watch", "task_cancel", "notify", "change"]
RefusalKind = Literal["not_requested", "unseen_id", "ungrounded_text", "unsaid_number"]
REFUSED = "not executed "  # how the result of a call the session refused starts


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """A call the session did not make, and why: the model reads `text()`."""

    kind: RefusalKind
    tool: str
    reason: str

    def text(self) -> str:
        return f"{REFUSED}({self.kind}): {self.tool} was not run: {self.reason}"


def _norm(text: str) -> str:
    """Lower-cased, `ё` read as `е`, every run of white space one space, a space on either side."""
    return " " + _squeeze(fold(text)) + " "


def _squeeze(text: str) -> str:
    """`re.sub(r"\\s+", " ", text)` by str.split, which splits at the same white space (str.isspace)
    without the regex engine: every answer and every guarded call is normalised."""
    words = text.split()
    if not words:
        return " " if text else ""
    return (" " if text[0].isspace() else "") + " ".join(words) + (" " if text[-1].isspace() else "")


def _stems(*words: str) -> re.Pattern[str]:
    """Word starts: `напомн` matches "напомни", "напомнить"; a stem ending in a space is a whole word."""
    return re.compile(r"(?<![\w])(?:" + "|".join(re.escape(w) for w in words) + ")")


def _listed(key: str) -> re.Pattern[str]:
    """The stems of the guards' word list `key` (core/words/*/guards.toml) as one pattern."""
    return _stems(*words("guards", key))


def _grammar(key: str, frame: str = "{}") -> re.Pattern[str]:
    """The guards' list `key` (core/words/*/guards.toml: each language's regular expressions when
    named *_patterns, else words) as one alternation, set in `frame`."""
    return re.compile(frame.format(alternation("guards", key)))


def _alternation(key: str) -> str:
    return alternation("guards", key)


# a duration or clock time: "через 5 минут", "in 10 minutes", "на 1 минуту", "at 9:30", "в 7 утра"
_WHEN = re.compile(r"(?:" + _alternation("when_prepositions") + r")\s+(?:\d+|" + _alternation("when_amount_patterns")
                   + r")|\d+\s*(?:" + _alternation("when_unit_abbreviation_patterns") + r")|\b\d{1,2}[:.]\d{2}\b|"
                   + _alternation("when_soon_patterns") + r"|\b[^\W\d_]+\s+(?:" + _alternation("when_unit_patterns") + ")")
_TIMER_WORDS = _listed("timer_words")
_SET_VERBS = _listed("set_verbs")
_CANCEL_VERBS = _listed("cancel_verbs")
# a cancel that is no stop of what plays: with one of these no timer word is needed ("отмени его", "cancel it")
_PLAIN_CANCEL = _listed("plain_cancel")
_PLAY_VERBS = _listed("play_verbs")
_PLAYBACK_VERBS = _listed("playback_verbs")
_SHOW_VERBS = _listed("show_verbs")
_SHOW_PLACE = _listed("show_place")
_PHONE_PLACE = _listed("phone_place")
_SCREEN_PLACE = _listed("screen_place")
_CHANGE_VERBS = _listed("change_verbs")
# "tell me when Anna writes", "следи за сборкой": a watch or a monitor the user asks for
_WATCH_VERBS = _listed("watch_verbs")
_EXPLAIN = _listed("explain")
# "send it to my phone", "сообщи мне": a notification the user asks for (a world event's turn,
# with no user words, may notify: the channels recipe says to when the user is away)
# ("tell me when Anna writes" asks for a watch, not a notification now)
_NOTIFY_VERBS = _listed("notify_verbs")
# "yes" to the assistant's own offer ("Включить?") asks for what was offered
_YES = re.compile(r"^\s*(?:" + _alternation("yes_words") + r")\b")


def action_kind(spec: ToolSpec | None, args: Mapping[str, str] | None = None) -> ActionKind | None:
    """The kind of change a call of `spec` makes with `args`, as its spec declares it
    (protocol.ToolSpec.action); None for a call that changes nothing (a lookup)."""
    if spec is None or spec.read_only:
        return None
    kind = spec.action or "change"  # a tool that declares nothing (an MCP server's): some change
    value = (args or {}).get(spec.action_arg, "").strip().lower() if spec.action_arg else ""
    if value:  # a player's `action=pause`: a playback, not a play
        kind = spec.arg_actions.get(value, spec.arg_actions.get("*", kind)) or kind
    return None if kind == "none" else kind  # type: ignore[return-value]


# the user will ask later: "I'll need a reminder for the dentist, but I'll tell you the time in the
# morning", "скажу потом, во сколько"
_ASKS_LATER = _grammar("asks_later_patterns")
_OWN_CHORE = _grammar("own_chore_patterns")


# what another person says the user should do: told, not asked for ("my friend keeps telling me
# to set reminders", "мама всё время говорит, что надо ставить будильник")
_REPORTED = _grammar("reported_patterns")


_WATCH_ENDED = _grammar("watch_ended_patterns")
# "всё, больше ничего не надо", "nothing else": the talk closed, nothing asked (nor cancelled)
_NOTHING_MORE = _grammar("nothing_more_patterns")


# the user telling of their own doing ("if I set a timer for every single thing …", "I always put
# on a cartoon for them", "я сам поставлю таймер"): no request to the assistant; "can I set …" is one
_SELF_DOES = re.compile("".join(rf"(?<!{re.escape(word)}\s)" for word in words("guards", "self_does_not_after"))
                        + r"(?<![\w'])(?:" + _alternation("self_does_subject_patterns") + r")\s+"
                        r"(?:(?:" + _alternation("self_does_adverbs") + r")\s+)*"
                        r"(?:" + _alternation("self_does_verb_patterns") + r")(?!\w)"
                        r"(?:\s+(?:" + _alternation("self_does_articles") + r")?\s*(?:" + _alternation("self_does_noun_patterns")
                        + r")(?:\s+(?:" + _alternation("self_does_noun_tails") + r"))?)?")


# "напомни, кто снял Кин-дза-дзу?", "remind me what year Alien came out": a fact recalled, no reminder
_RECALL = re.compile(r"(?<!\w)(?:" + _alternation("recall_verb_patterns") + r")[\s,]+(?:(?:" + _alternation("recall_particles")
                     + r")\s+)?(?:" + _alternation("recall_question_words") + r")(?!\w)")  # not "when": a reminder's


# a condition: what it holds is not asked for now ("если я попрошу тебя включить Титаник, …", "if I
# asked you to set a timer, …"); "если можешь", "if you could" are requests all the same
_IF_CLAUSE = _grammar("if_clause_patterns", r"(?<!\w)(?:(?:" + _alternation("if_clause_lead_words")
                      + r")\s+)?(?:{})\s+[^,?.!]*")
# a verb in its reflexive form: "запустится", "включается", "turns on" said of a thing
_REFLEXIVE = _grammar("reflexive_patterns")


# "…, а, нет, забудь", "oh wait, never mind": what was asked before it is taken back
_TAKEN_BACK = _grammar("taken_back_patterns", r"(?<!\w)(?:{})(?!\w)")


def _taken_back(kind: ActionKind, text: str) -> bool:
    """Whether the words take back a request of `kind` they made: a retraction ("never mind",
    "забудь") after which nothing asks for that kind again nor says a new time or number ("…
    forget it, make it 10 minutes" corrects, not retracts). For a cancel the same words are the
    request itself ("забудь про таймер")."""
    return kind not in ("timer_cancel", "task_cancel") and _last_word_stands(_TAKEN_BACK, kind, text)


def takes_back(said: str) -> bool:
    """Whether the words open by taking back what was asked and ask nothing after ("actually
    forget it, Dan's on call tonight", "ой, отбой, она сама позвонит"): what the turn before did
    is undone. A retraction after other words ("… what's the weather? never mind") takes back
    those words, not the turn before."""
    text = _norm(said)
    found = _TAKEN_BACK.search(text)
    if found is None or len(text[:found.start()].split()) > _OPENING_WORDS:
        return False
    after = text[found.end():]  # why, not what instead: "…, my neighbour moved it", not "…, set it for 20"
    clauses = [clause for clause in re.split(r"[,;.!]+", after) if clause.strip()]
    return not re.search(r"\d", after) and not _WHEN.search(after) and all(remark(clause) for clause in clauses)


_OPENING_WORDS = 2  # "oh, actually", "ой, всё": what may come before a retraction that opens the words


_PUT_OFF = _grammar("put_off_patterns")


def _put_off(kind: ActionKind, text: str) -> bool:
    """Whether the words put a request off ("… но пока не ставь", "don't start it yet"), nothing
    asking for it again after ("not now, in an hour" corrects, not puts off). A cancel may be put
    off too ("don't cancel it yet")."""
    return _last_word_stands(_PUT_OFF, kind, text)


def _last_word_stands(pattern: re.Pattern[str], kind: ActionKind, text: str) -> bool:
    """Whether the last phrase `pattern` finds is the words' last word on `kind`: after it nothing
    asks for that kind again nor says a time or a number."""
    last = None
    for last in pattern.finditer(text):
        pass
    if last is None:
        return False
    after = text[last.end():]
    # a change no lexicon knows (an MCP server's) is asked again only by a clause that orders something
    asks_again = any(opens_an_order(clause) for clause in re.split(r"[,.;!?]", after)) if kind == "change" \
        else requested(kind, after)
    return not re.search(r"\d", after) and not _WHEN.search(after) and not asks_again


_POLITE = re.compile(r"(?<!\w)(?:" + alternation("requests", "polite_tail_patterns") + r")(?!\w)")
_CLAUSE_END = re.compile(r"[.!?;,—–…]+")


def _a_title_started(text: str) -> bool:
    """"twelve hours to Tokyo, no wifi. might as well get in the mood, start Shogun for me": with no
    timer word, a verb that also plays ("start", "поставь") asks for a timer only with a time in its
    own clause (politeness aside); a length told elsewhere in the turn is no timer's."""
    verbs = list(_SET_VERBS.finditer(text))
    if _TIMER_WORDS.search(text) or not verbs or any(_PLAY_VERBS.match(text, verb.start()) is None for verb in verbs):
        return False
    clauses = [f" {clause} " for clause in _CLAUSE_END.split(_POLITE.sub(" ", text)) if clause.strip()]
    # "поставь, пожалуйста, на десять минут", "start it, 20 minutes": a verb alone, its time in the next clause
    joined = [clause + (clauses[at + 1] if len(clause.split()) <= 2 and at + 1 < len(clauses) else "")
              for at, clause in enumerate(clauses)]
    return not any(_SET_VERBS.search(clause) and _WHEN.search(clause) for clause in joined)


def requested(kind: ActionKind, said: str, offered: str = "") -> bool:
    """Whether the user's words of this turn (`said`) ask for an action of `kind`. `offered`: the
    assistant's last answer before the turn, when it asked a question ("Включить?"): a plain
    "да" then asks for what the question offered."""
    text = _norm(said)
    if _taken_back(kind, text) or _put_off(kind, text) or addressed_elsewhere(said) or quoted_request(said):
        return False  # "… а, нет, забудь", "… но пока не ставь", "Ben keeps shouting 'play Toy Story!'"
    reported = _REPORTED.search(text)
    if reported is not None:  # "my friend keeps telling me to set reminders …": someone else's words
        text = text[:reported.start()]
    text = _QUOTED.sub(":", text)  # "брат такой: «напомни мне в восемь про матч»": a request in quotes is someone's
    text = _NOTHING_MORE.sub(" ", _RECALL.sub(" ", _SELF_DOES.sub(" ", text)))
    # "ты в принципе умеешь за телегой следить, чтоб если начальник напишет, ты меня будил?": asked before
    # the condition's "you would" goes (it takes "умеешь" with it)
    asks_ability = _ABLE_QUESTION.search(text) is not None
    negated = kind not in ("timer_cancel", "task_cancel") and _NEGATED_ORDER.search(text) is not None
    if negated:  # "не надо напоминать" is a cancel, not a cancel not given
        text = _NEGATED_ORDER.sub(" ", text)  # "don't put anything up on my glasses for now": an order not given (h57)
    # "if I ever move to Tokyo I'd have to switch the home city": what the user would have to do, not a request
    if_said = _IF_CLAUSE.search(text) is not None
    hypothetical = if_said and bool(_OWN_CHORE.search(text))
    if if_said:  # "если я тебя попрошу разбудить меня в пять, ты правда разбудишь?": a hypothetical,
        text = _SECOND_PERSON.sub(" ", _IF_CLAUSE.sub(" ", text))  # and what "you would do" in it
    text = _REFLEXIVE.sub(" ", text)  # "он запустится на телефоне?": how it happens, no request
    if _ASKS_LATER.search(text) and not _WHEN.search(text):  # "… but I'll tell you the time in the morning"
        return False
    if _YES.match(text.strip()) and offered.rstrip().endswith("?") and kind != "show":
        return requested(kind, offered.rstrip("?") + " " + said.replace("?", ""))
    if (_EXPLAIN.search(text) or _HOW_YOU_DO.search(text) or asks_ability or _ABLE_QUESTION.search(text)) \
            and not _imperative_beyond_explain(kind, text):
        return False
    if kind == "timer_set":
        return bool(_SET_VERBS.search(text) and (_TIMER_WORDS.search(text) or _WHEN.search(text))
                    or _TIMER_WORDS.search(text) and _WHEN.search(text)) and not _a_title_started(text)
    if kind == "timer_cancel":  # "stop it, they're fighting over the remote" is about the film, not the timers
        return bool(_CANCEL_VERBS.search(text) and (_TIMER_WORDS.search(text) or _PLAIN_CANCEL.search(text)))
    if kind == "task_cancel":
        return bool(_CANCEL_VERBS.search(text))
    if kind == "watch":  # not "можешь больше не следить", "stop watching": an end, not a watch (h9)
        return bool(_WATCH_VERBS.search(text)) and not _WATCH_ENDED.search(text)
    if kind == "notify":
        return not said.strip() or bool(_NOTIFY_VERBS.search(text))
    if kind == "play":
        return bool(_PLAY_VERBS.search(text))
    if kind == "playback":
        return bool(_PLAYBACK_VERBS.search(text) or _PLAY_VERBS.search(text))
    if kind == "show":
        return bool(_SHOW_VERBS.search(text) and (_SHOW_PLACE.search(text) or ":" in said or _quoted(said))) \
            and not sent_to_phone(said)
    # a tool the lexicons do not know (an MCP server's): any request will do, but not small talk, nor
    # the user's own chore in a hypothetical ("if I ever move to Tokyo I'd have to switch the home city"),
    # nor words whose only order is one not given ("Don't set anything for tomorrow. Full rest day …", h79)
    return bool(_CHANGE_VERBS.search(text)) or not hypothetical and not (negated and not _gives_an_order(text)) and not casual(said)


def _gives_an_order(text: str) -> bool:
    """Whether a clause of the (normalised) words opens with an order to the assistant."""
    return any(opens_an_order(clause) for clause in re.split(r"[.,;:!?]+", text) if clause.strip())


_CASUAL = _listed("casual")


def same_word(a: str, b: str) -> bool:
    """One word in two grammatical cases ("матрицу"/"матрица", "париже"/"париж"); numbers exactly."""
    if a == b:
        return True
    if any(c.isdigit() for c in a + b):
        return False
    common = len(os.path.commonprefix((a, b)))
    return common >= 3 and common >= max(len(a), len(b)) - 2


_ACTION_VERBS = (_PLAY_VERBS, _SET_VERBS, _CANCEL_VERBS, _SHOW_VERBS, _CHANGE_VERBS)


# a person of the room called at the start of the words, before a comma ("Маш, включи …", "Jake, can you …")
_ADDRESSED = re.compile(r"^\W*(?:(?:" + "|".join(map(re.escape, words("guards", "addressee_openers"))) + r")[\s,]+)?(?:"
                        + "|".join((re.escape(fold(word)) for word in words("guards", "addressee_words"))) + r")\s*[,!]", re.IGNORECASE)


# words in quotation marks after a colon: what someone said or wrote, quoted; a request of the
# user's own is outside them ("выведи на очки: «пароль 1234»" asks for the screen)
# (a title quoted inside the quote: "сестра пишет: «включи мне „Бриллиантовую руку“, я соскучилась»")
_QUOTED = re.compile(r":\s*(?:«[^«»]{1,300}»|[\"“„][^«»\"“”„]{1,300}[»\"”“])")
# a person called by name first, with no comma after (a recogniser's text), before an order
_ENDEARING_NAME = re.compile(r"^\W*(?P<name>" + _alternation("addressee_name_patterns") + r")\s*[,!]")
_ASSISTANT_CALLED = frozenset(fold(word) for word in words("spoken", "address_words"))  # "деточка": the assistant
_NAMED_FIRST = re.compile(_ADDRESSED.pattern.removesuffix(r"\s*[,!]") + r"\s+", re.IGNORECASE)
_LISTENERS_OWN = _grammar("listeners_own_patterns", r"(?<!\w)(?:{})(?!\w)")
# "Jamie, can you …": a capitalised word first and a comma (read before folding), not one of the words
# that open a request to the assistant too, nor an adverb ("Honestly, …")
_CAPITALISED_CALLED = re.compile(r"^\W*(?:(?i:" + "|".join(map(re.escape, words("guards", "addressee_openers"))) + r")[\s,]+)?"
                                 r"(?P<name>" + _alternation("capitalised_addressee_patterns") + r")\s*,\s*\S")
_NOT_CALLED = frozenset(fold(word) for word in words("guards", "not_addressee_words")) | _ASSISTANT_CALLED
_BEFORE_EVENT = _grammar("before_event_patterns", r"(?<!\w)(?:{})")


def counted_back(said: str) -> bool:
    """Whether the words count a length back from an event ("напомни за полчаса до начала", "30
    minutes before the match"): no length from now is what they ask."""
    return bool(_BEFORE_EVENT.search(_norm(said)))


def sent_to_phone(said: str) -> bool:
    """Whether the words send something to the phone, not to the glasses' screen ("скинь мне на
    телефон код домофона: 147", "send my locker number to my phone"): a notification's words,
    never a show on the screen, unless the screen is named too."""
    text = _norm(said)
    return bool(_PHONE_PLACE.search(text)) and not _SCREEN_PLACE.search(text)


# what asks for something (core/words/*/requests.toml)
REQUEST_VERB = re.compile(r"(?<!\w)(?:" + alternation("requests", "request_verb_patterns") + r")(?!\w)")
# words in quotation marks, single or double ("Ben keeps shouting 'play Toy Story!'"); an apostrophe
# inside a word ("it's", "don't") neither opens nor closes them
_QUOTE_SPAN = re.compile(r"(?<!\w)(?:'(?P<single>.{3,200}?)'(?!\w)|[«\"“„](?P<double>[^«»\"“”„]{3,200})[»\"”“])")


def quoted_request(said: str) -> bool:
    """Whether the words' request is inside quotation marks and nothing outside them asks for
    anything: someone's words quoted ("Ben keeps shouting 'play Toy Story, play Toy Story!' No,
    buddy, lights out"); a title or a text in quotes after the user's own verb is theirs
    ("включи «Морозко»", "put 'meeting at 5' on my display")."""
    spans = list(_QUOTE_SPAN.finditer(said))
    if not any(REQUEST_VERB.search(fold(span["single"] or span["double"])) for span in spans):
        return False
    outside = _QUOTE_SPAN.sub(" ", said)  # "скинь мне на телефон «напомни маме …»": the user's own order outside
    return REQUEST_VERB.search(fold(outside)) is None and all(remark(part) for part in re.split(r"(?<=[.!?])\s+", outside)
                                                               if part.strip(" .!?"))


def addressed_elsewhere(said: str) -> bool:
    """Whether the words are said to someone else in the room: they open by calling a person by
    name or by kin, then a comma ("Маш, включи детям «Морозко»", "Jake, can you set the oven timer
    for twenty minutes?"). The assistant on the glasses is not called so: what follows is that
    person's to do, not the assistant's. Or they ask for what is the listener's own ("babe, can you
    set an alarm on your phone for six?", "поставь себе будильник"): the assistant has none."""
    folded = fold(said)
    if _ADDRESSED.match(folded) or _LISTENERS_OWN.search(folded):
        return True
    endearing = _ENDEARING_NAME.match(folded)  # "Серёженька, внучек, нажми …"
    if endearing is not None and endearing["name"] not in _ASSISTANT_CALLED:
        return True
    called = _CAPITALISED_CALLED.match(said)
    if called is not None and fold(called["name"]) not in _NOT_CALLED:
        return True
    named = _NAMED_FIRST.match(folded)  # "лен поставь чайник а?": speech written with no comma
    return named is not None and opens_an_order(folded[named.end():])


def casual(said: str) -> bool:
    """Small talk: a thank-you, a greeting, praise, a story, a question about the assistant -
    words that ask for no action (and no action verb besides)."""
    text = _STOP_FIRST.sub("", _norm(said))  # "стоп, я неправильно сказал": the stop was the router's
    return bool(_CASUAL.search(text)) and not any(v.search(text) for v in _ACTION_VERBS) or bool(_EXPLAIN.search(text))


_STOP_FIRST = re.compile(r"^\s*(?:" + _alternation("stop_first") + r")[\s,!.]+(?=\S)")


_LOOKUP = _listed("lookup")


@functools.lru_cache(maxsize=1024)  # asked at every step of a turn, with the same words
def small_talk(said: str) -> bool:
    """Words that want a plain answer and no tool at all: small talk (`casual`) that asks no
    question and names no lookup ("спасибо!", "расскажи анекдот", "объясни, как работает таймер").
    "привет, который час?" is not: it asks the time."""
    text = _norm(said)
    if not said.strip() or _LOOKUP.search(text):
        return False
    if _ABOUT_YOU.search(text) and not any(v.search(text) for v in _ACTION_VERBS):
        return True  # "какой твой любимый фильм?": a question, but to the assistant about itself
    return casual(said) and ("?" not in said or bool(_EXPLAIN_FIRST.match(text)))  # "объясни, чем … ?"


_EXPLAIN_FIRST = re.compile(r"^\s*(?:" + _alternation("explain_first") + r")\b")


# a question about the assistant itself ("какой твой любимый фильм?", "do you like music?"): its
# answer is the assistant's own, never a search
_ABOUT_YOU = _listed("about_you")


# words that ask about the time or the date, or need the clock to answer ("через 20 минут",
# "до Нового года"): greetings that name a part of the day ("доброе утро") are read out first
_GREETING_TIMES = _grammar("greeting_time_patterns", r"\b(?:{})\b")
_CLOCK_WORDS = _listed("clock_words")


def asks_clock(said: str) -> bool:
    """Whether the turn's words ask about the time or the date, or need the clock: a greeting
    ("Good evening! How are you?") does not, though it names a part of the day."""
    text = _GREETING_TIMES.sub(" ", _norm(said))
    return bool(_CLOCK_WORDS.search(text) or re.search(r"\d", text))


def unasked_lookup(spec: ToolSpec, said: str) -> Refusal | None:
    """A lookup that needs words of its own (`asks="clock"`: the clock) read in a turn whose words
    ask nothing of it: a small model answers "hi" with the clock (issue 33). Told why, it answers
    in plain text."""
    if spec.asks != "clock" or asks_clock(said):
        return None
    return Refusal(kind="not_requested", tool=spec.name, reason=(
        "the user did not ask about the time or the date. Answer their message in plain text, without it."))


# how the assistant does a thing, asked: "а ты таймеры как отменяешь — по номеру?", "как ты ставишь будильник"
_HOW_YOU_DO = _grammar("how_you_do_patterns")
# what the assistant can do, asked: "can you actually open issues, or do you just read?", "ты вообще умеешь …?"
_ABLE_QUESTION = _grammar("able_question_patterns")
_SECOND_PERSON = _grammar("second_person_patterns")


def asks_ability(kind: ActionKind, said: str) -> bool:
    """Whether the words ask whether the assistant can do a thing rather than ask it done: "out of
    curiosity, could you buzz me if someone texts me on WhatsApp? or is that not a thing you do",
    "ты вообще умеешь встречи ставить?". An order of `kind` said beside the question still counts."""
    text = _norm(said)
    return _ABLE_QUESTION.search(text) is not None and not _imperative_beyond_explain(kind, text)


def _imperative_beyond_explain(kind: ActionKind, text: str) -> bool:
    """"расскажи про фильм и включи его": an explain word and an action verb of the kind (not the
    question's own "отменяешь")."""
    text = _INFINITIVE.sub(" ", _SECOND_PERSON.sub(" ", text))  # "… как понимаешь, что мне надо напоминание поставить?"
    verbs = {"play": _PLAY_VERBS, "timer_set": _TIMER_SET_IMPERATIVE,
             "timer_cancel": _CANCEL_VERBS}.get(kind)
    return bool(verbs and verbs.search(text))


_TIMER_SET_IMPERATIVE = _listed("timer_set_imperative")
_INFINITIVE = _grammar("infinitive_patterns")  # and "playing"


def _quoted(text: str) -> bool:
    return bool(re.search(r"[«\"'“].+[»\"'”]", text))


_WORD = re.compile(r"[^\W\d_]{3,}|\d+")
GENERIC_TIMER_TEXT = frozenset(words("guards", "generic_timer_text"))


def grounded(text: str, *sources: str) -> bool:
    """A timer's or a screen's text that the user's words (or the results shown) gave: at least
    one of its words shares its first five letters with a word of `sources`, or it is a generic
    word ("таймер"). A text from nowhere - a worked example's "позвонить" - is not."""
    words = {w[:5] for w in _WORD.findall(_norm(text))}
    if not words or words <= {w[:5] for w in GENERIC_TIMER_TEXT}:
        return True
    seen = {w[:5] for source in sources for w in _WORD.findall(_norm(source))}
    return bool(words & seen)


# an id rather than words: no space, and a digit or an id's punctuation ("2301.01234", "m2", "hep-th/9901001");
# "latest" or a title is words a tool looks up by, which no id rule may judge
_ID_VALUE = re.compile(r"(?=\S*[\d._:/-])\S+")


def unshown_id(spec: ToolSpec, args: Mapping[str, str], shown: str) -> Refusal | None:
    """An id-like value of one of `spec.id_args` (an item of it: "a, b" or ["a", "b"] lists
    several) that `shown` does not hold as a whole token, in any case: the model made it up (a
    small model calls an arXiv tool with an id no search listed). `shown`: the text of the
    conversation's results and of its user side (the user's words, the events), where an id a
    search listed, an id the user dictated and a mail's id in its message all are. None: the
    call may run."""
    for name in spec.id_args:
        for item in args.get(name, "").strip().strip("[]").split(","):
            item = item.strip().strip("\"'")
            if _ID_VALUE.fullmatch(item) and not re.search(rf"(?<!\w){re.escape(item)}(?!\w)", shown, re.I):
                return Refusal(kind="unseen_id", tool=spec.name, reason=(
                    f"the {name} «{item}» is in no result of this conversation and the user did not say it: it is "
                    f"made up. Take the {name} exactly as a result shows it (search or list first), or ask the user."))
    return None


# words that ask for a timer again and again: "every day", "каждые 2 часа", "daily", "по будням"
_REPEATED = _grammar("repeated_patterns", r"(?<!\w)(?:{})(?!\w)")


def asks_to_watch(said: str) -> bool:
    """Whether the words ask to watch for something ("keep an eye on my mail", "последи за почтой")."""
    return _WATCH_VERBS.search(_norm(said)) is not None and _WATCH_ENDED.search(_norm(said)) is None


def says_repeat(said: str) -> bool:
    """Whether the words ask for something again and again ("every day", "по будням")."""
    return _REPEATED.search(_norm(said)) is not None


def unsaid_amount(spec: ToolSpec, args: Mapping[str, str], shown: str, said: str = "") -> Refusal | None:
    """A whole number in one of the tool's `said_number_args` that neither the user said nor a
    result showed in `shown` (core.timewords.whole_numbers_said): "а пятьдесят пять?" converted
    as 50. A fraction is not judged, nor a one ("сколько километров в миле": a unit alone is one
    of it). The refusal names the number this turn's words (`said`) say, when they say one."""
    for name in spec.said_number_args:
        given = args.get(name, "").strip()
        whole = re.fullmatch(r"(\d+)(?:[.,]0+)?", given)
        if whole is not None and int(whole[1]) != 1 and int(whole[1]) not in whole_numbers_said(shown):
            now_said = sorted(whole_numbers_said(said))
            meant = f" The user said {now_said[0]}: call it again with {now_said[0]}." if len(now_said) == 1 else \
                " Use the number exactly as the user said it."
            return Refusal(kind="unsaid_number", tool=spec.name, reason=f"the {name} {given} is not a number the user said.{meant}")
        now_said = whole_numbers_said(said) - {1}
        if whole is not None and now_said and int(whole[1]) not in now_said | {1}:
            # "240 km in miles?" … "and the limit's one thirty, what's that in miles per hour": the number said now
            return Refusal(kind="unsaid_number", tool=spec.name, reason=(
                f"the user said {', '.join(map(str, sorted(now_said)))} now, not {given}: call it again with the number "
                "they said in their last message."))
        if whole is not None and int(whole[1]) in signed_numbers_said(shown)[1]:  # "and minus forty?" … "40; C; K"
            return Refusal(kind="unsaid_number", tool=spec.name, reason=(
                f"the user said minus {whole[1]}, not {given}: call it again with -{whole[1]}."))
    return None


def check_call(spec: ToolSpec, args: dict[str, str], *, said: str, offered: str = "",
               recipe_tools: frozenset[str] = frozenset(), sources: tuple[str, ...] = (),
               words_name_it: bool = True) -> Refusal | None:
    """None when the call may run; else why not. `spec`: the tool's (what it does, which of its
    arguments must come from the conversation); `said`: the user's words of this turn;
    `recipe_tools`: the calls a recipe the turn follows names (they need no words of their own);
    `sources`: other texts an argument may come from (this turn's results); `words_name_it`:
    the user's words share a term with what the tool is (core.discovery.words_name_tool), which a
    change no lexicon knows (an MCP server's) needs when the turn has user words (an event's turn
    has none: what may run then is the standing instruction's, core.conversation)."""
    tool = spec.name
    kind = action_kind(spec, args)
    if kind is None or tool in recipe_tools:
        return None
    if not requested(kind, said, offered) or kind == "change" and said.strip() and not words_name_it:
        return Refusal(kind="not_requested", tool=tool, reason=(
            "the user did not ask for this in their last message. Do not call it; answer the user in plain "
            "text (a greeting, a thank-you or a question needs no action)."))
    for name in spec.grounded_args:
        if not grounded(args.get(name, ""), said, *sources):
            return Refusal(kind="ungrounded_text", tool=tool, reason=(
                f"the text «{args.get(name, '')}» is not from the user's words. Use the user's own words "
                "for it, or 'таймер' if they gave none." if kind == "timer_set" else
                f"the text «{args.get(name, '')}» is not from the user's words. Use the user's own words."))
    if kind == "timer_set":
        return _timer_refusal(tool, args, said, sources)
    return None


def _timer_refusal(tool: str, args: dict[str, str], said: str, sources: tuple[str, ...]) -> Refusal | None:
    """A timer's repetition and time must be the user's: "every" only for words that repeat, no
    number in "when" that nobody said."""
    if args.get("every", "").strip() and not _REPEATED.search(_norm(said)):
        return Refusal(kind="ungrounded_text", tool=tool, reason=(  # h18: "one for 12 minutes for the pasta" set daily
            "the user did not ask for a repeating timer. Call it again without `every`."))
    if number := unsaid_number(args.get("when", ""), said, *sources):
        return Refusal(kind="ungrounded_text", tool=tool, reason=(  # "в полвосьмого" set "in 1 hour"
            f"the time «{args.get('when', '')}» has the number {number}, which the user did not say. Write the time "
            "from the user's own words (\"in 10 minutes\", \"19:30\"), or ask the user when."))
    if hour := _wrong_half_of_day(args.get("when", ""), said):
        return Refusal(kind="ungrounded_text", tool=tool, reason=(  # h23: "seven thirty tonight" set for 07:30
            f"the time «{args.get('when', '')}» is in the other half of the day from the one the user said. "
            f"Write it as {hour}."))
    when = args.get("when", "").strip()
    if when.startswith(("in ", "через ")) and (clock := clock_without_length(said)):
        return Refusal(kind="ungrounded_text", tool=tool, reason=(  # h41: "завтра в семь утра напомни …" set "in 7 hours"
            f"«{when}» counts from now, but the user said a time of day ({clock}) and no length. Set that time: "
            f"\"{clock}\", or \"tomorrow {clock}\" for tomorrow."))
    if counted_back(said) and args.get("when", "").strip().startswith(("in ", "через ")):
        return Refusal(kind="ungrounded_text", tool=tool, reason=(  # h23: "за полчаса до начала" set "in 30 minutes"
            f"«{args.get('when', '')}» counts from now, but the user asked for a time before an event. Set the "
            "clock time (the event's time less that), or ask the user when it starts."))
    if when.startswith(("in ", "через ")) and no_length_said(said, *sources):
        return Refusal(kind="ungrounded_text", tool=tool, reason=(  # h84: "If I ever open a real shop, I'll need
            f"the user said no time for it, so «{when}» is made up. Ask the user when."))  # reminders …" set "in 1 hour"
    if length := unsaid_length(args.get("when", ""), said, *sources):
        return Refusal(kind="ungrounded_text", tool=tool, reason=(  # h23: "полтора часа" set "in 1 hour"
            f"the time «{args.get('when', '')}» is not the length the user said ({length}). Set the timer for "
            "the whole length the user said."))
    return None


_EVENING = _grammar("evening_patterns", r"(?<!\w)(?:{})(?!\w)")
_MORNING = _grammar("morning_patterns", r"(?<!\w)(?:{})(?!\w)")
_CLOCK_WHEN = re.compile(r"(?:(?:today|tomorrow)\s+)?(\d{1,2}):(\d{2})")


def _wrong_half_of_day(when: str, said: str) -> str:
    """The clock time `when` meant ("19:30") when the user's words name one half of the day
    ("tonight", "вечера"; "утра", "in the morning") and `when` is in the other (07:30); "" else."""
    clock = _CLOCK_WHEN.fullmatch(when.strip().casefold())
    if clock is None:
        return ""
    text = _norm(said)
    evening, morning = bool(_EVENING.search(text)), bool(_MORNING.search(text))
    hour = int(clock[1])
    if evening and not morning and 1 <= hour <= 11:
        return f"{hour + 12:02d}:{clock[2]}"
    if morning and not evening and 13 <= hour <= 23:
        return f"{hour - 12:02d}:{clock[2]}"
    return ""


def offerable(spec: ToolSpec | None, said: str, offered: str = "") -> bool:
    """Whether a step's grammar may offer `spec`'s tool for these words of the turn: a call that
    changes something only when the words ask for its kind (a play or a pause alike for a tool
    whose argument makes it either), a lookup that needs words (the clock) only when they are
    about it. The guard (`check_call`) still judges the call made; what is not offered cannot
    even be tried, so a thank-you costs no refused step."""
    if spec is None:
        return True
    kinds = frozenset(filter(None, [action_kind(spec), *(action_kind(spec, {spec.action_arg: value})
                                                            for value in spec.arg_actions if spec.action_arg)]))
    return _offerable(kinds, spec.asks, said, offered)


@functools.lru_cache(maxsize=1024)  # asked for every tool at every step of a turn, with the same words
def _offerable(kinds: frozenset[str], asks: str, said: str, offered: str) -> bool:
    if asks == "clock":
        return asks_clock(said)
    return not kinds or any(requested(kind, said, offered) for kind in kinds)  # type: ignore[arg-type]


_VERBS_OF: dict[str, re.Pattern[str]] = {"cancel": _CANCEL_VERBS, "watch": _WATCH_VERBS, "notify": _NOTIFY_VERBS}


def toolset_offerable(spec: ToolsetSpec | None, said: str) -> bool:
    """Whether a step may offer to turn a toolset on (or read its skill) for these words: always,
    but for a toolset that declares the words it is offered for (`ToolsetSpec.offered_for`: the
    world's toolsets), which the words must hold."""
    if spec is None or not (spec.offered_for or spec.offered_for_verbs) or not said.strip():
        return True  # a world event's turn: whatever its recipe needs
    return _offered_for(tuple(spec.offered_for), tuple(spec.offered_for_verbs), said)


def words_offered_for(spec: ToolsetSpec, said: str) -> bool:
    """Whether the words hold one of the word starts a toolset is offered for (its domain's nouns:
    "монитор", "сборк", "почт"), verbs aside ("watch" is said of films too)."""
    return bool(spec.offered_for) and _offered_for(tuple(spec.offered_for), (), said)


@functools.lru_cache(maxsize=1024)
def _offered_for(words: tuple[str, ...], verbs: tuple[str, ...], said: str) -> bool:
    text = _norm(said)
    return bool(words and _word_starts(words).search(text)) or any(_VERBS_OF[kind].search(text) for kind in verbs)


@functools.lru_cache(maxsize=64)
def _word_starts(words: tuple[str, ...]) -> re.Pattern[str]:
    return _stems(*words)


# ---- a final answer that reports an action nobody made --------------------------------------
_CLAIMED_KINDS = ("timer_set", "timer_cancel", "play", "playback", "show", "task_cancel")  # tried in this order
_CLAIM_STEMS: dict[str, tuple[str, ...]] = {kind: words("guards", f"claimed_{kind}") for kind in _CLAIMED_KINDS}
_CLAIMS: dict[str, re.Pattern[str]] = {kind: _stems(*stems) for kind, stems in _CLAIM_STEMS.items()}


# every claim of every kind in one pattern: an answer without any (most answers) is judged by one search
_ANY_CLAIM = _stems(*(stem for stems in _CLAIM_STEMS.values() for stem in stems))
_NEGATED = re.compile(r"(?:" + _alternation("claim_negator_patterns") + r")\s+(?:\w+\s+)?(?:"
                      + _alternation("claim_verb_stems") + ")")


def claimed_action(answer: str) -> ActionKind | None:
    """The kind of action a final answer reports as done ("Таймер установлен на 1 минуту",
    "Включаю «Матрица»"); None when it reports none."""
    text = _norm(answer)
    if not _ANY_CLAIM.search(text):
        return None
    if _NEGATED.search(text):
        return None  # "не могу включить", "I can't set" reports nothing done
    for kind, pattern in _CLAIMS.items():
        if pattern.search(text):
            return kind  # type: ignore[return-value]
    return None


SMALL_TALK_NOTICE = ("The user's last message is small talk: it needs no tool. Reply to it in plain text, briefly, "
                     "in {language}.")
CLAIM_NOTICE = ("Your last reply said an action was done ({kind}), but no tool call did it in this turn. If the "
                "user asked for it, make the call now; otherwise answer without claiming it, in {language}.")


def executed_kind(spec, raw_args: str) -> ActionKind | None:
    """The kind of action a call that ran made (`spec`: its ToolSpec; the caller knows from its
    outcome that it ran), None for a lookup."""
    if spec is None:
        return None
    if not spec.action_arg:
        return action_kind(spec)
    given = re.search(rf"{re.escape(spec.action_arg)}\s*=\s*(\w+)", raw_args, re.IGNORECASE)
    return action_kind(spec, {spec.action_arg: given.group(1) if given else ""})


def covers(claimed: ActionKind, acted: set[str]) -> bool:
    """A claim some call of the turn backs: a play and a pause are one family ("Включаю" after a
    resume); a change of a kind the claim stems do not know (an MCP server's tool, a task started
    in the background) may be what the answer tells of ("Запустил три скрипта: a, b и c"), and
    words are no proof against a call that was made: only calls of other known kinds contradict."""
    family = {"play", "playback"}
    return claimed in acted or (claimed in family and bool(family & acted)) or "change" in acted


# ---- a remark: words that ask for nothing ------------------------------------------------------
_REQUEST_MARKS = _listed("request_marks")
_OPENING_FILLERS = re.compile(r"^\s*(?:(?:" + _alternation("opening_fillers") + r"|"
                              + _alternation("opening_filler_sound_patterns") + r")[\s,!.]+)*")
# an order opens with its verb; a statement with its subject ("я", "my mom", "пробки")
_ORDER_FIRST = _listed("order_first")


def remark(said: str) -> bool:
    """A statement that asks for nothing: no question mark, no word of a request, and no verb or
    question word opening it ("я сегодня встал в семь утра", "my mom sets five timers when she
    bakes", "пробки сегодня жесть"). With the frame's "-" it is answered in plain words."""
    text = _NEGATED_ORDER.sub(" ", _norm(said))  # "не включай ничего, я думаю вслух": an order not given
    if not said.strip() or "?" in said or _REQUEST_MARKS.search(text):
        return False
    opening = _OPENING_FILLERS.sub("", text.strip()) + " "
    if _IMPERATIVE_OPENING.match(opening) and not _PAST_VERB.search(opening):
        return False  # "узнай последнюю цену акций Apple", "подготовь отчёт": an order, whatever toolset it needs
    return not _ORDER_FIRST.match(opening) and not _IMPERATIVE_FOR_ME.match(opening) and not _ORDER_ANYWHERE.search(text)


_WONDERED = _grammar("wondered_tail_patterns", r"(?:{})\s*[?!.]*\s*$")


def remark_or_wondered(said: str) -> bool:
    """A remark, or a question the speaker asks of themself after a request ("это скока в
    метрах, пролезу или нет?", "…, can I make it or not?"): a whether-question with no word of a
    request in it asks the assistant for nothing more than the request before it."""
    if remark(said):
        return True
    text = _norm(said)
    rest = _WONDERED.sub("", text).strip(" ,")
    return rest != text.strip(" ,") and bool(rest) and remark(rest)


def opens_an_order(said: str) -> bool:
    """Whether the words open with an order to the assistant ("выключай кино …", "set a timer …"),
    by its verb's form or an opening the order lists name: where a request may begin inside speech
    written with no punctuation (core.reflex_steps)."""
    opening = _OPENING_FILLERS.sub("", _norm(said).strip()) + " "
    return bool(_IMPERATIVE_OPENING.match(opening) and not _PAST_VERB.search(opening) or _ORDER_FIRST.match(opening)
                or _IMPERATIVE_FOR_ME.match(opening))


_NEGATED_ORDER = _grammar("negated_order_patterns", r"(?<!\w)(?:{})\s+[^\W\d_]+")
# a Russian imperative opening the words, by its form, not its verb ("узнай", "сыграй", "нарисуй",
# "подготовь", "поставь"): an order to the assistant, never a remark. A noun of that form ("случай
# был смешной", "трамвай опять опоздал") opens a statement, whose verb is finite: its past tense shows it
_IMPERATIVE_OPENING = _grammar("imperative_opening_patterns")
_PAST_VERB = _grammar("past_verb_patterns")


# a Russian order to do something for the speaker: "завари мне чай …", "приготовь нам …", "сыграй-ка"
# (the dev set's recipe turn was taken for a remark, and the model offered no tool for it)
_IMPERATIVE_FOR_ME = _grammar("imperative_for_me_patterns")


# the plainest orders, wherever they stand ("Матрицу включай", "the tea one, cancel it")
_ORDER_ANYWHERE = re.compile(r"(?<!\w)(?:" + _alternation("order_anywhere") + r")(?!\w)")
