"""The media toolset's fast path (issue 50): the plain requests about titles the session carries
out itself - play, search, a title's details, pause/resume/stop - and how it chooses among the
titles a search showed ("the second one", "the one from 1979", "Batman, the old one from 1989").

core.reflex recognises a request's kind and words; the steps here (`STEPS`, declared by the
toolset's record) carry it out through core.fastpath.FastPath: the tools they call are the ones
that serve "title_search", "title_info" and "title_play" in the catalog, never named here, and
what the user is told is the toolset's responses (intents.yaml). Each step returns None to leave
the turn to the model, which then reads whatever the step already found.
"""
from __future__ import annotations

import re
from pathlib import Path

import msgspec

from core.fastpath import FastPath, Intent, Reference
from core.lexicon import alternation, numbers_in_figures
from core.lexicon import words as listed_words
from core.local_intents import Say
from core.reflex import FUNCTION_WORDS, NUMBER_WORDS, YEAR, among, close_to, near_word, norm_words
from core.timewords import numbers_said
from core.translit import transliterate
from core.turn import ModelUnavailable, TurnState, user_lines
from protocol import ChatMessage
from protocol.results import TitleInfo, TitlesShown, ToolData
from toolsets.media.catalog import SUBTITLE, main_title, number_sign_folded, parts_in_figures, stems
from toolsets.media.phrasing import asks_a_detail, names_the_one_talked_about

_WORDS = Path(__file__).with_name("words")  # this toolset's own word lists (core.lexicon, root=)

MORE_PAGES = 3  # search pages past the first read for "the newest one" of a title's namesakes
TRIM_MAX_WORDS = 10  # words said after a title that _trimmed may leave off (a search aside for each try)
TRANSLATION_MAX_TOKENS = 120  # a film's description put in English (translation_messages)


class Shown(msgspec.Struct, frozen=True):
    """One title a media result showed: its id, its names and the facts in brackets (read from the
    result's payload, protocol.results, never from its text)."""

    media_id: str
    names: tuple[str, ...]
    facts: str
    year: int
    kind: str = "film"  # or "series"


def shown_titles(data: ToolData | None) -> list[Shown]:
    """The titles a search showed, in the catalog's order, from its result's payload; none when
    the result has no titles payload (another kind, a failure, a journal written before payloads
    were kept: as if nothing was shown)."""
    if not isinstance(data, TitlesShown):
        return []
    titles = []
    for title in data.titles:
        names = tuple(n.strip() for n in title.names if n.strip())
        # "play Moskva slezam ne verit": a Russian title as a Latin keyboard writes it is its name too
        names += tuple(spelled for n in names if re.search(r"[а-яё]", n.casefold())
                       for spelled in [transliterate(norm_words(n))] if spelled not in names)
        titles.append(Shown(title.id, names, title.facts, title.year, title.kind))
    return titles


def subtitle(name: str) -> str:
    """A title's subtitle when it names the film alone, as people call a part of a series: "The
    Fellowship of the Ring" of "The Lord of the Rings: The Fellowship of the Ring", «Братство
    кольца»; "" for none, or one of a single word («Ирония судьбы. Продолжение»: no name)."""
    parts = SUBTITLE.split(name, maxsplit=1)
    rest = parts[1].strip(" :.!?()—–-") if len(parts) == 2 else ""
    return rest if len(set(norm_words(rest).split()) - _NAME_GLUE) >= 2 else ""


def pick(subject: str, titles: list[Shown]) -> Shown | None:
    """The title a request names among a search's results, when one is plainly it: its name is
    the request (or the request is its name plus the director's or the year's words); the most
    such words win, the catalog's order breaks a tie. A lone result close to the words (a typo)
    too. None when it is not plain: the model chooses."""
    # a part's number said last, in words, as an ordinal or in Roman figures, is its number: "godfather two" is
    # "The Godfather Part II", "брата второго" «Брат 2»
    said = number_sign_folded(norm_words(subject)).split()  # "легенду номер семнадцать": «Легенда №17»
    ordinal = parts_in_figures(said[-1]) if said else ""
    part = _ROMAN.get(said[-1], str(NUMBER_WORDS.get(said[-1], "")) or (ordinal if ordinal.isdigit() else "")) if said else ""
    words = (set(said) | ({part} if part not in ("", "1") else set())) - {"the", "a", "an"}
    best, best_extra = None, -1
    for title in titles:
        name_words = _name_words(title)
        if not _names(words, name_words):
            continue
        facts = set(norm_words(title.facts).split())
        if any(w.isdigit() and w not in facts and not any(w in n for n in name_words) for w in words):
            continue  # "брат 3" is not «Брат»: a number said is the title's, or its year
        extra = sum(among(w, facts) for w in words)
        if extra > best_extra:
            best, best_extra = title, extra
    if best is not None:
        return best
    if len(titles) == 1 and any(close_to(subject, name) or _opens(subject, name) for name in titles[0].names):
        return titles[0]
    return None


def _name_words(title: Shown) -> list[set[str]]:
    """The words of each of a title's names (its main title and subtitle apart), less the glue:
    "война мир" names «Война и мир»."""
    names = (*title.names, *(main for name in title.names for main in [main_title(name)] if main != name),
             *(sub for name in title.names for sub in [subtitle(name)] if sub))
    return [{_ROMAN.get(w, w) for w in name_words_of(name).split()} - _NAME_GLUE for name in names]


def name_words_of(name: str) -> str:
    """A title's name as words to compare the request's with, its number sign left off as the
    request's is ("Легенда №17", "Legend No. 17": "легенда 17", "legend 17")."""
    return number_sign_folded(norm_words(name.replace("№", " ")))


def _names(words: set[str], name_words: list[set[str]]) -> bool:
    """Whether the words said hold every word of one of the names, each in any case ("крёстного
    отца" is «Крёстный отец») or with a typo."""
    return any(n and all(among(w, words) or any(near_word(x, w) for x in words) for w in n) for n in name_words)


def names_a_title(subject: str, titles: list[Shown]) -> bool:
    """Whether the words said are the whole name of a title found (not a word it starts with:
    "время" is no «Время первых»)."""
    words = set(norm_words(subject).split()) - {"the", "a", "an"}
    return any(_names(words, _name_words(title)) for title in titles)


_NAME_GLUE = frozenset(listed_words("titles", "title_glue_words", _WORDS))
_ROMAN = {"ii": "2", "iii": "3", "iv": "4", "v": "5", "vi": "6"}  # "The Godfather Part II"


def _opens(subject: str, name: str) -> bool:
    """The words said are how the name starts, each in any case: "Операцию Ы" of «Операция «Ы» и
    другие приключения Шурика» (the lone result of its search)."""
    said, named = norm_words(subject).split(), norm_words(name).split()
    return len("".join(said)) >= 4 and len(said) <= len(named) and all(
        near_word(w, n) or w == n for w, n in zip(said, named))


def which_named(subject: str, titles: list[Shown], reference: Reference) -> Shown | None:
    """Of the titles a request names, the one its other words say: of that year, of that kind
    (a series, a film), the newest; else the oldest ("Batman, the first one"). None when none is
    named, or none is of the year or kind said (the model answers)."""
    named = [title for title in titles if pick(subject, [title]) is title]
    if reference.oldest or reference.newest or reference.year or not named:  # "Star Wars, the newest one": of the series
        begins = subject.removeprefix("the ") + " "
        named += [title for title in titles if title not in named
                  and any((norm_words(name).removeprefix("the ") + " ").startswith(begins) for name in title.names)]
    if reference.year:
        named = [title for title in named if title.year == reference.year]
    if reference.kind:
        named = [title for title in named if title.kind == reference.kind]
    if not named:
        return None
    return (max if reference.newest else min)(named, key=lambda title: title.year or 9999)


# which of a title's namesakes, said around its name: "Batman, the old one from 1989, not the new
# one", "старого Бэтмена", "Бэтмена 1989 года", "the series Fargo"
_AGE_WORDS = (("oldest", re.compile(r"old|older|oldest|original|стар(?:ый|ого|ому|ым|ом|ую|ая|ое|ее|ше|ейш\w*)|оригинал\w*")),
              ("newest", re.compile(r"new|newer|newest|latest|recent|нов(?:ый|ого|ому|ым|ом|ую|ая|ое|ее|ейш\w*)|свеж\w*")))


_NAMESAKE_GLUE = frozenset(listed_words("titles", "namesake_glue_words", _WORDS))


_NOT = frozenset(listed_words("titles", "not_words", _WORDS))


_KIND_SAID = re.compile(r"(?<!\w)(?:(?P<series>сериал\w*|series|tv\s+show|show)|(?P<film>фильм\w*|film|movie|кино))(?!\w)")


def _kind_said(said: str) -> str:
    """"series" or "film" when the words say one kind ("the series Fargo", "Fargo, the series, not
    the movie", "не фильм, а сериал"); "" when they say none, or both."""
    kinds = set()
    for found in _KIND_SAID.finditer(said):
        kind = "series" if found["series"] else "film"
        if _NOT & set(said[:found.start()].split()[-2:]):
            kind = "film" if kind == "series" else "series"
        kinds.add(kind)
    return kinds.pop() if len(kinds) == 1 else ""


def namesake_said(subject: str, said: str) -> tuple[str, Reference] | None:
    """The title's own words and which of its namesakes the words around them say, when they say
    one: words of age, a year or glue are taken off the request's ends only (a title may hold
    them inside: "No Country for Old Men"), and a kind comes from the whole of what was said.
    None when nothing is said about which."""
    words = subject.split()
    facts = {"year": 0, "oldest": False, "newest": False}

    def qualifier(at: int) -> bool:
        word = words[at]
        if YEAR.fullmatch(word):
            facts["year"] = int(word)
            return True
        age = next((name for name, pattern in _AGE_WORDS if pattern.fullmatch(word)), "")
        if age:
            negated = bool(_NOT & set(words[max(0, at - 2):at]))
            facts["newest" if (age == "newest") != negated else "oldest"] = True
            return True
        return word in _NAMESAKE_GLUE

    start, end = 0, len(words)
    while end > start and qualifier(end - 1):
        end -= 1
    while start < end and qualifier(start):
        start += 1
    kind = _kind_said(norm_words(said))
    if start == end or facts["oldest"] and facts["newest"] or not (facts["year"] or facts["oldest"] or facts["newest"] or kind):
        return None
    return " ".join(words[start:end]), Reference(year=facts["year"], oldest=facts["oldest"], newest=facts["newest"],
                                                 kind=kind)  # type: ignore[arg-type]


def names_none(subject: str, titles: list[Shown]) -> bool:
    """No title found is the one asked for: none has every word of the request (a Latin word as
    written, a Russian one in any case) nor is close to it as a whole (a typo). A fuzzy search
    answers "Barbie" with «The Barber of Siberia»: that is a title the catalog lacks."""
    words = [w for w in number_sign_folded(norm_words(subject)).split() if (len(w) >= 3 or w.isdigit()) and w not in FUNCTION_WORDS]
    def has_all(name: str, title: Shown) -> bool:  # its name's words, and its director's ("гараж рязанова")
        name_words, fact_words = name_words_of(name).split(), norm_words(title.facts).split()
        in_name = [w for w in words if w != str(title.year) and any(near_word(w, other) or parts_in_figures(numbers_in_figures(w)) == other
                                                                    for other in name_words)]  # "брат два", "брата второго": «Брат 2»
        by_facts = [w for w in words if w not in in_name and w != str(title.year) and any(near_word(w, f) for f in fact_words)]
        return bool(in_name) and len(in_name) + len(by_facts) == len([w for w in words if w != str(title.year)])
    def same_numbers(name: str, year: int) -> bool:  # "брат 3" is not close to «Брат 2»
        return {w for w in words if w.isdigit()} <= set(name_words_of(name).split()) | {str(year)}
    return not any(has_all(name, title) or same_numbers(name, title.year) and close_to(subject, name)
                   for title in titles for name in title.names)


def relevant(subject: str, titles: list[Shown]) -> bool:
    """Whether any title found shares a word (in any grammatical case) with the request, or is
    close to it as a whole (a typo): a fuzzy search also returns titles that are not it."""
    words = {w for w in norm_words(subject).split() if len(w) >= 3 or w.isdigit()}
    return any(close_to(subject, name) or any(among(w, words) for w in norm_words(name).split() if len(w) >= 3 or w.isdigit())
               for title in titles for name in title.names)


# words that open what is said after a title, not a title's own: "что ли", "for the kids", "while i wait"
_AFTER_A_TITLE = frozenset(listed_words("titles", "after_a_title_words", _WORDS))  # "включи Шрека малому"


_BEFORE_A_TITLE = frozenset(listed_words("titles", "before_a_title_words", _WORDS))  # "включи мелким простоквашино"


def said_after_a_title(cut: list[str]) -> bool:
    """Whether words said after a title may be left off it: they open with a word of a remark
    or a purpose, or are a clause of three words or more ("самое время под новогоднее
    настроение", "the kids are bored"), and hold no number ("брат 3" is «Брат 3», not «Брат»;
    "the dark night" is no «Dark» with "night" said after it)."""
    return bool(cut) and (norm_words(cut[0]) in _AFTER_A_TITLE or len(cut) >= 3) and not any(
        word not in ("a", "an") and not (word == "one" and at > 0) and numbers_said([word]) - {0}
        or any(ch.isdigit() for ch in word) for at, word in enumerate(map(norm_words, cut)))  # "for my little one"


ANSWER_TITLES = 3  # the titles a search's answer names; the others are counted ("и ещё 2")


def refer(reference: Reference, titles: list[Shown], last_id: str) -> str:
    """The id a reference means: the n-th of the last results, the one of that year, or - for
    "его"/"it" - the title last talked about (a details answer, a play) or the first result."""
    if reference.ordinal:
        return titles[reference.ordinal - 1].media_id if reference.ordinal <= len(titles) else ""
    if reference.year:
        same_year = [t for t in titles if t.year == reference.year]
        # "the 2049 one": a number in a name, when no title is of that year
        same_year = same_year or [t for t in titles if any(str(reference.year) in name for name in t.names)]
        if len(same_year) > 1:  # «Экипаж» 1979 said, and «Чужой» 1979 found by its description, unsaid
            same_year = [t for t in same_year if t in titles[:ANSWER_TITLES]]
        return same_year[0].media_id if len(same_year) == 1 else ""
    if reference.kind:
        of_kind = [t for t in titles if (t.kind == "series") == (reference.kind == "series")]
        return of_kind[0].media_id if len(of_kind) == 1 else ""
    if reference.oldest or reference.newest:  # of the titles named like the first ("Экипаж" 1979 and 2016, not
        # «Star Trek», found by its description's "экипаж")
        first_words = {w for name in titles[0].names for w in norm_words(name).split()} if titles else set()
        alike = [t for t in titles if first_words & {w for name in t.names for w in norm_words(name).split()}]
        dated = sorted((t for t in (alike if len(alike) > 1 else titles) if t.year), key=lambda t: t.year,
                       reverse=reference.newest)
        return dated[0].media_id if len(dated) > 1 and dated[0].year != dated[1].year else ""
    if reference.other:  # the one namesake of the title talked about ("Batman" 1989 played: the 2022 one)
        talked = next((t for t in titles if t.media_id == last_id), None)
        names = set(talked.names) if talked is not None else set()
        others = [t for t in titles if t.media_id != last_id and names & set(t.names)]
        return others[0].media_id if len(others) == 1 else ""
    if reference.last:  # the last the answer named (search_answer names the first few)
        return titles[min(len(titles), ANSWER_TITLES) - 1].media_id if titles else ""
    if last_id:
        return last_id
    return titles[0].media_id if titles else ""


# ---- what the user is told ----------------------------------------------------------------
def title_line(title: Shown) -> str:
    return f"«{title.names[0]}»" + (f" / {title.names[1]}" if len(title.names) > 1 else "") + f" ({title.facts})"


def search_answer(say: Say, intent: Intent, titles: list[Shown], total: int) -> str | None:
    if not titles:
        return not_found_answer(say, intent)
    listed = "; ".join(title_line(t) for t in titles[:ANSWER_TITLES])
    more = total - min(len(titles), ANSWER_TITLES)
    return say("titles_found_more", listed=listed, more=more) if more > 0 else say("titles_found", listed=listed)


def not_found_answer(say: Say, intent: Intent) -> str | None:
    """A play or a search the catalog has nothing for: said plainly, in the user's language."""
    return say("not_in_catalog", subject=intent.subject)


def play_answer(say: Say, title: Shown | None, name: str) -> str | None:
    return say("playing", title=title_line(title) if title is not None else f"«{name}»")


def _english_name(info: TitleInfo) -> str:
    """"Spirited Away" for «Унесённые призраками»: its original name when the catalog's differs."""
    names = info.title.names
    return names[1] if len(names) > 1 else ""


def details_answer(say: Say, intent: Intent, info: TitleInfo, translated: str = "") -> str | None:
    """The facts a details question asks, from a title's details (its payload), one sentence
    each; None when they lack one (the model answers from the result instead). `translated`: the
    plot in English, for an English question about it (`plot_in_english`)."""
    answers = [_one_detail(say, msgspec.structs.replace(intent, detail=detail), info, translated)
               for detail in (intent.detail, *intent.more_details)]
    return None if None in answers else " ".join(answers)


def asks_plot_in_english(intent: Intent) -> bool:
    return not intent.russian and "about" in (intent.detail, *intent.more_details)


def russian_plot(info: TitleInfo) -> str:
    """The catalog's description of a title when it is in Russian, or ""."""
    plot = " ".join(info.description.split())
    return plot if re.search(r"[а-яё]", plot.casefold()) else ""


def translation_messages(russian: str) -> list[ChatMessage]:
    """The question that puts a film's Russian description in English (one short generation)."""
    return [ChatMessage(role="system", content="You translate Russian into English word for word. Keep every name. "
                                               "Answer with the English translation only."),
            # worked examples, none the catalog's: a sentence copied from here names a film nobody asked about
            ChatMessage(role="user", content="Старый рыбак три дня борется с огромной рыбой в открытом море."),
            ChatMessage(role="assistant", content="An old fisherman fights a huge fish in the open sea for three days."),
            ChatMessage(role="user", content="Девочка Варя находит в лесу говорящего ежа и помогает ему вернуться домой."),
            ChatMessage(role="assistant", content="A girl named Varya finds a talking hedgehog in the forest and helps "
                                                  "him get back home."),
            ChatMessage(role="user", content=russian)]


def plot_in_english(reply: str, russian: str) -> str:
    """The model's translation when it is one: English letters only, about as long as the
    original; "" otherwise (the answer then gives the Russian words, said as such)."""
    text = " ".join(reply.split()).strip("\"' ")
    if not text or re.search(r"[а-яё]", text.casefold()) or not 0.4 * len(russian) <= len(text) <= 2.5 * len(russian):
        return ""
    return text


def _one_detail(say: Say, intent: Intent, info: TitleInfo, translated: str = "") -> str | None:
    name, year = info.title.names[0] if info.title.names else info.title.id, info.title.year
    name = name if intent.russian else _english_name(info) or name  # an English question: the English name
    if intent.detail == "year" and year:
        return say("came_out", name=name, year=year)
    plot = russian_plot(info)
    if intent.detail == "about" and plot:
        when = f" ({year})" if year else ""
        if intent.russian:
            return say("plot", name=name, when=when, plot=plot)  # the catalog's own words
        if translated:  # the catalog describes in Russian only: put in English by the model, asked aside (said so:
            # the small model's translation is rough, a name or a relation may come out wrong)
            return say("plot_translated", name=_english_name(info) or name, when=when, plot=translated.rstrip("."))
        # the small model, asked to answer, copied the title line instead
        return say("plot_in_russian", name=_english_name(info) or name, when=when, plot=plot)
    value = {"runtime": info.runtime_min, "director": info.director.strip(), "episodes": info.episodes}.get(intent.detail or "")
    if not value:
        return None  # not a fact the details hold, or unknown
    if intent.detail == "runtime":
        return say("runtime_hours" if value >= 60 else "runtime", name=name, minutes=value, hours=value // 60, rest=value % 60)
    if intent.detail == "director":
        return say("directed_by", name=name, director=value)
    return say("episodes", name=name, episodes=value)


def shown_total(data: ToolData | None) -> int:
    """How many titles a search found in all (its pages together); 0 without its payload."""
    return data.total if isinstance(data, TitlesShown) else 0


def played_id(assistant_line: str, play_tool: str) -> str:
    """The id an assistant's call of `play_tool` (the tool that serves "title_play") named: a
    play, not a pause; "" for any other line."""
    marker = f"{play_tool}|"
    return "" if ";" in assistant_line.rsplit(marker, 1)[-1] else controlled_id(assistant_line, play_tool)


def controlled_id(assistant_line: str, play_tool: str) -> str:
    """The id any call of `play_tool` named (a play or a pause); "" for any other line."""
    if not play_tool:
        return ""
    found = re.search(rf"TOOL_CALL: {re.escape(play_tool)}\|([a-z0-9]+(?:-[a-z0-9]+)*)", assistant_line)
    return found.group(1) if found else ""


_PLAYBACK_DONE = {"pause": "paused", "resume": "resumed", "stop": "stopped"}


def playback_answer(say: Say, intent: Intent, title: Shown | None) -> str | None:
    name = "" if title is None else title.names[0] if intent.russian or len(title.names) < 2 else title.names[1]
    return say(_PLAYBACK_DONE[intent.action or "pause"], name=f" «{name}»" if name else "")


def info_title(data: ToolData | None) -> Shown | None:
    """The title a details result (its payload) is about; None for any other result."""
    if not isinstance(data, TitleInfo) or not data.title.names:
        return None
    title = data.title
    return Shown(title.id, tuple(title.names), str(title.year), title.year, title.kind)


# ---- the steps ------------------------------------------------------------------------------
NOT_FOUND_MAX_WORDS = 5  # words a search found nothing for that are still said to be no title of the catalog


async def _not_ours(fast: FastPath, turn: TurnState, subject: str, *, description_too: bool = False) -> bool:
    """Words the catalog plainly has no title for (asked aside: nothing recorded, so the model
    reads no search that was never its own) while another toolset or a skill could serve them,
    or they name another toolset's thing; `description_too`: or they are too many for a title
    ("that show about the chemistry teacher who …": a description, the model's)."""
    if not subject:
        return False
    elsewhere = description_too and len(subject.split()) > NOT_FOUND_MAX_WORDS \
        or fast.names_another_toolsets_domain(subject) or await fast.others_could_serve()
    return elsewhere and not await _names_a_title(fast, turn, subject)


async def _names_a_title(fast: FastPath, turn: TurnState, words: str, *, every_word: bool = False) -> bool:
    """The catalog plainly has the title `words` name: asked aside, nothing recorded, so words
    that are no title leave no search in the history for the model to misread. `every_word`:
    and every word is the title's (no "один дома самое" for «Один дома»)."""
    found = await fast.aside(turn, fast.tool("title_search"), words)
    titles = shown_titles(found.data) if found.kind == "ok" else []
    return pick(words, titles) is not None and not (every_word and names_none(words, titles))


async def _trimmed(fast: FastPath, turn: TurnState, intent: Intent) -> Intent:
    """The request with words said after its title left off ("бриллиантовую руку что ли", "the
    lion king for the kids", "ratatouille the kids are bored out of their minds"): the longest
    start of the words that the catalog plainly has as a title (asked aside, nothing recorded;
    said_after_a_title says which ends may go); the request as said when the whole
    of it is one, or none is."""
    words = intent.subject.split()
    if len(words) < 2:
        return intent  # nothing to leave off
    found = await fast.aside(turn, fast.tool("title_search"), intent.subject)
    titles = shown_titles(found.data) if found.kind == "ok" else []
    if titles and not names_none(intent.subject, titles):
        return intent  # every word a title's ("return of the king"): nothing said after it
    for cut in range(1, min(TRIM_MAX_WORDS, len(words) - 1) + 1):
        subject = " ".join(words[:len(words) - cut])
        if not said_after_a_title(words[len(words) - cut:]):
            continue  # "брат 3", "the dark night": part of what is asked for, not words after it
        if await _names_a_title(fast, turn, subject, every_word=True):
            return msgspec.structs.replace(intent, subject=subject)
    if norm_words(words[0]) in _BEFORE_A_TITLE:  # "включи мелким простоквашино": whom for, the whole no title
        return msgspec.structs.replace(intent, subject=" ".join(words[1:]))
    return intent


async def _namesake(fast: FastPath, turn: TurnState, intent: Intent) -> Intent:
    """The request as its title and which of the title's namesakes ("Batman, the old one from
    1989", "включи сериал Фарго"), when the words around a title say which and the catalog has
    that title; as said when its whole words are a title ("New Moon") or nothing says which."""
    said = next((m.content for m in reversed(fast.messages()) if m.role == "user"), "")
    split = namesake_said(intent.subject, "\n".join(user_lines(said)))
    if split is None or split[0] != intent.subject and await _names_a_title(fast, turn, intent.subject, every_word=True):
        return intent
    if not await _names_a_title(fast, turn, split[0]):
        return intent
    return msgspec.structs.replace(intent, subject=split[0], reference=split[1])


async def play(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    if intent.subject and intent.reference is None:
        intent = await _namesake(fast, turn, intent)  # "Star Wars, the newest one": before the words after it go
        intent = intent if intent.reference is not None else await _trimmed(fast, turn, intent)
        if await _not_ours(fast, turn, intent.subject):
            return None  # another toolset's, or a skill's: the model sees them all
    titles, last_id, known = _shown_media(fast)
    if intent.subject and known and not await _names_a_title(fast, turn, intent.subject):
        # "включи вторую часть" after a search: words about what was shown, the model's; unless a
        # word of them names one title of the last results alone ("the prisoner one, with the werewolf teacher")
        chosen = titled_by_a_word(intent.subject, titles)
        return None if chosen is None else await _played(fast, turn, intent, chosen, chosen.media_id)
    if intent.subject and intent.reference is not None:  # "Шрека, первого": the oldest of that name
        result = await fast.data(turn, fast.tool("title_search"), intent.subject)
        found = shown_titles(result) + await _more_pages(fast, turn, intent.subject, result)
        title = which_named(intent.subject, found, intent.reference) if result is not None else None
        media_id = title.media_id if title is not None else ""
    elif intent.reference is not None:
        media_id = refer(intent.reference, titles, last_id)
        title = known.get(media_id)
    else:
        result = await fast.data(turn, fast.tool("title_search"), intent.subject)
        if isinstance(result, TitlesShown) and result.by != "title" and result.titles:
            return search_answer(fast.speaker(intent.russian), intent, shown_titles(result), result.total)  # "play something funny": which?
        if result is not None and names_none(intent.subject, shown_titles(result)):
            if intent.found_only or await fast.others_could_serve():
                return None  # "пора мою вечернюю растяжку делать, запускай": maybe a skill's; the model sees them
            return not_found_answer(fast.speaker(intent.russian), intent)  # nothing, or only titles that are not it: said plainly
        title = pick(intent.subject, shown_titles(result)) if result is not None else None
        media_id = title.media_id if title is not None else ""
    return await _played(fast, turn, intent, title, media_id)


async def _played(fast: FastPath, turn: TurnState, intent: Intent, title: Shown | None, media_id: str) -> str | None:
    if not media_id or await fast.call(turn, fast.tool("title_play"), media_id) is None:
        return None  # not plain which one, or it did not start: the model goes on from the results
    return play_answer(fast.speaker(intent.russian), title, media_id)


def titled_by_a_word(said: str, titles: list[Shown]) -> Shown | None:
    """The one title of `titles` that a word said names and no other title does ("prisoner" of
    "the prisoner one, with the werewolf teacher" after Harry Potter's films were listed; "узника"
    in any case); None when no such word, or such words name two titles. A word every title has
    ("harry") tells none apart; a function word or a short one is no name."""
    named = set()
    for word in set(norm_words(said).split()) - FUNCTION_WORDS:
        if len(word) < TITLE_WORD_MIN or word.isdigit():
            continue
        having = {t.media_id for t in titles if any(near_word(word, own) for name in t.names for own in norm_words(name).split())}
        if len(having) == 1:
            named |= having
    return next((t for t in titles if t.media_id in named), None) if len(named) == 1 else None


TITLE_WORD_MIN = 4  # letters of a word that may name a title by itself ("the chamber one"; not "the old one")


async def _more_pages(fast: FastPath, turn: TurnState, subject: str, first: ToolData | None, *,
                      recorded: bool = True) -> list[Shown]:
    """The titles of a search's next pages, up to MORE_PAGES (recorded: the one played must be
    a title a result showed): "Star Wars, the newest one" is the newest of all of them. Not
    `recorded` (asked aside) for a question whose answer shows the one it names."""
    shown = len(first.titles) if isinstance(first, TitlesShown) else 0
    more: list[Shown] = []
    for page in range(2, MORE_PAGES + 2):
        if not isinstance(first, TitlesShown) or shown + len(more) >= first.total:
            break
        args = f"{subject}; page={page}"
        titles = shown_titles(await fast.data(turn, fast.tool("title_search"), args) if recorded
                              else (await fast.aside(turn, fast.tool("title_search"), args)).data)
        if not titles:
            break
        more += titles
    return more


async def playback(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    """Pause, resume or stop what the conversation last played."""
    media_id = next((found for m in reversed(fast.messages()) if m.role == "assistant"
                     for found in [controlled_id(m.content, fast.tool("title_play"))] if found), "")
    if not media_id or await fast.call(turn, fast.tool("title_play"), f"{media_id}; action={intent.action}") is None:
        return None
    return playback_answer(fast.speaker(intent.russian), intent, _shown_media(fast)[2].get(media_id))


async def search(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    """A search's results as the answer, or "not in the catalog" when it found nothing (words
    that name no film, "найди рецепт борща", are no reflex's: core.reflex._NOT_A_TITLE); only
    titles that share nothing with the words: the model answers."""
    intent = await _trimmed(fast, turn, intent)
    if await _not_ours(fast, turn, intent.subject, description_too=True):
        return None  # "find a cheap flight to Paris" with a travel server, a description: the model's
    result = await fast.data(turn, fast.tool("title_search"), intent.subject)
    if result is None:
        return None  # it failed, or the search gives no titles as fields: the model reads its text
    titles = shown_titles(result)
    by_title = not isinstance(result, TitlesShown) or result.by == "title"  # a director's or a genre's: all relevant
    if titles and by_title and not relevant(intent.subject, titles) or not titles and await fast.others_could_serve():
        return None
    if intent.found_only and (names_the_one_talked_about(intent.subject) or not (by_title and names_a_title(intent.subject, titles))):
        return None  # "а время у тебя есть?": free words that name no title found are the model's
    return search_answer(fast.speaker(intent.russian), intent, titles, shown_total(result))


async def details(fast: FastPath, turn: TurnState, intent: Intent) -> str | None:
    media_id = ""
    if intent.subject:
        intent = await _trimmed(fast, turn, intent)  # "кто снял фильм Гараж, где про кооператив?"
        if not await _names_a_title(fast, turn, intent.subject):
            return None  # "сколько минут варить макароны": words that are no title, the model's
        result = await fast.data(turn, fast.tool("title_search"), intent.subject)
        by_age = intent.reference is not None and (intent.reference.oldest or intent.reference.newest or intent.reference.year)
        title = None if result is None else which_named(intent.subject, shown_titles(result), intent.reference) if by_age \
            else pick(intent.subject, shown_titles(result))  # "Die Hard, the first one": the oldest of that name
        media_id = title.media_id if title is not None else ""
    if not media_id:  # no title named, or words that are none ("how long does it run"): the one talked about
        titles, last_id, known = _shown_media(fast)
        reference = intent.reference or Reference()
        media_id = await _by_age_of_all(fast, turn, reference, titles, last_id)
        media_id = media_id or refer(reference, titles, last_id)
        if not media_id and reference.ordinal > len(titles):  # "and the second one?" of a part of a series
            media_id = await _part_of_series(fast, turn, reference.ordinal, known.get(last_id))
        if not media_id and not titles and not last_id:  # nothing shown yet: a title the words before name
            media_id = await _title_in_remarks(fast, turn)
    info = await fast.data(turn, fast.tool("title_info"), media_id) if media_id else None
    if not isinstance(info, TitleInfo):
        return None  # the model reads what there is
    translated = await _plot_in_english(fast, turn, info) if asks_plot_in_english(intent) else ""
    return details_answer(fast.speaker(intent.russian), intent, info, translated)


# where a clause ends in the words before a question: a sentence's end, a comma, a joint said with no comma
_CLAUSE_END = re.compile(r"\s*[,.!?;]\s*|\s+(?:" + alternation("requests", "clause_joint_words") + r")\s+")
TITLE_IN_REMARKS_MIN_WORDS = 2  # a one-word title ("Брат") is in too many sentences to be named by them


async def _title_in_remarks(fast: FastPath, turn: TurnState) -> str:
    """The id of the one title of two words or more whose every word the turn's words before the
    question say, in any case: "жена хочет москва слезам не верит посмотреть … сколько он идёт"
    is «Москва слезам не верит» (h29: the model listed the timers); "" when none or several."""
    said = fast.turn_words(turn).casefold()
    clauses = [norm_words(c) for c in _CLAUSE_END.split(said) if norm_words(c)]  # "…. там серий сколько?"
    if len(clauses) < 2:
        return ""
    # the clauses but the question's (a remark may follow it: "… how long is it? I'm not sitting there till midnight")
    told = [clause for clause in clauses if not asks_a_detail(clause)]
    words = numbers_in_figures(" ".join(told if 0 < len(told) < len(clauses) else clauses[:-1]))  # "брат два": «Брат 2»
    found = await fast.aside(turn, fast.tool("title_search"), words)
    titles = shown_titles(found.data) if found.kind == "ok" else []
    named = {title.media_id for title in titles for name in title.names
             for name_words in [set(norm_words(main_title(name)).split()) - _NAME_GLUE]
             if len(name_words) >= TITLE_IN_REMARKS_MIN_WORDS
             and all(among(w, words.split()) or any(near_word(x, w) or stems(x) == stems(w) for x in words.split())
                     for w in name_words)}  # ("со словом пацана": a word in another case, by its stem)
    if len(named) != 1:
        return ""
    await fast.data(turn, fast.tool("title_search"), words)  # now recorded: the id is one a result showed
    return named.pop()


async def _plot_in_english(fast: FastPath, turn: TurnState, info: TitleInfo) -> str:
    """The catalog's Russian description put in English by the model, asked aside ("" when it
    gave no translation, or is down: the answer then gives the Russian words, said as such)."""
    russian = russian_plot(info)
    if not russian:
        return ""
    try:
        reply = await fast.ask_aside(turn, translation_messages(russian), TRANSLATION_MAX_TOKENS)
    except ModelUnavailable:
        return ""
    return plot_in_english(reply, russian)


async def _part_of_series(fast: FastPath, turn: TurnState, ordinal: int, talked: Shown | None) -> str:
    """The n-th part, by year, of the series the title talked about belongs to ("how long is the
    fellowship of the ring?" … "and the second one?": The Two Towers), found by the series' name
    (its name before the subtitle); "" when it is no part of a series or has no n-th part."""
    series = next((main for name in (talked.names if talked is not None else ()) for main in [main_title(name)]
                   if main != name), "")
    if not series:
        return ""
    found = await fast.data(turn, fast.tool("title_search"), series)
    parts = sorted((t for t in (shown_titles(found) if found is not None else []) if t.year
                    and any(main_title(name) == series for name in t.names)), key=lambda t: t.year)
    return parts[ordinal - 1].media_id if ordinal <= len(parts) else ""


async def _by_age_of_all(fast: FastPath, turn: TurnState, reference: Reference, titles: list[Shown], last_id: str) -> str:
    """"а самая новая которая?" of a search that found more than its page: the newest (oldest) of
    all its pages, read aside; the pages are recorded only when it is on one of them (an id the
    conversation never showed is refused). "" when the reference is no age or the one search page
    holds every title."""
    search = _last_search(fast) if reference.newest or reference.oldest else None
    if search is None or search.total <= len(search.titles):
        return ""
    more = await _more_pages(fast, turn, search.query, search, recorded=False)
    media_id = refer(reference, titles + more, last_id)
    if media_id in {title.media_id for title in more}:
        await _more_pages(fast, turn, search.query, search)
    return media_id


def _last_search(fast: FastPath) -> TitlesShown | None:
    """The payload of the conversation's last search, or None."""
    messages, search = fast.messages(), fast.tool("title_search")
    for index in range(len(messages) - 1, -1, -1):
        if search and messages[index].role == "tool" and messages[index].name == search:
            data = fast.data_at(index)
            return data if isinstance(data, TitlesShown) else None
    return None


def _shown_media(fast: FastPath) -> tuple[list[Shown], str, dict[str, Shown]]:
    """What the conversation showed of the catalog: the last search's titles, the title
    talked about since (a details answer, a play; "" if none) and every title seen by id."""
    titles: list[Shown] | None = None
    last_id, known = "", {}
    messages = fast.messages()
    search, info, play = fast.tool("title_search"), fast.tool("title_info"), fast.tool("title_play")
    for index in range(len(messages) - 1, -1, -1):  # a result without its payload shows nothing
        message = messages[index]
        if message.role == "tool" and search and message.name == search:
            found = shown_titles(fast.data_at(index))
            for title in found:
                known.setdefault(title.media_id, title)
            titles = found if titles is None else titles
        elif message.role == "tool" and info and message.name == info:
            title = info_title(fast.data_at(index))
            if title is not None:
                known.setdefault(title.media_id, title)
                last_id = last_id or (title.media_id if titles is None else "")
        elif message.role == "assistant" and titles is None and not last_id:
            last_id = played_id(message.content, play)
    return titles or [], last_id, known


STEPS = {"play": play, "playback": playback, "search": search, "details": details}
