"""How the media toolset's plain requests are said (issue 50): play a title, search the catalog,
ask a title's details, pause, resume or stop what plays - in Russian and English, with the words
people put around them ("поставь Мимино, хочется чего-то душевного", "the old one from 1989",
"выключи, не то настроение"). core.reflex.recognise tries these recognisers after the runtime's
own (`PHRASING`, declared by the toolset's record); the steps that carry the requests out are in
toolsets/media/local.py.
"""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import msgspec

from core.fastpath import Detail, Intent, Phrasing, Reference, ReflexKind
from core.intent import casual, remark
from core.lexicon import alternation as listed_alternation
from core.lexicon import words as listed_words
from core.reflex import ASKS_MORE, LEAD, NUMBER_WORDS, TIMER_WORD, VERB_START, YEAR, is_russian, norm_words, second_thought

_WORDS = Path(__file__).with_name("words")  # this toolset's own word lists (core.lexicon, root=)

_PLAY = re.compile(LEAD + r"(?:найди\s+и\s+включи|find\s+and\s+play|включи(?:ть)?|включай|запусти(?:ть)?|воспроизведи|поставь|врубай|врубни|вруби|"
                   r"(?:давай\s+)?(?:его\s+|ее\s+|её\s+)?включим|let'?s\s+play|хочу\s+посмотреть|давай\s+посмотрим|i\s+want\s+to\s+watch|i'?d\s+like\s+to\s+watch|let'?s\s+watch|"
                   r"i\s+wanna\s+watch|wanna\s+watch|i\s+want\s+to\s+see|let\s+me\s+watch|can\s+i\s+watch|(?:can|could|shall)\s+we\s+watch|"
                   r"(?:i\s+)?feel\s+like\s+watching|i'?d\s+love\s+to\s+watch|i'?d\s+like\s+to\s+see|i'?m\s+in\s+the\s+mood\s+for|хочу\s+глянуть|давай\s+глянем|"
                   r"(?:мне\s+)?хочется\s+посмотреть|(?:я\s+)?бы\s+посмотрел[аи]?|"
                   r"play|put on|stick on|pop on|throw on|start playing)[\s,]+(?P<rest>.+)$")  # not "start": "start slow", "start the backup" are jobs


_SEARCH = re.compile(LEAD + r"(?:(?:найди|поищи|глянь|покажи)(?:те)?,?\s+(?:вс[её]\s+)?что\s+есть\s+(?:про|о|об|по)|"  # "найди, что есть по …"
                     r"найди(?:те)?|найти|поищи|поищите|ищи|"
                     r"что\s+есть\s+(?:про|о|об|по)|что\s+у\s+тебя\s+есть\s+(?:про|о|об|по)|"
                     r"find|search\s+(?:the\s+|your\s+)?catalog(?:ue)?\s+for|search\s+for|search|look\s+for|look\s+up|pull\s+up|"
                     r"what\s+do\s+you\s+have\s+(?:on|about|for)|show\s+me\s+what\s+you\s+have\s+(?:on|about)|"
                     r"есть\s+(?:ли\s+)?у\s+тебя|у\s+тебя\s+есть|есть\s+(?:ли\s+)?(?:такой\s+)?(?:фильм|сериал|мультфильм)|"
                     r"do\s+you\s+have|do\s+you\s+guys\s+have|any\s+chance\s+you\s+(?:have|got)|have\s+you\s+got|got\s+any|"
                     # "I'm looking for a film called Solaris": a film named, not "looking for my keys"
                     r"(?:i'?m\s+)?looking\s+for(?=\s+(?:a|the|that)\s+(?:movie|film|show|series|cartoon)\b)|"
                     r"is\s+there\s+(?:a|an|the)\s+(?:movie|film|show|series)(?=\s+called\s)|"
                     r"let'?s\s+see\s+what\s+you\s+have\s+(?:for|on|of)|есть(?:\s+ли)?(?=\s+[^?]+\?$)|"
                     # "глянь, есть ли у тебя Крёстный отец", "what movies do you have by Nolan", "show me the Alien films"
                     r"(?:глянь|посмотри|проверь|check)[\s,]+(?:есть\s+ли\s+(?:у\s+тебя|в\s+каталоге)|if\s+you\s+have)|"
                     r"what\s+(?:movies|films|shows|series)\s+(?:do\s+you\s+have|have\s+you\s+got)\s+(?:by|from|with|about)|"
                     r"(?:do\s+you\s+have|have\s+you\s+got|got)\s+any(?:thing)?\s+(?:by|from|with|about)|"
                     r"show\s+me(?=\s+(?:the\s+)?\S+(?:\s+\S+)?\s+(?:movies|films)$))"
                     r"[\s,]+(?P<rest>.+)$")


_DETAIL_WORDS: tuple[tuple[Detail, re.Pattern[str]], ...] = (
    ("runtime", re.compile(r"(?:сколько\s+(?:по\s+времени\s+)?(?:он\s+|она\s+|оно\s+|они\s+)?(?:длится|длятся|идет|идёт|идут|минут)|"
                           r"(?:он|она|оно|они)\s+сколько\s+(?:по\s+времени\s+)?(?:длится|длятся|идет|идёт|идут)|"  # "а он сколько идёт-то?"
                           r"^(?:а\s+|и\s+|ну\s+)?длинн(?:ый|ая|ое)(?:\s+вообще)?(?=[\s?!.]*$)|"  # "длинный?" of the title just found
                           r"какая\s+длительность|продолжительн|"
                           r"какой\s+длины|how\s+long|running\s+time|runtime|how\s+many\s+minutes|length|"
                           r"(?:он|она|оно|фильм|сериал)\s+(?:очень\s+|не\s+)?(?:длинн\w*|долг(?:ий|ая|ое)(?!\w))|is\s+it\s+(?:very\s+|too\s+)?long(?=[\s?.!]*$)|"
                           r"долго\s+(?:он\s+|она\s+|оно\s+|они\s+)?(?:идёт|идет|идут|длится|длятся)(?=[\s?.!,]|$))")),
    ("director", re.compile(r"(?:кто\s+(?:его\s+|её\s+|ее\s+)?(?:снял|снимал|режисс)|режиссер|режиссёр|who\s+directed|"
                            r"director|who\s+made|who\s+shot)")),
    # "там серий-то сколько": the count said after what is counted
    ("episodes", re.compile(r"(?:(?:сколько|много(?:\s+ли)?)\s+(?:в\s+нем\s+|в\s+нём\s+|там\s+)?(?:серий|эпизод|сезон)|"
                            r"(?:серий|эпизодов|сезонов)(?:-то)?\s+(?:там\s+|в\s+нём\s+|в\s+нем\s+)?сколько|"
                            r"how\s+many\s+(?:episodes|seasons)|episodes)")),
    ("year", re.compile(r"(?:какого\s+года|в\s+каком\s+году|когда\s+(?:он\s+|она\s+)?(?:вышел|вышла|снят)|"
                        r"(?:вышел|вышла|вышло|снят|снята|снимали)\s+(?:он|она|оно)\s+когда|what\s+year|which\s+year|when\s+(?:was|did)\s+(?:it|that)\s+(?:made|come\s+out|released|filmed)|"
                        r"when\s+(?:was|did)(?=\s.+\s(?:made|come\s+out|released|filmed)(?:\s|$|\?|,)))")),
    ("about", re.compile(r"(?:о\s+ч[её]м\s+(?:вообще\s+|же\s+|там\s+)?(?:он|она|оно|это|фильм|сериал)|"
                         r"про\s+что\s+(?:вообще\s+|же\s+|там\s+)?(?:он|она|это|фильм|сериал)|"
                         r"расскажи\s+(?:мне\s+)?(?:подробнее\s+)?(?:про|о|об)\s+(?=(?:фильм|сериал|мультфильм)\w*\s)|"
                         r"what'?s\s+it\s+about|what\s+is\s+it\s+about|"
                         # "what's the matrix about?", "tell me about Inception": a title's, if the catalog has it
                         r"what'?s(?=\s.+\sabout[\s?.!]*$)|what\s+is(?=\s.+\sabout[\s?.!]*$)|tell\s+me\s+(?:more\s+)?about)")),
)


# words around a title that are not the title
_FILLER = re.compile(r"(?:^|\s)(?:мне|нам|пожалуйста|плиз|фильм|фильмы|фильма|кино|кинофильм|сериал|сериалы|"
                     r"сериала|мультфильм|мультик|мульт|мульта|мультфильма|мультика|пож|please|for\s+me|for\s+us|the\s+movie|the\s+film|movie|film|"
                     r"the\s+series|series|the\s+show|show|now|сейчас|теперь|some|уже|already|tonight|"
                     r"в\s+(?:твоем\s+|вашем\s+)?каталоге|(?:in|from)\s+(?:the\s+|your\s+)?catalog(?:ue)?|"
                     # where it plays is the phone's business: "play X on my phone", "включи X на телефоне"
                     r"on\s+(?:my|the)\s+(?:phone|glasses|tv)|на\s+(?:мо[её]м\s+)?(?:телефоне|очках|тв|телевизоре)|"
                     r"real\s+quick|quickly|quick|по-быстрому|быстренько|быстро|"
                     # how much the user wants to hear, or for whom: "roughly", "в двух словах", "for the kids"
                     r"roughly|approximately|more\s+or\s+less|in\s+short|briefly|примерно|приблизительно|вообще|"
                     r"(?:в\s+)?двух\s+словах|вкратце|коротко|кратко|[—–-]+(?:\s+это)?|for\s+(?:the\s+)?(?:kids|children|little\s+ones?)|"
                     r"для\s+(?:детей|дочки|сына|малого|малой)|ребенку|детям|дочке|дочери|сыну|малышу|внуку|внучке|"
                     r"малому|малой|мелкому|мелкой|младшему|младшей|племяннику|племяннице|бабушке|дедушке|деду|маме|папе|"
                     # "play it again", "включи его заново": the title talked about, from its start
                     r"again|снова|заново|ещ[её]\s+раз|from\s+the\s+(?:start|beginning)|с\s+начала|"
                     + listed_alternation("titles", "from_the_start_patterns", _WORDS) + r")(?=\s|$)")


_FROM_THE_START = re.compile(r"(?:^|\s)(?:" + listed_alternation("titles", "from_the_start_patterns", _WORDS) + r")(?=\s|$)")


_PRONOUN = re.compile(r"^(?:его|её|ее|это|этот|эту|это\s+кино|его\s+же|её\s+же|ее\s+же|it|this|that|this\s+one|"
                      r"that\s+one|him|her|the\s+one|"
                      # "how long is the blasted thing?": the thing talked about, with a word of feeling
                      r"(?:(?:the|that|this)\s+)?(?:\w+\s+)?thing)$")


def names_the_one_talked_about(subject: str) -> bool:
    """Whether a title's words are a pronoun ("it", "его", "this one"): the title talked about."""
    return bool(_PRONOUN.fullmatch(subject.strip()))


_ORDINALS = {"перв": 1, "втор": 2, "трет": 3, "четв": 4, "пят": 5, "first": 1, "second": 2, "third": 3,
             "fourth": 4, "fifth": 5, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5}


_ORDINAL = re.compile(r"(?:^|\s)(?:номер\s+|number\s+|option\s+|вариант\s+|#)?(?P<word>перв|втор|трет|четв|пят|first|second|third|"
                      r"fourth|fifth|1st|2nd|3rd|4th|5th|[1-5](?=\s|$))"
                      # a Russian ordinal's endings only: "вторую", "третьего", not "вторник", "пятница"
                      r"(?:ый|ий|ой|ая|ое|ую|ые|ых|ого|ому|ым|ом|ья|ье|ью|ьего|ьей|ьем|ьи|ерт[а-я]{1,3})?(?!\w)")


# "the last one", "самый новый", "the older one": which of the titles shown, by place or by age
_WHICH_BY_AGE = (
    ("last", re.compile(r"(?:the\s+)?(?:last|final)(?:\s+one)?|последн(?:ий|юю|ее|яя|его)(?:\s+из\s+них)?")),
    ("newest", re.compile(r"(?:the\s+)?(?:newest|latest|newer|new|most\s+recent|recent)(?:\s+one)?|(?:самый\s+|самую\s+|самая\s+|самое\s+)?"
                          r"(?:нов(?:ый|ую|ое|ая|ее|ейший|ейшую)|свеж(?:ий|ую|ее))|(?:тот|ту|то)\s+(?:который|которую|что)\s+(?:по)?новее")),
    ("oldest", re.compile(r"(?:the\s+)?(?:oldest|older|old)(?:\s+one)?|(?:самый\s+|самую\s+|самая\s+|самое\s+)?"
                          r"(?:стар(?:ый|ую|ое|ая|ее|ейший|ейшую))|(?:тот|ту|то)\s+(?:который|которую|что)\s+(?:по)?(?:старше|старее)")),
)


# "тот, что 1975 года", "ту из 1979-го", "the one from 1979": a year says which of the titles shown
_YEAR_ONLY = re.compile(r"(?:(?:тот|та|ту|то|те|the|that|one|который|которая|которое|которую|что|из|с|from|of|в|"
                        r"released|made|in|old|older|new|newer|старый|новый)\s+)*(?:19|20)\d\d(?:\s*-?(?:года|год|г|го))?(?:\s+(?:года|one|film|movie))?"
                        r"(?:\s+(?:старый|старую|новый|новую|old|new|one))?")


# a second request in the same breath: the model handles both
_ANOTHER_ACTION = re.compile(r"(?:\s(?:и|а\s+потом|потом|затем|and|then)\s+(?:поставь|включи|найди|напомни|отмени|"
                             r"покажи|запусти|set|play|find|remind|cancel|show|start|search))|"
                             r"(?:таймер|timer|remind|напомн|напомин|будильник|alarm|разбуд|wake)")


# what "включи"/"play" may take that is no film or series of the catalog: a device, music, a
# vague wish ("что-нибудь смешное"), an episode (the catalog plays whole titles): the model's
_NOT_A_TITLE = re.compile(r"(?:^|\s)(?:свет\w*|ламп\w*|музык\w*|песн\w*|трек\w*|плейлист\w*|радио|подкаст\w*|"
                          r"чайник\w*|лайк\w*|громкост\w*|звук\w*|навигатор\w*|кондиционер\w*|телевизор\w*|"
                          r"голов\w*|что-нибудь|что-то|чего-нибудь|серию|серия|эпизод\w*|сезон\w*|"
                          r"light|lights|lamp|music|song|songs|track|playlist|radio|podcast|jazz|rock|volume|sound|"
                          r"navigation|tv|something|anything|episode|season|movies|films|фильмы|кино\s+какое-нибудь|"
                          # what a catalog search cannot find: a recipe, a place, the web, the news
                          r"рецепт\w*|аптек\w*|магазин\w*|ресторан\w*|кафе|пиццери\w*|ближайш\w*|рядом|интернет\w*|"
                          r"гугл\w*|телефон\w*|цен\w*|курс\w*|погод(?:а|у|ы|е|ой|ка|ку|ки)?|новост\w*|адрес\w*|маршрут\w*|recipes?|"
                          r"pharmacy|store|shop|restaurant|pizza|nearby|web|google|phone|price|weather|news|address|route|minute|moment)"
                          r"(?=\s|$)")


# what may stand around a details question about a title already shown ("а сколько он идёт?")
_ABOUT_SHOWN = frozenset(listed_words("titles", "about_shown_words", _WORDS))  # an opener: "wait how long is it?"


# the words of a details question around a title: "кто снял <title>", "how long is <title>"
_DETAIL_GLUE = frozenset(listed_words("titles", "detail_glue_words", _WORDS))  # "ого, а по времени он сколько идёт?": surprise, no title


# "the original", "оригинал": the oldest of the titles shown
_ORIGINAL = re.compile(r"(?:^|\s)(?:the\s+)?(?:original|оригинал\w*|самый\s+первый|the\s+first\s+one)(?=\s|$)")


_ABOUT_YOU = re.compile(r"(?:^|\s)(?:твой|твоя|твое|твоё|твои|тебя|тебе|ты|your|you|yourself|yourselves|себе|себя|любим\w*|favou?rite)(?=\s|$)")


# a question of its own past a comma after the title ("…, can I actually finish it?", "…, успею досмотреть?")
_CLAUSE_AFTER = re.compile(r",\s*(?:(?:" + listed_alternation("titles", "clause_after_patterns", _WORDS) + r")(?!\w))")


# a question of how long a thing takes to do, not how long a title runs
_HOW_LONG_TO_DO = re.compile(r"\s+(?:(?:does|do|will|would|should|did|can|must)\s+(?:it\s+(?:take|need)|i|you|we)\b|"
                             r"(?:нужно|надо)?\s*[а-я]+(?:ть|ти|чь|ться)(?:\s|$))")


# "а Сталкер ведь Тарковский снимал, да?", "wasn't Alien directed by Ridley Scott?": the director
# asked to be confirmed; the title is where the words put it
_CONFIRM_DIRECTOR = re.compile(r"^(?:(?:а|и|ну|слушай|so|hey|wait)[\s,]+)*(?:"
                               r"(?P<ru>[^,?]{2,40}?)\s+(?:ведь|же)\s+[^,?]{2,40}?\s+(?:снимал|снял|снимала|сняла|снимали|сняли)|"
                               r"(?:was|wasn'?t|isn'?t|is)\s+(?P<en>[^,?]{2,40}?)\s+directed\s+by\s+[^,?]{2,40}|"
                               r"did(?:n'?t)?\s+[^,?]{2,40}?\s+direct\s+(?P<en2>[^,?]{2,40}?)|"
                               r"[^,?]{2,40}?\s+directed\s+(?P<en3>[^,?]{2,40}?)[\s,]+(?:right|correct|didn'?t\s+(?:he|she|they)))"
                               r"(?:[\s,?]+(?:да|верно|правда|нет|right|correct|didn'?t\s+(?:he|she|they)))?"
                               r"(?:[\s?,.!]+(?:просто\s+интересно|интересно|just\s+curious|i\s+think))?[\s?.!]*$")


# a title in quotation marks in a sentence before the question ("требуют «Один дома». он сколько идёт?")
# what opens a line quoted from a title, said after its name: "…, ну где «шёл, поскользнулся, упал»", "…, the one where
# "I'll be back"" (words/*/titles.toml)
_DESCRIBED_BY_A_QUOTE = re.compile(r"\s(?:" + listed_alternation("titles", "described_by_a_quote_patterns", _WORDS) + r")(?=\s)")
_QUOTED_TITLE = re.compile(r"[«“\"](?P<title>[^«»“”\"]{2,60})[»”\"]")
# a title written as a name in a sentence before the question (not a sentence's first word, not "I")
_CAPITALISED = re.compile(r"(?<=[\w,] )(?:The\s+)?(?!I\b|I'm\b|I'd\b|I've\b|I'll\b)[A-ZА-ЯЁ][\w'’-]*"
                          r"(?:\s+(?:of|the|and|in|on|to|a)\s+[A-ZА-ЯЁ][\w'’-]*|\s+[A-ZА-ЯЁ0-9][\w'’-]*)*")


def _details_intent(raw: str, said: str, russian: bool) -> Intent | None:
    if TIMER_WORD.search(raw) or _ABOUT_YOU.search(raw) or re.search(r"what\s+year\s+is\s+it", raw):
        return None
    confirm = _CONFIRM_DIRECTOR.match(raw)
    if confirm is not None:
        title = next(group for group in confirm.groups() if group is not None)
        subject = _FILLER.sub(" ", norm_words(title)).strip()
        return Intent(kind="details", russian=russian, detail="director", subject=subject) if subject else None
    if sum(1 for _detail, pattern in _DETAIL_WORDS if pattern.search(raw)) > 1:
        return _several_details(raw, russian)  # "сколько он идёт и кто его снял"
    for detail, pattern in _DETAIL_WORDS:
        found = pattern.search(raw)
        if found is None:
            continue
        end = found.end() + re.match(r"\w*", raw[found.end():]).end()  # the whole word: "режисс|ер"
        if detail == "runtime" and _HOW_LONG_TO_DO.match(raw[end:]):
            return None  # "сколько минут варить макароны", "how long does it take to boil an egg": no title's
        # its own sentence only: "Who directed Inception? Check the catalog."
        begin = max(raw.rfind(mark, 0, found.start()) for mark in ".?!") + 1
        stop = min([at for at in (raw.find(mark, end) for mark in ".?!") if at >= 0] or [len(raw)])
        after = _CLAUSE_AFTER.search(raw, end, stop)  # "how long is the irish man, can I actually finish it?"
        stop = after.start() if after is not None else stop
        if "," in raw[begin:found.start()] and norm_words(raw[end:stop]).strip():  # "settle a bet for me, what year did X …"
            begin = raw.rfind(",", begin, found.start()) + 1
        rest = norm_words(raw[begin:found.start()] + " " + raw[end:stop])
        reference = _reference(norm_words(raw[:found.start()] + " " + raw[end:]))  # "а второй? кто режиссёр?"
        original = _ORIGINAL.search(" " + rest)
        if original is not None:  # "how long's Die Hard, the first one?": the oldest of that name, or of those shown
            left = f"{(' ' + rest)[:original.start()]} {(' ' + rest)[original.end():]}".split()
            named = [w for w in left if w not in _ABOUT_SHOWN and w not in _DETAIL_GLUE and not casual(w)]
            subject = _FILLER.sub(" ", " ".join(_glue_trimmed(named))).strip() if named else ""
            return Intent(kind="details", russian=russian, detail=detail, subject=subject, reference=Reference(oldest=True))
        by_age = _by_age(rest)
        if by_age:  # "а кто снимал тот, который постарше?": which of the titles shown, by age
            return Intent(kind="details", russian=russian, detail=detail, reference=Reference(**{by_age: True}))
        named = [w for w in rest.split() if w not in _ABOUT_SHOWN and w not in _DETAIL_GLUE
                 and not YEAR.fullmatch(w) and not _ORDINAL.fullmatch(" " + w) and not casual(w)]
        if named and _PRONOUN.fullmatch(" ".join(named)):
            named = []  # "how long is the blasted thing?": the one talked about, with a word of feeling
        if named:  # "кто снял Служебный роман?": that title, searched first
            if any(not w.isdigit() and _ORDINAL.fullmatch(" " + w) for w in rest.split()):
                return None  # "the first lord of the rings", "второго брата": which of a title's parts, the model's
            subject = _FILLER.sub(" ", " ".join(_glue_trimmed(rest.split()))).strip()
            if not subject or TIMER_WORD.search(subject) or len([w for w in subject.split() if w not in _TITLE_GLUE]) > 6:
                return None
            return Intent(kind="details", russian=russian, detail=detail, subject=subject, reference=reference)
        sentences = re.split(r"(?<=[.!?])\s+", said.strip())
        told = " ".join(sentences[:-1]) if begin > 0 and len(sentences) > 1 else ""
        named_before = [m["title"] for m in _QUOTED_TITLE.finditer(told)] or [
            m.group(0) for m in _CAPITALISED.finditer(told)  # never a place: "до Казани … Брат 2 глянуть"
            if (told[:m.start()].split() or [""])[-1].casefold() not in _PLACE_PREPOSITIONS]
        if len(named_before) == 1 and str(reference.ordinal) in named_before[0].split():
            reference = msgspec.structs.replace(reference, ordinal=0)  # "thinking Shrek 2 after dinner": the title's number
        if len(named_before) == 1 and _reference(norm_words(raw[begin:found.start()] + " " + raw[end:])) == Reference():
            reference = Reference()  # "… took me to see Roman Holiday on our very first outing. What year …?": told, not asked
        if reference == Reference() and len(named_before) == 1:  # "starting The Queen's Gambit soon. How many episodes is it?"
            return Intent(kind="details", russian=russian, detail=detail, subject=norm_words(named_before[0]))
        return Intent(kind="details", russian=russian, detail=detail, reference=reference)
    return None


def _glue_trimmed(words: list[str]) -> list[str]:
    """A details question's words around a title, its glue left out but a title's own inside it
    ("война и мир бондарчука", "fellowship of the ring": `title_glue_words`); an article before it
    bounds it ("the godfather part two") and is left out too."""
    named = [at for at, word in enumerate(words)  # ("last" is glue only as the question's last word: "the last of us")
             if word not in _DETAIL_GLUE or word in _GLUE_LAST_ONLY and at < len(words) - 1]
    if not named:
        return []
    first, last = named[0], named[-1]
    first -= 1 if first and words[first - 1] in _ARTICLES else 0
    kept = [word for at, word in enumerate(words[first:last + 1], first)
            if word not in _DETAIL_GLUE or word in _TITLE_GLUE or at == first or at in named]
    return kept[1:] if len(kept) > 1 and kept[0] in _ARTICLES else kept  # the catalog finds it without its article


_ARTICLES = frozenset(listed_words("titles", "article_words", _WORDS))  # "the", "a": a title's first word
_PLACE_PREPOSITIONS = frozenset(listed_words("titles", "place_preposition_words", _WORDS))
_TITLE_GLUE = frozenset(listed_words("titles", "title_glue_words", _WORDS))  # "of", "и": inside a title
_GLUE_LAST_ONLY = frozenset(listed_words("titles", "detail_glue_last_only_words", _WORDS))  # "how long does it last"


_WHICH = frozenset(listed_words("titles", "which_words", _WORDS))
_WHICH_FILLER = frozenset(listed_words("titles", "which_filler_words", _WORDS))


# "давай лучше X" (a word that says "instead" before it), "let's do X instead" (after it, a lead before)
_INSTEAD = re.compile(r"^(?:(?:" + listed_alternation("titles", "instead_before_patterns", _WORDS) + r")\s+(?P<first>.+?)|"
                      r"(?:(?:" + listed_alternation("titles", "instead_lead_patterns", _WORDS) + r")\s+)?"
                      r"(?P<title>.+?)\s+(?:" + listed_alternation("titles", "instead_after_patterns", _WORDS) + r"))$")


def _instead_intent(raw: str, said: str, russian: bool) -> Intent | None:
    """"nope, scratch that, they're fighting over it — Madagascar instead", "не, давай лучше
    Мадагаскар": a title in place of the one asked for, its clause last, a no or remarks before it;
    played only when the catalog finds it (found_only: else the model's)."""
    clauses = [c.strip(" .!?") for c in re.split(r"(?<=[.!?])\s+|[,;:]\s*|\s+[—–-]+\s+", raw.strip()) if c.strip(" .!?—–-")]
    found = _INSTEAD.match(clauses[-1]) if clauses else None
    if found is None or not all(remark(c) or second_thought(c) for c in clauses[:-1]):
        return None
    said_instead = found["first"] or found["title"]
    if _TOLD_EVENT.search(f" {norm_words(said_instead)} "):
        return None  # "the editor has just replied on WhatsApp instead": what happened, not a title
    titled = _titled("play", said_instead, said, russian)
    return None if titled is None or not titled.subject else msgspec.structs.replace(titled, found_only=True)


# what tells an event, not a title, in the words put "instead" ("… has just replied on WhatsApp instead")
_TOLD_EVENT = re.compile(r"\s(?:" + listed_alternation("titles", "told_event_patterns", _WORDS) + r")\s")


def _which_by_age(raw: str, said: str, russian: bool) -> Intent | None:
    """"а самая новая которая?", "which one's the oldest?": which of the titles shown, by age, asked;
    answered with its year (the title named with it). Only asked: a which word or a question mark."""
    words = norm_words(raw).split()
    asked = [w for w in words if w not in _WHICH and w not in _WHICH_FILLER]
    if not asked or not _WHICH & set(words) and not raw.rstrip().endswith("?"):
        return None  # "the newest one" alone: which to play, maybe; the model's
    by_age = _by_age(" ".join(asked))
    return Intent(kind="details", russian=russian, detail="year", reference=Reference(**{by_age: True})) \
        if by_age in ("newest", "oldest") else None


def _by_age(rest: str) -> str:
    """"last", "newest" or "oldest" when the words besides the question are which title by age ("тот,
    который постарше", "the older one"); "" otherwise."""
    words = " ".join(w for w in rest.split() if w not in ("а", "и", "ну", "and", "so", "of", "about", "is", "was", "for"))
    return next((name for name, pattern in _WHICH_BY_AGE if pattern.fullmatch(words)), "")


def _several_details(raw: str, russian: bool) -> Intent | None:
    """Two or more facts of the title talked about ("про что он вообще и какого года", "who directed
    it and how long is it") or of a title named with them ("кто снял Сталкер и в каком году он
    вышел?"), in their own sentence; any other word: the model's."""
    holding = [part for part in re.findall(r"[^.?!]+[.?!]*", raw) if _DETAILS_ANYWHERE.search(part)]
    raw = holding[0] if len(holding) == 1 else raw
    found = sorted((match.start(), detail) for detail, pattern in _DETAIL_WORDS for match in [pattern.search(raw)] if match)
    asked = [detail for _at, detail in found]  # in the order said
    rest = raw
    for _detail, pattern in _DETAIL_WORDS:
        rest = pattern.sub(" ", rest)
    words = [w for w in re.findall(r"[^\W_]+", rest) if w not in _ABOUT_SHOWN and w not in _DETAIL_GLUE and not casual(w)]
    if len(words) > 4:
        return None
    subject = _FILLER.sub(" ", " ".join(words)).strip()  # "сталкер": searched, then asked of
    return Intent(kind="details", russian=russian, detail=asked[0], more_details=tuple(asked[1:]), subject=subject,
                  reference=None if subject else _reference(norm_words(rest)))


_WHAT_PLAYS = (r"(?:\s+(?:его|ее|её|это|всё|все|фильм|сериал|кино|мультик|мультфильм|просмотр|воспроизведение|it|that|this|"
               r"the\s+movie|the\s+film|the\s+cartoon|"
               r"playback|the\s+show|please|пожалуйста|совсем|вообще|completely|altogether|for\s+good|now|сейчас|"
               r"a\s+(?:moment|sec|second|minute|bit)|на\s+(?:минутку|секунду|минуту)))*")


_PLEASE_END = r"(?:\s+(?:please|пожалуйста))?[\s.!]*$"


# a stop with its reason after it: "выключи, не то настроение", "turn it off, it's boring"
_A_REASON = (r"(?:[\s,.!—-]+(?:не\s+то(?:\s+\w+)?|не\s+тот|не\s+та|не\s+в\s+настроении|надоел\w*|скучно|скучн\w*|"
             r"не\s+нравится|передумал\w*|не\s+интересно|it'?s\s+boring|boring|not\s+in\s+the\s+mood|"
             r"(?:i\s+)?changed\s+my\s+mind|wrong\s+(?:one|movie|film)|хватит|enough|that'?s\s+enough)(?:\s+\w+){0,3})")


_REASON = _A_REASON + "?"


# "поставь пока на паузу", "pause it a sec": for a moment, said around a pause
_A_MOMENT = (r"(?:\s+(?:пока|на\s+(?:минутку|минуточку|минуту|секунду|секундочку)|ненадолго|a\s+sec(?:ond)?|"
             r"for\s+a\s+(?:sec(?:ond)?|minute|moment|bit)|real\s+quick|quick(?:ly)?))?")


# "давай дальше, с того же места", "carry on from where we stopped": a resume says where it goes on from
_WHERE_LEFT_OFF = (r"(?:[\s,]+(?:с\s+того\s+(?:же\s+)?места|(?:оттуда\s+)?где\s+останови\w+|"
                   r"from\s+where\s+(?:we|i|it|you)\s+(?:left\s+off|stopped)))?")


_PLAYBACK = (("pause", re.compile(LEAD + r"(?:(?:поставь|поставить|ставь)(?:\s+пока)?(?:\s+(?:его|ее|её|фильм|сериал|кино|мультик|мультфильм|это))?"
                                  r"(?:\s+пока)?\s+на\s+паузу|"
                                  r"поставь\s+паузу|(?:на\s+)?паузу\s+(?:поставь|поставим|ставь)|паузу\s+нажми|нажми\s+паузу|(?:можно\s+)?на\s+паузу|(?:можно\s+)?паузу|пауза|приостанови|"
                                  r"тормозни|притормози|придержи|останови\s+на\s+(?:минутку|минуту|секунду|секундочку)|pause)" + _WHAT_PLAYS
                                  + _A_MOMENT + _PLEASE_END)),
             ("resume", re.compile(LEAD + r"(?:продолжи(?:ть)?|продолжай|сними\s+с\s+паузы|сними\s+паузу|сними\s+(?:его|ее|её|фильм)\s+с\s+паузы|"
                                   r"включи\s+(?:обратно|снова|дальше)|включай\s+(?:обратно|снова|дальше)|(?:давай|погнали|поехали)\s+дальше(?:\s+смотр\w+)?|"
                                   r"давай\s+продолжим|продолжим|продолжай\s+смотреть|let'?s\s+(?:continue|keep\s+going|resume)|"
                                   r"resume|unpause|keep\s+playing|keep\s+it\s+(?:going|playing|rolling)|"
                                   r"(?:you\s+can\s+)?(?:carry\s+on|go\s+on|keep\s+going)(?:\s+with\s+(?:the\s+)?(?:movie|film|show))?|"
                                   r"continue(?:\s+playing)?|"
                                   # "ok parked again, put it back on": what plays, on again
                                   r"(?:put|turn|switch|stick|pop)\s+(?:it|that|the\s+(?:movie|film|show))\s+back\s+on)"
                                   + _WHAT_PLAYS + _WHERE_LEFT_OFF + _PLEASE_END)),
             ("stop", re.compile(LEAD + r"(?:выключи|выключай|выруби|останови|stop|turn\s+off)" + _WHAT_PLAYS
                                 + r"(?:\s+(?:the\s+)?(?:фильм|кино|сериал|воспроизведение|movie|film|playback|playing))" + _REASON + _PLEASE_END
                                 + r"|" + LEAD + r"(?:stop\s+playing|(?:i(?:'ll|\s+will)\s+)?stop\s+watching\s+(?:the\s+)?(?:movie|film|show)|"
                                 r"хватит\s+(?:смотреть|показывать)\s+(?:фильм|кино|сериал))" + _REASON + _PLEASE_END
                                 # "выключи совсем", "turn it off", "выключай": what plays, as nothing else is named
                                 + r"|" + LEAD + r"(?:выключи|выключай|выруби)" + _WHAT_PLAYS[:-1] + "+" + _REASON + _PLEASE_END
                                 # "выключи, не то настроение": a bare stop is one only with its reason said
                                 + r"|" + LEAD + r"(?:выключи|выключай|выруби)" + _A_REASON + _PLEASE_END
                                 # "закрой фильм", "close the movie", "kill it": only with what plays named
                                 + r"|" + LEAD + r"(?:убери|закрой|close|kill|end)\s+(?:(?:the\s+)?(?:фильм|кино|сериал|movie|film|show)|it|that)"
                                 + _REASON + _PLEASE_END
                                 + r"|" + LEAD + r"(?:turn\s+(?:it|that)\s+off|switch\s+(?:it|that)\s+off|shut\s+(?:it|that)\s+down|"
                                 r"shut\s+(?:it|that)\s+off|stop\s+(?:it|that)|"
                                 r"(?:turn|switch|shut)\s+(?:the\s+)?(?:movie|film|show|tv|cartoon)\s+off)" + _WHAT_PLAYS + _REASON + _PLEASE_END)))


# a stop said alone: while a turn runs the router takes it (it stops the turn, core.urgency); said
# when none runs, it stops what plays (the session's: none played, the model answers)
_STOP_ALONE = re.compile(r"(?:(?:вс[её]|ну|ok|okay|so)\s+)?(?:стоп|стой|хватит|stop|enough|that'?s\s+enough)"
                        r"(?:\s+(?:стоп|stop|хватит|пожалуйста|please|now|уже))*")


def _playback_intent(raw: str, said: str, russian: bool) -> Intent | None:
    """"поставь на паузу", "resume", "выключи фильм", "стоп" said alone: control of what plays."""
    text = " ".join(raw.replace(",", " ").split()).strip(" .!?")
    if _STOP_ALONE.fullmatch(text.replace("-", " ")):
        return Intent(kind="playback", russian=russian, action="stop")
    last = raw.rsplit(",", 1)[-1].strip(" .!?") if "," in raw and len(raw.split()) <= 14 else ""
    if _ENOUGH_THEN_OFF.match(text):
        return Intent(kind="playback", russian=russian, action="stop")
    for action, pattern in _PLAYBACK:
        # "ой, звонят, пауза": the last clause, when nothing before it asks for anything
        if pattern.match(text) or last and pattern.match(last) and not VERB_START.search(raw[:-len(last) - 1]):
            return Intent(kind="playback", russian=russian, action=action)
    words = text.split()
    clauses = {len(part.split()) for part in itertools.accumulate(raw.split(","), lambda a, b: a + "," + b)}
    for cut in range(len(words) - 1, 0, -1):  # "поставь на паузу, мне звонят": its reason after it
        said_after = " ".join(words[cut:])
        if ASKS_MORE.search(" " + said_after + " ") or len(words) > 16:
            return None
        if cut not in clauses and not _REASON_START.match(said_after):
            continue  # "пауза между фильмами была долгой": a remark, no command
        if len(words) - cut == 1 and not _REASON_START.match(said_after) and not _NAMES_WHAT_PLAYS.search(" ".join(words[:cut])):
            continue  # "выключи, пожалуйста, свет": what to turn off, no reason ("stop the movie, bedtime" is one)
        for action, pattern in (*_PLAYBACK, ("stop", _ENOUGH_THEN_OFF)):
            if pattern.match(" ".join(words[:cut])):
                return Intent(kind="playback", russian=russian, action=action)
        if _BARE_STOP.match(" ".join(words[:cut])) and _REASON_START.match(said_after):  # "выключи, мы его уже смотрели"
            return Intent(kind="playback", russian=russian, action="stop")
    return None


_NAMES_WHAT_PLAYS = re.compile(r"(?:^|\s)(?:его|ее|её|это|фильм|кино|сериал|мультик|it|that|this|movie|film|show)(?:\s|$)")


# a stop that names nothing, followed by its reason ("выключи, мы его уже смотрели"); alone, or with
# other words after it ("выключи, пожалуйста, свет"), it is none
_BARE_STOP = re.compile(LEAD + r"(?:выключи|выключай|выруби|вырубай|останови|turn\s+it\s+off|switch\s+it\s+off|stop\s+it)$")


# "ну всё, вырубай", "всё, хватит, выключай": a bare stop after the words that end watching
_ENOUGH_THEN_OFF = re.compile(r"^(?:ну\s+|ладно\s+|ok\s+|okay\s+)?(?:всё|все|хватит|enough|that'?s\s+enough|i'?m\s+done|не|нет|nah|nope|no)"
                              r"(?:\s+(?:всё|все|хватит|enough|пожалуйста|please))*\s+(?:выключ\w*|выруб\w*|turn\s+it\s+off|"
                              r"(?:turn|switch|shut)\s+(?:the\s+)?(?:movie|film|show|tv)\s+off)"
                              r"(?:\s+(?:его|фильм|кино|сериал|это))?(?:\s+(?:please|пожалуйста))?$")


# how the reason after a playback command starts when no comma parts them
_REASON_START = re.compile(r"(?:мне|меня|у\s+меня|я|мы|дети|он|она|они|там|we|we'?ve|they|he|she|the\s+kids|kids|звонят|звонок|спать|на\s+(?:минут|секунд)\w*|а\s+то|потому|"
                           r"i'?m|im|i\s+have|i\s+need|my|someone\w*|somebody\w*|the\s+(?:phone|door)|for\s+a|"
                           r"for\s+(?:one|two|five|ten|\d)|because|cause|it'?s|its)\b")


# "хочу посмотреть Лару Крофт, найди": a search asked for after the title
_THEN_SEARCH = re.compile(r"[\s,]+(?:найди|поищи|найти|find\s+it|find|search|look\s+it\s+up)[\s.!]*$")


_THEN_PLAY = re.compile(r"[\s,]+(?:включи|включай|запусти|поставь|play|put\s+it\s+on|start)(?:\s+(?:его|ее|её|it))?[\s.!]*$")


# "I want to watch a film tonight, find «Брат 2»": the wish is context, the request is the search
_FIND_AFTER = re.compile(r"[\s,]+(?:найди|поищи|find|search\s+for|look\s+for|look\s+up)\s+(?P<title>.+)$")


# "хочу посмотреть Брат 2 вечером": a film for later is not played now; the reflex finds it
_LATER = re.compile(r"(?:^|\s)(?:tonight|later|this\s+(?:evening|weekend)|вечером|позже|потом|на\s+выходных)(?=[\s,.!?]|$)")


# "давай его включим", "его включи": the title talked about, its pronoun first
_PLAY_IT = re.compile(LEAD + r"(?:(?:вот\s+)?(?:его|ее|её|это)\s+(?:и\s+|тогда\s+)?(?:включим|включи|включай|вруби|врубай|запусти|запускай|поставь|ставь)|"
                      r"(?:давай\s+)?(?:врубай|запускай|включай)(?:\s+(?:его|ее|её|это))?|давай\s+(?:его|ее|её)|"
                      r"(?:start|play|put\s+on)\s+(?:it|that|this)|(?:put|stick|pop|throw|bung)\s+(?:it|that|this)\s+on)"
                      r"(?:\s+(?:please|пожалуйста|then|тогда|now|сейчас|anyway|всё\s+равно|все\s+равно|"
                      # "start it from episode one", "врубай с первой": from its start
                      + listed_alternation("titles", "from_the_start_patterns", _WORDS) + r"))*"
                      # "put it on anyway, the grandson's not coming till tomorrow": why, after it
                      r"(?:\s*,\s*(?P<why>[^,]{2,80}?))?[\s.!]*$")


# "put the second one on", "put Gladiator on": the title between the verb's words
_PUT_ON = re.compile(LEAD + r"(?:put|stick|pop)\s+(?P<rest>(?!it\b|that\b|this\b).+?)\s+on(?:\s+(?:please|now|for\s+me|for\s+(?:the\s+|my\s+)?\w+))*"
                     r"(?:[\s,]+(?:would|will|could|can)\s+you|[\s,]+please)?[\s.!?]*$")


# "давай вторую часть, включай", "Матрицу включай": the title first, the play word last
_TITLE_THEN_PLAY = re.compile(LEAD + r"(?P<rest>[^,]+?|.+?(?=,\s*(?:play|put)\s))[\s,]+(?:включай|включи|врубай|запускай|"
                              r"play\s+(?:it|that|this)(?:\s+one)?|put\s+(?:it|that|this)(?:\s+one)?\s+on)(?:\s+please)?[\s.!]*$")


# "давай тот, что 1979 года", "let's go with the second one": one of the titles shown, chosen
_CHOSEN = re.compile(r"^(?:(?:ну|а|ok|okay|so|ага|угу|да|yes|yeah|uh|um)[\s,]+)*(?:давай|давайте|let'?s\s+(?:do|go\s+with|have|take)|i'?ll\s+take|"
                     r"go\s+with)[\s,]+(?P<rest>.+)$")


def _play_intent(raw: str, said: str, russian: bool) -> Intent | None:
    play_it = _PLAY_IT.match(raw)
    if play_it is not None and (play_it["why"] is None or remark(play_it["why"])):
        return Intent(kind="play", russian=russian, reference=Reference())
    chosen = _CHOSEN.match(raw)
    if chosen is not None and not VERB_START.match(chosen["rest"]):
        titled = _titled("play", chosen["rest"], said, russian)
        if titled is not None and titled.reference is not None and titled.reference != Reference():
            return titled  # an ordinal, a year or a kind; "давай его" or a title alone is not plain
    put_on = _PUT_ON.match(raw)
    if put_on is not None:
        return _titled("play", put_on["rest"], said, russian)
    match = _PLAY.match(raw)
    title_first = _TITLE_THEN_PLAY.match(raw) if match is None else None
    if title_first is not None and (re.fullmatch(LEAD, title_first["rest"] + " ") or casual(title_first["rest"])):
        return Intent(kind="play", russian=russian, reference=Reference())  # "ну давай, включай": it
    if title_first is not None and not VERB_START.match(title_first["rest"]):
        return _titled("play", title_first["rest"], said, russian)
    if match is None:
        return None
    left = _FROM_THE_START.sub(" ", " " + match["rest"]).strip(" ,")
    if _FROM_THE_START.search(" " + match["rest"]) and (not left or _PRONOUN.match(left)):
        return Intent(kind="play", russian=russian, reference=Reference())  # "play it from the start": the one talked about
    then_search = _THEN_SEARCH.search(match["rest"])
    if then_search is not None:
        return _titled("search", match["rest"][:then_search.start()], said, russian)
    then_play = _THEN_PLAY.search(match["rest"])
    if then_play is not None:
        return _titled("play", match["rest"][:then_play.start()], said, russian)
    find_after = _FIND_AFTER.search(match["rest"])
    if find_after is not None:
        return _titled("search", find_after["title"], said, russian)
    later = _LATER.search(_REMARK_AFTER.sub("", match["rest"]))  # not the remark's: ", мы с дедом вечером посмотреть хотим"
    if later is not None:
        return _titled("search", _LATER.sub(" ", match["rest"]), said, russian)
    return _titled("play", match["rest"], said, russian)


def _which_then_why(kind: ReflexKind, rest: str, said: str, russian: bool) -> Intent | None:
    """"включи старый, семьдесят девятого года, новый я видел": which of the titles shown, its first
    clause says (a year said after it says it best); None when the first clause names no such one."""
    head_said, _, tail = rest.partition(",")
    if not tail or any(VERB_START.match(part.strip()) for part in tail.split(",")):
        return None
    head = _titled(kind, head_said, said, russian)
    if head is None or head.reference is None or head.subject:
        return None
    year = YEAR.search(tail)  # "the old one, from 1989"
    return msgspec.structs.replace(head, reference=Reference(year=int(year["year"]))) if year else head


_IN_CATALOG = re.compile(LEAD + r"(?:is|are)\s+(?P<rest>.+?)\s+in\s+(?:the\s+|your\s+)?catalog(?:ue)?[\s?.!]*$")


# a question after a search that the search's list answers: "… про гарри поттера? какие части?"
_WHICH_ONES = re.compile(r"(?:^|(?<=[.!?])\s+)(?:" + listed_alternation("titles", "which_ones_patterns", _WORDS) + r")[\s?.!]*$")


def _search_intent(raw: str, said: str, russian: bool) -> Intent | None:
    if (which := _WHICH_ONES.search(raw)) is not None and which.start() > 0:
        raw = raw[:which.start()].rstrip(" ?.!")  # "есть у тебя что-нибудь про гарри поттера? какие части?"
    match = _SEARCH.match(raw) or _IN_CATALOG.match(raw)  # "is Titanic in the catalog?"
    if match is None:
        return None
    plain = _FILLER.sub(" ", norm_words(match["rest"])).strip()
    rest = re.sub(r"\s+(?:movies|films)$", "", re.sub(r"^(?:про|об?|about)\s+(?=\S)", "", plain))  # "got any star wars movies"
    intent = _titled("search", rest if rest != plain else match["rest"], said, russian)
    return intent if intent is None or intent.subject else None  # "найди его" asks nothing new


_OF_KIND = re.compile(r"(?:the\s+)?(?P<kind>сериал|series|show|фильм|film|movie)(?:\s+(?:а|but)\s+не(?:\s+\w+)?|"
                      r"\s+not\s+the\s+\w+|\s+version)?")


# "есть что посмотреть?": a question, not a title
_QUESTION_WORD = re.compile(r"(?:что|как|где|когда|почему|зачем|what|how|where|when|why)(?:\s|$)")


# "my morning workout", "мою подборку": the user's own thing (a skill, a list), no catalog title
_USERS_OWN = re.compile(r"(?:my|мой|моя|мою|мое|моё|мои|моих|наш|нашу|наше|our)\s")


# a title and then which of its namesakes: the first, not the sequels or the remake
_FIRST_OF = re.compile(r"\s+(?:the\s+)?(?:very\s+)?(?:first|original)(?:\s+(?:one|film|movie|part))?"
                       r"(?:\s+not\s+the\s+(?:sequels?|remakes?|new\s+ones?|later\s+ones?|other\s+ones?|new\s+one))?$|"
                       r"\s+(?:самый\s+|самую\s+|самое\s+)?(?:перв(?:ый|ого|ую|ая|ое)|оригинал\w*)(?:\s+(?:часть|фильм|серию))?"
                       r"(?:\s+(?:а\s+)?не\s+(?:продолжени\w*|сиквел\w*|ремейк\w*|втор\w+|нов\w+))?$")


# a remark after a title and a comma: what the user feels or why, never the title's words
_WHICH_BY_NUMBER = re.compile(r"\d{4}|\d+(?:st|nd|rd|th|-?(?:я|й|ю|ая|ой|ую))(?!\w)|(?<!\w)(?:part|часть|части|серия|серию|season|сезон)(?!\w)"
                              r"|(?<!\w)\d{1,2}(?:[\s.!?]*$)", re.I)


_REMARK_AFTER = re.compile(r",\s*(?:i|we|he|she|they|my|our|мне|нам|у\s+меня|у\s+нас|мы|я|он|она|они)\s+\S.*$|"  # ", I need something mindless"
                           r",\s*(?:хочется|хочу|что-то|давно|люблю|соскучил\w*|настроение|под\s+настроение|"
                           r"так\s+хочется|а\s+то|потому\s+что|it'?s|i'?m|i'?ve|i\s+feel|i\s+love|we\s+haven'?t|"
                           r"haven'?t|been\s+a\s+while|because|cause)\b.*$"
                           # "включи Ёжика в тумане, дочка просит": a clause with a verb of its own
                           r"|,\s*(?:[а-яё]+\s+){0,2}[а-яё]{2,}(?:ет|ит|ят|ют|ёт)\b.*$"
                           # "найди мне друзей, ну сериал который", "find me Friends, you know, the show": what kind it is
                           r"|,\s*(?:" + listed_alternation("titles", "kind_after_a_title_patterns", _WORDS) + r")\b.*$", re.I)


# "play part two": which part of the title talked about, not a title of its own
_PART_ALONE = re.compile(r"^(?:the\s+)?(?:part|часть)\s+\w+$")


_OTHER = re.compile(r"(?:the\s+|that\s+)?(?:other|another)(?:\s+one)?|(?:тот\s+|та\s+|ту\s+)?друг(?:ой|ую|ое|ая|ого)")


def _titled(kind: ReflexKind, rest: str, said: str, russian: bool) -> Intent | None:
    """A play or search request: its title, or which title already shown it means."""
    head = _which_then_why(kind, rest, said, russian)
    if head is not None:
        return head
    if _PART_ALONE.match(norm_words(rest).strip(" .!?")):
        return None  # the model (or the frame's "the second one") picks among those shown
    if _ANOTHER_ACTION.search(" " + rest):
        return None
    of_kind = _OF_KIND.fullmatch(norm_words(rest))
    if of_kind is not None:  # "включи сериал, а не фильм", "play the series"
        series = of_kind["kind"] in ("сериал", "series", "show")
        return Intent(kind=kind, russian=russian, reference=Reference(kind="series" if series else "film"))
    remark = _REMARK_AFTER.search(rest)  # "поставь Мимино, хочется чего-то душевного": the title, then why
    # (not a clause that says which by its year or part: "…, мне тот, что 1979 года"; "seen it 100 times" is a remark)
    rest = rest[:remark.start()] if remark and not _WHICH_BY_NUMBER.search(rest[remark.start():]) else rest
    # "find me that movie the Matrix", "a film called Solaris": the title after the words that point at it
    rest = re.sub(r"^(?:.*?\s)?(?:called|named|titled|под\s+названием|который\s+называется|что\s+называется)\s+(?=\S)", "",
                  re.sub(r"^(?:me|us)\s+(?:(?:that|this)\s+(?:movie|film|show|one)\s+)?", "", norm_words(rest)))
    # "that film with Totoro in it": the name it was said by
    rest = re.sub(r"^(?:(?:(?:the|that|this|a)\s+)?(?:movie|film|show|cartoon|series|one)\s+)?with\s+(?P<name>.+?)\s+in\s+it$",
                  r"\g<name>", rest)
    # "что-нибудь из Звёздных войн", "something from Star Wars": the titles of that name
    rest = re.sub(r"^(?:что-нибудь|что-то|что\s+нибудь|something|anything)\s+(?:из|from|of|in|про|about)\s+(?=\S)", "", rest)
    quoted = re.search(r"[«\"“](.+?)[»\"”]", said)
    described = _DESCRIBED_BY_A_QUOTE.search(" " + norm_words(rest)) if quoted else None
    if described is not None and described.start() > 0:  # "найди бриллиантовую руку, ну где «шёл, поскользнулся, упал»": a line of it
        rest, quoted = norm_words(rest)[:max(described.start() - 1, 0)], None
    first = None if quoted else _FIRST_OF.search(norm_words(rest))  # "Шрека, первого", "X, the first one, not the sequels"
    if first is not None and re.search(r"[^\W\d_]{2,}", re.sub(r"(?:^|\s)(?:the|a|an|one|that|this)(?=\s|$)", " ",
                                                                _FILLER.sub(" ", norm_words(rest)[:first.start()]))):
        titled = _titled(kind, norm_words(rest)[:first.start()], said, russian)
        return titled if titled is None or not titled.subject else msgspec.structs.replace(titled, reference=Reference(oldest=True))
    subject = norm_words(quoted.group(1)) if quoted else _FILLER.sub(" ", norm_words(rest)).strip()
    subject = re.sub(r"^(?:the|a|an)\s+(?=\S)", "", subject) if not quoted else subject
    if not subject and _FROM_THE_START.search(norm_words(rest)):  # "врубай с первой серии": the one talked about
        return Intent(kind=kind, russian=russian, reference=Reference())
    if len(subject) < 2 or (not quoted and (_NOT_A_TITLE.search(subject) or _USERS_OWN.match(subject)
                                            or _QUESTION_WORD.match(subject))):
        return None
    subject = re.sub(r"\s+(?:из\s+списка|из\s+них|из\s+найденн\w+|from\s+the\s+list|on\s+the\s+list|of\s+them|"
                     r"(?:that\s+)?you\s+found|result|результат|вариант|option|choice)$", "", subject)
    # "номер два", "option two": the number as a digit the ordinal reads
    subject = re.sub(r"^(?:номер|number|option|вариант)\s+(\w+)$", lambda m: f"номер {NUMBER_WORDS.get(m[1], m[1])}", subject)
    which = "other" if _OTHER.fullmatch(subject) else next((name for name, pattern in _WHICH_BY_AGE
                                                            if pattern.fullmatch(subject)), "")
    if which:  # "the last one", "самый новый", "the older one", "the other one"
        return Intent(kind=kind, russian=russian, reference=Reference(**{which: True}))
    # "найди мне лучше Рататуй" (not «Лучше звоните Солу», a title that starts so)
    subject = re.sub(r"^(?:лучше|instead|rather)\s+(?!звоните|позвоните)(?=\S)", "", subject)
    # "put on Home Alone for the kids, would ya", "… instead", "включи X, ладно?": said after the title
    subject = re.sub(r"(?:\s+(?:(?:would|will|could|can)\s+(?:ya|you)|ok|okay|yeah|alright|right|instead|then|ладно|"
                     r"хорошо|вместо\s+этого|тогда))+$", "", subject)
    return _subject_intent(kind, subject, said, russian)


def _subject_intent(kind: ReflexKind, subject: str, said: str, russian: bool) -> Intent:
    """The request for the title words `subject` say: a part, a pronoun, an ordinal or a year of the
    titles shown, else that title (in the language the words around it are said in)."""
    part = re.fullmatch(r"(?:the\s+)?(?P<word>\w+)\s+(?:часть|part)", subject)  # "вторую часть": the one shown
    if part is not None and _ORDINAL.fullmatch(" " + part["word"]):
        subject = part["word"]
    around = norm_words(said).replace(subject, " ")  # "включи Back to the Future" is asked in Russian
    if re.search(r"[^\W\d_]", around):
        russian = is_russian(around)
    if _PRONOUN.fullmatch(subject):
        return Intent(kind=kind, russian=russian, reference=Reference())
    ordinal = _ORDINAL.fullmatch(" " + subject.replace("one", "").strip()) if len(subject.split()) <= 3 else None
    year = YEAR.search(subject)
    if ordinal is not None:
        return Intent(kind=kind, russian=russian, reference=Reference(ordinal=_ORDINALS.get(ordinal["word"], 0)
                                                                      or int(ordinal["word"])))
    if year and _YEAR_ONLY.fullmatch(subject) and not YEAR.fullmatch(subject):
        return Intent(kind=kind, russian=russian, reference=Reference(year=int(year["year"])))
    return Intent(kind=kind, russian=russian, subject=subject)


def _reference(words: str) -> Reference:
    ordinal = _ORDINAL.search(" " + words)
    year = YEAR.search(words)
    return Reference(ordinal=(_ORDINALS.get(ordinal["word"], 0) or int(ordinal["word"])) if ordinal else 0,
                     year=int(year["year"]) if year else 0)


# "Найди Брат. Кто его снял?": a details question anywhere in the words
_DETAILS_ANYWHERE = re.compile("|".join(pattern.pattern for _detail, pattern in _DETAIL_WORDS))


def asks_a_detail(words: str) -> bool:
    """Whether the (lower-case) words ask a title's detail: its runtime, director, episodes, year, plot."""
    return bool(_DETAILS_ANYWHERE.search(words))


# ---- its requests as commands of its frame list (intents.yaml: frame), for the frame bank ----------
_ORDINALS_SAID = ("", "first", "second", "third", "fourth", "fifth")  # as a command says them
_DETAIL_ASKED = {"runtime": "how long is {}", "director": "who directed {}", "episodes": "how many episodes does {} have",
                 "year": "what year is {} from", "about": "what is {} about"}


def _commanded(intent: Intent) -> str | None:
    match intent.kind:
        case "playback":
            return {"pause": "pause", "resume": "resume", "stop": "stop the movie"}.get(intent.action)
        case "play" | "details":
            said = intent.subject or _reference_words(intent.reference)
            if not said:
                return None
            return f"play {said}" if intent.kind == "play" else _DETAIL_ASKED[intent.detail or "about"].format(said)
        case "search":
            return f"find {intent.subject}"
    return None


def _reference_words(reference: Reference | None) -> str:
    if reference is None or reference.kind:
        return ""
    if reference.year:
        return f"the one from {reference.year}"
    if 0 < reference.ordinal < len(_ORDINALS_SAID):
        return f"the {_ORDINALS_SAID[reference.ordinal]} one"
    flags = [name for name in ("last", "oldest", "newest") if getattr(reference, name)]
    return f"the {flags[0]} one" if len(flags) == 1 else "" if flags or reference.ordinal else "it"


PHRASING = Phrasing(recognisers=(_playback_intent, _details_intent, _which_by_age, _play_intent, _search_intent, _instead_intent),
                    requests={"play": _titled, "search": _titled},
                    asks_anywhere=lambda raw: _DETAILS_ANYWHERE.search(raw) is not None, commanded=_commanded)
