"""Replies that only repeat what the model was just shown, refuse what a tool just did, or say
nothing of what a lookup found.

A small model sometimes "answers" with the user's own words ("Который час?") or with the
prompt's state part ("Active toolsets: notes …"): text that tells the user nothing. The session
does not show such a reply as the answer; it asks the model once more with a notice (measured
with `run.py eval`).
"""
from __future__ import annotations

import functools
import itertools
import re

from core import user_texts
from core.intent import small_talk
from core.prompt import ACTIVE_HEADER
from core.skills_notice import SKILLS_HOWTO

ECHO_NOTICE = ("Your last reply only repeated {what}. Answer the user's request now, in plain text, "
               "using the results above.")
# Qwen's canned refusals, which it also gives right after a call that worked ("play «…» sent to
# the phone" -> "I'm sorry, but I can't assist with that."); asked again once, the local model
# said what the call did (run.py eval, followup-pause-en)
CANNED_REFUSALS = ("I'm sorry, but I can't assist", "I'm sorry, but I cannot assist",
                   "I'm sorry, but I don't have enough information")
# ...and to small talk ("мне скучно" -> "I'm sorry, but I don't have enough information"): a
# refusal is never the answer to a person talking, whatever was called
CHAT_REFUSAL_NOTICE = ("Your last reply was a stock refusal. Answer the user's last message itself, warmly and "
                       "briefly, in {language}: a kind word, a joke or an idea for small talk; if they asked for "
                       "something you cannot do or a tool above failed, say so in one plain sentence and what you can do instead.")
REFUSAL_NOTICE = ("Your last reply refused, but the tool call above worked. Tell the user its result now, in "
                  "plain text, in {language}.")
# "Найдено!" after a search that found two films: the user cannot see the result, so a reply of a
# few words that shares none of its words is no answer (asked again once; run.py eval, correction-ru)
UNINFORMATIVE_NOTICE = ("Your last reply told the user nothing of the result above, and they cannot see it. "
                        "It begins: «{first}». Tell the user what it found now, in plain text, in {language}.")
UNINFORMATIVE_MAX_WORDS = 3
_LABEL = re.compile(r"^\[[^\]]*\]\s*")
_PROMPT_STARTS = (ACTIVE_HEADER.strip(), SKILLS_HOWTO.split("(")[0].strip())  # the state part's sections
_NOT_WORD = re.compile(r"[\W_]+")
_WORD = re.compile(r"[^\W_]+")  # one word of _words (casefold makes no white space)


def _words(text: str) -> str:
    return _NOT_WORD.sub(" ", text).strip().casefold()


def _more_words_than(text: str, count: int) -> bool:
    """Whether `_words(text)` has more than `count` words, reading only as far as word count+1:
    a long answer is told from a few words without normalising all of it."""
    return next(itertools.islice(_WORD.finditer(text), count, None), None) is not None


def refused(reply: str) -> bool:
    """A canned refusal instead of an answer (see CANNED_REFUSALS)."""
    return reply.strip().startswith(CANNED_REFUSALS)


# a call line the parser does not take ("TOOOL_CALL: say_hello", "FUNCTION_CALL: …"): written
# where no tool was offered (small talk), it would reach the glasses as the answer
_CALL_LIKE = re.compile(r"(?im)^\W*(?:[a-z]+_call|to+l\s*call)\s*:")  # not "Recall:"


_ABOUT_TOOLS = re.compile(r"(?i)\W*(?:no\s+tools?\s+(?:is\s+|are\s+)?(?:needed|required|necessary)|"
                          r"инструмент\w*\s+не\s+(?:нужн|требу)\w*)\W*")
_BARE_TOOL_NAME = re.compile(r"`?[a-z]+(?:_[a-z]+)+(?:\|[^\n]*)?`?\.?")
# a marker of the model's own making, not words: "NO_TOOL_CALL", "NO_TOOL" (the embedded model, to a remark)
# "NO TOOL" (h39), "NO TOOL_CALL" (h56), a bare "NO" or "NONE" in capitals (h41: the whole answer to "не-не, мне старый …")
_CODE_MARKER = re.compile(r"\W*[A-Z]+(?:_[A-Z]+)+\W*|\W*NO\s+TOOLS?(?:[\s_]+CALLS?)?\W*|\W*(?:NO|NONE|NULL|N/A)\W*")
# "КОНЕЦ", "END" (h61: the whole answer to a question about background tasks): one word in capitals of
# any script, asked again once (shown if said again: "NASA" may be an answer)
_ONE_WORD_IN_CAPITALS = re.compile(r"\W*[A-ZА-ЯЁ]{3,}\W*")
# a template's blanks, one word each ("КОНСТРУКТУРА: [Имя] [Предложение]", h61; "[Name], your order is ready"):
# never an answer (a label of two words, "[User said]", is the runtime's, quoted back)
_PLACEHOLDER = re.compile(r"(?<!\\)\[[A-ZА-ЯЁ][a-zа-яё]+\]")  # (a label fenced as data, "\\[User said]", is a message's)


# the runtime's notes to the model, repeated or translated: "not executed (ungrounded_text): …",
# "Вот результат вашего последнего вызова инструмента…" (the embedded model, after a refusal and
# after the closing notice): never an answer the user can use
_RUNTIME_NOTES = re.compile(r"(?i)not executed \(|^\W*not executed\W*$|\[system notice\]|\[tool result from|(?:last|previous)\s+tool\s+call|"
                            r"answers\s+the\s+user'?s\s+request|последн\w*\s+вызов\w*\s+инструмент\w*|"
                            r"результат\w*\s+ваше\w*\s+последн\w*|отвечает\s+на\s+ваш\s+запрос")


def echoed(reply: str, said: str) -> str:
    """What `reply` merely repeats ("the user's words", "the tool list", a call line, the
    runtime's notes), or "" for a real reply. `said`: the user's last message as recorded (its
    "[User said]" label is ignored)."""
    text = reply.strip()
    if text.startswith(_PROMPT_STARTS):
        return "the tool list"
    if _RUNTIME_NOTES.search(text):
        return "the runtime's notes to you, which the user never sees"
    if "call" in text.lower() and _CALL_LIKE.search(text):  # each call form holds "call" in some case
        return "the form of a tool call, which is not an answer"
    if _BARE_TOOL_NAME.fullmatch(text):  # a bare tool name alone (h9): a call without its marker
        return "the name of a tool without TOOL_CALL: before it, which is not an answer"
    if _CODE_MARKER.fullmatch(text):  # "NO_TOOL_CALL" (h30): a marker of its own making, not words
        return "a marker, not words: answer the user in plain words"
    if _ONE_WORD_IN_CAPITALS.fullmatch(text):
        return "one word in capitals, which tells the user nothing: answer them in plain words"
    if _PLACEHOLDER.search(text):
        return "a template with blanks in brackets, not an answer: answer the user in plain words"
    if _ABOUT_TOOLS.fullmatch(text):  # "No tool needed." (h13): a note on the tools, not an answer to the user
        return "a note about tools, which is not an answer to the user"
    said_words = _said_words(said)
    if (said_words and not _more_words_than(text, said_words.count(" ") + 1) and _words(text) == said_words
            and not small_talk(_LABEL.sub("", said.strip()))):
        return "the user's words"  # "Доброе утро!" back (small talk) is an answer
    return ""


# "Скажу, когда Анна напишет." after a watch for Катя (h75): the small model copies the answer of a
# toolset's worked example, with the example's name in it. A name of an example (a word in capitals
# inside its quoted words) that neither the user nor the turn's result said is the example's, not
# this user's: asked again once, then not shown
_EXAMPLE_QUOTE = re.compile(r'"([^"]+)"')
_NAME_INSIDE = re.compile(r"(?<=[\w,;:] )[A-ZА-ЯЁ][a-zа-яё]{2,}")


@functools.lru_cache(maxsize=64)
def example_names(examples: str) -> frozenset[str]:
    """The names (words in capitals, not a sentence's first) inside the quoted words of worked
    examples (`ToolsetSpec.example` lines, joined), casefolded."""
    return frozenset(name.casefold() for quoted in _EXAMPLE_QUOTE.findall(examples)
                     for name in _NAME_INSIDE.findall(quoted))


def example_name_echoed(reply: str, names: frozenset[str], *sources: str) -> str:
    """The first of an example's `names` that `reply` says and none of `sources` (the user's
    words, the result the step ended with) does; "" when none."""
    if not names:
        return ""
    said = set(_words(" ".join(sources)).split())
    return next((word for word in _words(reply).split() if word in names and word not in said), "")


# "Sorry, but I can't find any information about «вечера на хуторе близ диканьки»" to a Russian
# user (run.py eval, h6-missing-ru): the local model slips into English after a tool's English result
# (the reply is quoted: it was not recorded, and "say the same" alone left the model guessing)
WRONG_LANGUAGE_NOTICE = ("Your last reply was not in {language}, the language the user speaks: «{reply}». Say "
                         "the same to the user in {language}, in plain text.")
WRONG_LANGUAGE_QUOTED = 300  # characters of the reply quoted back
_LANGUAGE_MIN_WORDS = 4  # "OK, Shrek." may be a title; a sentence in the other script is not
_CYRILLIC_LETTER = re.compile(r"[а-яё]", re.I)
_LATIN_LETTER = re.compile(r"[a-z]", re.I)
_QUOTED = re.compile(r"«[^»]*»|\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]")


def wrong_language(reply: str, said: str) -> str:
    """The language `reply` should have been in ("Russian" or "English") when it is a sentence
    with not one letter of the user's script; "" otherwise. `said`: the user's last message."""
    words = _LABEL.sub("", said.strip())
    cyrillic, latin = len(_CYRILLIC_LETTER.findall(words)), len(_LATIN_LETTER.findall(words))
    own = _QUOTED.sub(" ", reply)  # a title quoted as the user said it is not the reply's language
    if not _more_words_than(own, _LANGUAGE_MIN_WORDS - 1) or not cyrillic + latin:
        return ""
    if cyrillic > latin:
        return "Russian" if not _CYRILLIC_LETTER.search(own) else ""
    return "English" if not _LATIN_LETTER.search(own) else ""


# shown instead of a reply that, asked once more, is still a call line or the tool list, by
# language (the runtime's texts: core/texts/<language>.toml)
NOT_AN_ANSWER_TEXT = {language: user_texts.table(language)["not_an_answer"] for language in user_texts.LANGUAGES}


# ...and in place of a remark's reply that, asked once more, still repeats the user's words
ACKNOWLEDGED_TEXT = {language: user_texts.table(language)["acknowledged"] for language in user_texts.LANGUAGES}


def never_shown(reply: str) -> bool:
    """A reply that must not reach the glasses even after it was asked again: a call line the
    parser does not take, the prompt's own tool list, or the runtime's notes to the model."""
    text = reply.strip()
    return ("call" in text.casefold() and bool(_CALL_LIKE.search(text)) or bool(_BARE_TOOL_NAME.fullmatch(text))
            or bool(_CODE_MARKER.fullmatch(text))
            or text.startswith((ACTIVE_HEADER.strip(), SKILLS_HOWTO.split("(")[0].strip()))
            or bool(_RUNTIME_NOTES.search(text)))


_CAPS_WORD = re.compile(r"\W*[A-Z][A-Z_]*\s*$")  # "TOOOL_CALL" before its ":" arrives


def held_back(streamed: str) -> bool:
    """Text streamed so far that is not to be shown yet: a call line the parser does not take, or
    what may become one (a capitalised word alone on its last line). Asked at every piece: cheap."""
    return bool(_CAPS_WORD.match(streamed, streamed.rfind("\n") + 1)) or never_shown(streamed)


@functools.lru_cache(maxsize=1024)  # asked at every answer of a turn, with the same words
def _said_words(said: str) -> str:
    return _words(_LABEL.sub("", said.strip()))


def _stems(text: str) -> set[str]:
    """Numbers, and words of three letters or more by their first five ("Аватара" is "Аватар")."""
    return {word if word.isdigit() else word[:5] for word in _words(text).split() if word.isdigit() or len(word) >= 3}


def uninformative(reply: str, result: str) -> bool:
    """A reply of a few words that shares no word or number with the lookup result it follows:
    "Найдено!", "Done.", "Режиссёр" after a search or a title's details."""
    if _more_words_than(reply, UNINFORMATIVE_MAX_WORDS):
        return False
    words = _words(reply).split()
    return 0 < len(words) <= UNINFORMATIVE_MAX_WORDS and not (_stems(reply) & _stems(result))


def first_line(result: str, limit: int = 200) -> str:
    """The result's first line of data (past the runtime's own notes in parentheses), cut to `limit`."""
    lines = [line for line in result.splitlines() if line.strip() and not line.startswith("(")]
    line = (lines[0] if lines else result).strip().rstrip(".")
    return line if len(line) <= limit else line[:limit].rstrip() + "…"
