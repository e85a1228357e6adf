"""The catalog's typo pass: the indexed matcher answers as the plain scan of its definition does,
and a catalog whose searches cost more than a thread hand-off leaves the executor's event loop."""
import random
import threading

import pytest

from toolsets.media.catalog import DEFAULT_SOURCE, LOOP_SEARCH_BUDGET_S, EmbeddedCatalog, normalize
from toolsets.media.executor import MediaTools
from toolsets.media.fuzzy import MIN_BIGRAM_SHARE, MIN_QUERY_CHARS, MIN_RATIO, FuzzyIndex, bigrams


def lcs(a, b):
    """Length of the longest common subsequence, the textbook table."""
    row = [0] * (len(b) + 1)
    for ch in a:
        diagonal = 0
        for j, other in enumerate(b, start=1):
            diagonal, row[j] = row[j], diagonal + 1 if ch == other else max(row[j], row[j - 1])
    return row[-1]


def plain_scan(entries, core):
    """The definition: every window of every title sharing enough letter pairs with the query,
    2 * LCS / (both lengths) at MIN_RATIO or above."""
    if len(core.replace(" ", "")) < MIN_QUERY_CHARS:
        return []
    n = len(core.split())
    query_grams = bigrams(core)
    needed = 1 if len(core) <= 5 else len(query_grams) * MIN_BIGRAM_SHARE
    found = []
    for item, names in entries:
        if len(query_grams & {g for name in names for g in bigrams(name)}) < needed:
            continue
        best = 0.0
        for name in names:
            words = name.split()
            for size in {max(1, n - 1), n, n + 1}:
                size = min(size, len(words))
                for start in range(len(words) - size + 1):
                    window = " ".join(words[start:start + size])
                    best = max(best, 2 * lcs(window, core) / (len(window) + len(core)))
        if best >= MIN_RATIO:
            found.append((item, best))
    return found


def typo(rng, text):
    i = rng.randrange(len(text))
    return rng.choice((text[:i] + text[i + 1:], text[:i] + text[i + 1:i + 2] + text[i] + text[i + 2:],
                       text[:i] + rng.choice("аеиокнтaeiokt") + text[i + 1:]))


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    catalog = EmbeddedCatalog(tmp_path_factory.mktemp("media") / "catalog.db")
    catalog.ensure_ready()
    yield catalog
    catalog.close()


def test_the_indexed_matcher_finds_what_the_plain_scan_finds(shipped):
    entries = [(record.title.id, record.names) for record in shipped._records.values()]
    index = FuzzyIndex(entries)
    rng = random.Random(18)
    names = [name for _, ns in entries for name in ns]
    queries = ["матрца", "шрэк", "the matrix film", "лара крофт фильм", "a b c d", "терминатр 2 судный"]
    queries += [typo(rng, rng.choice(names)) for _ in range(100)]
    queries += [f"{rng.choice(names)} {rng.choice(names)}" for _ in range(10)]  # long: the window cache's cap
    matched = 0
    for query in queries:
        core = normalize(query)
        expected = plain_scan(entries, core)
        for _ in range(2):  # again, from the cached windows
            found = index.match(core)
            assert [item for item, _ in found] == [item for item, _ in expected], query
            assert [ratio for _, ratio in found] == pytest.approx([ratio for _, ratio in expected]), query
        matched += bool(expected)
    assert matched > len(queries) // 2  # the typos were found, not only the misses agreed


def test_a_typo_still_finds_the_title(shipped):
    assert [t.id for t in shipped.search("матрца").items][:1] == ["matrix-1999"]
    assert "avatar-2009" in [t.id for t in shipped.search("аватра").items]


def test_a_number_said_in_words_finds_the_title_written_in_figures(shipped):
    assert [t.id for t in shipped.search("брат два").items][:1] == ["brother-2-2000"]
    assert [t.id for t in shipped.search("назад в будущее два").items][:1] == ["back-to-the-future-2-1989"]
    # a title whose words are numbers is named better by them
    assert [t.id for t in shipped.search("двенадцать стульев").items][:1] == ["twelve-chairs-1971"]
    assert [t.id for t in shipped.search("один дома").items][:1] == ["home-alone-1990"]


def test_a_title_said_inside_a_sentence_is_found_when_nothing_else_is(shipped):
    said = "жена хочет москва слезам не верит посмотреть"
    assert [t.id for t in shipped.search(said).items] == ["moscow-tears-1979"]
    # words that name no title of two words or more find nothing
    assert shipped.search("find a cheap flight to paris").items == []
    assert shipped.search("мой брат хочет посмотреть что-нибудь").items == []  # «Брат»: one word


class _Clock:
    def __init__(self):
        self.now, self.step = 0.0, 0.0

    def __call__(self):
        self.now += self.step
        return self.now


class _ThreadNoting(EmbeddedCatalog):
    def search(self, *args, **kwargs):
        self.threads.append(threading.get_ident())
        return super().search(*args, **kwargs)


async def test_a_catalog_whose_searches_cost_more_than_a_hand_off_runs_them_in_a_thread(tmp_path):
    clock = _Clock()
    catalog = _ThreadNoting(tmp_path / "catalog.db", DEFAULT_SOURCE, clock=clock)
    catalog.threads = []
    catalog.ensure_ready()
    tools = MediaTools(None, catalog)  # the host is only for media_play
    loop = threading.get_ident()

    async def search():
        result = await tools.call("media_search", {"query": "матрица"}, "s1")
        assert "Матрица" in result.text
        return catalog.threads[-1] == loop

    clock.step = LOOP_SEARCH_BUDGET_S / 4  # a search costs one step of the clock
    assert await search() and await search()
    clock.step = LOOP_SEARCH_BUDGET_S * 5  # a catalog that got big: 10 ms a search
    await search()
    await search()
    assert catalog.ready_now() is False
    assert not await search()  # off the loop
    clock.step = 0.0  # cheap again: after a few the calls come back
    for _ in range(10):
        await search()
    assert catalog.ready_now() is True and await search()
    catalog.close()


def test_loop_search_ms_from_the_config_sets_the_budget(tmp_path):
    from core.config import ConfigError, load_config
    from toolsets.media import TOOLSET
    from toolsets.media.executor import default_provider

    def config(text):
        path = tmp_path / "porfiry.toml"
        path.write_text(f'[toolsets.media]\ndb_path = "{tmp_path / "m.sqlite3"}"\n{text}')
        return load_config(path, env={})

    never = default_provider(config("loop_search_ms = 0\n"))  # every search off the loop
    never.search("матрица")
    assert never.ready_now() is False
    never.close()
    default = default_provider(config(""))
    default.search("матрица")
    assert default.ready_now() is True
    default.close()
    with pytest.raises(ConfigError, match="loop_search_ms"):
        TOOLSET.read_settings(config("loop_search_ms = -1\n"))
