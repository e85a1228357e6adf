"""The embedded film/series catalog: a shipped TSV indexed in SQLite FTS5 (trigram), searched by
title in Russian or English, by part of it, with typos.

Why SQLite: it is in the standard library, the index survives restarts, and the trigram tokenizer
gives substring matching in any script. The index is rebuilt whenever the shipped file's content
changes (its SHA-256 is stored in the database), so editing the TSV is all it takes to update it.

Ranking tiers (best first): exact title, title prefix, title contains the query (or all its
words), fuzzy title match (typos), a mention in the description or the director's name. A 4-digit
year in the query ("Бэтмен 1989") may match the title's year instead of its text.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import logging
import math
import os
import re
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.lexicon import numbers_in_figures, table
from core.lexicon import words as listed_words
from core.translit import transliterate
from toolsets.media.fuzzy import FuzzyIndex
from toolsets.media.provider import MatchedBy, ProviderError, SearchPage, Title

log = logging.getLogger(__name__)

DEFAULT_SOURCE = Path(__file__).with_name("data") / "catalog.tsv"
GENRE_WORDS = Path(__file__).with_name("data") / "genre_words.tsv"
COLUMNS = ("id", "kind", "title_ru", "title_en", "year", "genres", "runtime_min", "episodes", "director", "description")
INDEX_FORMAT = 1  # bump when normalize()/_index() change what is stored
MAX_PER_PAGE = 50
# A search that costs more than a thread hand-off holds up every other call of the executor's
# event loop longer than the hand-off would: once the recent searches average above this, they
# run in a worker thread (a user's catalog of thousands of titles; the shipped one stays well
# under it). `toolsets.media.loop_search_ms`.
LOOP_SEARCH_BUDGET_S = 0.001
_COST_WEIGHT = 0.2  # of the newest search in the running average

TIER_EXACT, TIER_PREFIX, TIER_CONTAINS, TIER_FUZZY, TIER_MENTION = range(5)

_ARTICLES = frozenset({"the", "a", "an"})
_NON_WORD = re.compile(r"[\W_]+")
_YEAR = re.compile(r"^(18|19|20)\d\d$")


def normalize(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form: 'Лара Крофт: Ёлки!' -> 'лара крофт елки'.

    ё/е and й/и fold together (both sides of every comparison go through here, so that is harmless),
    and so do Latin letters written inside a Cyrillic word ("Mимино" with a Latin M, as the model
    wrote it in an eval run)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    if _LATIN.search(stripped) and _CYRILLIC.search(stripped):
        stripped = _MIXED_WORD.sub(lambda word: word[0].translate(_LOOKALIKES) if _CYRILLIC.search(word[0]) else word[0],
                                   stripped)
    return _without_number_sign(_NON_WORD.sub(" ", stripped).strip())


# "Легенда №17" is said "легенду номер семнадцать", "Legend No. 17" "legend number seventeen": the
# sign's word before a number folds away on both sides of a comparison, as the sign itself does
_NUMBER_SIGN = re.compile(r"\b(?:номер|number|no|nr)\s+(?=\d)")


def _without_number_sign(normalized: str) -> str:
    return _NUMBER_SIGN.sub("", normalized) if any(ch.isdigit() for ch in normalized) else normalized


def number_sign_folded(normalized: str) -> str:
    """Normalized words with a number sign's word folded away ("легенду номер семнадцать" ->
    "легенду 17"): as the catalog reads a title's "№17"; the words unchanged when none is said."""
    in_figures = numbers_in_figures(normalized)
    folded = _without_number_sign(in_figures)
    return folded if folded != in_figures else normalized


_LATIN = re.compile(r"[a-z]")
_CYRILLIC = re.compile(r"[а-яё]")
_MIXED_WORD = re.compile(r"[^\W\d_]*[a-z][^\W\d_]*")  # a word with a Latin letter: Cyrillic look-alikes in it fold
_LOOKALIKES = str.maketrans("aceopxykmthb", "асеорхукмтнв")


def _has_cyrillic(text: str) -> bool:
    return any("\u0400" <= ch <= "\u04ff" for ch in text)


@dataclass(frozen=True, slots=True)
class _Indexed:
    """A title with its normalized searchable forms, kept in memory after loading."""

    title: Title
    names: tuple[str, ...]  # normalized titles (ru, en; deduplicated)
    body: str  # normalized description + director + genres


class EmbeddedCatalog:
    """The shipped catalog. Safe to call from several threads (one connection behind a lock).

    The database is built lazily on first use and rebuilt when the source file's hash changes;
    `ensure_ready()` does that eagerly (and says whether it rebuilt)."""

    def __init__(self, db_path: str | os.PathLike[str], source_path: str | os.PathLike[str] = DEFAULT_SOURCE,
                 *, clock: Callable[[], float] = time.perf_counter, loop_budget_s: float = LOOP_SEARCH_BUDGET_S,
                 matcher: Callable[[list[tuple[_Indexed, tuple[str, ...]]]], FuzzyIndex[_Indexed]] = FuzzyIndex):
        self.db_path = str(db_path)
        self.source_path = Path(source_path)
        self.skipped_rows: list[str] = []  # problems found in the source at the last build
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._records: dict[str, _Indexed] = {}
        self._by_rowid: dict[int, _Indexed] = {}
        self._matcher = matcher  # the typo pass's index (tools/fuzzy_compare.py plays two against each other)
        self._fuzzy_index = matcher([])
        self._names_inside: list[tuple[_Indexed, frozenset[str]]] = []  # names of two words or more, as words
        self._source_stat: tuple[int, int] | None = None
        self._clock = clock  # times the searches, for ready_now()
        self._loop_budget_s = loop_budget_s
        self._search_cost_s = 0.0  # running average of the recent searches' wall time

    # --- public -------------------------------------------------------------------------------
    def search(self, query: str, page: int = 1, per_page: int = 5) -> SearchPage:
        if page < 1 or not 1 <= per_page <= MAX_PER_PAGE:
            raise ValueError(f"page must be >= 1 and per_page within 1..{MAX_PER_PAGE}")
        with self._lock:
            self.ensure_ready()
            started = self._clock()
            ranked, by = self._rank(query)
            self._search_cost_s += (self._clock() - started - self._search_cost_s) * _COST_WEIGHT
        total = len(ranked)
        start = (page - 1) * per_page
        return SearchPage(
            items=ranked[start:start + per_page], total=total, page=page,
            pages=math.ceil(total / per_page), per_page=per_page, by=by,
        )

    def info(self, media_id: str) -> Title | None:
        with self._lock:
            self.ensure_ready()
            record = self._records.get(media_id.strip().lower())
        return record.title if record else None

    def all_ids(self) -> list[str]:
        with self._lock:
            self.ensure_ready()
            return list(self._records)

    def __len__(self) -> int:
        return len(self.all_ids())

    def ready_now(self) -> bool:
        """True while the index is open, its source unchanged and the recent searches cheap (their
        running average within `loop_budget_s`): the media tools then run a call on the event
        loop instead of paying two thread hand-offs around it (which cost more than the lookup). A rebuild, and
        the searches of a catalog too big for that, stay off the loop; they are still timed, so a
        run of cheap ones brings the calls back."""
        return (self._conn is not None and self._stat_source() == self._source_stat
                and self._search_cost_s <= self._loop_budget_s)

    def ensure_ready(self) -> bool:
        """Open the database, (re)building it if the source changed. True when it rebuilt."""
        with self._lock:
            stat = self._stat_source()
            if self._conn is not None and stat == self._source_stat:
                return False
            conn = self._connect()
            if stat is None:  # source missing: serve what the database has, if anything
                self._load(conn)
                if not self._records:
                    raise ProviderError(f"the media catalog file {self.source_path} is missing")
                return False
            # The code's index format is part of the key: changing normalization re-indexes too.
            digest = f"{INDEX_FORMAT}:{hashlib.sha256(self.source_path.read_bytes()).hexdigest()}"
            rebuilt = False
            if self._stored_hash(conn) != digest:
                self._build(conn, digest)
                rebuilt = True
            if rebuilt or not self._records:
                self._load(conn)
            self._source_stat = stat
            return rebuilt

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._source_stat = None

    # --- building -----------------------------------------------------------------------------
    def _stat_source(self) -> tuple[int, int] | None:
        try:
            st = self.source_path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        if self.db_path != ":memory:":
            Path(self.db_path).parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.db_path, check_same_thread=False)
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        except sqlite3.DatabaseError as exc:  # a corrupt file: it is only a cache, start over
            log.warning("media catalog database %s is unusable (%s); recreating it", self.db_path, exc)
            if self.db_path == ":memory:":
                raise ProviderError(f"the media catalog database cannot be opened: {exc}") from None
            Path(self.db_path).unlink(missing_ok=True)
            conn = sqlite3.connect(self.db_path, check_same_thread=False)
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        self._conn = conn
        return conn

    @staticmethod
    def _stored_hash(conn: sqlite3.Connection) -> str | None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'source_sha256'").fetchone()
        return row[0] if row else None

    def _build(self, conn: sqlite3.Connection, digest: str) -> None:
        titles = self._read_source()
        with conn:  # one transaction: readers never see a half-built index
            conn.execute("DROP TABLE IF EXISTS titles")
            conn.execute("DROP TABLE IF EXISTS titles_fts")
            conn.execute(
                "CREATE TABLE titles (rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, kind TEXT, "
                "title_ru TEXT, title_en TEXT, year INTEGER, genres TEXT, runtime_min INTEGER, "
                "episodes INTEGER, director TEXT, description TEXT)"
            )
            conn.execute("CREATE VIRTUAL TABLE titles_fts USING fts5(names, body, tokenize='trigram')")
            for rowid, title in enumerate(titles, start=1):
                conn.execute(
                    "INSERT INTO titles VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (rowid, title.id, title.kind, title.title_ru, title.title_en, title.year,
                     ",".join(title.genres), title.runtime_min, title.episodes, title.director,
                     title.description),
                )
                indexed = _index(title)
                conn.execute("INSERT INTO titles_fts (rowid, names, body) VALUES (?,?,?)",
                             (rowid, " | ".join(indexed.names), indexed.body))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('source_sha256', ?)", (digest,))
        log.info("media catalog built: %d titles from %s (%d rows skipped)",
                 len(titles), self.source_path, len(self.skipped_rows))

    def _read_source(self) -> list[Title]:
        """Parse the TSV; a broken row is skipped and reported, never fatal."""
        self.skipped_rows = []
        titles: list[Title] = []
        seen: set[str] = set()
        with self.source_path.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, None)
            if header is None or tuple(header) != COLUMNS:
                raise ProviderError(f"the media catalog file {self.source_path} has an unexpected header")
            for line_no, row in enumerate(reader, start=2):
                if not row or not any(cell.strip() for cell in row):
                    continue
                try:
                    title = _parse_row(row)
                except ValueError as exc:
                    self.skipped_rows.append(f"line {line_no}: {exc}")
                    continue
                if title.id in seen:
                    self.skipped_rows.append(f"line {line_no}: duplicate id {title.id}")
                    continue
                seen.add(title.id)
                titles.append(title)
        for problem in self.skipped_rows:
            log.warning("media catalog %s: %s", self.source_path, problem)
        return titles

    def _load(self, conn: sqlite3.Connection) -> None:
        try:
            rows = conn.execute(
                "SELECT rowid, id, kind, title_ru, title_en, year, genres, runtime_min, episodes, "
                "director, description FROM titles ORDER BY rowid"
            ).fetchall()
        except sqlite3.OperationalError:  # no table yet
            rows = []
        self._records, self._by_rowid = {}, {}
        for rowid, *fields in rows:
            title = Title(
                id=fields[0], kind=fields[1], title_ru=fields[2], title_en=fields[3], year=fields[4],
                genres=tuple(g for g in (fields[5] or "").split(",") if g), runtime_min=fields[6],
                episodes=fields[7], director=fields[8] or "", description=fields[9] or "",
            )
            indexed = _index(title)
            self._records[title.id] = indexed
            self._by_rowid[rowid] = indexed
        self._fuzzy_index = self._matcher([(record, record.names) for record in self._records.values()])
        self._stem_index = self._matcher([(record, tuple(stems(name) for name in record.names if _CYRILLIC.search(name)))
                                          for record in self._records.values()])
        self._names_inside = [(record, words) for record in self._records.values() for name in _names_and_main_titles(record)
                              for words in [_name_words(name)] if len(words) >= NAMED_INSIDE_MIN_WORDS]

    # --- searching ----------------------------------------------------------------------------
    def _rank(self, query: str) -> tuple[list[Title], MatchedBy]:
        """The titles a query names, best first, and what named them: a title's words (in any
        case, with typos, with its director or year, a number said in words or figures), else its
        director's name alone, else a genre's word ("something funny"), which a title's words win over."""
        normalized = normalize(query)
        if not normalized:
            return [], "title"
        words = normalized.split()
        scored, by = self._by_title(normalized, words), "title"
        if (in_figures := _without_number_sign(parts_in_figures(numbers_in_figures(normalized)))) != normalized:
            # "брат два", "брата второго" are "Брат 2" (it was a typo match of another title), "back to the
            # future two" the second; "один дома", "двенадцать стульев" stay as written: their words name them better
            figured = self._by_title(in_figures, in_figures.split())
            if figured and min(figured.values())[:2] < min(scored.values(), default=(TIER_MENTION + 1, 0.0))[:2]:
                scored, words = figured, in_figures.split()
        if not scored:  # "films by Tarkovsky", "фильмы Рязанова": the director's titles, oldest first
            scored, by = {record.title.id: (TIER_MENTION, 1.0, record.title.year)
                          for record in self._records.values() if _by_director(record, words)}, "director"
        if not scored:  # "жена хочет москва слезам не верит посмотреть": a title said inside a sentence
            said = set(stems(normalized).split()) | set(stems(in_figures).split())  # "брат два": «Брат 2»
            scored, by = {record.title.id: (TIER_MENTION, 2.0, record.title.year)
                          for record, name in self._names_inside if name <= said}, "title"
        genres = genres_named(normalized) if not any(tier <= TIER_CONTAINS for tier, _, _ in scored.values()) else set()
        if genres:  # a typo match or a mere mention is no title said: the genre's titles, newest first
            scored, by = {record.title.id: (TIER_MENTION, -float(record.title.year or 0), record.title.year)
                          for record in self._records.values() if genres <= set(record.title.genres)}, "genre"
        order = sorted(scored, key=lambda media_id: scored[media_id])
        return [self._records[media_id].title for media_id in order], by if scored else "title"

    def _by_title(self, normalized: str, words: list[str]) -> dict[str, tuple[int, float, int]]:
        """Title id -> (tier, tie-break, year) of the titles the words name."""
        scored: dict[str, tuple[int, float, int]] = {}
        for record in self._candidates(words):
            tier_score = _classify(record, words)
            if tier_score is not None:
                scored[record.title.id] = (*tier_score, record.title.year)
        if not any(tier <= TIER_CONTAINS for tier, _, _ in scored.values()):
            for record, ratio in self._fuzzy_index.match(fuzzy_query(normalized)):
                current = scored.get(record.title.id)
                if current is None or current[0] > TIER_FUZZY:
                    scored[record.title.id] = (TIER_FUZZY, -ratio, record.title.year)
        if not scored and _CYRILLIC.search(normalized):  # "Крёстного отца": the title in another case
            for record, ratio in self._stem_index.match(stems(fuzzy_query(normalized))):
                scored[record.title.id] = (TIER_FUZZY, -ratio, record.title.year)
        if not scored:  # "сталкер тарковского", "alien ridley scott": a title with its director
            for record in self._records.values():
                if _title_and_director(record, words):
                    scored[record.title.id] = (TIER_CONTAINS, 3.0, record.title.year)
        return scored

    def _candidates(self, words: list[str]) -> list[_Indexed]:
        """Rows that contain every searchable word somewhere (FTS trigram), or all rows when the
        query has no word long enough for trigrams; exact classification happens in Python."""
        long_words = [w for w in words if len(w) >= 3 and not _YEAR.match(w)]
        if not long_words:
            return list(self._records.values())
        match = " ".join(f'"{w}"' for w in long_words)
        rows = self._conn.execute("SELECT rowid FROM titles_fts WHERE titles_fts MATCH ?", (match,)).fetchall()
        return [self._by_rowid[r[0]] for r in rows if r[0] in self._by_rowid]


_CYRILLIC = re.compile(r"[а-я]")
# Russian case endings, longest first (normalize folds й into и): what "крестного отца" and
# "крестныи отец" lose to meet as "крестн отц" / "крестн отец", close enough for the typo pass
_ENDINGS = re.compile(r"(?:ого|его|ому|ему|ыми|ими|ыи|ии|ои|ая|яя|ую|юю|ой|ей|ое|ее|ые|ие|ых|их|ом|ем|ам|ям|ах|ях|"
                      r"ов|ев|ью|а|я|у|ю|ы|и|е|о|ь)$")


@functools.lru_cache(maxsize=1)
def _part_ordinals() -> dict[str, str]:
    return {normalize(word): str(number) for word, number in table("titles", "part_ordinals", _WORDS).items()}


def parts_in_figures(text: str) -> str:
    """A title's part said as an ordinal, as figures: "брата второго" -> "брата 2" (words/*/titles.toml)."""
    ordinals = _part_ordinals()
    return " ".join(ordinals.get(normalize(word), word) for word in text.split())


def stems(normalized: str) -> str:
    """Each Russian word of a normalized text without its case ending (a stem of 3 letters at least)."""
    def stem(word: str) -> str:
        if not _CYRILLIC.search(word):
            return word
        cut = _ENDINGS.sub("", word)
        return cut if len(cut) >= 3 else word
    return " ".join(stem(word) for word in normalized.split())


NAMED_INSIDE_MIN_WORDS = 2  # a one-word title ("Брат") is in too many sentences to be named inside one
_WORDS = Path(__file__).with_name("words")
_NAME_GLUE = frozenset(listed_words("titles", "name_glue_words", _WORDS))


# where a title's name ends and its subtitle begins (main_title; local.subtitle)
SUBTITLE = re.compile(r"\s*(?:[:.!?(—–]|,\s*(?:или|or)\s|\s-\s)")


def main_title(name: str) -> str:
    """A title's name before its subtitle: «Ирония судьбы, или С лёгким паром!» is «Ирония
    судьбы», "Star Wars: The Force Awakens" is "Star Wars" (what people call it)."""
    return SUBTITLE.split(name, maxsplit=1)[0].strip() or name


def _names_and_main_titles(record: _Indexed) -> set[str]:
    """A title's names, and each name's main title ("Слово пацана. Кровь на асфальте" is said "слово
    пацана" inside a sentence)."""
    mains = {normalize(main_title(name)) for name in (record.title.title_ru, record.title.title_en) if name}
    return {*record.names, *(main for main in mains if main)}


def _name_words(name: str) -> frozenset[str]:
    """A normalized name's words that name it inside a sentence, each less its case ending (3
    letters or more, or a number; not glue: «Москва слезам не верит» -> москв, слез, вер...)."""
    return frozenset(word for word in stems(name).split() if (len(word) >= 3 or word.isdigit()) and word not in _NAME_GLUE)


def fuzzy_query(normalized: str) -> str:
    """What the typo pass (`toolsets/media/fuzzy.py`) compares with titles: the query without its
    years ("терминатр 1984" is a title's words and a filter), unless it is nothing but years."""
    return " ".join(w for w in normalized.split() if not _YEAR.match(w)) or normalized


def _classify(record: _Indexed, words: list[str]) -> tuple[int, float] | None:
    """(tier, tie-break) for a row, or None when the query does not match it at all."""
    year = str(record.title.year)
    variants = [words]
    if year in words:  # "Бэтмен 1989": a word equal to the title's year may be a filter, not title text
        variants.append([w for w in words if w != year])
    best: tuple[int, float] | None = None
    for core_words in variants:
        candidate = _classify_words(record, core_words) if core_words else (TIER_MENTION, 0.0)
        if candidate is not None and (best is None or candidate < best):
            best = candidate
    return best


def _classify_words(record: _Indexed, core_words: list[str]) -> tuple[int, float] | None:
    core = " ".join(core_words)
    best: tuple[int, float] | None = None
    for name in record.names:
        if name == core:
            candidate = (TIER_EXACT, 0.0)
        elif name.startswith(core):
            candidate = (TIER_PREFIX, 0.0)  # ties go by year: a franchise reads in order
        elif f" {core}" in f" {name}":  # from a word start
            candidate = (TIER_CONTAINS, 0.0)
        elif _contains(name, core):
            candidate = (TIER_CONTAINS, 1.0)
        elif all(_contains(name, w) for w in core_words):
            candidate = (TIER_CONTAINS, 2.0)
        else:
            continue
        if best is None or candidate < best:
            best = candidate
    if best is None and all(_contains(record.body, w) or any(_contains(n, w) for n in record.names)
                            for w in core_words):
        best = (TIER_MENTION, 0.0)
    return best


# said around a director's name: "гараж у рязанова", "stalker, the tarkovsky one", "тот, что у данелии"
_BY = frozenset({"у", "от", "by", "from", "the", "one", "film", "movie", "фильм", "тот", "что"})


def _title_and_director(record: _Indexed, words: list[str]) -> bool:
    """Some of the words are the title's whole name and the rest its director's (in any case, or
    in Latin letters) or its year: "сталкер тарковского", "гараж у рязанова", "stalker tarkovsky"."""
    director = normalize(record.title.director).split()
    if not director:
        return False
    director += transliterate(" ".join(director)).split()
    said = [w for w in words if w not in _BY]
    by_director = [w for w in said if _YEAR.match(w) and w == str(record.title.year)
                   or any(_one_name(w, name) for name in director)]
    named = _long_words(stems(" ".join(w for w in said if w not in by_director)))
    return bool(by_director) and bool(named) and any(named == _long_words(stems(name)) for name in record.names)


_WORKS = frozenset({"films", "movies", "фильмы", "фильмов", "кино", "картины", "all", "все", "every", "work", "works",
                    "directed", "снятые", "снял", "режиссера", "режиссер", "director"})


@functools.cache
def _genre_words() -> tuple[tuple[str, str], ...]:
    """(words, genre) pairs of data/genre_words.tsv, the words normalized."""
    pairs = []
    for line in GENRE_WORDS.read_text(encoding="utf-8").splitlines():
        words, _, genre = line.partition("\t")
        if genre and not words.startswith("#"):
            pairs.append((normalize(words), genre.strip()))
    return tuple(pairs)


def genres_named(normalized: str) -> set[str]:
    """The genres a normalized query names by a word for one ("funny" is comedy)."""
    padded = f" {normalized} "
    return {genre for words, genre in _genre_words() if f" {words} " in padded}


def _by_director(record: _Indexed, words: list[str]) -> bool:
    """Every word said (less "films by", "фильмы") is a name of the title's director, in any case
    or in Latin letters: "tarkovsky" is «Андрей Тарковский»."""
    director = normalize(record.title.director).split()
    said = [w for w in words if w not in _BY and w not in _WORKS]
    if not director or not said:
        return False
    director += transliterate(" ".join(director)).split()
    return all(any(_one_name(w, name) for name in director) for w in said)


def _long_words(text: str) -> str:
    """The words of three letters or more ("война мир" of "война и мир": glue a question drops)."""
    return " ".join(w for w in text.split() if len(w) > 2) or text


def _one_name(said: str, name: str) -> bool:
    """A surname in another case or spelling: "рязанова"/"рязанов", "tarkovsky"/"tarkovskii"."""
    common = len(os.path.commonprefix((said, name)))
    return common >= 4 and common >= max(len(said), len(name)) - 3


def _contains(text: str, part: str) -> bool:
    """Substring match; a short part (< 4 characters) must start a word, or "оно" would match "Мононоке"."""
    if len(part) >= 4:
        return part in text
    return f" {part}" in f" {text}"


def _index(title: Title) -> _Indexed:
    names = [n for n in (normalize(title.title_ru), normalize(title.title_en)) if n]
    if names and _has_cyrillic(names[0]):  # "brat" typed on a Latin keyboard finds "Брат"
        names.append(transliterate(names[0]))
    for name in list(names):  # "The Terminator" is also just "terminator"
        article, _, rest = name.partition(" ")
        if article in _ARTICLES and rest:
            names.append(rest)
    names = tuple(dict.fromkeys(names))
    body = normalize(" ".join((title.description, title.director, " ".join(title.genres))))
    return _Indexed(title=title, names=names, body=body)


def _parse_row(row: list[str]) -> Title:
    if len(row) != len(COLUMNS):
        raise ValueError(f"expected {len(COLUMNS)} tab-separated columns, found {len(row)}")
    cells = dict(zip(COLUMNS, (cell.strip() for cell in row)))
    media_id = cells["id"].lower()
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", media_id):
        raise ValueError(f"id {cells['id']!r} is not a lowercase slug")
    if cells["kind"] not in ("film", "series"):
        raise ValueError(f"kind {cells['kind']!r} is not film or series")
    if not (cells["title_ru"] or cells["title_en"]):
        raise ValueError("no title")
    if not re.fullmatch(r"\d{4}", cells["year"]):
        raise ValueError(f"year {cells['year']!r} is not a 4-digit year")

    def optional_int(name: str) -> int | None:
        value = cells[name]
        if not value:
            return None
        if not value.isdigit():
            raise ValueError(f"{name} {value!r} is not a number")
        return int(value)

    return Title(
        id=media_id, kind=cells["kind"], title_ru=cells["title_ru"] or cells["title_en"],
        title_en=cells["title_en"] or cells["title_ru"], year=int(cells["year"]),
        genres=tuple(g.strip() for g in cells["genres"].split(",") if g.strip()),
        runtime_min=optional_int("runtime_min"), episodes=optional_int("episodes"),
        director=cells["director"], description=cells["description"],
    )
