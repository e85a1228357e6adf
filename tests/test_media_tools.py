"""The media toolset: terse spec, argument checks, and the texts the model reads (S5, S11, issue 6)."""
import pytest

from toolsets.media.catalog import EmbeddedCatalog
from toolsets.media.provider import ProviderError, SearchPage, Title
from core.toolsets import ToolResult, repeatable
from toolsets.media.tools import (
    MEDIA_TOOLSET, PlayRequest, format_search, play_command, play_started_text,
    play_status_text, play_timeout_text, run_info, run_search, validate_play,
)
from core.toolsets import terse as signature
from protocol import PlaybackCommand, PlaybackStatus


def film(n, **kw):
    base = dict(id=f"film-{n}-2000", kind="film", title_ru=f"Фильм {n}", title_en=f"Film {n}", year=2000,
                genres=("drama",), runtime_min=90, director="Someone", description=f"Описание {n}.")
    base.update(kw)
    return Title(**base)


class FakeProvider:
    """A provider with a fixed number of hits for any query, recording what it was asked."""

    def __init__(self, titles, fail=False):
        self.titles, self.fail, self.calls = titles, fail, []

    def search(self, query, page=1, per_page=5):
        self.calls.append((query, page, per_page))
        if self.fail:
            raise ProviderError("backend down")
        start = (page - 1) * per_page
        return SearchPage(items=self.titles[start:start + per_page], total=len(self.titles), page=page,
                          pages=-(-len(self.titles) // per_page), per_page=per_page)

    def info(self, media_id):
        if self.fail:
            raise ProviderError("backend down")
        return next((t for t in self.titles if t.id == media_id), None)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    cat = EmbeddedCatalog(tmp_path_factory.mktemp("media") / "catalog.db")
    yield cat
    cat.close()


# --- the spec --------------------------------------------------------------------------------------
def test_toolset_spec_is_prefixed_and_terse():
    names = [t.name for t in MEDIA_TOOLSET.tools]
    assert MEDIA_TOOLSET.name == "media"
    assert names == ["media_search", "media_info", "media_play"]
    assert all(name.startswith("media_") for name in names)
    assert all(len(t.summary.split()) <= 20 for t in MEDIA_TOOLSET.tools)  # media_play's: measured on run.py eval
    assert len(MEDIA_TOOLSET.summary.split()) <= 10
    rendered = "\n".join(f"{signature(t)} - {t.summary}" for t in MEDIA_TOOLSET.tools)
    assert len(rendered) < 600  # a few dozen tokens, far under the ~400-token budget
    # media_play is asynchronous at its executor (a task id at once, playback events later); the
    # read-only tools may run in a parallel side run.
    assert [t.read_only for t in MEDIA_TOOLSET.tools] == [True, True, False]
    # a play lost with the executor is made again (twice is once: the same title plays)
    assert [repeatable(t) for t in MEDIA_TOOLSET.tools] == [True, True, True]
    assert not any(t.long_running for t in MEDIA_TOOLSET.tools)


def test_signatures_mark_optional_arguments():
    assert [signature(t) for t in MEDIA_TOOLSET.tools] == [
        "media_search|query; page?", "media_info|id", "media_play|id; action?",
    ]


# --- media_search ----------------------------------------------------------------------------------
def test_search_lists_one_title_per_line_and_points_to_the_next_page():
    provider = FakeProvider([film(i) for i in range(1, 38)])
    reply = run_search(provider, {"query": "lara"})
    lines = reply.text.splitlines()
    assert reply.ok
    assert lines[0] == "film-1-2000 \u2014 Фильм 1 / Film 1 (2000, Someone, 90 min): Описание 1."
    assert len(lines) == 6
    assert lines[-1] == "showing 1\u20135 of 37; next page: TOOL_CALL: media_search|lara; page=2"
    assert provider.calls == [("lara", 1, 5)]


def test_search_second_and_last_pages():
    provider = FakeProvider([film(i) for i in range(1, 38)])
    second = run_search(provider, {"query": "lara", "page": "2"}).text.splitlines()
    last = run_search(provider, {"query": "lara", "page": "8"}).text.splitlines()
    assert second[0].startswith("film-6-2000 ")
    assert second[-1].endswith("media_search|lara; page=3")
    assert last[-1] == "showing 36\u201337 of 37; that is all"


def test_search_past_the_last_page_says_so():
    reply = run_search(FakeProvider([film(i) for i in range(1, 38)]), {"query": "lara", "page": "9"})
    assert reply.ok
    assert reply.text == ("page 9 is past the end: 37 results on 8 page(s); "
                          "last page: TOOL_CALL: media_search|lara; page=8")


def test_search_with_no_results_gives_a_hint():
    reply = run_search(FakeProvider([]), {"query": "qqq"})
    assert reply.ok
    assert "nothing found for \u201cqqq\u201d" in reply.text and "English" in reply.text


def test_search_hint_survives_separators_in_the_query():
    text = run_search(FakeProvider([film(i) for i in range(1, 8)]), {"query": "a;b|c"}).text
    assert text.splitlines()[-1].endswith("TOOL_CALL: media_search|a b c; page=2")


def test_series_are_marked_in_the_list_with_their_episodes():
    show = film(1, kind="series", runtime_min=None, episodes=10)
    assert "(2000, series, 10 episodes, Someone)" in run_search(FakeProvider([show]), {"query": "x"}).text


def test_search_against_the_real_catalog(catalog):
    reply = run_search(catalog, {"query": "Лара Крофт"})
    assert reply.text.splitlines()[0].startswith(
        "lara-croft-tomb-raider-2001 \u2014 Лара Крофт: Расхитительница гробниц / Lara Croft: Tomb Raider (2001, Simon West, 100 min): ")


@pytest.mark.parametrize("args, reason", [
    ({"query": "lara", "page": "two"}, "page must be a number"),
    ({"query": "lara", "page": "0"}, "page must be a number"),
    ({"query": "x" * 201}, "longer than 200"),
])
def test_search_argument_errors_show_the_schema(args, reason):
    provider = FakeProvider([film(1)])
    reply = run_search(provider, args)
    assert not reply.ok
    assert reply.text.startswith("arguments invalid for media_search; expected: media_search|query; page?")
    assert reason in reply.text
    assert provider.calls == []


def test_a_provider_failure_is_a_readable_tool_error():
    reply = run_search(FakeProvider([], fail=True), {"query": "x"})
    assert reply == ToolResult(False, "media catalog unavailable: backend down")


def test_format_search_of_a_page_with_one_item():
    page = SearchPage(items=[film(6)], total=6, page=2, pages=2, per_page=5)
    assert format_search("x", page).splitlines()[-1] == "showing 6 of 6; that is all"


# --- media_info ------------------------------------------------------------------------------------
def test_info_of_a_known_film(catalog):
    reply = run_info(catalog, {"id": "terminator-1984"})
    assert reply.ok
    assert reply.text.splitlines() == [
        "Терминатор (original: The Terminator), 1984, film",
        "genres: sci-fi, action; runtime: 107 min; director: James Cameron",
        "Киборг-убийца из будущего охотится на Сару Коннор.",
        "play: TOOL_CALL: media_play|terminator-1984",
    ]


def test_info_of_a_series_gives_episodes(catalog):
    text = run_info(catalog, {"id": "game-of-thrones-2011"}).text
    assert "episodes: 73" in text and "runtime" not in text


def test_info_of_an_unknown_id_suggests_searching_and_close_matches(catalog):
    reply = run_info(catalog, {"id": "tomb-raider-2002"})
    assert not reply.ok
    assert "no title with id \u201ctomb-raider-2002\u201d" in reply.text
    assert "TOOL_CALL: media_search|tomb raider" in reply.text
    assert "lara-croft-tomb-raider-2001" in reply.text


def test_info_argument_errors():
    too_long = run_info(FakeProvider([]), {"id": "x" * 101})
    assert too_long.text == "arguments invalid for media_info; expected: media_info|id (id longer than 100 characters)"


# --- media_play ------------------------------------------------------------------------------------
def test_validate_play_defaults_to_play_and_normalises_the_action():
    assert validate_play({"id": "film-1-2000"}) == ("film-1-2000", "play", "")
    media_id, action, _ = validate_play({"id": "film-1-2000", "action": " PAUSE "})
    assert (media_id, action) == ("film-1-2000", "pause")


def test_validate_play_with_a_provider_checks_the_id_and_names_the_title():
    provider = FakeProvider([film(1)])
    assert validate_play({"id": "film-1-2000", "action": "stop"}, provider) == PlayRequest("film-1-2000", "stop", "Фильм 1")
    unknown = validate_play({"id": "nope-1999"}, provider)
    assert isinstance(unknown, ToolResult) and not unknown.ok and "nope-1999" in unknown.text


@pytest.mark.parametrize("name, media_id", [
    ("Титаник", "titanic-1997"), ("interstellar", "interstellar-2014"), ("Брат", "brother-1997"), ("брат 2", "brother-2-2000"),
])
def test_play_by_a_name_only_one_title_has(catalog, name, media_id):
    assert validate_play({"id": name, "action": "pause"}, catalog)[:2] == (media_id, "pause")


@pytest.mark.parametrize("name", ["Бэтмен", "Титаник 3", "матрица перезагрузка 7"])
def test_play_by_a_shared_name_or_a_near_miss_lists_close_matches_instead(catalog, name):
    reply = validate_play({"id": name}, catalog)
    assert isinstance(reply, ToolResult) and not reply.ok and "no title with id" in reply.text


@pytest.mark.parametrize("args, reason", [
    ({"id": "film-1-2000", "action": "jump"}, "action must be one of play|pause|resume|stop"),
    ({"id": "x" * 101}, "id longer than 100 characters"),
])
def test_validate_play_refuses_bad_arguments(args, reason):
    reply = validate_play(args)
    assert isinstance(reply, ToolResult) and not reply.ok
    assert reply.text.startswith("arguments invalid for media_play; expected: media_play|id; action?")
    assert reason in reply.text


def test_play_texts_and_command():
    request = PlayRequest("terminator-1984", "play", "Терминатор")
    command = play_command(request, "task-1")
    assert command == PlaybackCommand(task_id="task-1", action="play", media_id="terminator-1984", title="Терминатор")
    assert "task task-1" in play_started_text(request, "task-1")
    started = PlaybackStatus(event_id="e1", ts=0.0, task_id="task-1", state="started")
    failed = PlaybackStatus(event_id="e2", ts=0.0, task_id="task-1", state="failed", detail="no network")
    assert play_status_text(request, started) == "\u00abТерминатор\u00bb (terminator-1984) is playing on the phone"
    assert play_status_text(request, failed).endswith("failed on the phone: no network")
    assert "within 1.5 s" in play_timeout_text(request, 1.5)
