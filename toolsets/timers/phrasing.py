"""How the timers toolset's plain requests are said (issue 50): set a timer, an alarm or a
reminder ("разбуди меня завтра в 6:45", "remind me every day at 8 to take my pills", "засеки минут
двадцать пять"), put the one just set right ("actually make it 8 minutes", "нет, давай на 25"),
list them, cancel one or all, two in one breath. core.reflex.recognise tries `first` before the
runtime's own recognisers (their words hold times and numbers the clock's would misread) and
`pairs` for two timers at once (`PHRASING`, declared by the toolset's record); the steps that carry
them out are in toolsets/timers/local.py. Home Assistant's own timer sentences are matched first,
as data (intents.yaml).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from core.fastpath import Intent, Phrasing
from core.intent import remark
from core.lexicon import SENTENCE_END, alternation, table, words, words_of
from core.reflex import (ANOTHER_DAY, ASKS_MORE, CANCEL_IT, LEAD, NO_WAIT, NUMBER_WORDS, TEENS, TENS, TIMER_WORD,
                         VERB_START, as_said, in_figures, is_russian, recognise, second_thought, tells_of_words,
                         without_polite_tail)
from core.timewords import in_digits, lengths_in_units

WORDS = Path(__file__).with_name("words")  # this toolset's own word lists (core.lexicon, root=)

_SET_TIMER = re.compile(LEAD + r"(?:поставь|поставить|установи|установить|заведи|завести|засеки|засекай|засечь|запусти|"
                        r"включи|сделай|нужен|нужна|напомни(?:\s+мне)?|(?:раз)?буди(?:\s+меня)?|set|start|remind\s+me|"
                        r"(?:i\s+need|can\s+i\s+(?:get|have)|give\s+me|get\s+me|i'?d\s+like|i\s+want)(?=\s+(?:a\s+|an\s+|one\s+|another\s+)?"
                        r"(?:[\w-]+\s+){0,2}(?:timer|reminder|alarm|countdown))|"
                        r"wake\s+me(?:\s+up)?|give\s+me\s+a\s+heads[\s-]?up|nudge\s+me|buzz\s+me)(?![\w-])")


# verbs that ask for a timer only when one is named ("включи таймер на час"); else their object is anything
_ANY_OBJECT = re.compile(LEAD + r"(?:включи|сделай|нужен|нужна|запусти)(?![\w-])")


_TIMER_FIRST = re.compile(LEAD + r"(?:таймер|timer|будильник|alarm|напоминание|reminder|countdown|обратный\s+отсч[её]т|"
                          # "и ещё один на 25 минут пирог проверить", "and another one for 10 minutes"
                          r"(?:ещ[её]\s+)?(?:один|одну)|(?:another|one\s+more)(?:\s+one)?)(?=\s+(?:на|через|in|for)\s|\s+\d)")


_BARE_TIMER = re.compile(r"(?:таймер|timer|будильник|alarm|напоминание|напоминалк\w*|reminder)\b")


# "и ещё одно: через 40 минут созвон с Олегом", "oh and another one for 45 minutes, gym": one more
# timer, its time first and its text after
_ONE_MORE_LEAD = r"(?:(?:oh|ah|and|и|а|ну|ok|okay)[\s,]+)*"  # "oh and", "ну и": what opens one more
_ONE_MORE = re.compile(r"^" + _ONE_MORE_LEAD + r"(?:(?:set|make|start|поставь|заведи)\s+)?"
                       r"(?:(?:ещ[её]\s+)?(?:одн[оау]|один)|another\s+one|one\s+more|"
                       r"(?P<bare>ещ[её])(?=\s+(?:через|спустя)\s))"
                       # "another one at 7", "another one, 9 minutes for …"
                       r"[\s,:—-]+(?=(?:через|на|спустя|в|к|in|for|after|at)\s|\d+\s*(?:min|мин|sec|сек|hour|час|h\b)\w*"
                       r"(?:\s+(?:for|to|на|для|про)\s|,\s*(?:for|to|на|для|про)\s|[\s,.!]*$))")


# "через 40 минут полить цветы", "in 10 minutes to call mom": after the time, a thing to do
_TO_DO = re.compile(r"(?=(?:[а-я]+(?:ть|ться|ти|чь)|to\s+[a-z]+)(?:\s|$))")


# one more timer, a bare number (in the unit of the one before) and its name after a dash or a comma
_ONE_MORE_NAMED = re.compile(_ONE_MORE_LEAD + r"(?:(?:ещ[её]\s+)?(?:одн[оау]|один)|another(?:\s+one)?|"
                             r"one\s+more|ещ[её])[\s,:]+(?:(?:for|in|на|через)\s+)?(?P<n>\d+)\s*(?:,|\s[—–-])\s*"
                             r"(?P<text>[^\d,.!?:;]+?)[\s.!]*")
_NAME_WORDS_MAX = 4

_EVERY = re.compile(r"(?:кажд|every|each|ежедн|daily|по\s+будням)")


_DURATION = re.compile(
    r"(?<!\w)(?:(?:через|на|спустя|in|for|after)\s+)?"
    r"(?P<span>(?:an|one)\s+hour\s+and\s+a\s+half|one\s+and\s+a\s+half\s+hours|a\s+minute\s+and\s+a\s+half|час\s+с\s+половиной|(?:(?:\d+(?:[.,]\d+)?|одну|один|одна|две|два|три|четыре|пять|шесть|семь|восемь|девять|десять|"
    r"пятнадцать|двадцать|тридцать|полтора|полторы|a|an|one|two|three|four|five|six|seven|eight|nine|"
    r"ten|fifteen|twenty|thirty)\s*)?(?<![^\s\d])"
    r"(?:секунд\w*|сек|минут\w*|мин|час(?:а|ов)?|seconds?|secs?|minutes?|mins?|hours?|hrs?)(?!\w)"
    r"(?:\s+(?:и\s+|and\s+)?(?:\d+|\w+)\s+(?:минут\w*|minutes?))?"
    r"|полчаса|пол\s+часа|half\s+an\s+hour)")


_CLOCK = re.compile(r"(?:^|\s)(?:в|к|на|at|on|to|for)\s+(?:(?P<clock>\d{1,2}[:.]\d{2})\b(?!\s*(?:утра|вечера|am|pm))"
                    r"|(?P<hour>\d{1,2})(?:[:.](?P<minute>\d{2}))?\s*(?P<half>утра|вечера|дня|ночи|am|pm|a\.m\.|p\.m\.))")


_LIST_TIMERS = re.compile(r"(?:какие\s+(?:[а-я]+\s+){0,3}(?:таймер|напоминан|напоминалк)|список\s+(?:таймер|напоминан|напоминалк)|"
                          r"покажи\s+(?:мои\s+)?(?:таймер|напоминан|напоминалк)|сколько\s+(?:у\s+меня\s+)?таймер|"
                          r"what\s+(?:timers|reminders)|which\s+(?:timers|reminders)|list\s+(?:my\s+|the\s+)?(?:timers|reminders)|"
                          r"show\s+(?:me\s+)?(?:my\s+|the\s+)?(?:timers|reminders)|any\s+(?:timers|reminders)|"
                          r"what'?s\s+on\s+my\s+(?:timers|reminders)|"
                          r"что\s+(?:там\s+)?с\s+(?:таймер|напоминан|напоминалк)|что\s+(?:(?:у\s+меня|там)\s+)*по\s+(?:таймер|напоминан|напоминалк)|есть\s+(?:ли\s+)?у\s+меня\s+(?:таймер|напоминан|напоминалк)|"
                          r"сколько\s+(?:(?:там|ещ[её]|еще)\s+)*осталось\s+(?:на\s+|до\s+|по\s+)?(?:\w+\s+)?(?:таймер|напоминан|напоминалк|будильник)|"
                          r"how\s+long\s+(?:till|until|before)\s+(?:the|my)\s+(?:\w+\s+)?(?:timer|reminder|alarm)|"
                          r"how\s+(?:long|much\s+time|much\s+longer)\s+(?:is\s+)?(?:left\s+)?on\s+(?:the|my)\s+(?:\w+\s+)?(?:timer|reminder|alarm)|"
                          r"когда\s+(?:там\s+)?(?:сработает|зазвонит|прозвенит|сработают)\s+(?:мой\s+|мои\s+)?(?:таймер|будильник|напомин)|"
                          r"when\s+(?:does|will|do)\s+(?:my|the)\s+(?:\w+\s+)?(?:timers?|alarms?|reminders?)\s+go\s+off|"
                          r"how\s+(?:much\s+time|long)\s+(?:is\s+)?left\s+(?:on|for|till|until)\s+(?:the|my)\s+(?:timer|reminder|alarm))")


# the perfective imperative and the imperfective ("сними", "снимай": both ask it now)
_CANCEL_TIMER = re.compile(LEAD + r"(?:" + alternation("naming", "cancel_verb_patterns", WORDS) + r")\s+"
                           r"(?P<rest>.*(?:таймер|напоминан|будильник|timer|reminder|alarm).*)$")


# "kill the pizza one", "scrap the tea one", "убери тот, что про пиццу": a timer named by its text alone
_RU_PLACES = "|".join(sorted((str(w) for w in table("naming", "ordinals", WORDS) if re.fullmatch(r"[а-яё]+", str(w))),
                             key=len, reverse=True))
_CANCEL_ONE = re.compile(LEAD + r"(?:(?:cancel|scrap|kill|drop|delete|remove|ditch|get\s+rid\s+of)\s+(?P<en>(?:the|that)\s+.+?\s+one)|"
                         r"(?:отмени|убери|удали|сними|сбрось)\s+(?P<ru>(?:тот|то|ту|та)?[\s,]*(?:что|который|которое|которая)?\s*про\s+.+?)|"
                         # "отмени второй", "отменяй первый таймер": by its place in the order they were set
                         r"(?:отмени|отменяй|убери|убирай|удали|сними|снимай|сбрось)\s+(?P<ru_place>" + _RU_PLACES + r")(?:\s+(?:таймер|напоминание|будильник))?|"
                         r"(?P<ru_first>(?:то\s+|тот\s+|напоминание\s+|таймер\s+)?про\s+[^,]+?|(?:напоминание|таймер)\s+на\s+[^,]+?|"
                         # "духовку убери, я её уже выключил": the timer by one word of its text, said first
                         r"(?!(?:это|всё|все|его|её|ее|их|тот|эту|этот|оба|обе)\s)[а-яё]{4,})\s+(?:отмени|отменяй|убери|убирай|удали|сними|снимай|сбрось))"
                         r"(?:\s*[,—-]\s*(?P<why>[^,]{2,80}?))?[\s.!]*$")  # "…, I already took them off": its reason


_ALL = re.compile(r"(?:^|\s)(?:все|всё|all|every)(?:\s|$)")


# two timers in one request, the second's unit maybe left to the first's
_SPAN_UNIT = r"(?:минут\w*|час\w*|секунд\w*|minutes?|hours?|seconds?|mins?|hrs?)"


_TWO_TIMERS = re.compile(r"^.*?(?:таймер\w*|напомина\w*|напомни|timers?|reminders?|remind\s+me)[\s,:—-]+(?:.*?[\s,:—-])?"
                         r"(?:one\s+|один\s+|одну\s+)?(?P<first>(?:через|in|for|на)\s+\d+\s*(?P<unit>" + _SPAN_UNIT + r")\s+[^,]+?)"
                         r"[\s,]+(?:и|and)\s+(?:one\s+|второй\s+|другой\s+|another\s+|the\s+other\s+)?"
                         r"(?P<second>(?:через|in|for|на)\s+\d+(?:\s*(?P<unit2>" + _SPAN_UNIT + r"))?\s+.+?)[\s.!]*$")


_SPAN = re.compile(r"(?<!\w)\d+(?:[.,]\d+)?\s*(?P<unit>" + _SPAN_UNIT + r")(?!\w)")


_UNIT_RANK = (("сек", 0), ("sec", 0), ("мин", 1), ("min", 1), ("час", 2), ("hour", 2), ("hr", 2))


_AND = re.compile(r"(?<!\w)(?:and|и)(?!\w)")


# what names the next timer of a list: "and one for 8", "и ещё один на 10", "один на 5 минут, другой на 10"
_ANOTHER_TIMER = r"(?:" + alternation("naming", "another_timer_patterns", WORDS) + r")"
# what may stand between "and" and the second timer's length
_SECOND_LEAD = re.compile(r"\s*(?:" + _ANOTHER_TIMER + r"\s+)?(?:(?:for|in|на|через)\s*)?")


def _set_timer(said: str, *, length_next: bool = True) -> str:
    """The words of a plain timer request in the language of `said` ("set a timer for", "поставь
    таймер на"), to read one timer of several said in a breath as said on its own."""
    language = "ru" if is_russian(said) else "en"
    verb = words_of(language, "naming", "set_timer_words", WORDS)[0]
    return f"{verb} {words_of(language, 'naming', 'length_preposition_words', WORDS)[0]}" if length_next else verb


def _timers_apart(raw: str, phrasings: Sequence[Phrasing]) -> tuple[Intent, Intent] | None:
    """Two timers in one breath, each with its own length (and text): "set a timer for 5 minutes
    for the eggs and 10 minutes for the rice", "два таймера: на 5 минут и на полчаса"; never one
    length said in parts ("1 hour and 30 minutes"), nor a second request with a verb of its own."""
    raw = in_figures(lengths_in_units(raw))
    spans = list(_SPAN.finditer(raw))
    if not TIMER_WORD.search(raw) or len(spans) != 2 or _EVERY.search(raw):
        return None
    first, second = spans
    joints = list(_AND.finditer(raw, first.end(), second.start()))
    if len(joints) != 1 or not _SECOND_LEAD.fullmatch(raw[joints[0].end():second.start()]):
        return None
    rank = [next(r for stem, r in _UNIT_RANK if span["unit"].startswith(stem)) for span in spans]
    if not raw[first.end():joints[0].start()].strip(" ,") and rank[0] > rank[1]:
        return None  # one length said in parts
    lead = _set_timer(raw)
    one = recognise(f"{lead} {raw[first.start():joints[0].start()].strip(' ,')}", phrasings)
    two = recognise(f"{lead} {raw[second.start():].strip()}", phrasings)
    return (one, two) if one is not None and two is not None and one.kind == two.kind == "timer_set" else None


def _timer_pairs(said: str, raw: str, phrasings: Sequence[Phrasing]) -> tuple[Intent, ...] | None:
    """Two timers in one breath: "два таймера: через 10 минут полить цветы и через 20 проверить
    стирку" (the second's unit left to the first's), "set a timer for 5 minutes for the eggs and
    10 minutes for the rice"; None otherwise."""
    two = _TWO_TIMERS.match(in_figures(raw))
    if two is not None and len(said) == len(raw):
        remind = _set_timer(said, length_next=False)
        second = two["second"] if two["unit2"] else re.sub(r"^(\S+\s+\d+)", r"\1 " + two["unit"], two["second"])
        first, second = recognise(f"{remind} {two['first']}", phrasings), recognise(f"{remind} {second}", phrasings)
        if first is not None and second is not None and first.kind == second.kind == "timer_set":
            return first, second
    return _timers_listed(raw, phrasings) or _timers_apart(raw, phrasings) or _reminders_apart(raw, phrasings)


# "set three timers: 10 min for the rice, 25 for the chicken and 40 for the cake", "поставь два таймера:
# на пельмени семь минут и на компот полчаса": timers in the plural (maybe counted), then the list
_TIMERS_PLURAL = r"(?:" + alternation("naming", "timers_plural_patterns", WORDS) + r")"
_TIMERS_LISTED = re.compile(r"^(?P<verb>.*?)(?:(?P<count>\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
                            + r")\s+)?" + _TIMERS_PLURAL + r"\s*[:,—-]+\s*(?P<items>.+?)[\s.!]*$")
# timers counted or listed ("three timers", "timers: …"), not a text that names them ("… to check the timers")
_TIMERS_SAID_MANY = re.compile(r"(?<!\w)(?:\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\s+"
                               + _TIMERS_PLURAL + r"(?!\w)|(?<!\w)" + _TIMERS_PLURAL + r"\s*[:—-]")
_LIST_JOINT = re.compile(r",\s*(?:(?:and|и)\s+)?|\s+(?:and|и)\s+")
_BARE_NUMBER = re.compile(r"(?<![\w.,])\d+(?![\w.,])")
_ITEM_FILLER = re.compile(r"^" + _ANOTHER_TIMER + r"\s+(?=\S)")
_TIMERS_LISTED_MAX = 5  # a longer list is read back by the model, one it can ask about


def _timers_listed(raw: str, phrasings: Sequence[Phrasing]) -> tuple[Intent, ...] | None:
    """Timers named in the plural and listed, each item with its one length and its purpose, the
    unit of a bare number the item's before it ("…, 25 for the chicken"); as many items as a
    count says, if one is said. None when an item has no length or two, or reads as no timer."""
    raw = in_figures(lengths_in_units(raw))
    listed = _TIMERS_LISTED.match(raw)
    if listed is None or not _SET_TIMER.match(listed["verb"] or "set") or _EVERY.search(raw):
        return None
    count = listed["count"]
    said_count = int(count) if count and count.isdigit() else NUMBER_WORDS.get(count) if count else None
    items = [item.strip() for item in _LIST_JOINT.split(listed["items"]) if item.strip()]
    if not 2 <= len(items) <= _TIMERS_LISTED_MAX or said_count not in (None, len(items)):
        return None
    lead, unit, timers = _set_timer(raw), "", []
    for item in items:
        item = _ITEM_FILLER.sub("", item)  # "один на 5 минут, другой на 10", "и ещё один на 12 минут"
        spans, bare = list(_SPAN.finditer(item)), list(_BARE_NUMBER.finditer(item))
        if len(spans) == 1 and len(bare) <= 1:
            unit, length = spans[0]["unit"], spans[0]
        elif not spans and len(bare) == 1 and unit:
            length = bare[0]
        else:
            return None
        rest = (item[:length.start()] + " " + item[length.end():]).split()
        said = f"{lead} {length.group(0) if spans else length.group(0) + ' ' + unit} {' '.join(rest)}"
        intent = recognise(said, phrasings)
        if intent is None or intent.kind != "timer_set" or not intent.when.startswith("in ") or not (intent.text or count):
            return None  # with no count said, each item has its purpose: "timers: 1 hour and 30 minutes" is one length
        timers.append(intent)
    return tuple(timers)


# "remind me at 9 pm to call grandma, and at 10 to take the trash out": the request's verb, then two
# times, each with its own purpose; the second said with its preposition only
_REMINDERS_APART = re.compile(r"^(?P<verb>.*?)(?P<first>(?:at|in|for|в|к|через|на)\s+\S.*?),?\s+(?:and|и)\s+(?:also\s+|ещё\s+|еще\s+)?"
                              r"(?P<second>(?:at|in|for|в|к|через|на)\s+\d.*)$")


def _reminders_apart(raw: str, phrasings: Sequence[Phrasing]) -> tuple[Intent, Intent] | None:
    """Two reminders in one breath, each with its own time and purpose, the verb said once; both
    must read as timers with the verb alone, as the first is said whole."""
    apart = _REMINDERS_APART.match(in_digits(raw))
    if apart is None or not TIMER_WORD.search(apart["verb"]) or _EVERY.search(raw):
        return None
    one = recognise(apart["verb"] + apart["first"], phrasings)
    two = recognise(apart["verb"] + apart["second"], phrasings)
    if one is None or two is None or not one.kind == two.kind == "timer_set" or not one.text or not two.text:
        return None  # each has its own purpose: "in 1 hour and 30 minutes" is one length
    if two.text.casefold().split()[0] in _PLAN_OPENERS:
        return None  # "…, and at 10 I'll take the trash out": a plan told, not a second reminder
    return one, two


_PLAN_OPENERS = frozenset(words("naming", "plan_openers", WORDS))


# "таймер минут на двадцать", "часа на два": the number after its unit, an approximate span
_APPROXIMATE = re.compile(r"(?<!\w)(?P<unit>минут\w*|часа|часов|секунд\w*)\s+(?P<prep>на\s+|через\s+|за\s+)?(?P<n>\d+|полтора|"
                          r"(?:" + "|".join(TENS) + r")(?:\s+(?:" + "|".join(NUMBER_WORDS) + r"))?|"
                          + "|".join(sorted({*NUMBER_WORDS, *TEENS}, key=len, reverse=True)) + r")(?!\w)")


def _about_a_length(said: str) -> str:
    """"минут на двадцать" as "на двадцать минут": the span said with its number first."""
    return _APPROXIMATE.sub(lambda m: f"{(m['prep'] or 'на ').strip()} {m['n']} {m['unit']}", said)


_TELL_ME = re.compile(r"^(?:скажи|сообщи|tell)\s+(?:мне|me)\s+(?:(?:что|that|to)\s+)?")


_ABOUT_TIMERS = re.compile(r"(?:бывают|умеешь|можешь|виды|типы|can\s+you|kinds|types|how\s+do)")


# "at 7:15 tonight to take the chicken out for tomorrow": the day is today, tomorrow its purpose
_TODAY_SAID = re.compile(r"(?<!\w)(?:tonight|today|this\s+evening|сегодня|вечером)(?!\w)")


_FOR_A_DAY = re.compile(r"(?<!\w)(?:for|на|к)\s+(?:tomorrow|завтра\w*)(?!\w)")


# what plays put on pause ("поставь его на паузу на минутку"): "на минутку" there is no timer's length
_PAUSE_SAID = re.compile(r"(?<!\w)(?:" + alternation("naming", "pause_patterns", WORDS) + r")(?!\w)")


# "cancel all of them": every timer the turn before set or listed (toolsets/timers/local.py)
_CANCEL_THEM_ALL = re.compile(r"(?<!\w)(?:" + alternation("naming", "cancel_them_all_patterns", WORDS)
                              + r")(?!\w)")


def _cancel_them_all(raw: str) -> bool:
    """"ugh plans changed, cancel all of them": a remark before it at most, a reason after it."""
    said = _CANCEL_THEM_ALL.search(raw)
    if said is None or _asks_more(raw[said.end():].strip(" ,.!")):
        return False
    before = raw[: said.start()].strip(" ,.!")
    return not before or remark(before) and not tells_of_words(before)


# a second time in a timer's text: "напомни в 7 позвонить маме и в 8 забрать сына" is two reminders
_ANOTHER_TIME = re.compile(r"(?<!\w)(?:and|и)\s+(?:also\s+|ещ[её]\s+)?(?:at|in|в|к|через)\s+(?:\d|(?:"
                           + "|".join(sorted({*NUMBER_WORDS, *TEENS, *TENS}, key=len, reverse=True)) + r")(?!\w))")


def _timer_intent(raw: str, said: str, russian: bool) -> Intent | None:
    intent = _timer_intent_read(raw, said, russian)
    if intent is not None and intent.kind == "timer_set" and _ANOTHER_TIME.search(in_digits(intent.text)):
        return None  # two reminders, read apart by _timer_pairs, or the model's
    if intent is not None and intent.kind == "timer_set" and _TIMERS_SAID_MANY.search(raw):
        return None  # "set three timers: …": several, read apart by _timer_pairs, or the model's
    return intent


def _timer_intent_read(raw: str, said: str, russian: bool) -> Intent | None:
    if _PAUSE_SAID.search(raw):
        return None
    if _LIST_TIMERS.search(raw) and not _ABOUT_TIMERS.search(raw):
        return Intent(kind="timer_list", russian=russian)
    cancel = _CANCEL_TIMER.match(raw)
    if cancel:
        rest = " " + cancel["rest"] + " "
        return Intent(kind="timer_cancel", russian=russian, all_timers=bool(_ALL.search(rest)),
                      both_timers=bool(_BOTH.search(rest)), text=cancel["rest"])
    named = _CANCEL_ONE.match(raw)
    if named and not _asks_more(named["why"]):
        return Intent(kind="timer_cancel", russian=russian, text=named["en"] or named["ru"] or named["ru_place"] or named["ru_first"])
    both = _CANCEL_BOTH.match(raw)
    if both and not _asks_more(both["why"]):
        return Intent(kind="timer_cancel", russian=russian, both_timers=True)
    if _cancel_them_all(raw):
        return Intent(kind="timer_cancel", russian=russian, all_timers=True, last_timer=True)
    it = CANCEL_IT.match(raw)  # after a remark ("the garlic bread's done early, kill that one"): _last_sentence_asked
    if it and not _asks_more(it["why"]):
        return Intent(kind="timer_cancel", russian=russian, last_timer=True)
    raw = in_figures(_about_a_length(raw))
    one_more = _ONE_MORE.match(raw)  # before the lead words go: "и ещё через час …" keeps its "ещё"
    if one_more is not None and not one_more["bare"] and _CLOCK.match(" " + raw[one_more.end():]):
        return _timer_intent("set a timer " + raw[one_more.end():], said, russian)  # "and another one at 19:00, dinner"
    bare = re.fullmatch(r"(?:(?:for|in|на|через)\s+)?(\d+)[\s.!?]*", raw[one_more.end():]) if one_more else None
    if bare is not None and not one_more["bare"]:  # "and another one for 20": in the unit of the one before (the session's)
        return Intent(kind="timer_set", russian=russian, when=bare[1])
    named = _ONE_MORE_NAMED.fullmatch(raw)  # "и ещё двадцать пять — утка", "another one, twenty, lamb rack": the same unit
    if named is not None and len(named["text"].split()) <= _NAME_WORDS_MAX:
        return Intent(kind="timer_set", russian=russian, when=named["n"], text=as_said(named["text"], said))
    raw = raw[one_more.end():] if one_more else re.sub(LEAD, "", raw)  # "минут на двадцать": about 20
    leading = _DURATION.match(raw)  # "через минуту напомни выключить плиту": the time first
    said_after = raw[leading.end():].lstrip(" ,") if leading else raw
    if one_more and one_more["bare"] and not re.search(r"[а-я]{2,}(?:ть|ться|чь|нести|вести|везти|идти)(?:\s|$)", said_after):
        return None  # "а ещё через час придут гости": a remark; "и ещё через час цветы полить": a reminder
    if one_more and leading and not VERB_START.match(said_after):
        when, text = _when_and_text(raw)
        return Intent(kind="timer_set", russian=russian, when=when, text=as_said(text, said)) if when else None
    if leading:  # "через 15 минут скажи мне проверить бельё": "tell me" after a time is "remind me"
        said_after = _TELL_ME.sub("напомни ", said_after, count=1)
    start = (_SET_TIMER.match(said_after) or _TIMER_FIRST.match(said_after)  # "таймер на 5 минут, …"
             or (_BARE_TIMER.match(said_after) or _to_do(said_after, said, raw) if leading else None))  # "ten minute timer please"
    if start is None or not (TIMER_WORD.search(raw) or _DURATION.search(raw)) or _EVERY.search(raw):
        return None
    if _ANY_OBJECT.match(said_after) and not TIMER_WORD.search(said_after):
        return None  # "серёга, включи голову, … он же за час встанет": a verb of anything, no timer named
    if ANOTHER_DAY.search(_FOR_A_DAY.sub(" ", raw) if _TODAY_SAID.search(raw) else raw):
        return None  # "напомни завтра в 9": not the next 9:00, which may be today ("tonight … for tomorrow" is today)
    when, text = _when_and_text((leading.group(0) + " " if leading else "") + said_after[start.end():])
    if not when or re.search(r"(?:^|\s)(?:через|in)\s+\d+", text):
        return None  # "… полить цветы и через 20 проверить стирку": a second timer in the text (recognise_both)
    return Intent(kind="timer_set", russian=russian, when=when, text=as_said(text, said))


_NOT_AN_ACTION = frozenset(words("naming", "not_an_action_after_to_words", WORDS))


def _to_do(after: str, said: str, raw: str) -> re.Match[str] | None:
    """"10 minutes to check the oven", "через 10 минут проверить духовку": a length and what to do,
    no word of a timer; not a time left told ("ten minutes to the meeting", "Seven hours to Glasgow"
    before a question: a name or a determiner after "to", or more sentences after it)."""
    found = _TO_DO.match(after)
    to_what = re.match(r"to\s+(\S+)", after)
    if found is None or re.search(r"[.!?]\s+\w", raw.strip()):
        return None
    if to_what is not None and (to_what[1] in _NOT_AN_ACTION or re.search(r"\bto\s+[A-Z]", said)):
        return None
    return found


def _asks_more(why: str | None) -> bool:
    """Whether the words after a cancel ask for more than it ("…, and set one for 10"), not give
    its reason ("…, I'm rinsing it out now and my flatmate's doing the laundry")."""
    return bool(why) and bool(ASKS_MORE.search(" " + why + " ")) and not remark(why)


_VERB_AFTER_TIME = alternation("naming", "verb_after_time_patterns", WORDS)


def _when_and_text(rest: str) -> tuple[str, str]:
    """("in 5 minutes", "проверить чай") out of "таймер на 5 минут, чтобы проверить чай"; ("", "")
    when no single duration or clock time is said."""
    durations = list(_DURATION.finditer(rest))
    clocks = list(_CLOCK.finditer(" " + rest))
    if len(durations) + len(clocks) != 1:
        return "", ""
    if durations:
        found = durations[0]
        span = found["span"].strip()
        if re.fullmatch(r"[^\W\d]+", span) and span not in _ONE_OF_A_UNIT and span not in _SPAN_IN_DIGITS:
            return "", ""  # "таймер минут на восемь", "на два с лишним часа": a unit whose count is not read
        when = "in " + _SPAN_IN_DIGITS.get(span, span)
        start, end = found.start(), found.end()
    else:
        found = clocks[0]
        when = _clock_of(found)
        start, end = max(found.start() - 1, 0), found.end() - 1
        if not when:
            return "", ""
        hour, minute = when.split(":")
        if found["clock"] and int(hour) < 12 and _EVENING_SAID.search(rest):
            when = f"{int(hour) + 12:02d}:{minute}"  # "at 10:30 tonight": the evening's
    before = re.sub(r"(?:^|\s)(?:таймер\w*|будильник\w*|напоминание|напоминалк\w*|напомни(?:ть)?|мне|пожалуйста|please|like|about|real|quick|little|short|"
                    r"countdown|обратный\s+отсч[её]т|отсч[её]т|"
                    r"around|roughly|approximately|примерно|около|где-то|"
                    r"a|an|the|timer|reminder|alarm|me|on|for|на|через|in)(?=[\s,.!]|$)", " ", rest[:start])
    after = re.sub(r"^[\s,]*(?:" + _VERB_AFTER_TIME + r")\b", "", rest[end:])  # "таймер на сорок минут поставь, курица …"
    after = re.sub(r"^(?:\s*(?:пожалуйста|please|мне|me|timer|таймер|reminder)\b)*", "", after)
    after = re.sub(r"[\s,]+(?:пожалуйста|please|thanks|спасибо)[\s.!]*$", "", after)
    # "at 9:30 tonight", "в 8 вечером": when, said again, not what to remind of
    before, after = (_WHEN_WORDS.sub(" ", part) for part in (re.sub(r"^\s*(?:one|another)(?=\s|$)", "", before), after))
    text = _CONNECTOR.sub("", _CONNECTOR.sub("", before).strip(" ,.!?;:—-") + " " + after)
    text = " ".join(text.strip(" ,.!?;:—-").split())
    return when, "" if text.casefold() in ("таймер", "timer", "напоминание", "reminder", "будильник", "alarm") else text


# a unit said alone that means one of it ("через час", "in a minute"); "часа", "minutes" alone say no count
_ONE_OF_A_UNIT = frozenset(words("durations", "bare_unit_words"))


# a span said in words, as the timer's argument shows it ("in 30 minutes", not "in half an hour")
_SPAN_IN_DIGITS = {"half an hour": "30 minutes", "полчаса": "30 минут", "пол часа": "30 минут",
                   "an hour and a half": "90 minutes", "one hour and a half": "90 minutes",
                   "one and a half hours": "90 minutes", "a minute and a half": "90 seconds",
                   "час с половиной": "90 минут", "полтора часа": "90 минут", "полторы минуты": "90 секунд",
                   "an hour": "1 hour", "a minute": "1 minute", "час": "1 час", "минуту": "1 минуту"}


_WHEN_WORDS = re.compile(r"(?:^|\s)(?:tonight|this\s+evening|this\s+morning|today|сегодня\s+вечером|вечером|сегодня|утром)(?=[\s,.!?]|$)")


_EVENING_SAID = re.compile(r"(?<!\w)(?:" + alternation("guards", "evening_patterns") + r")(?!\w)")


def _clock_of(found: re.Match[str]) -> str:
    """"HH:MM" of "6:30", "7 утра", "7 pm", "3 дня"; "" for an hour no clock has."""
    if found["clock"]:
        return found["clock"].replace(".", ":")
    hour, minute, half = int(found["hour"]), int(found["minute"] or 0), found["half"].replace(".", "")
    if hour > 12 or minute > 59:
        return ""
    if half in ("вечера", "pm", "дня") and hour < 12:
        hour += 12
    elif half in ("утра", "am", "ночи") and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}"


# what joins a timer's time to its purpose: "..., чтобы проверить чай", "... to call mom"
_CONNECTOR = re.compile(r"^[\s,.:;—-]*(?:чтобы|чтоб|что|про|на|для|о\s+том,?\s+что|о|об|а\s+то|потому\s+что|to|that|about|for|"
                        r"so\s+i\s+can|so\s+that|because|cause|cos)?(?=\s|$)[\s,.:;—-]*")


# a timer just set, put right: "actually make it 10 minutes", "нет, давай на 25", "change it to 7:30"
_CHANGE_OPENING = re.compile(
    r"^(?:(?:" + NO_WAIT + r"|nah|oh|sorry|hmm|ой|стоп|а)[\s,.!]+)*"
    # one of several, by its words: "push the orchid one to ten", "перенеси напоминание про маму на восемь"
    r"(?:(?:move|push|bump|shift|change|make)\s+the\s+(?P<named>[\w'-]+(?:\s+[\w'-]+){0,3}?)\s+(?:one|timer|reminder|alarm)"
    r"(?:\s+back)?(?:\s+(?:to|for|at|in))?|"
    r"(?:перенеси|передвинь|сдвинь|переставь|поменяй)\s+(?:(?:таймер|напоминание|будильник|тот|то)[\s,]+(?:что\s+)?)?"
    r"(?:про|с|со|для)\s+(?P<named_ru>\w+(?:\s+\w+){0,2}?)\s+(?:на|в)|"
    r"(?:the\s+)?(?P<named_needs>[^\W\d]+(?:\s+[^\W\d]+){0,2}?)\s+(?:"
    + alternation("naming", "needs_patterns", WORDS) + r")(?:\s+(?:на|in|for))?|"
    r"(?:(?:can|could|would)\s+you\s+)?(?:make|change|set|move|switch|put|push|bump|shift)\s+"
    r"(?:it|(?:that|this|the|my)\s+(?:timer|alarm|reminder)|that)"
    r"(?:\s+back)?\s+(?:to|for|at|in)?|"
    r"(?:поставь\s+лучше|лучше\s+поставь|давай|лучше|сделай|переставь|поменяй|измени|перенеси|передвинь|сдвинь)(?:\s+(?:лучше|его|её|ее|таймер|будильник|напоминание))*"
    r"(?:\s+(?:на|через|в))?)?\s*")


# what may follow a put-right's new time and says nothing of it: "make it 10 instead", "давай на 25, ставь"
_AFTER_NEW_TIME = r"(?:\s+(?:instead|then|please|лучше|тогда|пожалуйста|поставим|ставим|поставь|засеки|засекай|заведём|заведем|давай))*"
# (a length of two units as well: "make it an hour ten" is read "1 hour 10 minutes" by core.timewords.in_digits)
_NEW_TIME = re.compile(r"(?:(?P<prep>in|for|at|на|через|в|к)\s+)?(?P<when>\d+(?:[:.]\d\d|[.,]\d(?=\s*" + _SPAN_UNIT
                       + r"))?(?:\s*" + _SPAN_UNIT
                       + r"(?:\s+(?:and\s+|и\s+)?\d+\s*" + _SPAN_UNIT + r")?)?)" + _AFTER_NEW_TIME)


# (one word, the old count, and its unit: "instead of the pasta one" names another timer)
_INSTEAD_OF = re.compile(r"\s+(?:" + alternation("naming", "instead_of_patterns", WORDS) + r")\s+[^\W_]+(?:\s+"
                         + _SPAN_UNIT + r")?$")


_ONE_MORE_SAID = re.compile(r"(?<!\w)(?:ещ[её]|another|one\s+more|second|второй|также|also|too)(?!\w)")


# "five oh": a number said again digit by digit
_DIGITS = {str(word): str(digit) for word, digit in table("spoken", "digits").items()}  # core/words/*/spoken.toml
# a clause that only says which time was wrong: "не на семь", "not seven", "не в 7"
_NOT_THAT = re.compile(r"^(?:не|not)\s+(?:(?:на|в|к|at|for|to|in)\s+)?[\w:]+(?:\s+[\w:]+)?$")


# a change said with no new time: "переставь", "change it" (the time said in the sentence before)
_BARE_CHANGE = re.compile(r"(?:" + alternation("naming", "bare_change_patterns", WORDS) + r")", re.IGNORECASE)
_FILLER_ALONE = re.compile(r"(?:" + alternation("requests", "filler_clause_patterns") + r")", re.IGNORECASE)


# a length said as the wrong one ("не сорок", "not forty"): not the one it is put right to
_WRONG_LENGTH = re.compile(r"(?<!\w)(?:не|not)\s+(?:(?:на|в|for|in)\s+)?\d+(?:[.,]\d+)?(?:\s*" + _SPAN_UNIT + r")?")


def _timer_change_intent(raw: str, said: str, russian: bool) -> Intent | None:
    """A new length or clock time for the timer just set, said as a second thought, among
    clauses that ask for nothing: before it remarks, a no, the time that was wrong ("ой нет, не
    на семь, они до восьми работают, давай на полвосьмого"), after it remarks only ("push that to
    half past eight, he's at choir practice until eight"); which timer is the session's to find
    (the one the turn before set)."""
    *before, last = re.split(SENTENCE_END, raw.strip()) or [""]
    *told, order = re.split(r",\s*", last)
    if told and _BARE_CHANGE.fullmatch(order.strip(" .!?")):  # "…, полчаса хватит, переставь": the change said last
        before, last = [*before, ", ".join(told)], order
    if all(remark(sentence) or _says_no(sentence) for sentence in before):
        if (changed := _changed_to(last, russian)) is not None:
            return changed  # "нет, давай на 25", "wait, 15"; "ой, нет, это ж эпоксидка, там сорок надо. переставь на сорок"
        # (a length with its unit as said: "…, что через полчаса будет. переставь" is 30 minutes, whatever the timer's unit)
        # (the length that was wrong left out: "бабка говорит, не сорок, полчаса хватит")
        said = _WRONG_LENGTH.sub(" ", in_figures(lengths_in_units(" ".join(before))))
        said_before = re.findall(r"\d+(?:[.,]\d+)?(?:\s*" + _SPAN_UNIT + r")?", said)
        if len(said_before) == 1 and _BARE_CHANGE.fullmatch(last.strip(" .!?")):
            return _changed_to(f"{last.strip(' .!?')} {said_before[0]}", russian)  # "…, там сорок пять. переставь"
    # (a dash ends a clause too: "make that forty-five — it's a long chapter")
    clauses = [part for part in re.split(SENTENCE_END + r"|,\s*|\s+[—–]\s+", raw.strip())
               if part.strip(" .!?") and not _FILLER_ALONE.fullmatch(part.strip(" .!?"))]
    # (the no may open the words, remarks between: "не-не-не, стоп, сахар другой, двенадцать давай")
    changed = [_changed_to(clause, russian, after_no=any(_says_no(before) for before in clauses[:at]))
               for at, clause in enumerate(clauses)]
    changes = [at for at, change in enumerate(changed) if change is not None]
    if len(changes) != 1:
        return None
    at = changes[0]
    before_ok = all(remark(c) or _says_no(c) for c in clauses[:at])
    after_ok = all(remark(c) and not second_thought(c) or _same_number(c, changed[at]) or _NOT_THAT.match(c.strip(" .!?"))
                   for c in clauses[at + 1:])  # "…, not twenty-five": the time that was wrong
    return changed[at] if before_ok and after_ok else None


def _says_no(clause: str) -> bool:
    """A clause that takes back what was asked: a no, a wait ("ой нет", "no no"), or the time
    that was wrong ("не в семь", "not seven")."""
    return second_thought(clause) or _NOT_THAT.match(clause.strip(" .!?")) is not None


def _same_number(clause: str, change: Intent | None) -> bool:
    """"no no, fifty. five oh.": the new number said again digit by digit, as people make sure of it."""
    digits = [_DIGITS.get(word) for word in clause.casefold().strip(" .!?").split()]
    return (change is not None and len(digits) > 1 and None not in digits
            and "".join(digits) == re.sub(r"\D", "", change.when))


_NOT_A_NAME = frozenset(words("naming", "not_a_name_words", WORDS))


# "30 минут попозже", "on 15 minutes earlier", "later by an hour": a move from the time the timer had
_LATER, _EARLIER = (alternation("naming", key, WORDS) for key in ("later_words", "earlier_words"))
_BY = alternation("naming", "shift_by_words", WORDS)
_LENGTH = r"(?:\d+(?:[.,]\d+)?\s*)?" + _SPAN_UNIT + r"(?:\s+(?:and\s+|и\s+)?\d+\s*" + _SPAN_UNIT + r")?"
_MOVED = re.compile(rf"(?:(?:{_BY})\s+)?(?P<length>{_LENGTH})\s+(?:(?P<later>{_LATER})|{_EARLIER})|"
                    rf"(?:(?P<later_first>{_LATER})|{_EARLIER})\s+(?:{_BY})\s+(?P<length_after>{_LENGTH})")
_MOVED_BACK = re.compile(r"\s(?:" + alternation("naming", "moved_back_words", WORDS) + r")(?:\s|$)")
_BARE_PARTS = {str(said).casefold(): str(number) for said, number in table("naming", "bare_parts", WORDS).items()}
_MINUTES_PAST = {phrase.casefold(): int(minute) for phrase, minute in table("naming", "minutes_past_its_hour", WORDS).items()}


def _moved_by(rest: str, *, moved_back: bool) -> str | None:
    """The move a put-right's words say, as `timer_change` reads it: "+30 minutes" later, "-15
    minutes" earlier, ":15" the minutes of the hour the timer had ("make it quarter past"); "push
    it back an hour" (a length after "back", no preposition) is later. None when they say none."""
    if (minute := _MINUTES_PAST.get(rest.casefold())) is not None:
        return f":{minute:02d}"
    if moved_back and re.fullmatch(r"\d+(?:[.,]\d+)?\s*" + _SPAN_UNIT, rest):
        return f"+{rest}"
    found = _MOVED.fullmatch(rest)
    if found is None:
        return None
    length = found["length"] or found["length_after"]
    length = length if length[0].isdigit() else f"1 {length}"  # "на час позже", "a minute later"
    return f"{'+' if found['later'] or found['later_first'] else '-'}{length}"


def _changed_to(clause: str, russian: bool, *, after_no: bool = False) -> Intent | None:
    """The put-right a clause says alone ("давай на 25", "make it seven"), or None. `after_no`:
    the clause before took the old time back ("ой нет, не в семь, в полвосьмого", "no no,
    fifty"), so the new time alone is the put-right."""
    text = in_figures(lengths_in_units(_about_a_length(clause))).strip(" .!?")  # "make it an hour", "давай на полчаса"
    text = _INSTEAD_OF.sub("", text)  # "давай три вместо пяти": the old number said after the new
    opening = _CHANGE_OPENING.match(text)
    if _ONE_MORE_SAID.search(text):
        return None  # "давай ещё на 10", "and another 5 minutes": a new timer beside it
    if opening is None or not (opening.group(0).strip() or after_no):
        return None  # a length alone ("20 minutes") may answer a question: no second thought said
    rest = text[opening.end():].strip(" ,.!?")
    rest = str(NUMBER_WORDS.get(rest.casefold(), rest))  # "make it seven": a lone number word is the number
    part = re.fullmatch(r"(?P<prep>(?:in|for|на|через)\s+)?(?P<said>[^\W\d_]+(?:\s+[^\W\d_]+){0,3})", rest)
    if part is not None and part["said"].casefold() in _BARE_PARTS:  # "давай через полтора": 1.5 of its unit
        return Intent(kind="timer_change", russian=russian, when=_BARE_PARTS[part["said"].casefold()])
    # "давай на час вместо сорока", "давай через час лучше": a unit alone is one of it
    rest = re.sub(r"^(?P<prep>(?:in|for|на|через)\s+)?(?P<unit>" + _SPAN_UNIT + r")(?=\s|$)", r"\g<prep>1 \g<unit>", rest,
                  flags=re.IGNORECASE)
    hour_minutes = re.fullmatch(r"(?P<prep>(?:at|в|на)\s+)?(?P<hour>[^\W\d_]+|\d{1,2})[\s-](?P<minute>[0-5]\d)"
                                + _AFTER_NEW_TIME, rest)
    if hour_minutes and str(NUMBER_WORDS.get(hour_minutes["hour"].casefold(), hour_minutes["hour"])).isdigit():
        rest = f"{NUMBER_WORDS.get(hour_minutes['hour'].casefold(), hour_minutes['hour'])}:{hour_minutes['minute']}"  # "six-thirty"
    if (moved := _moved_by(rest, moved_back=_MOVED_BACK.search(opening.group(0)) is not None)) is not None:
        return Intent(kind="timer_change", russian=russian, when=moved)
    changed = _NEW_TIME.fullmatch(rest)
    if changed is None:
        return None
    when = changed["when"]
    if re.fullmatch(r"\d+", when) and changed["prep"] in ("at", "в", "к"):
        when = f"{when}:00"  # "а в 8?": a clock hour, not a length
    elif re.search(_SPAN_UNIT, when, re.IGNORECASE):  # a length ("1.5 hours"); not a clock time ("7.30")
        when = f"in {when}"
    named = opening["named"] or opening["named_ru"] or opening["named_needs"] or ""
    if opening["named_needs"] and _NOT_A_NAME & set(named.casefold().split()):
        return None  # "the recipe says it takes 40 minutes": told, no timer named
    return Intent(kind="timer_change", russian=russian, when=when, text=named)


# "actually scratch both of them, I'm rinsing it out now": the two timers there are, a reason after
_CANCEL_BOTH = re.compile(LEAD + r"(?:(?:" + alternation("requests", "cancel_openers_patterns") + r")[\s,.!]+)*(?:"
                          + alternation("naming", "cancel_both_patterns", WORDS) + r")"
                          r"(?:\s*[,—-]\s*(?P<why>[^,]{2,80}?))?[\s.!]*$")
_BOTH = re.compile(r"(?<!\w)(?:" + alternation("naming", "both_words", WORDS) + r")(?!\w)")


# ---- its requests as commands of its frame list (intents.yaml: frame), for the frame bank ----------
# a timer's name as a cancel says it ("the timer for the tea"): the words that name a timer, not which
_TIMER_NAMED = re.compile(r"^(?:" + "|".join(re.escape(w) + r"\s+" for w in words("naming", "timer_article_words", WORDS))
                          + r")?(?:" + alternation("naming", "timer_name_patterns", WORDS)
                          + r")(?:\s+(?:" + alternation("naming", "timer_about_words", WORDS) + r"))?\b|"
                          r"\s*\b(?:" + alternation("naming", "timer_name_last_patterns", WORDS) + r")$", re.I)


def _commanded(intent: Intent) -> str | None:
    match intent.kind:
        case "timer_set":
            return _timer_command(intent)
        case "timer_list":
            return "list my timers"
        case "timer_cancel":
            return "cancel all timers" if intent.all_timers else f"cancel the timer {_TIMER_NAMED.sub('', intent.text)}".strip()
    return None


def _timer_command(intent: Intent) -> str:
    when = intent.when.removeprefix("in ").strip()
    if re.fullmatch(r"\d{1,2}:\d{2}", when):
        head = f"remind me at {when}"
    else:
        number = re.fullmatch(r"(\d+)\s+(\w+)", when)
        unit = number and ("hours" if number[2].startswith(words("naming", "hour_stems", WORDS)) else "minutes"
                           if number[2].startswith(words("naming", "minute_stems", WORDS)) else "")
        head = f"set a timer for {number[1]} {unit}" if unit else f"set a timer for {when}"
    return f"{head} to {intent.text}" if intent.text else head


# a timer asked for with no length, the length said in the sentences before it ("в рецепте сказано
# полтора часа. засеки, пожалуйста", "it needs two and a half hours in the oven. give me a shout when it's done")
_START_BARE = re.compile(r"^(?:" + alternation("naming", "start_bare_patterns", WORDS) + r")(?:[\s,]+(?:please|пожалуйста))?[\s.!]*$")


def _timer_for_length_before(raw: str, said: str, russian: bool) -> Intent | None:
    """A timer for the one length the sentences before the bare request say, each a remark; its
    text the first clause of them that says no length."""
    sentences = [part for part in re.split(r"(?<=[.!?…])\s+", raw.strip()) if part.strip(" .!?…")]
    if len(sentences) < 2 or not _START_BARE.match(without_polite_tail(sentences[-1].strip())):  # "…, would you?"
        return None
    before = sentences[:-1]
    spans = [span for sentence in before for span in _SPAN.finditer(in_figures(lengths_in_units(in_digits(sentence))))]
    if len(spans) != 1 or not all(remark(s) for s in before):
        return None  # "в рецепте сказано полтора часа": words told may give the length; the request is the user's
    clauses = [c.strip(" .!?…") for sentence in before for c in sentence.split(",")]
    with_span = next((at for at, c in enumerate(clauses) if _SPAN.search(in_figures(lengths_in_units(in_digits(c))))), len(clauses))
    # a clause before the length's (after it: what the user says of it, "I always do"), not an interjection ("ugh")
    text = next((c for c in clauses[:with_span] if len(c.split()) > 1 and not second_thought(c)), "")
    return Intent(kind="timer_set", russian=russian, when=f"in {spans[0].group(0)}", text=as_said(text, said))


PHRASING = Phrasing(first=(_timer_change_intent, _timer_intent, _timer_for_length_before), pairs=_timer_pairs,
                    commanded=_commanded)
