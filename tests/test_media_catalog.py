"""The embedded media catalog: shipped data, search quality, ranking, paging, rebuilds (issue 6)."""
import csv
import re
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from toolsets.media.catalog import COLUMNS, DEFAULT_SOURCE, EmbeddedCatalog, normalize
from toolsets.media.provider import MediaProvider, ProviderError

HEADER = "\t".join(COLUMNS) + "\n"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    cat = EmbeddedCatalog(tmp_path_factory.mktemp("media") / "catalog.db")
    yield cat
    cat.close()


def ids(page):
    return [t.id for t in page.items]


def row(media_id, title_ru, title_en="", year="2000", description="", kind="film", director="Someone"):
    runtime, episodes = ("100", "") if kind == "film" else ("", "10")
    return "\t".join([media_id, kind, title_ru, title_en or title_ru, year, "drama", runtime, episodes,
                      director, description]) + "\n"


def write_tsv(path, *rows):
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


# --- the shipped data ----------------------------------------------------------------------------
def test_shipped_catalog_has_over_500_titles_with_unique_slug_ids():
    with DEFAULT_SOURCE.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    media_ids = [r["id"] for r in rows]
    assert len(rows) >= 500
    assert len(set(media_ids)) == len(media_ids)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", i) for i in media_ids)
    assert {r["kind"] for r in rows} == {"film", "series"}


def test_shipped_catalog_loads_without_skipped_rows(catalog):
    catalog.ensure_ready()
    assert catalog.ensure_ready() is False, "built once; nothing rebuilds it while its source is unchanged"
    assert len(catalog) >= 500
    assert catalog.skipped_rows == []
    assert isinstance(catalog, MediaProvider)


def test_famous_titles_are_present_with_real_facts(catalog):
    lara = catalog.info("lara-croft-tomb-raider-2001")
    assert (lara.title_ru, lara.year, lara.director) == ("Лара Крофт: Расхитительница гробниц", 2001, "Simon West")
    assert catalog.info("lara-croft-cradle-of-life-2003").year == 2003
    assert catalog.info("terminator-2-1991").director == "James Cameron"
    assert catalog.info("irony-of-fate-1975").director == "Эльдар Рязанов"
    assert catalog.info("game-of-thrones-2011").kind == "series"


# --- search --------------------------------------------------------------------------------------
def test_search_by_russian_title(catalog):
    assert ids(catalog.search("Лара Крофт"))[:2] == ["lara-croft-tomb-raider-2001", "lara-croft-cradle-of-life-2003"]


def test_search_by_english_title_in_any_case(catalog):
    assert ids(catalog.search("lara croft"))[:2] == ["lara-croft-tomb-raider-2001", "lara-croft-cradle-of-life-2003"]
    assert ids(catalog.search("ТЕРМИНАТОР"))[0] == "terminator-1984"
    assert ids(catalog.search("terminator"))[0] == "terminator-1984"  # "The Terminator" without its article


def test_a_russian_title_said_in_another_case_is_found(catalog):
    assert ids(catalog.search("Крёстного отца"))[0] == "godfather-1972"  # the fleeting vowel of "отец" too
    assert ids(catalog.search("служебного романа")) == ["office-romance-1977"]
    assert ids(catalog.search("белого солнца пустыни")) == ["white-sun-of-the-desert-1970"]
    assert ids(catalog.search("рецепт борща")) == []  # words no title has stay unfound


def test_search_tolerates_typos_in_both_languages(catalog):
    assert ids(catalog.search("Lara Kroft"))[0] == "lara-croft-tomb-raider-2001"
    assert ids(catalog.search("Терминатр"))[0] == "terminator-1984"
    assert ids(catalog.search("Гари Потер"))[0] == "harry-potter-1-2001"


def test_search_by_part_of_a_title(catalog):
    assert "lara-croft-tomb-raider-2001" in ids(catalog.search("гробниц"))
    assert ids(catalog.search("Москва слезам"))[0] == "moscow-tears-1979"
    assert ids(catalog.search("судный день"))[0] == "terminator-2-1991"


def test_search_folds_yo_and_punctuation(catalog):
    assert ids(catalog.search("Елки"))[0] == "yolki-2010"
    assert ids(catalog.search("ёлки"))[0] == "yolki-2010"
    assert ids(catalog.search("Крестный отец"))[0] == "godfather-1972"
    assert normalize("Лара Крофт: Ёлки!") == "лара крофт елки"


def test_search_by_latin_transliteration(catalog):
    assert ids(catalog.search("brat"))[0] == "brother-1997"


def test_a_year_in_the_query_picks_the_right_title(catalog):
    assert ids(catalog.search("Бэтмен 1989")) == ["batman-1989"]
    assert ids(catalog.search("1917"))[0] == "1917-2019"


def test_director_names_find_their_films(catalog):
    assert "stalker-1979" in ids(catalog.search("Тарковский", per_page=10))


@pytest.mark.parametrize("query", ["films by Tarkovsky", "фильмы Тарковского", "tarkovsky"])
def test_a_directors_name_in_another_script_or_case_finds_their_films_oldest_first(catalog, query):
    found = ids(catalog.search(query, per_page=10))
    assert found[:5] == ["ivans-childhood-1962", "andrei-rublev-1966", "solaris-1972", "mirror-1975", "stalker-1979"]


@pytest.mark.parametrize("query, genre", [("something funny to watch", "comedy"), ("включи какую-нибудь комедию", "comedy"),
                                          ("смешное", "comedy"), ("a scary movie", "horror"), ("мультик", "animation")])
def test_a_genre_said_in_words_lists_that_genres_titles_newest_first(catalog, query, genre):
    page = catalog.search(query, per_page=10)
    assert page.total > 10 and all(genre in title.genres for title in page.items), ids(page)
    years = [title.year for title in page.items]
    assert years == sorted(years, reverse=True)


def test_a_title_said_wins_over_a_genre_word_in_it(catalog):
    assert ids(catalog.search("Star Wars"))[0] == "star-wars-1977"


def test_nothing_found_and_blank_queries_give_an_empty_page(catalog):
    for query in ("qqqzzz", "   ", "!!!"):
        page = catalog.search(query)
        assert (page.items, page.total, page.pages) == ([], 0, 0)


def test_bad_paging_arguments_are_refused(catalog):
    with pytest.raises(ValueError):
        catalog.search("lara", page=0)
    with pytest.raises(ValueError):
        catalog.search("lara", per_page=0)


# --- ranking -------------------------------------------------------------------------------------
def test_ranking_exact_then_prefix_then_contains_then_description(tmp_path):
    source = write_tsv(
        tmp_path / "c.tsv",
        row("mention-1990", "Корабль", description="Плывут на остров за кладом.", year="1990"),
        row("contains-1991", "Таинственный остров", year="1991"),
        row("prefix-1992", "Остров сокровищ", year="1992"),
        row("exact-2006", "Остров", year="2006"),
    )
    cat = EmbeddedCatalog(tmp_path / "c.db", source)
    assert ids(cat.search("остров")) == ["exact-2006", "prefix-1992", "contains-1991", "mention-1990"]


def test_fuzzy_matches_rank_before_description_mentions(tmp_path):
    source = write_tsv(
        tmp_path / "c.tsv",
        row("mention-1990", "Корабль", description="Упоминает гладиатора"),
        row("fuzzy-2000", "Гладиатор", year="2000"),
    )
    cat = EmbeddedCatalog(tmp_path / "c.db", source)
    assert ids(cat.search("гладиатара")) == ["fuzzy-2000"]
    assert ids(cat.search("гладиатор")) == ["fuzzy-2000", "mention-1990"]


# --- paging --------------------------------------------------------------------------------------
def test_pagination_second_and_past_last_page(catalog):
    first = catalog.search("терминатор", page=1, per_page=5)
    second = catalog.search("терминатор", page=2, per_page=5)
    beyond = catalog.search("терминатор", page=9, per_page=5)
    assert (first.total, first.pages, len(first.items)) == (6, 2, 5)
    assert [t.id for t in second.items] == ["terminator-dark-fate-2019"]
    assert (second.first_index, second.last_index) == (6, 6)
    assert set(ids(first)).isdisjoint(ids(second))
    assert (beyond.items, beyond.total, beyond.pages, beyond.page) == ([], 6, 2, 9)


# --- info ----------------------------------------------------------------------------------------
def test_info_known_and_unknown(catalog):
    title = catalog.info(" Terminator-1984 ")
    assert (title.title_en, title.year, title.runtime_min) == ("The Terminator", 1984, 107)
    assert catalog.info("no-such-film-1999") is None


# --- building ------------------------------------------------------------------------------------
def test_rebuilds_when_the_source_changes_and_not_otherwise(tmp_path):
    source = write_tsv(tmp_path / "c.tsv", row("alpha-2001", "Альфа", "Alpha", "2001"))
    db = tmp_path / "c.db"
    cat = EmbeddedCatalog(db, source)
    assert cat.ready_now() is False  # nothing built yet: the media tools go to a worker thread
    assert cat.ensure_ready() is True
    assert cat.ready_now() is True  # a lookup now: the media tools call it on the event loop
    assert ids(cat.search("alpha")) == ["alpha-2001"]

    write_tsv(source, row("beta-2002", "Бета", "Beta", "2002"), row("gamma-2003", "Гамма", "Gamma", "2003"))
    assert cat.ready_now() is False  # a rebuild is due: off the loop again
    assert ids(cat.search("beta")) == ["beta-2002"]  # noticed without a restart
    assert cat.search("alpha").total == 0
    cat.close()

    reopened = EmbeddedCatalog(db, source)
    assert reopened.ensure_ready() is False  # same content: the stored index is reused
    assert len(reopened) == 2


def test_broken_rows_are_skipped_and_reported(tmp_path):
    source = tmp_path / "c.tsv"
    source.write_text(
        HEADER + row("good-2001", "Хороший", "Good", "2001") + "bad-row\tfilm\tonly three\n"
        + row("bad-year-2002", "Плохой", "Bad", "20x2") + row("good-2001", "Дубль", "Dup", "2001"),
        encoding="utf-8",
    )
    cat = EmbeddedCatalog(tmp_path / "c.db", source)
    assert cat.all_ids() == ["good-2001"]
    assert len(cat.skipped_rows) == 3
    assert any("duplicate id good-2001" in p for p in cat.skipped_rows)


def test_missing_source_without_a_database_is_a_clear_error(tmp_path):
    cat = EmbeddedCatalog(tmp_path / "c.db", tmp_path / "absent.tsv")
    with pytest.raises(ProviderError, match="missing"):
        cat.search("x")


def test_a_corrupt_database_file_is_rebuilt(tmp_path):
    source = write_tsv(tmp_path / "c.tsv", row("alpha-2001", "Альфа", "Alpha", "2001"))
    db = tmp_path / "c.db"
    db.write_bytes(b"this is not a sqlite database" * 100)
    assert ids(EmbeddedCatalog(db, source).search("альфа")) == ["alpha-2001"]


# --- threads -------------------------------------------------------------------------------------
def test_concurrent_searches_from_threads_agree(catalog):
    queries = ["Лара Крофт", "Терминатр", "matrix", "ирония судьбы"] * 10
    expected = {q: ids(catalog.search(q)) for q in set(queries)}

    def search(query):
        return query, ids(catalog.search(query))

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(search, queries))
    assert all(expected[q] == found for q, found in results)


async def test_usable_from_anyio_worker_threads(tmp_path):
    cat = EmbeddedCatalog(tmp_path / "fresh.db")  # first use builds the index inside the worker
    page = await anyio.to_thread.run_sync(cat.search, "Терминатор 2")
    assert ids(page)[0] == "terminator-2-1991"


def test_a_title_said_with_its_director_finds_the_title_and_a_director_alone_finds_nothing(catalog):
    """"есть у тебя сталкер тарковского": the director in the genitive after the title."""
    assert ids(catalog.search("сталкер тарковского")) == ["stalker-1979"]
    assert ids(catalog.search("Солярис Тарковского 1972")) == ["solaris-1972"]
    assert ids(catalog.search("stalker tarkovsky")) == ["stalker-1979"]  # his name spelled in Latin letters
    assert ids(catalog.search("Гараж у Рязанова")) == ["garage-1979"]
    assert ids(catalog.search("котлеты тарковского")) == []  # no title of that name
