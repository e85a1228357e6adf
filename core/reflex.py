"""Reflexes: the plain requests the runtime recognises and carries out without asking the model.

A 1.5B model on two cores takes about three seconds a step and three steps a media turn, and
it is where the harm comes from: a timer reported and never set, the film of the worked example
played, the weekday translated wrong. The commonest requests need no judgement: "который час",
"поставь таймер на 5 минут, чтобы проверить чай", "включи Сталкер", "найди Солярис", "включи
второй", "how long is it?". For those the session makes the calls itself, through the same
guarded call path the model's calls take (recorded in the history as calls with their results,
so the model later reads what was done), and words the answer from the result. Anything the
patterns below do not recognise with certainty - two requests in one breath, a negation, a
place named with the time, an ambiguous pick among results - goes to the model as before,
with whatever the reflex already found in the history.

Pure functions: `recognise` reads a turn's words, `pick`/`refer` choose among results a tool
showed; core.reflex_answers words the replies and reads the results back. The session
(core.conversation, core.reflex_steps) runs them.
"""
from __future__ import annotations

import difflib
import functools
import itertools
import re
from collections.abc import Sequence
from functools import partial

import msgspec

from core.fastpath import Intent, Phrasing, Reference, ReflexKind
from core.intent import REQUEST_VERB, addressed_elsewhere, asks_ability, asks_to_watch, quoted_request, casual, remark, same_word, sent_to_phone
from core.lexicon import SENTENCE_END, alternation, fold, plainly_spoken, table, words
from core.places import zone_of
from core.timewords import in_digits


# ---- the words (core/words/<language>/requests.toml; the grammar that joins them stays here) ----
def _any(key: str, topic: str = "requests") -> str:
    """The list `key` of a topic (requests, follow_ups) as one alternation (core.lexicon.alternation)."""
    return alternation(topic, key)


LEAD = (r"^(?:(?:" + _any("lead_patterns") + r")(?:[\s,!.:]+|-(?=" + _any("lead_hyphened_patterns") + r")))*")
_TIME_NOW = re.compile(r"(?:" + _any("time_now_patterns") + r")")
# "который час в Токио", "what time is it in New York": another place's time is not the user's clock
_PLACE = re.compile(r"(?:\s(?:" + _any("place_prepositions") + r")\s+(?!" + _any("here_now_patterns") + r")\w)")
# a tool that tells another place's time: its summary names the time and a place or a zone
_PLACE_CLOCK = (re.compile(r"\btime\b", re.I), re.compile(r"cit(?:y|ies)|zone|place|countr|location|world", re.I))
TIMER_WORD = re.compile(r"(?:" + _any("timer_word_patterns") + r")")


def names_a_place(words: str) -> bool:
    """Whether the words name a place after its preposition ("а во владике", "in Tokyo"), not
    "here" or "now"."""
    return bool(_PLACE.search(" " + fold(words)))


# "завтра в 9", "в понедельник": a day the reflex does not count to; the model (or the user) says it
ANOTHER_DAY = re.compile(r"(?:^|\s)(?:" + _any("another_day_patterns") + r")(?=[\s,.!?;:]|$)")
# "actually scrap that one", "cancel it", "не, отмени его": no timer named; the one the turn before
# set or listed (the timers toolset's step says which), else the model asks
CANCEL_IT = re.compile(LEAD + r"(?:(?:" + _any("cancel_openers_patterns") + r")[\s,.!]+)*"
                        r"(?:" + _any("cancel_it_patterns") + r")"
                        r"(?:\s*[,—-]\s*(?P<why>[^,]{2,80}?))?[\s.!]*$")
YEAR = re.compile(r"(?<!\d)(?P<year>19\d\d|20\d\d)(?!\d)")
# ("и через час напомни …": the second request may open with its time)
_TWO_REQUESTS = re.compile("".join(f"(?<!{re.escape(w)})" for w in words("requests", "two_requests_not_after"))
                           + r"[\s,](?:" + _any("and_then_patterns") + r")\s+"
                           r"(?P<second>(?:" + _any("one_more_patterns") + r")(?=\s+(?:" + _any("one_more_time_words")
                           + r")\s)|(?:(?:" + _any("in_time_words") + r")\s+[\w:]+(?:\s+(?!(?:" + _any("and_words")
                           + r")\s)\w+){0,2}\s+)?(?:" + _any("second_request_verbs") + r")\b)")
# "keep an eye on my mail and tell me when something from Acme lands": a "tell me when" after "and"
# is a watch's own end, no second request
_TELL_WHEN = re.compile(r"(?:" + _any("tell_when_patterns") + r")(?!\w)")


def _second_request(raw: str, start: int = 0) -> re.Match[str] | None:
    """Where the words join a second request to the first ("…, and play X"), or None."""
    joint = _TWO_REQUESTS.search(raw, start)
    if joint is not None and _TELL_WHEN.match(raw, joint.start("second")) and asks_to_watch(raw[:joint.start()]):
        return None  # a watch's "… and tell me when it comes"; "play X and tell me when it ends" asks two things
    return joint


VERB_START = re.compile(LEAD + r"(?:" + _any("opening_verbs") + r")\b")
_NEGATION = re.compile(r"(?:^|\s)(?:(?:" + _any("negation_patterns") + r")\s+(?:\w+\s+)?(?:" + _any("negated_stems")
                       + r")(?!\w*(?:" + _any("negated_statement_endings") + r")(?!\w))|" + _any("negation_phrases_patterns") + r")")
# "двадцать пять минут": one number in digits, as the timer parser reads it
TENS: dict[str, int] = table("requests", "tens")  # type: ignore[assignment]
NUMBER_WORDS: dict[str, int] = table("requests", "units")  # type: ignore[assignment]
TEENS: dict[str, int] = table("requests", "teens")  # type: ignore[assignment]
_COMPOUND = re.compile(r"\b(?P<tens>" + "|".join(TENS) + r")(?:[\s-]+(?P<unit>" + "|".join(NUMBER_WORDS) + r"))?\b"
                       r"|\b(?P<teen>" + "|".join(TEENS) + r")\b")


_UNIT_WORD = re.compile(r"\b(?P<unit>" + "|".join(NUMBER_WORDS) + r")(?=[\s-]+(?:" + _any("unit_stems") + r"))")


_COUPLE = re.compile(r"(?<!\w)(?:" + _any("couple_patterns") + r")(?=\s+(?:" + _any("couple_units") + r")(?!\w))")


def in_figures(text: str) -> str:
    """"двадцать пять минут" -> "25 минут", "twenty-five" -> "25", "a one minute timer" -> "a 1
    minute timer" (a lone "пять" with no unit after it stays a word)."""
    def value(match: re.Match[str]) -> str:
        if match["teen"]:
            return str(TEENS[match["teen"]])
        return str(TENS[match["tens"]] + (NUMBER_WORDS[match["unit"]] if match["unit"] else 0))
    text = _COUPLE.sub("2", text)  # "через пару минут", "in a couple of minutes"
    return _UNIT_WORD.sub(lambda m: str(NUMBER_WORDS[m["unit"]]), _COMPOUND.sub(value, text))


_DOTTED_INITIALS = re.compile(r"(?<!\w)(?:[^\W\d_]\.){2,}")  # "L.A.", "a.m.": one word, its stops no punctuation


def _initials_joined(text: str) -> str:
    return _DOTTED_INITIALS.sub(lambda found: found.group(0).replace(".", ""), text)


def norm_words(text: str) -> str:
    text = _initials_joined(fold(text))
    text = re.sub(r"[«»\"“”„'`!?.,;:()\[\]]", " ", text)
    return " ".join(text.split())


def is_russian(text: str) -> bool:
    lowered = text.casefold()
    return len(re.findall(r"[а-яё]", lowered)) > len(re.findall(r"[a-z]", lowered))


# a sentence and where one ends; a decimal point ("in 2.5 hours") ends none
_SENTENCES = re.compile(r"(?:[^.?!]|(?<=\d)\.(?=\d))+[.?!]*")
_SENTENCE_END = re.compile(r"(?:\.(?!\d)|(?<!\d)\.|[?!])+")


def _plain_words(said: str) -> str:
    """Folded (core.lexicon.fold: lower case, ё as е), one space between words, a particle dropped ("включи-ка")."""
    return _PARTICLE.sub("", " ".join(_initials_joined(fold(said)).split()))


_PARTICLE = re.compile(r"(?<=\w)[-\s](?:" + _any("particles") + r")(?=[\s,.!?]|$)")


# "напомни, кто снял …", "remind me what year …": a fact asked for, opened by a reminder's word
_RECALL_FIRST = re.compile(r"^(?:(?:" + _any("recall_lead") + r")[\s,]+)*(?:" + _any("recall_verb_patterns") + r")[\s,]+"
                           r"(?=(?:(?:" + _any("question_lead") + r")\s+)?(?:" + _any("question_words") + r")(?!\w))")


# "а сколько там серий, напомни?", "how long is it again, remind me?": the question, the reminder's word after it
_RECALL_LAST = re.compile(r"(?<=\w),\s*(?:" + _any("recall_verb_patterns") + r")\s*\?\s*$")


def _last_sentence_asked(raw: str, phrasings: Sequence[Phrasing]) -> Intent | None:
    """The request of the last sentence, or of the clause a request verb opens after a comma ("у
    меня руки все в масле, засеки минут двадцать пять"), when everything before it is a plain
    statement: no question, no request, no condition, nobody's words told ("she said", "он
    сказал"); else None."""
    sentences = [part.strip() for part in _SENTENCES.findall(raw) if part.strip(" .!?,")]
    if len(sentences) >= 2:
        asked = _asked_after(" ".join(sentences[:-1]), sentences[-1], sentences[:-1], phrasings)
        if asked is not None:
            return asked
    for comma in (m.start() for m in re.finditer(",", raw)):
        rest = raw[comma + 1:].strip()
        if _opens_a_request(rest, phrasings) and not _LEAD_ONLY.fullmatch(raw[:comma + 1]):
            return _asked_after(raw[:comma], rest, raw[:comma].split(","), phrasings)
    return None


def _opens_a_request(clause: str, phrasings: Sequence[Phrasing]) -> bool:
    """A clause that starts as a request does: a request verb, "kill that one", or as a toolset's
    phrasing says one of its requests opens ("you can stop watching for …")."""
    return bool(VERB_START.match(clause) or REQUEST_VERB.match(clause) or CANCEL_IT.match(clause)
                or any(phrasing.opens(clause) for phrasing in phrasings))


def _asked_after(before: str, request: str, parts: list[str], phrasings: Sequence[Phrasing]) -> Intent | None:
    if "?" in before or _TOLD.search(before) or _CONDITION.search(before) or any(
            VERB_START.match(part.strip()) or recognise(part, phrasings) for part in parts):
        return None
    intent = recognise(request, phrasings)  # a question's "it" may be the title said before: not here
    kinds = ("timer_set", "timer_cancel", "timer_list", "playback", "play", "search", "watch", "unwatch")
    return intent if intent is not None and intent.kind in kinds else None


_CONDITION = re.compile(r"(?<!\w)(?:" + _any("condition_words") + r")(?!\w)")
_LEAD_ONLY = re.compile(LEAD + r"[\s,]*")  # "слушай," "ok so,": nothing said before the request


_TOLD = re.compile(r"(?<!\w)(?:" + _any("told_patterns") + r")(?!\w)")


# a second thought about a request: "no, I'm off tomorrow", "wait, 15", "хотя нет", "лучше в 8"
# the words of a second thought that every reading of one shares (each adds its own around them)
NO_WAIT = _any("no_wait_patterns")
_SECOND_THOUGHT = re.compile(r"^(?:(?:" + _any("second_thought_interjection_patterns") + r")\s+)*(?:"
                             + NO_WAIT + r"|" + _any("second_thought_patterns") + r")(?!\w)")


def second_thought(text: str) -> bool:
    """Whether `text` opens a second thought about what was asked (a no, a wait, a correction)."""
    return _SECOND_THOUGHT.match(norm_words(text).strip()) is not None


_NOT = frozenset(words("requests", "not_words"))


def says_not(text: str) -> bool:
    """Whether `text` says a "not" ("sorry, not pounds, ounces"): it may put a word of the turn before right."""
    return not _NOT.isdisjoint(norm_words(text).split())


# "room 241, not 214", "не 214, а 241": (the word taken back, the word in its place) (core/words/*/requests.toml)
_WORD_PUT_RIGHT = tuple(re.compile(rf"(?:{pattern})[\s.!?]*$", re.IGNORECASE) for pattern in words("requests", "word_put_right_patterns"))


def word_put_right(text: str) -> tuple[str, str] | None:
    """(wrong, right) of a second thought that names both ("oops, it's room 241, not 214"); None when it names no such pair."""
    found = next((match for pattern in _WORD_PUT_RIGHT for match in [pattern.search(text.strip())] if match is not None), None)
    return (found["wrong"], found["right"]) if found is not None and found["wrong"].casefold() != found["right"].casefold() else None


def tells_of_words(text: str) -> bool:
    """Whether `text` tells of someone's words ("my brother said", "она просила"): what follows is theirs, no request."""
    return _TOLD.search(norm_words(text)) is not None


def words_told_in(text: str) -> str:
    """The words told after the telling in the same clause ("the clinic said [my results would come
    by email]"); "" when the clause ends with the telling ("my wife said: …": hers are the next)."""
    plain = norm_words(text)
    told = _TOLD.search(plain)
    return plain[told.end():].strip() if told is not None else ""


@functools.cache
def builtin_phrasings() -> tuple[Phrasing, ...]:
    """The phrasings of the built-in toolsets (core.loading), for callers that have no session."""
    from core.loading import load_toolsets  # core.loading imports every toolset: only when asked
    from core.toolsets import phrasings_of

    return phrasings_of(load_toolsets())


def _request(phrasings: Sequence[Phrasing], kind: ReflexKind, words: str, said: str, russian: bool) -> Intent | None:
    """A request of `kind` made from the words that name its object, by the toolset whose
    phrasing makes such requests ("не Дюну, а Бегущего по лезвию": a play); None when none does."""
    make = next((phrasing.requests[kind] for phrasing in phrasings if kind in phrasing.requests), None)
    return None if make is None else make(kind, words, said, russian)


def recognise(said: str, phrasings: Sequence[Phrasing] | None = None) -> Intent | None:
    """The reflex a turn's words call for, or None: the model takes the turn. `said`: this
    turn's user words, one message; `phrasings`: the toolsets' (core.fastpath.Phrasing), tried
    after the runtime's own recognisers; the built-in toolsets' when not given. A change the
    words only ask whether it can be made ("… or is that not a thing you do") is none."""
    intent = _recognised(said, builtin_phrasings() if phrasings is None else phrasings)
    if intent is not None and intent.kind in _CHANGES and (asks_ability(intent.kind, said) or quoted_request(said)):  # type: ignore[arg-type]
        return None
    return intent



def _recognised(said: str, phrasings: Sequence[Phrasing]) -> Intent | None:
    if not said.strip() or "\n" in said.strip() or len(said) > 300:
        return None
    said = in_digits(plainly_spoken(said))  # "в полвосьмого", "семьдесят девятого года", "через часик", "скока": as patterns read them
    russian = is_russian(said)
    raw = _RECALL_LAST.sub("?", _RECALL_FIRST.sub("", _plain_words(said)))  # "напомни, кто снял Кин-дза-дзу?": the question
    joint = _second_request(raw)
    if joint is not None and re.fullmatch(LEAD, raw[:joint.start()].strip(" ,") + " "):
        joint = None  # "oh and another one for 45 minutes": one request, its "and" opens it
    last = _last_sentence_asked(raw, phrasings)
    if last is not None:  # "never mind, dinner's off, the kids ordered pizza. kill all my timers": the reasons first
        # read from the plain (lower-case) words: its text and subject as the user wrote them ("from Acme")
        subject = as_said(last.subject, said)
        text = as_said(last.text, said).replace(last.subject, subject) if last.subject else as_said(last.text, said)
        return msgspec.structs.replace(last, text=text, subject=subject)
    question = _own_sentence(_TIME_NOW, raw) if _TIME_NOW.search(raw) else None
    if question is not None and question != raw and not _NEGATION.search(" " + question):
        asked_time = _time_intent(question, said, russian)  # "… в Токио? у меня там друг, не хочу разбудить"
        if asked_time is not None:
            return asked_time  # a lookup; the remark's "не" is not about it
    if _NEGATION.search(" " + raw) and joint is None:  # "не надо за ним следить": an end of a watch; other "не": none
        negated = (read for phrasing in phrasings for read in phrasing.negated)
        return next((intent for read in negated for intent in [read(raw, said, russian)] if intent is not None), None)
    if joint is not None:
        return None  # "не ставь таймер", "don't play it", two requests at once: the model answers
    asked = [sentence for sentence in _SENTENCE_END.split(raw) if VERB_START.match(sentence.strip())]
    if len(asked) > 1 or asked and any(phrasing.asks_anywhere(raw) for phrasing in phrasings):
        return None  # "Найди Брат. Кто его снял?": two requests, the model takes both
    own = (partial(_correction_intent, phrasings=phrasings), _show_intent, _time_intent,
           partial(_follow_up_intent, phrasings=phrasings))
    first = (phrasing.first for phrasing in phrasings)
    for recognise_kind in itertools.chain(*first, own, *(phrasing.recognisers for phrasing in phrasings)):
        intent = recognise_kind(raw, said, russian)
        if intent is not None:
            return intent
    return None


# a condition, a later time or a thing already done: "если я усну", "maybe later", "i already paused it"
_NOT_NOW = re.compile(r"(?<!\w)(?:" + _any("not_now_patterns") + r")(?!\w)")




# what a reflex changes: held back when the words only ask whether it can be done
_CHANGES = frozenset({"timer_set", "timer_cancel", "timer_change", "play", "playback", "show", "watch", "unwatch"})


def held_back(said: str, kind: ReflexKind, *, day_read: bool = False, length_read: bool = False) -> bool:
    """Whether words ask for no change of `kind` now, however a command puts them: a negation ("не
    включай"; a cancel's own "не надо" aside), two requests at once, a condition or a later time
    ("если я усну выключи фильм", "maybe later play X", "напомни завтра в 9"; a watch's condition
    or a cancel's reason aside), a thing already done ("i already paused it"), words said to
    someone else ("Маш, включи …"). core.frame refuses a
    changing command on them. `day_read`: a template read the day said ("tomorrow at 7"), so
    another day holds nothing back; `length_read`: a template read the timer's length ("дай мне
    час, потом напомни …"), so a "later" is that length's."""
    if addressed_elsewhere(said) or quoted_request(said):  # "Маш, включи детям «Морозко»": someone else in the room
        return True  # is asked; "Ben keeps shouting 'play Toy Story!'": a request in someone's quoted words
    if kind in _CHANGES and asks_ability(kind, said):  # type: ignore[arg-type]  # "could you buzz me if …? or is that not a thing you do"
        return True
    if kind == "show" and sent_to_phone(said):  # "скинь мне на телефон код: 147": the phone's, not the screen's
        return True
    if kind == "show" and ":" in said:  # "glasses: table twelve, no sesame, no pesto": the text dictated is data
        said = said.split(":", 1)[0]
    raw = _plain_words(in_digits(said))
    joint = _second_request(raw)
    if joint is not None and not REQUEST_VERB.search(raw[:joint.start()]):
        joint = None  # "oh and another one for 45 minutes", "внучек, а включи …": one request
    if joint is not None or kind not in ("timer_cancel", "unwatch") and _NEGATION.search(" " + raw):
        return True
    if kind in ("watch", "timer_cancel", "unwatch"):
        return False  # a watch's condition, a cancel's reason ("my neighbour already moved it") are no "later"
    own = _from_the_request_on(said)
    later = not (kind == "timer_set" and length_read) and _NOT_NOW.search(raw if own == said.strip() else _plain_words(in_digits(own)))
    return bool(later or kind == "timer_set" and not day_read and ANOTHER_DAY.search(raw))


def _from_the_request_on(said: str) -> str:
    """The words from the request's sentence on: whole sentences before it that ask for nothing
    ("…, а адрес я потом не найду. скинь мне на телефон: …", "I never remember it later. send …")
    tell of the user's day, and a later time in them is not the request's. One that opens with a
    condition ("если я усну. выключи фильм") is the request's condition, written as a sentence. A
    last clause telling the speaker's own plan ("…, I'll order it in the app later") is left out too."""
    sentences = re.split(SENTENCE_END, _without_own_plan(said.strip()))
    at = 0
    while at < len(sentences) - 1 and remark(sentences[at]) and not _CONDITION.match(fold(sentences[at]).lstrip()):
        at += 1
    # a remark, then its consequence: "Mochi screams the house down if her dinner is late, so please remind
    # me …" (the "if" is the remark's, not a condition of the request)
    joint = _CONSEQUENCE.search(sentences[at])
    before = sentences[at][:joint.start()] if joint is not None else ""
    if before and remark(before) and not _CONDITION.match(fold(before).lstrip()) and not remark(sentences[at][joint.end():]):
        sentences[at] = sentences[at][joint.end():]
    return " ".join(sentences[at:])


_CONSEQUENCE = re.compile(r",\s*(?:" + _any("consequence_joint_words") + r")\s+", re.IGNORECASE)


# a clause after the request telling what the speaker will do ("…, I'll order it in the app later"): their plan's time
_OWN_PLAN_AFTER = re.compile(r"(?:,|\s[—–-])\s*(?:" + _any("own_plan_openers") + r")\s[^,.!?]*[.!?]?\s*$", re.IGNORECASE)


def _without_own_plan(said: str) -> str:
    """The words less a last clause telling the speaker's own plan, when it asks for nothing."""
    plan = _OWN_PLAN_AFTER.search(said)
    return said[:plan.start()] if plan is not None and remark(plan.group(0).lstrip(",—–- ")) else said


# a stop, then what to put on in its place: "…, давай лучше X", "…, put on X instead"
_STOP_THEN_OTHER = re.compile(r"^(?P<stop>.+?),\s*(?:" + _any("instead_patterns") + r")\s+(?P<title>.+?)(?:\s+"
                              + _any("instead_tail") + r")?[\s.!]*$", re.I)


def recognise_both(said: str, phrasings: Sequence[Phrasing] | None = None) -> tuple[Intent, ...] | None:
    """Two plain requests in one breath ("stop that and set a timer for 25 minutes", "найди
    Солярис и включи его"): both, in order, when each half alone is one a reflex takes; else
    None (the model takes the turn)."""
    phrasings = builtin_phrasings() if phrasings is None else phrasings
    if not said.strip() or "\n" in said.strip() or len(said) > 300:
        return None
    said = in_digits(plainly_spoken(said))
    raw = " ".join(fold(said).split())
    sentences = [part for part in re.split(r"(?<=[.!?;])\s+", said.strip()) if part.strip(" .!?;")]
    if len(sentences) == 2 and not _NEGATION.search(" " + raw):  # "turn it off, too scary. put on Toy Story instead"
        first, second = recognise(sentences[0], phrasings), recognise(sentences[1], phrasings)
        if first is not None and second is not None and first.kind != "follow_up" != second.kind:
            return first, second
    for pairs in (phrasing.pairs for phrasing in phrasings if phrasing.pairs is not None):
        found = pairs(said, raw, phrasings)  # "set a timer for 5 minutes for the eggs and 10 minutes for the rice"
        if found is not None:
            return found
    instead = _STOP_THEN_OTHER.match(said.strip())
    if instead is not None:  # "не, выключай, это все видели, давай лучше Бриллиантовую руку"
        first = recognise(instead["stop"], phrasings)
        second = _request(phrasings, "play", instead["title"], instead["title"], is_russian(said))
        if first is not None and first.kind == "playback" and first.action == "stop" and second is not None:
            return first, second
    joint = _second_request(raw)
    if joint is None or _NEGATION.search(" " + raw) or _second_request(raw, joint.end()):
        return None
    first = recognise(said[:joint.start()].strip(" ,"), phrasings)
    second = recognise(said[joint.start("second"):].strip(), phrasings)
    if len(said) != len(raw) or first is None or second is None:
        return None
    return first, second


_AROUND_TIME = frozenset(words("follow_ups", "around_time_words"))  # "который час у нас", "what time is it here"
# "what time is it in London and in Chicago?": two places asked of at once
_TWO_PLACES = re.compile(r"(?P<first>.+?)\s+(?:" + _any("place_joint_patterns", "follow_ups") + r")\s+(?P<second>.+)")


def places_apart(intent: Intent) -> tuple[Intent, Intent] | None:
    """Another place's time asked of two places at once, as two questions, each of one place
    ("London and in Chicago": London, Chicago) that a dictionary knows; None otherwise."""
    if intent.kind != "time_elsewhere":
        return None
    both = _TWO_PLACES.fullmatch(intent.subject)
    if both is None or zone_of(both["first"]) is None or zone_of(both["second"]) is None:
        return None
    return (msgspec.structs.replace(intent, subject=both["first"]), msgspec.structs.replace(intent, subject=both["second"]))


# what a question about a place's time asks: its clock, its day or its part of the day
_RATE = re.compile(r"(?<!\w)(?:" + _any("rate_patterns", "follow_ups") + r")(?!\w)")  # "miles per hour": no time asked
_TIME_WORDS = re.compile(r"(?:^|\s)(?:" + _any("time_words_patterns", "follow_ups") + r")(?=[\s,.!?]|$)")
_PLACE_NAMED = re.compile(r"(?:^|\s)(?:" + _any("place_prepositions") + r")\s+(?P<place>[^\W\d_]+(?:[\s-][^\W\d_]+){0,2})")
# what asks at all: "is it already sunday in sydney", "сколько …"
_ASKED = re.compile(r"(?:.*\s)?(?:" + _any("asked_patterns", "follow_ups") + r")\s")


# "сколько сейчас в Нью-Йорке", "а в Дубае щас сколько": "how much" of a place, said alone, is its time
_NOW_THERE = r"(?:\s+(?:" + _any("how_much_now_words", "follow_ups") + r"))*"
_HOW_MUCH = _any("how_much_words", "follow_ups")
_HOW_MUCH_THERE = re.compile(LEAD + r"(?:(?:" + _any("how_much_tell_words", "follow_ups") + r")\s+)?(?:(?:"
                             + _any("how_much_rather_words", "follow_ups") + r")\s+)?"
                             r"(?:(?:" + _HOW_MUCH + ")" + _NOW_THERE + r"\s+(?:" + _any("how_much_in_words", "follow_ups")
                             + r")\s+(?P<p1>[^\W\d_]+(?:[\s-][^\W\d_]+){0,2}?)|"
                             r"(?:" + _any("how_much_in_words", "follow_ups") + r")\s+(?P<p2>[^\W\d_]+(?:[\s-][^\W\d_]+){0,2}?)"
                             + _NOW_THERE + r"\s+(?:" + _HOW_MUCH + r"))" + _NOW_THERE + r"[\s?.!]*$")


def _place_time(raw: str, russian: bool) -> Intent | None:
    """"is it already sunday in sydney?", "а во Владивостоке сейчас сколько времени": a question
    about the time or day of a place the zones know (no action asked)."""
    how_much = _HOW_MUCH_THERE.match(raw)
    if how_much is not None and zone_of(how_much["p1"] or how_much["p2"]) is not None:
        return Intent(kind="time_elsewhere", russian=russian, subject=how_much["p1"] or how_much["p2"])
    asked = "?" in raw or _ASKED.match(raw + " ")
    if not asked or not _TIME_WORDS.search(_RATE.sub(" ", raw)) or VERB_START.match(raw) or TIMER_WORD.search(raw):
        return None
    for found in _PLACE_NAMED.finditer(raw):
        words = found["place"].split()
        for n in range(len(words), 0, -1):
            place = " ".join(words[:n]).strip(" ?!.,")
            if zone_of(place) is not None:
                return Intent(kind="time_elsewhere", russian=russian, subject=place)
    return None


def _own_sentence(pattern: re.Pattern[str], raw: str) -> str | None:
    """The sentence `pattern` is found in, when every other sentence is a plain statement ("какое
    сегодня число? я на даче счёт дням потерял": not a place "на даче …"); None when another is a
    request ("который час? поставь таймер на 5 минут": two, the model's); else `raw` whole."""
    sentences = _SENTENCES.findall(raw)
    holding = [s for s in sentences if pattern.search(s)]
    if len(sentences) < 2 or len(holding) != 1:
        return raw
    others = [s for s in sentences if s is not holding[0]]
    if any(VERB_START.match(s.strip(" ,")) for s in others):
        return None
    return raw if any("?" in s for s in others) else holding[0].strip()


def _time_intent(raw: str, said: str, russian: bool) -> Intent | None:
    raw = _own_sentence(_TIME_NOW, raw)
    if raw is None:
        return None
    match = _TIME_NOW.search(raw)
    if match is None:
        return _place_time(raw, russian)
    place = _PLACE.search(raw[match.end():] + " ")
    if place is not None:  # "what time is it in New York": a toolset that knows places, if one does
        where = _PLACE_TAIL.sub("", raw[match.end() + place.end() - 1:].strip(" ?!.,"))
        return Intent(kind="time_elsewhere", russian=russian, subject=where) if where else None
    before = _PLACE.search(" " + raw[:match.start()])
    if before is not None:  # "а в Париже сколько времени?"
        where = _PLACE_HEAD_TAIL.sub("", raw[before.end() - 2:match.start()].strip(" ,"))
        known = 0 < len(where.split()) <= 3 and zone_of(where) is not None  # not "в общем, который час?"
        return Intent(kind="time_elsewhere", russian=russian, subject=where) if known else None
    other_day = _OTHER_DAY.search(raw)
    if other_day is not None:  # "а завтра у нас какое число будет?": that day's date, not today's
        if not _DATE_ASKED.search(raw):
            return None  # "который час будет завтра в это время": the model's
        return Intent(kind="time_now", russian=russian, when=_DAY_OFFSETS[other_day.group(0).replace(" ", "")])
    rest = (raw[:match.start()] + " " + raw[match.end():]).strip(" ,!?.")
    # "привет, который час?" yes; "который час и поставь таймер", "сколько времени варить яйца" no:
    # the rest is small talk or polite words
    if rest and not casual(rest) and not set(norm_words(rest).split()) <= _AROUND_TIME:
        return None
    return Intent(kind="time_now", russian=russian)


_OTHER_DAY = re.compile(r"(?<!\w)(?:" + _any("other_day_patterns", "follow_ups") + r")(?!\w)")
# the words said after a place's name, or between it and the question, that are no part of it
_PLACE_TAIL = re.compile(r"(?:\s+(?:" + _any("place_tail_patterns", "follow_ups") + r"))+$")
_PLACE_HEAD_TAIL = re.compile(r"\s+(?:" + _any("place_head_tail_words", "follow_ups") + r")$")
_DATE_ASKED = re.compile(_any("date_stems", "follow_ups"))
_DAY_OFFSETS: dict[str, str] = table("follow_ups", "day_offsets")  # type: ignore[assignment]


def as_said(found: str, said: str) -> str:
    """`found` (cut from the lower-cased words) as the user wrote it: "позвонить Пете", "бельё"."""
    original = " ".join(said.split())
    at = fold(original).find(found)
    return original[at:at + len(found)] if at >= 0 and len(original.casefold()) == len(original) else found


_SCREEN = r"(?:" + _any("screen_patterns") + r")"
_SHOWN_OBJECT = r"(?:\s+(?:" + _any("shown_object_patterns") + r"))"  # "put this up on my screen: …", "на очки текст: …"
_SHOW = (re.compile(LEAD + r"(?:" + _any("show_verbs") + r")(?P<object>" + _SHOWN_OBJECT + r")?\s+" + _SCREEN
                    + r"(?:" + _SHOWN_OBJECT + r"(?=\s*[:—-]))?(?P<mark>\s*[:—-])?[\s,]*(?P<text>.+)$"),
         re.compile(LEAD + r"(?:" + _any("show_text_verbs") + r")\s+(?P<text>.+?)\s+" + _SCREEN
                    + r"[\s.!]*$"),
         # "glasses: table twelve, nut allergy", "на очки: …": the screen named alone, the text after its colon
         re.compile(LEAD + r"(?:" + _any("screen_alone_patterns") + r")(?P<mark>\s*:)\s*(?P<text>.+)$"))
# a screen's words that ask for something to be found or thought of ("погоду", "мои таймеры",
# "что ты думаешь о …", "который час"), not a text to put there: the model's
_NOT_DICTATED = re.compile(r"^(?:" + _any("not_dictated_patterns") + r")")


def _show_intent(raw: str, said: str, russian: bool) -> Intent | None:
    """"выведи на очки: купить молоко", "put 'meeting at 5' on my display": that text, as said."""
    for pattern in _SHOW:
        match = pattern.match(raw)
        dictated = match is not None and ("mark" in match.groupdict() and match["mark"] or _quoted_text(said))
        if match is not None and match.groupdict().get("object") and not dictated:
            return None  # "put that up on my display so I don't have to keep asking": what "that" is, the model knows
        if match is not None and not dictated and (_NOT_DICTATED.match(match["text"]) or len(match["text"].split()) < 2):
            return None  # "выведи на экран погоду": a request, not the words to show
        if match is not None:
            start, end = match.span("text")
            text = said.strip()[start:end] if len(said.strip()) == len(raw) else match["text"]
            text = text.strip(" \"'«»“”‘’.")
            return Intent(kind="show", russian=russian, text=text) if text else None
    return None


def _quoted_text(said: str) -> bool:
    return re.search(r"[«\"“'].+[»\"”']", said) is not None


# what said after a playback command asks for more: then the model takes the turn
ASKS_MORE = re.compile(r"\s(?:" + _any("asks_more_patterns") + r")\s")


# words a title shares with any speech ("matrix for" the kids, "кин-дза-дзу что" ли): no word of it
FUNCTION_WORDS = frozenset(words("requests", "function_words"))


def near_word(word: str, other: str) -> bool:
    """One word in another case ending ("отца"/"отец") or with a typo, not another word."""
    least = 0.7 if re.search(r"[а-я]", word) else 0.85
    return word == other or min(len(word), len(other)) >= 4 and difflib.SequenceMatcher(None, word, other).ratio() >= least


def names_a_skill(subject: str, skills: list[tuple[str, str]]) -> bool:
    """Whether a play or search's words name one of the user's own skills (its name or a word of
    its description, in any grammatical case): "запусти утреннюю зарядку" with a skill
    "morning-workout: утренняя зарядка" is the skill's recipe, not a catalog title (the model's)."""
    words = {w for w in norm_words(subject).split() if len(w) >= 4}
    return any(among(w, words) for name, description in skills
               for w in norm_words(name.replace("-", " ") + " " + description).split() if len(w) >= 4)


def skill_named(said: str, names: list[str]) -> str | None:
    """The user skill whose name's every word the turn says ("start my morning workout" ->
    "morning-workout"): its recipe is read for the model before its first step. None if none,
    or if the words name several."""
    words = set(norm_words(said).split())
    parts_of = {name: [w for w in norm_words(name.replace("-", " ").replace("_", " ")).split() if len(w) >= 3] for name in names}
    named = [name for name, parts in parts_of.items() if parts and all(among(part, words) for part in parts)]
    if not named and words & _MY:  # "let's do my plank thing": the one skill a word of whose name the user's own
        named = [name for name, parts in parts_of.items()
                 if any(len(part) >= 4 and part not in _GENERIC_SKILL_WORDS and among(part, words) for part in parts)]
    return named[0] if len(named) == 1 else None


_MY = frozenset(words("requests", "my_words"))
# words of many skills' names that say nothing of which ("morning", "routine"): never enough alone
_GENERIC_SKILL_WORDS = frozenset(words("requests", "generic_skill_words"))


def among(word: str, words: set[str]) -> bool:
    return word in words or any(same_word(word, other) for other in words)


_NAME_ARTICLE = re.compile(r"^(?:" + _any("name_articles") + r")\s+")


def close_to(said: str, name: str) -> bool:
    """Whether words said are a name with a typo or in another case, as a whole; a hyphen is a
    space (speech has none: "кин дза дзу" is «Кин-дза-дза!»)."""
    def spoken(text: str) -> str:
        return " ".join(norm_words(text).replace("-", " ").split())
    if difflib.SequenceMatcher(None, spoken(said), spoken(name)).ratio() >= 0.8:
        return True
    # a word split or joined in speech ("the irish man" is «The Irishman»): nearly the same letters, spaces
    # and a leading article aside ("prisoner one" is no «Prisoners»)
    def joined(text: str) -> str:
        return _NAME_ARTICLE.sub("", spoken(text)).replace(" ", "")
    return len(joined(said)) >= 6 and difflib.SequenceMatcher(None, joined(said), joined(name)).ratio() >= 0.9


_CHANNEL_END = r")(?=[\s,.!?]|$)"
CHANNELS = tuple((name, re.compile(r"(?:^|\s)(?:" + _any(by) + r")?(?:" + _any(f"{name}_patterns") + _CHANNEL_END))
                 for name, by in (("telegram", "channel_in_patterns"), ("whatsapp", "channel_in_patterns"),
                                  ("slack", "channel_in_patterns"), ("sms", "channel_by_patterns"),
                                  ("mail", "mail_by_patterns")))
# said after the request, not what to wait for: "…, would you?", "…, please"
POLITE_TAIL = re.compile(r"[\s,]+(?:" + _any("polite_tail_patterns") + r")[\s?.!]*$")


def without_polite_tail(said: str) -> str:
    """The words without ", would you?", ", please", ", ладно": said after a request, asking nothing more."""
    return POLITE_TAIL.sub("", said.rstrip())


# "стоп, не Дюну, а Бегущего по лезвию", "no, not Gravity, Arrival": the last request, another title
_CORRECTION = re.compile(LEAD + r"(?:(?:" + _any("not_words") + r")\s+(?P<wrong>[^,.!?]{2,40})\s*[,—-]+\s*(?:"
                         + _any("but_patterns") + r")?|"
                         # "I meant the series", "no, I meant Dune", "я имел в виду сериал"
                         r"(?:(?:" + _any("correction_no_patterns") + r")[\s,]+)?(?:" + _any("meant_patterns") + r"))\s*"
                         r"(?P<right>[^,.!?]{2,60}(?:[,.]\s+[^,.!?]{2,40})?)"
                         r"(?:[\s.!,]+(?:" + _any("correction_tail_patterns") + r"))?[\s.!]*$")


# a request put right in the same breath: "wake me up at 6 tomorrow, no wait, make it 6:30",
# "включи Шрека, ой, нет, лучше Шрека 2"
_PUT_RIGHT = re.compile(r"[,.;!?…]\s*(?:(?:" + _any("oops_words") + r")[\s,.!]+)?(?:" + _any("put_right_patterns")
                        + r"|" + NO_WAIT + r")(?:[\s,.!]+(?:" + _any("put_right_again_words") + r"))*[\s,.!]+(?=\S)")


def said_again_otherwise(said: str) -> tuple[str, str] | None:
    """(the request, the second thought) when words put a request right in the same breath;
    None when they do not."""
    found = _PUT_RIGHT.search(said)
    if found is None or not said[:found.start()].strip():
        return None
    return said[:found.start()].strip(), said[found.start() + 1:].strip()  # the second with its "no": a correction's opening


PUT_RIGHT_HOURS_MAX = 6  # a clock time put right further than this from the first may be in the other half of the day: the model's


def put_right(first: Intent | None, second: Intent | None) -> Intent | None:
    """The request as its second thought puts it: a timer's new time ("make it 6:30": the day said
    stays), a title's correction, or a whole request of the same kind instead; None when that is
    not plain (the model reads the words whole)."""
    if first is None or second is None:
        return None
    if first.kind == "timer_set" and second.kind == "timer_change":
        when, span = second.when, re.fullmatch(r"in \S+ (\S+)", first.when)
        if when[:1] in ("+", "-", ":"):
            return None  # "…at 8, no, half an hour later": moved from a time not yet set, the model's
        if when.isdigit():  # "…for 10 minutes, actually 15": the first's unit; "…at 6, no, 7": its clock
            when = f"in {when} {span[1]}" if span else f"{when}:00"
        if re.fullmatch(r"\d{1,2}:\d\d", when):  # a clock time, in the day the request named
            hour, _, minute = when.partition(":")
            first_hour = re.search(r"(\d{1,2}):\d\d$", first.when)
            if first_hour is not None and abs(int(hour) - int(first_hour[1])) > PUT_RIGHT_HOURS_MAX:
                return None  # "на завтра на шесть... не, на без четверти семь" read as 18:45: which half of the day, the model's
            when = f"{'tomorrow ' if first.when.startswith('tomorrow ') else ''}{int(hour):02d}:{minute}"
        return msgspec.structs.replace(first, when=when)
    if second.kind == "correction" and first.kind in ("play", "search", "details"):
        return corrected(second, first)
    return second if second.kind == first.kind else None


def _correction_intent(raw: str, said: str, russian: bool, *, phrasings: Sequence[Phrasing]) -> Intent | None:
    """The title put right; which request it corrects is the session's to find (the last one)."""
    match = _CORRECTION.match(raw)
    if match is None or VERB_START.match(match["right"]) or TIMER_WORD.search(raw):
        return None
    # a title, or "второй", "the 1979 one"
    titled = _request(phrasings, "play", match["right"], match["right"], russian)
    if titled is None:
        return None
    right = re.split(r"[,.]\s+", match["right"].strip())
    # "not diapers — wipes. baby wipes": the words said last, when they say the first again more fully
    right_said = right[-1] if len(right) == 2 and right[0].casefold() in right[1].casefold() else match["right"]
    return Intent(kind="correction", russian=russian, subject=titled.subject, reference=titled.reference,
                  wrong=as_said(match["wrong"] or "", said), text=as_said(right_said.strip(), said))


# "а в Дубае сколько?", "and what about here?": the last question again, of another place
_HERE = r"(?P<here>" + _any("here_patterns", "follow_ups") + r")"
_FOLLOW_UP = re.compile(r"^(?:" + _any("follow_up_lead", "follow_ups") + r")?[\s,]*(?:"
                        + _any("follow_up_what_about_patterns", "follow_ups") + r")?[\s,]*"
                        r"(?:" + _HERE + r"|(?:(?:" + _any("follow_up_prepositions", "follow_ups")
                        + r")\s+)?(?P<place>[^\W\d_]+(?:[\s-][^\W\d_]+){0,2}?))"
                        r"(?:[\s,]+(?:" + _any("follow_up_tail_patterns", "follow_ups") + r"))*[\s?.!]*$")
# what opens a follow-up at all: a place alone ("в Дубае") asks nothing
_FOLLOW_UP_OPENS = re.compile(r"(?:" + _any("follow_up_open_patterns", "follow_ups") + r")(?:\W|$)")


# "а какие ещё остались?", "what's still running?": after timers were set or cancelled, the timers left
_WHATS_LEFT = re.compile(r"^(?:" + _any("follow_up_lead", "follow_ups") + r")?[\s,]*(?:(?:"
                         + _any("whats_left_which_patterns", "follow_ups") + r")\s+"
                         r"(?:(?:" + _any("whats_left_still_patterns", "follow_ups") + r")\s+)*(?:"
                         + _any("whats_left_left_patterns", "follow_ups") + r")|"
                         # "how much time is left?", "сколько ещё осталось?": of the timer just talked about
                         r"(?:" + _any("whats_left_how_much_patterns", "follow_ups") + r")\s+(?:(?:"
                         + _any("whats_left_have_patterns", "follow_ups") + r")\s+)*(?:"
                         + _any("whats_left_time_left_patterns", "follow_ups") + r"))(?:\s+(?:"
                         + _any("whats_left_tail_patterns", "follow_ups") + r"))*[\s?.!]*$")


# "the second one", "первый", "а тот, что 2010 года?": one of the titles shown, said alone
_BARE_CHOICE = re.compile(r"^(?:(?:" + _any("choice_lead_patterns", "follow_ups") + r")[\s,]+)*(?P<rest>.{2,40}?)"
                          r"(?:[\s,]+(?:" + _any("choice_tail_words", "follow_ups") + r"))*[\s?.!]*$")


# the place just asked about, said again as "there": "а день у них какой?", "is it still Saturday there?"
_THERE_TOO = re.compile(r"(?<!\w)(?:" + _any("there_patterns", "follow_ups") + r")(?!\w)")
_DAY_OR_TIME = re.compile(r"(?<!\w)(?:" + _any("day_or_time_patterns", "follow_ups") + r")(?!\w)")
_ASKING_WORD = re.compile(r"^(?:" + "|".join(re.escape(w) + r"\s+" for w in words("follow_ups", "asking_lead")) + r")?(?:"
                          + _any("asking_words", "follow_ups") + r")(?!\w)")


_ACKNOWLEDGED = re.compile(r"^(?:(?:" + _any("acknowledged_patterns", "follow_ups") + r")[\s,!.]+)+")


def _follow_up_intent(raw: str, said: str, russian: bool, *, phrasings: Sequence[Phrasing]) -> Intent | None:
    """A place said after a question about the time ("а в Дубае сколько?"), or "what's left"
    after timers: which request it follows is the session's to find (the last one); "here" is
    the user's own clock."""
    raw = _ACKNOWLEDGED.sub("", raw)  # "ага, понятно, а у нас тут тогда сколько?"
    if _WHATS_LEFT.match(raw):
        return Intent(kind="follow_up", russian=russian, action="list")
    chosen = _BARE_CHOICE.match(raw)
    if chosen is not None and not VERB_START.match(chosen["rest"]):  # "the second one", "а тот, что 2010 года?"
        titled = _request(phrasings, "play", chosen["rest"], said, russian)
        if titled is not None and titled.reference is not None and titled.reference != Reference() and not titled.subject:
            asked = _question_about(raw, said, russian, phrasings)
            if asked is not None:  # "the older one, who directed it?": the question, of the one chosen
                return msgspec.structs.replace(asked, subject="", reference=titled.reference)
            return Intent(kind="follow_up", russian=titled.russian, reference=titled.reference)
    if _THERE_TOO.search(raw) and _DAY_OR_TIME.search(raw) and ("?" in raw or _ASKING_WORD.match(raw)) \
            and not re.search(r"\d", raw):  # "у них стендап в 13:00 по-ихнему, это во сколько у нас?" asks of a time said
        named = _zones_named(raw)
        if len(named) == 1:  # "сколько у них там в Стамбуле сейчас?", "my sister lives in Tokyo. what time is it over there?"
            return Intent(kind="time_elsewhere", russian=russian, subject=next(iter(named.values())))
        return Intent(kind="follow_up", russian=russian, text="there")  # "а день у них какой, уже завтрашний?"
    if not _FOLLOW_UP_OPENS.match(raw):
        return None  # a place alone ("в Дубае") asks nothing
    match = _FOLLOW_UP.match(raw)
    if match is None or match["place"] is not None and zone_of(match["place"]) is None:
        return None
    return Intent(kind="follow_up", russian=russian, subject="" if match["here"] else match["place"])


def _zones_named(raw: str) -> dict[str, str]:
    """zone -> the place as said, of each place the words name after a preposition ("in Tokyo", "в Стамбуле")."""
    named: dict[str, str] = {}
    for found in _PLACE_NAMED.finditer(raw):
        said = found["place"].split()
        place = next((" ".join(said[:n]) for n in range(len(said), 0, -1) if zone_of(" ".join(said[:n]))), "")
        if place:
            named.setdefault(zone_of(place) or "", place)
    return named


def _question_about(raw: str, said: str, russian: bool, phrasings: Sequence[Phrasing]) -> Intent | None:
    """A toolset's question about a title in the same words as a choice of one ("the second one,
    how long is it?"): a choice said with a question is no bare choice (which plays after a search)."""
    for recognise_kind in (read for phrasing in phrasings for read in phrasing.recognisers):
        intent = recognise_kind(raw, said, russian)
        if intent is not None and intent.kind == "details":
            return intent
    return None


def followed(intent: Intent, earlier: Intent | None) -> Intent | None:
    """The time question a follow-up repeats, of its place ("" for here), the timers left after
    a request about timers, or a title shown chosen alone ("the second one": played after a
    search, asked about after a details question); None when the request before was not of
    that kind."""
    if intent.reference is not None:  # a title shown chosen: played after a search, asked about after a question
        if earlier is not None and earlier.kind in ("search", "play"):
            return Intent(kind="play", russian=intent.russian, reference=intent.reference)
        if earlier is not None and earlier.kind == "details":
            return msgspec.structs.replace(earlier, subject="", reference=intent.reference, russian=intent.russian)
        return None
    if intent.action == "list":
        timers = earlier is not None and earlier.kind in ("timer_set", "timer_cancel", "timer_list")
        return Intent(kind="timer_list", russian=intent.russian) if timers else None
    if earlier is None or earlier.kind not in ("time_now", "time_elsewhere", "follow_up"):
        return None
    if intent.text == "there":  # the place of the question before, again
        return Intent(kind="time_elsewhere", russian=intent.russian, subject=earlier.subject) if earlier.subject else None
    if not intent.subject:
        return Intent(kind="time_now", russian=intent.russian)
    return Intent(kind="time_elsewhere", russian=intent.russian, subject=intent.subject)


def corrected(intent: Intent, earlier: Intent | None) -> Intent | None:
    """The earlier play, search or details request with the corrected title; a text put on the
    glasses with the wrong words said replaced ("put this on my glasses: dry cleaning, diapers" …
    "not diapers — wipes"); None for any other."""
    if earlier is not None and earlier.kind == "show" and intent.wrong and intent.text:
        wrong = re.compile(r"(?<!\w)" + re.escape(intent.wrong.strip()) + r"(?!\w)", re.IGNORECASE)
        if len(wrong.findall(earlier.text)) != 1:
            return None  # words the text does not hold, or holds twice: the model's
        return msgspec.structs.replace(earlier, text=wrong.sub(lambda _found: intent.text, earlier.text))
    if earlier is None or earlier.kind not in ("play", "search", "details"):
        return None
    return msgspec.structs.replace(earlier, subject=intent.subject, reference=intent.reference, russian=intent.russian)


