"""Local intents: the sentences a toolset answers without the model, matched whole.

This is how Home Assistant's Assist does it: a local intent is data - sentence templates per
language in the Home Assistant Intent Language (alternatives, optional words, slot lists, number
ranges, wildcards, expansion rules), matched by the `hassil` library - and whatever no template
matches goes to the model. A template matches a whole utterance, so a request outside every
toolset's sentences is never answered by one of them.

A toolset says what it answers in its folder's `intents.yaml`:

    # the intents of Home Assistant's community data (home-assistant-intents) it carries out,
    # each with the action it means (core.local_steps reads the action)
    home_assistant:
      HassStartTimer: timer_set
    # and sentences of its own, per language, in the same template language (with lists and
    # expansion rules of its own); an intent of action "call" calls one of its tools itself
    sentences:
      en:
        lists:
          unit: {values: [{in: "(mile|miles)", out: mi}, {in: "(kilometer|kilometers|km)", out: km}]}
        intents:
          ConvertUnits:
            action: call
            call: {tool: <the toolset's tool>, args: "{value}; {unit_from}; {unit_to}"}
            answer: "{result}."     # "" : the call is made, and the model words its result
            # free_text: true           # a wildcard slot is the tool's free text ("send {message} to my phone")
            # refers: {city: place}     # "make it my home city": a slot that points back is the place talked about
            sentences: ["convert {value} {unit:unit_from} to {unit:unit_to}"]
          # a question whose slots the words before it give ("eight ounces of butter. how many
          # grams is that?"): `context` is matched on the last run of those words (match_in_context);
          # a context of free text alone ("{message}") takes all the words before
          ConvertThat:
            action: call
            call: {tool: <the toolset's tool>, args: "{value}; {unit_from}; {unit_to}"}
            context: "{value} {unit:unit_from}"
            sentences: ["how many {unit:unit_to} is that"]
    # and what the session says when it carried out one of its requests itself, per language,
    # by name (`LocalIntents.respond`); a response no toolset words is left to the model
    responses:
      en:
        timer_set: "Timer set for {span}, it goes off at {at}{text}."
    # and what the frame (core.frame) may put other words as: its commands, one line of
    # alternatives each, in English, worked examples (what was said, the command, "-" for none),
    # and the words a command may add that its lines do not spell ("1 minute" of "<N> minutes")
    frame:
      commands: ["set a timer for <N> minutes to <what> | remind me at <HH:MM> to <what>"]
      examples: [["ping me in three minutes to stir the soup", "set a timer for 3 minutes to stir the soup"]]
      own_words: [minute, hour]

Nothing here knows a toolset: `LocalIntents.load` reads the files it is given (core.loading
finds them in the toolsets' folders), `match` returns a typed `LocalMatch`.
"""
from __future__ import annotations

import copy
import functools
import logging
import re
import string
from pathlib import Path
from typing import Callable, Container, Iterable

import msgspec
import yaml

from core import lexicon
from core.timewords import BELOW_ZERO, in_digits

# what opens a sentence and says nothing of it (core/words/*/requests.toml `sentence_opener_patterns`:
# "тогда", "so"): a sentence matches without it too
_OPENED = re.compile(r"^(?:(?:" + lexicon.alternation("requests", "sentence_opener_patterns") + r")[\s,!.:]+)+",
                     re.IGNORECASE)

_log = logging.getLogger("porfiry.intents")

LANGUAGES = ("en", "ru")
INTENTS_FILE = "intents.yaml"
# Home Assistant's templates name rooms, devices and floors; a session has none of them, so their
# lists are empty (a sentence that needs one never matches) and a satellite's own room is "here"
_EMPTY_LISTS = ("area", "name", "floor")
_HERE = {"area": "here"}
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)


class LocalMatch(msgspec.Struct, frozen=True, kw_only=True):
    """One utterance matched whole by one intent's template.

    `action`: what the toolset declared the intent does; `slots`: the values the template took
    (numbers as numbers: {"hours": 1, "minutes": 30}); `wildcard`: a slot took free text (a title,
    a command), so a closer reading of the same words may know better; `kind_named`: a word of a
    list said what that free text is ("play the tv show Breaking Bad": media_class); `read_first`:
    the intent's free text is only words to keep ("remind me every day at 8 to {reminder}"), so
    its reading goes first."""

    intent: str
    action: str
    language: str
    slots: dict[str, str | float] = {}
    wildcard: bool = False
    kind_named: bool = False
    call: "DeclaredCall | None" = None
    ends_free: bool = False  # free text took the words' end ("скинь мне на телефон {message}"): it may go on past them
    read_first: bool = False  # its toolset says its reading goes first even with free text


class IntentFileError(ValueError):
    """An intents.yaml that cannot be read: the file and what is wrong."""


def language_of(text: str) -> str:
    return "ru" if _CYRILLIC.search(text) else "en"


class DeclaredCall(msgspec.Struct, frozen=True):
    """An intent that calls one tool of its toolset: `args` a template of the match's slots
    ("{value}; {unit_from}; {unit_to}"), `answer` what the user is told, a template of the slots
    and `{result}` (the tool's text), in the language of the sentences it was declared with; ""
    when the model words the result (a list only the model can say well: the call is made first)."""

    tool: str
    args: str
    answer: str = "{result}"
    free_text: bool = False  # its wildcard is the tool's free text (a message to send), not a name to resolve
    # a slot said as a word that points back ("сделай его домашним городом"): the kind of thing it is, which
    # the conversation gives ("place": the place it last asked the time of); {slot: kind}
    refers: dict[str, str] = {}


REFERENCE_KINDS = ("place", "text", "answer")  # what a slot may point back to (DeclaredCall.refers)


class FrameSpec(msgspec.Struct, frozen=True):
    """What the frame (core.frame) may put words no sentence matched as: the loaded files' `frame`
    commands, the toolsets' in catalog order and then the runtime's own (the clock, the screen:
    the order the embedded model was tuned with), and their worked examples in the same order,
    those that ask for nothing ("-") last of all, so the last thing the model reads before the
    user's words is that nothing is an answer too."""

    commands: tuple[str, ...] = ()
    examples: tuple[tuple[str, str], ...] = ()
    own_words: tuple[str, ...] = ()  # words a command may hold that no line spells (the frame's own, not the user's)


NO_COMMAND = "-"  # the frame's answer for words that ask for none of its commands


RUNTIME_INTENTS = Path(__file__).with_name(INTENTS_FILE)  # the runtime's own (the clock, the screen)


def frame_spec(declared: Iterable[tuple[Path, dict]]) -> FrameSpec:
    """The frame of the read intents files (path, contents): the toolsets' in their order, then
    the runtime's own."""
    declared = list(declared)
    own = [spec for path, spec in declared if path.resolve() == RUNTIME_INTENTS.resolve()]
    frames = [spec.get("frame", {}) for spec in
              [*(spec for path, spec in declared if path.resolve() != RUNTIME_INTENTS.resolve()), *own]]
    examples = [(said, command) for frame in frames for said, command in frame.get("examples", [])]
    return FrameSpec(commands=tuple(line for frame in frames for line in frame.get("commands", [])),
                     examples=tuple([e for e in examples if e[1] != NO_COMMAND] + [e for e in examples if e[1] == NO_COMMAND]),
                     own_words=tuple(dict.fromkeys(word for frame in frames for word in frame.get("own_words", []))))


def read_frame_spec(files: Iterable[Path], languages: Iterable[str] = LANGUAGES) -> FrameSpec:
    """The frame the intents `files` declare (the warm-up's, the tools'), of the files a session
    loads: one that cannot be used is left out, as `LocalIntents.load` leaves it out. Checked, not
    compiled: the LLM worker asks for it and matches nothing."""
    declared = []
    for path in files:
        try:
            declared.append((path, _checked(path, _read(path, _bytes_of(path)), tuple(languages))))
        except IntentFileError as exc:
            _log.warning("%s; its frame commands are left out", exc)
    return frame_spec(declared)


def _only_free(result) -> bool:
    """Whether every slot of `result` is free text (a wildcard): it says nothing of its own."""
    said = [entity for name, entity in result.entities.items() if name not in _EMPTY_LISTS]
    return bool(said) and all(entity.is_wildcard for entity in said)


def _opened_wildcard(result) -> bool:
    """Whether a free slot of `result` took words that open a sentence and say nothing ("так что
    давай Дубай" as a city)."""
    return any(entity.is_wildcard and _OPENED.match(str(entity.text)) for entity in result.entities.values())


def _value_words(owns: Iterable[dict]) -> frozenset[str]:
    """The words of the values of the toolsets' lists of units of measure (a list's `measures:
    true`: "celsius", "pounds"), folded: what a number said as paired hundreds may stand before
    (core.lexicon.paired_hundreds_in_figures); hassil itself leaves the key alone."""
    said = [value.get("in", "") if isinstance(value, dict) else value for own in owns
            for listed in own.get("lists", {}).values() if isinstance(listed, dict) and listed.get("measures") is True
            for value in listed.get("values", []) or []]
    firsts = (re.findall(r"[^\W\d_]+", alternative)[:1] for text in said if isinstance(text, str)
              for alternative in re.split(r"[|()\[\]]", text))  # "miles an hour": a number stands before "miles"
    return frozenset(lexicon.fold(word) for first in firsts for word in first)


class LocalIntents:
    """The loaded intents of every language, the action each one means and the calls declared."""

    def __init__(self, compiled: dict, actions: dict[str, str], calls: dict[tuple[str, str], DeclaredCall],
                 read_first: frozenset[str] = frozenset(), borrowed: frozenset[str] = frozenset(),
                 responses: dict[tuple[str, str], str] | None = None, frame: FrameSpec | None = None,
                 contexts: dict | None = None, list_words: dict[str, frozenset[str]] | None = None,
                 value_lists: dict | None = None) -> None:
        self._compiled = compiled  # language -> (hassil Intents, slot lists)
        self._value_lists = value_lists or {}  # language -> (an intent per list of values, their first words)
        self._list_words = list_words or {}  # language -> the folded words of the toolsets' list values (units)
        self._contexts = contexts or {}  # language -> (hassil Intents of the `context` templates, slot lists)
        self.frame = frame or FrameSpec()  # what the frame may answer with (core.frame)
        self.responses = responses or {}  # (response name, language) -> its template
        self.actions = actions  # intent name -> action
        self.calls = calls  # (intent name, language) -> the call an intent of action "call" makes
        self.read_first = read_first  # intents whose reading goes first even with free text
        self.borrowed = borrowed  # Home Assistant's intents: on a tie a toolset's own sentence wins
        self._told: set = set()  # template errors already logged
        self._matches: dict[tuple[str, str], LocalMatch | None] = {}  # the last answers of `match`, oldest first

    @classmethod
    def empty(cls) -> "LocalIntents":
        return cls({}, {}, {})

    @classmethod
    def load(cls, files: Iterable[Path], languages: Iterable[str] = LANGUAGES,
             on_error: Callable[[IntentFileError], None] | None = None) -> "LocalIntents":
        """The intents the files declare, compiled per language. A file that cannot be used
        raises IntentFileError, or with `on_error` is told to it and left out (the others load).
        Compiling takes seconds of CPU, so the same files (path and bytes) in the same languages
        are compiled once per process: a restarted session actor, or the next of many runtimes a
        process starts, gets its own copy of what was compiled, and the same errors told again."""
        read = tuple((Path(path), _bytes_of(Path(path))) for path in files)
        languages = tuple(languages)
        key = (tuple((str(path), raw) for path, raw in read), languages)
        if (known := _COMPILED.get(key)) is None:
            errors: list[IntentFileError] = []
            known = cls._compiled_from(read, languages, errors.append), tuple(errors)
            _COMPILED[key] = known
            while len(_COMPILED) > COMPILED_KEPT:
                _COMPILED.pop(next(iter(_COMPILED)))
        loaded, errors = known
        for error in errors:
            if on_error is None:
                raise error
            on_error(error)
        return copy.copy(loaded)._fresh()

    def _fresh(self) -> "LocalIntents":
        self._told, self._matches = set(), {}  # each runtime logs a bad template once itself
        return self

    @classmethod
    def _compiled_from(cls, files: tuple[tuple[Path, bytes | None], ...], languages: tuple[str, ...],
                       on_error: Callable[[IntentFileError], None]) -> "LocalIntents":
        declared = []
        for path, raw in files:
            try:
                declared.append((path, _checked(path, _read(path, raw), languages)))
            except IntentFileError as exc:
                on_error(exc)
        actions = {name: action for _path, spec in declared for name, action in spec.get("home_assistant", {}).items()}
        responses = {(name, language): template for _path, spec in declared
                     for language, own in spec.get("responses", {}).items() for name, template in own.items()}
        borrowed = frozenset(actions)
        calls: dict[tuple[str, str], DeclaredCall] = {}
        read_first: set[str] = set()
        compiled, contexts, list_words, value_lists = {}, {}, {}, {}
        for language in languages:
            merged = _home_assistant_data(language, set(actions))
            owns = _scoped_files([spec.get("sentences", {}).get(language, {}) for _path, spec in declared])
            for (path, spec), own in zip(declared, owns):
                merged["lists"].update(own.get("lists", {}))
                merged["expansion_rules"].update(own.get("expansion_rules", {}))
                merged["skip_words"] += own.get("skip_words", [])  # said around any request: "anyway", "кстати"
                for name, intent in own.get("intents", {}).items():
                    actions[name] = _own_action(path, name, intent)
                    if "call" in intent:
                        calls[name, language] = _declared_call(path, name, intent)
                    if intent.get("read_first"):
                        read_first.add(name)
                    merged["intents"].setdefault(name, {"data": []})["data"].append(
                        {"sentences": list(intent["sentences"]), **({"slots": intent["slots"]} if "slots" in intent else {})})
            compiled[language] = _compile(merged)
            list_words[language] = _value_words(owns)
            if (values := _value_lists(merged)) is not None:
                value_lists[language] = values
            context = {name: {"data": [{"sentences": [intent["context"]]}]} for own in owns
                       for name, intent in own.get("intents", {}).items() if isinstance(intent.get("context"), str)}
            if context:
                contexts[language] = _compile({**merged, "intents": context})
        return cls(compiled, actions, calls, frozenset(read_first), borrowed, responses,
                   frame_spec(declared), contexts, list_words, value_lists)

    def match_in_context(self, text: str, *, remark: Callable[[str], bool] | None = None) -> LocalMatch | None:
        """The last sentence or clause of `text` matched whole by an intent that declares a
        `context` (the template of what the words before it give, "<amount> {unit:unit_from}"),
        its slots completed by the last run of the words before that the template matches:
        "this recipe wants eight ounces of butter. how many grams is that?" converts 8 oz to g.
        With `remark` (whether a sentence asks for nothing), the matched one may be followed by
        remarks ("… how many liters is that? the bottle only talks in liters"); one that ends in a
        colon is given by the words after it ("push this to my phone: the gate code is 3318"). None when no
        such intent matches, or nothing before gives its context, or a number word stands just
        before what did ("four twenty-five Fahrenheit" is no 25 °F)."""
        if language_of(text) not in self._contexts:
            return None  # no toolset declares a context in this language: no match to try (the per-event path)
        match, before = self._order_before_its_colon(text), []
        # the last sentence, else the last clause (a dash ends one: "мы ж не американцы — это сколько в градусах?")
        for ends in (lexicon.SENTENCE_END, r"(?<=[.!?,;:])\s+|\s+[—–]\s+"):
            parts = re.split(ends, text.strip()) or [""]
            for at in range(len(parts) - 1, 0, -1) if match is None else ():
                if at < len(parts) - 1 and (remark is None or not all(remark(part) for part in parts[at + 1:])):
                    # what follows asks for something: the question runs on past its comma ("это по-человечески
                    # сколько, в цельсиях?"), read whole to its sentence's end, or it is not this one
                    whole = " ".join(parts[at:]) if not any(part.rstrip().endswith((".", "!", "?")) for part in parts[at:-1]) else ""
                    match, before = (self.match(whole.strip(" .!?")) if whole else None), parts[:at]
                    break
                match, before = self.match(parts[at].strip(" .!?")), parts[:at]
                colon = next((at + 1 + k for k, part in enumerate(parts[at:]) if part.rstrip().endswith(":")), None)
                if match is not None and colon is not None and not any(p.rstrip().endswith((".", "!", "?")) for p in parts[at:colon - 1]):
                    # "push this to my phone: the gate code is 3318", "send this to my phone, high priority: return
                    # the book": "this" is what follows the colon of its sentence
                    before = parts[colon:]
                if match is not None:
                    break
            if match is not None:
                break
        if match is not None and not before:  # the order first: what "this" is follows its colon
            before = [text.partition(":")[2]]
        if match is None or match.language not in self._contexts:
            return None
        intents, lists = self._contexts[match.language]
        if match.intent not in intents.intents:
            return None
        said_before = lexicon.paired_hundreds_in_figures(lexicon.hundreds_in_figures(" ".join(before)),  # "a hundred and forty"
                                                         self._list_words.get(match.language, ()))
        asked = {value for value in match.slots.values() if isinstance(value, str)}
        given = _context_slots(said_before, match.intent, intents, lists, match.language, asked)
        return None if given is None else msgspec.structs.replace(match, slots={**given, **match.slots})

    def values_named(self, text: str) -> list[tuple[str, str]]:
        """(list, value) for each run of words in `text` that names a value of a toolset's list of
        values, in the order said, the longest run first where runs overlap: "ой, не фунтов, а
        унций" -> [("unit", "lb"), ("unit", "oz")]. Lists of numbers and wildcards name none."""
        from hassil import recognize_all

        language = language_of(text)
        if language not in self._value_lists:
            return []
        (intents, lists), firsts = self._value_lists[language]
        words = [word for word in (word.strip("«»\"“”'.,!?;:()") for word in text.split()) if word]
        named, at = [], 0
        while at < len(words):
            runs = range(min(VALUE_WORDS_MAX, len(words) - at), 0, -1) if lexicon.fold(words[at]) in firsts else ()
            found = next(((length, result) for length in runs for result in recognize_all(
                " ".join(words[at:at + length]), intents, slot_lists=lists, intent_context=_HERE, language=language)), None)
            if found is not None:
                named.append((found[1].intent.name, str(found[1].entities["value"].value)))
            at += found[0] if found is not None else 1
        return named

    def _order_before_its_colon(self, text: str) -> LocalMatch | None:
        """"send this to my phone: 27 Baker Street, buzzer 31, leave at the door": an order said
        first, in no sentence before, that a context intent matches up to its colon; else None."""
        head, colon, tail = text.partition(":")
        if not colon or not tail.strip() or re.search(r"[.!?]", head):
            return None
        match = self.match(head.strip(" ,"))
        contexts = self._contexts.get(match.language) if match is not None else None
        return match if contexts is not None and match.intent in contexts[0].intents else None

    def respond(self, name: str, language: str, /, **slots: object) -> str | None:
        """What the user is told, from the toolsets' `responses` (as Home Assistant keeps its
        responses apart from its sentences): template `name` of `language` with `slots` filled;
        None when no toolset here words it, or it names a slot not given (logged once): the
        session then leaves the words to the model."""
        template = self.responses.get((name, language))
        if template is None:
            return None
        try:
            return _Wording(language).vformat(template, (), slots)
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            if (name, language) not in self._told:
                self._told.add((name, language))
                _log.warning("response %s (%s): %s; the model words it instead", name, language, exc)
            return None

    def speaker(self, language: str) -> "Say":
        """`respond` in one language: say(name, **slots)."""
        return lambda name, /, **slots: self.respond(name, language, **slots)

    def match(self, text: str, language: str = "") -> LocalMatch | None:
        """The best whole match of `text` in its language (see `_closeness`), or in `language` (the
        frame's English commands hold the user's words in theirs); None when none. A turn's stages
        ask for the same words more than once (a fifth of the asks over the eval sets' turns), and
        each costs milliseconds, so the last MATCHES_KEPT answers are kept."""
        key = (text, language)
        if key in self._matches:
            return self._matches[key]
        found = self._matches[key] = self._match(text, language)
        if len(self._matches) > MATCHES_KEPT:
            del self._matches[next(iter(self._matches))]
        return found

    def _match(self, text: str, language: str) -> LocalMatch | None:
        from hassil import recognize_all
        from hassil.errors import HassilError

        text = lexicon.plainly_spoken(text)  # "скока", "gimme": as the sentences write them
        language = language or language_of(text)
        if language not in self._compiled or not text.strip():
            return None
        intents, lists = self._compiled[language]
        try:
            results = list(recognize_all(text, intents, slot_lists=lists, intent_context=_HERE, language=language))
            if results and all(_only_free(result) for result in results) and (figured := in_digits(text)) != text:
                # "поставь будильник на завтра на полседьмого": a free slot (a title) took a time said in words
                results = [result for result in recognize_all(figured, intents, slot_lists=lists, intent_context=_HERE,
                                                              language=language) if not _only_free(result)] or results
            if not results and (figured := in_digits(text)) != text:  # "two hundred and fifty grams", "без четверти семь"
                results = list(recognize_all(figured, intents, slot_lists=lists, intent_context=_HERE, language=language))
            if not results and (paired := lexicon.paired_hundreds_in_figures(text, self._list_words.get(language, ()))) != text:
                # "one eighty celsius in fahrenheit?": hundreds said as two numbers before a unit a list names
                results = list(recognize_all(paired, intents, slot_lists=lists, intent_context=_HERE, language=language))
            if not results and (tenths := lexicon.tenths_said_with_and(text, self._list_words.get(language, ()))) != text:
                # "сто один и три по Фаренгейту это сколько по Цельсию": 101.3, as a temperature is said
                results = list(recognize_all(tenths, intents, slot_lists=lists, intent_context=_HERE, language=language))
            if results and all(_opened_wildcard(result) for result in results) \
                    and (bare := _OPENED.sub("", text, count=1)) != text and bare.strip():
                # "так что давай Дубай сделаем домашним": a free slot that took the words opening the sentence
                results = list(recognize_all(in_digits(bare), intents, slot_lists=lists, intent_context=_HERE,
                                             language=language)) or results
            if not results and (bare := _OPENED.sub("", text, count=1)) != text and bare.strip():
                # "тогда напомни мне завтра в десять …", "so, which monitors …": the words that open a request
                results = list(recognize_all(in_digits(bare), intents, slot_lists=lists, intent_context=_HERE,
                                             language=language))
        except HassilError as exc:  # a template naming a list or rule no file defines: the model reads the words
            if str(exc) not in self._told:
                self._told.add(str(exc))
                _log.warning("local intents (%s): %s; such sentences go to the model", language, exc)
            return None
        if not results:
            return None
        best = max(results, key=lambda result: (*_closeness(result), result.intent.name not in self.borrowed))
        entities = [(name, entity) for name, entity in best.entities.items() if name not in _EMPTY_LISTS]
        slots = {name: _value(entity.value) for name, entity in entities}
        kind_named = any(not entity.is_wildcard and isinstance(slots[name], str) for name, entity in entities)
        call = self.calls.get((best.intent.name, language))
        last_word = (re.findall(r"\w+", text.casefold()) or [""])[-1]
        ends_free = any(entity.is_wildcard and (re.findall(r"\w+", str(entity.text).casefold()) or [""])[-1] == last_word
                        for entity in best.entities_list)
        return LocalMatch(intent=best.intent.name, action=self.actions.get(best.intent.name, ""), language=language,
                          slots=slots, wildcard=_has_wildcard(best, call), kind_named=kind_named, call=call,
                          read_first=best.intent.name in self.read_first, ends_free=ends_free)


Say = Callable[..., "str | None"]


class _Wording(string.Formatter):
    """A response's slots as Python's format fills them, and `{n:минуту|минуты|минут}`: the
    number and its word in the form the number takes (Russian: one, few, many; English: one,
    other), so a count is worded in the response's own language."""

    def __init__(self, language: str) -> None:
        self.language = language

    def format_field(self, value, format_spec: str) -> str:
        if "|" not in format_spec:
            return super().format_field(value, format_spec)
        forms, n = format_spec.split("|"), int(value)
        if self.language == "ru" and len(forms) == 3:
            form = forms[0] if n % 10 == 1 and n % 100 != 11 else \
                forms[1] if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14 else forms[2]
        elif len(forms) == 2:
            form = forms[0] if n == 1 else forms[1]
        else:
            raise ValueError(f"{len(forms)} word forms for a count in {self.language}")
        return f"{n} {form}"


def _closeness(result) -> tuple:
    """How closely a template read the words: no free text first, then the most literal words,
    the most typed slots, the least free text ("play the tv show X" over "play X": X is less)."""
    free = sum(len(entity.text) for entity in result.entities_list if entity.is_wildcard)
    typed = sum(not entity.is_wildcard and entity.name not in _EMPTY_LISTS for entity in result.entities_list)
    return not free, result.text_chunks_matched, typed, -free


def _has_wildcard(result, call: DeclaredCall | None = None) -> bool:
    """A slot took free text that stands for something: for an intent that declares its call, only
    a slot its arguments name ("8 ounces {of butter}" is words the conversion does not read)."""
    def read(name: str) -> bool:
        return call is None or f"{{{name}}}" in call.args or f"{{{name}:" in call.args
    return any(entity.is_wildcard and read(entity.name) for entity in result.entities_list)


def _value(value) -> str | float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return str(value).strip()


MATCHES_KEPT = 64  # answers of `match` kept per runtime (a turn asks for a few words a few times)
COMPILED_KEPT = 4  # sets of files compiled and kept per process (each holds tens of MB)
_COMPILED: dict[tuple, tuple["LocalIntents", tuple[IntentFileError, ...]]] = {}


def _bytes_of(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None  # _read says why


def _read(path: Path, raw: bytes | None) -> dict:
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8") if raw is None else raw.decode("utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise IntentFileError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(spec, dict) or not set(spec) <= {"home_assistant", "sentences", "responses", "frame"}:
        raise IntentFileError(f"{path}: expected a mapping with 'home_assistant', 'sentences', 'responses' and/or 'frame'")
    _check_frame(path, spec.get("frame", {}))
    for language, own in spec.get("responses", {}).items():
        if not isinstance(own, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in own.items()):
            raise IntentFileError(f"{path}: responses.{language}: expected response names, each a template text")
    if not isinstance(spec.get("home_assistant", {}), dict) or not isinstance(spec.get("sentences", {}), dict):
        raise IntentFileError(f"{path}: 'home_assistant' maps intent names to actions; 'sentences' maps languages")
    for language, own in spec.get("sentences", {}).items():
        if not isinstance(own, dict) or not set(own) <= {"intents", "lists", "expansion_rules", "skip_words"}:
            raise IntentFileError(f"{path}: sentences.{language}: expected 'intents' (and 'lists', 'expansion_rules', "
                                  "'skip_words')")
        skip = own.get("skip_words", [])
        if not isinstance(skip, list) or not all(isinstance(word, str) and word.strip() for word in skip):
            raise IntentFileError(f"{path}: sentences.{language}.skip_words: expected a list of words or phrases")
    return spec


def _check_frame(path: Path, frame) -> None:
    if not isinstance(frame, dict) or not set(frame) <= {"commands", "examples", "own_words"}:
        raise IntentFileError(f"{path}: frame: expected 'commands', 'examples' and/or 'own_words'")
    own_words = frame.get("own_words", [])
    if not isinstance(own_words, list) or not all(isinstance(w, str) and w.strip() and " " not in w.strip() for w in own_words):
        raise IntentFileError(f"{path}: frame.own_words: expected a list of single words")
    commands, examples = frame.get("commands", []), frame.get("examples", [])
    if not isinstance(commands, list) or not all(isinstance(line, str) and line.strip() for line in commands):
        raise IntentFileError(f"{path}: frame.commands: expected a list of command lines")
    if not isinstance(examples, list) or not all(
            isinstance(e, list) and len(e) == 2 and all(isinstance(t, str) and t.strip() for t in e) for e in examples):
        raise IntentFileError(f"{path}: frame.examples: expected a list of [what was said, the command] pairs")


def _checked(path: Path, spec: dict, languages: tuple[str, ...]) -> dict:
    """`spec` once each of its own intents is well formed and its templates compile (with Home
    Assistant's lists and rules, which they may use); else IntentFileError naming the file."""
    for language in languages:
        own = spec.get("sentences", {}).get(language, {})
        for name, intent in own.get("intents", {}).items():
            _own_action(path, name, intent)
            if "call" in intent:
                _declared_call(path, name, intent)
        data = _home_assistant_data(language, set())
        data["lists"].update(own.get("lists", {}))
        data["expansion_rules"].update(own.get("expansion_rules", {}))
        data["intents"] = {name: {"data": [{"sentences": list(intent["sentences"])}]}
                           for name, intent in own.get("intents", {}).items()}
        for name, intent in own.get("intents", {}).items():
            if "context" in intent and not isinstance(intent["context"], str):
                raise IntentFileError(f"{path}: intent {name}: 'context' must be one template")
            if "context" in intent:
                data["intents"][f"{name}.context"] = {"data": [{"sentences": [intent["context"]]}]}
        try:
            _parsed(data)
        except Exception as exc:  # noqa: BLE001 - hassil's parse errors have no common base
            raise IntentFileError(f"{path}: sentences.{language}: {type(exc).__name__}: {exc}") from None
    return spec


def _declared_call(path: Path, name: str, intent: dict) -> DeclaredCall:
    call = intent["call"]
    if not isinstance(call, dict) or not isinstance(call.get("tool"), str) or not isinstance(call.get("args", ""), str):
        raise IntentFileError(f"{path}: intent {name}: 'call' needs 'tool' (a tool's name) and 'args' (a template)")
    refers = intent.get("refers", {})
    if not isinstance(refers, dict) or any(not isinstance(slot, str) or kind not in REFERENCE_KINDS
                                           for slot, kind in refers.items()):
        raise IntentFileError(f"{path}: intent {name}: 'refers' maps a slot to what it may point back to: "
                              f"one of {', '.join(REFERENCE_KINDS)}")
    return DeclaredCall(tool=call["tool"], args=call.get("args", ""), answer=str(intent.get("answer", "{result}")),
                        free_text=intent.get("free_text") is True, refers=dict(refers))


def _own_action(path: Path, name: str, intent) -> str:
    if not isinstance(intent, dict) or not isinstance(intent.get("action"), str) or \
            not isinstance(intent.get("sentences"), list) or not intent["sentences"]:
        raise IntentFileError(f"{path}: intent {name}: needs 'action' (a word) and 'sentences' (a list)")
    return intent["action"]


def _scoped_files(owns: list[dict]) -> list[dict]:
    """Each file's sentences of one language, with a list or an expansion rule that an earlier
    file defines otherwise renamed in it (and in its templates): hassil's names are one namespace
    per language, and a user's `<clock>` for their world clock replaced the timers' own, which
    then matched no alarm. What a file names is its own; the built-in files come first."""
    defined: dict[tuple[str, str], object] = {}
    scoped = []
    for index, own in enumerate(owns):
        renames: dict[tuple[str, str], str] = {}
        for kind in ("lists", "expansion_rules"):
            for name, value in own.get(kind, {}).items():
                if defined.setdefault((kind, name), value) != value:
                    renames[kind, name] = f"{name}_of_file_{index}"
        scoped.append(_renamed(own, renames) if renames else own)
    return scoped


def _renamed(own: dict, renames: dict[tuple[str, str], str]) -> dict:
    """`own` with the lists and rules in `renames` under their new names, in every template that
    names them: `<rule>`, `{list}` (its slot keeps the old name: `{new:list}`), `{list:slot}`."""
    def template(text: str) -> str:
        for (kind, name), new in renames.items():
            if kind == "expansion_rules":
                text = text.replace(f"<{name}>", f"<{new}>")
            else:
                text = text.replace(f"{{{name}}}", f"{{{new}:{name}}}").replace(f"{{{name}:", f"{{{new}:")
        return text

    def deep(value):
        if isinstance(value, str):
            return template(value)
        if isinstance(value, list):
            return [deep(item) for item in value]
        if isinstance(value, dict):
            return {key: deep(item) for key, item in value.items()}
        return value

    out = dict(own)
    for kind in ("lists", "expansion_rules"):
        out[kind] = {renames.get((kind, name), name): value for name, value in own.get(kind, {}).items()}
    out["expansion_rules"] = {name: template(rule) for name, rule in out["expansion_rules"].items()}
    intents = {}
    for name, intent in own.get("intents", {}).items():
        intent = dict(intent)
        for key in ("sentences", "context"):
            if key in intent:
                intent[key] = deep(intent[key])
        intents[name] = intent
    out["intents"] = intents
    return out


def _home_assistant_data(language: str, names: set[str]) -> dict:
    """Home Assistant's data of `language` (the package home-assistant-intents), only the
    intents named, with its lists, expansion rules and skip words."""
    import home_assistant_intents

    data = home_assistant_intents.get_intents(language) or {}
    known = data.get("intents", {})
    missing = sorted(name for name in names if name not in known and language == "en")
    if missing:
        _log.warning("home-assistant-intents has no %s", ", ".join(missing))
    return {"language": language, "intents": {name: known[name] for name in names if name in known},
            "lists": dict(data.get("lists", {})), "expansion_rules": dict(data.get("expansion_rules", {})),
            "skip_words": list(data.get("skip_words", []))}


VALUE_WORDS_MAX = 4  # the longest run of words tried as one value of a list ("kilometres per hour")


def _value_lists(merged: dict) -> tuple | None:
    """An intent per list of values (not numbers, not wildcards) whose one sentence is the value
    alone, compiled, and the folded first words of every value (no other word starts a run)."""
    valued = {name: spec for name, spec in merged["lists"].items() if isinstance(spec, dict) and spec.get("values")}
    if not valued:
        return None
    said = [value.get("in", "") if isinstance(value, dict) else value for spec in valued.values() for value in spec["values"]]
    firsts = frozenset(lexicon.fold(words[0]) for text in said if isinstance(text, str)
                       for alternative in re.split(r"[|()\[\]]", text) if (words := alternative.split()))
    intents = {name: {"data": [{"sentences": [f"{{{name}:value}}"]}]} for name in valued}
    return _compile({**merged, "lists": valued, "intents": intents, "skip_words": []}), firsts


def _parsed(merged: dict) -> None:
    """Every template of `merged` parsed (hassil parses a template on its first match): a file's
    own check, without the cost of matching (the merged files are compiled and warmed up once)."""
    from hassil import Intents

    for intent in Intents.from_dict(merged).intents.values():
        for data in intent.data:
            data.sentences  # noqa: B018 - a cached property: parsing is what is asked for


def _compile(merged: dict):
    from hassil import Intents, TextSlotList, recognize

    intents = Intents.from_dict(merged)
    lists = {name: TextSlotList.from_strings([]) for name in _EMPTY_LISTS}
    recognize("warm up", intents, slot_lists=lists, intent_context=_HERE)  # parses every template, builds caches
    return intents, lists


CONTEXT_WORDS_MAX = 5  # the longest run of words a `context` template is tried on
CONTEXT_LOOKBACK_WORDS = 30  # how far back from the question it is looked for (a long remark costs no more)


@functools.cache
def _number_words() -> frozenset[str]:
    """The words of a number and of its decimal point, every language (core/words/*/requests.toml)."""
    return frozenset({w for key in ("units", "teens", "tens") for w in lexicon.table("requests", key)}
                     | set(lexicon.words("requests", "decimal_point_words")))


_JOINING = frozenset(lexicon.words("durations", "joining_words"))  # "и", "and": a number's parts joined


def _a_number(word: str, counts: Container[str]) -> bool:
    return word.replace(".", "").replace(",", "").isdigit() or word in counts


def _context_slots(before: str, intent: str, intents, lists, language: str,
                   asked: set[str] = frozenset()) -> dict[str, str | float] | None:  # type: ignore[assignment]
    """The slots of the last run of words in `before` (longest first) that `intent`'s context
    template matches whole, and that names no value the question itself took (`asked`: "…50 фунтов,
    а норма 23 кило. это сколько в килограммах?" converts the pounds, not 23 kg to kg); None when
    none does, or a number is said just before it."""
    from hassil import recognize_all

    counts = _number_words()
    words = [word.strip("«»\"“”'.,!?;:()") for word in before.split()]
    words = [word for word in words if word][-CONTEXT_LOOKBACK_WORDS:]
    whole = next((result for result in recognize_all(" ".join(words), intents, slot_lists=lists, intent_context=_HERE,
                                                     language=language) if result.intent.name == intent), None)
    if whole is not None and all(entity.is_wildcard for entity in whole.entities.values()):
        if len(whole.entities) == 1:  # free text: all that was said before, its commas kept ("…, it's TX-48213, pickup …")
            said = " ".join(before.split()[-CONTEXT_LOOKBACK_WORDS:]).strip(" ,;:—–-.")
            return {name: said for name in whole.entities}
        return {name: entity.value for name, entity in whole.entities.items()}
    for end in range(len(words), 0, -1):
        for start in range(max(0, end - CONTEXT_WORDS_MAX), end):
            found = next((result for result in recognize_all(" ".join(words[start:end]), intents, slot_lists=lists,
                                                             intent_context=_HERE, language=language)
                          if result.intent.name == intent), None)
            if found is None or any(isinstance(entity.value, str) and entity.value in asked for entity in found.entities.values()):
                continue
            said_before = [lexicon.fold(word) for word in words[max(0, start - 2):start]]
            if said_before and (_a_number(said_before[-1], counts) or said_before[-1] in BELOW_ZERO
                                or len(said_before) == 2 and said_before[0] and _a_number(said_before[0], counts)
                                and said_before[1] in _JOINING):
                # "four twenty-five Fahrenheit", "thirteen point one miles", "минус четыре", "тридцать семь и пять
                # по цельсию": more number than was read
                return None
            return {name: _value(entity.value) for name, entity in found.entities.items() if name not in _EMPTY_LISTS}
    return None
