"""core.places and the world clock's answer: a place as said to its zone, a moment in the user's words."""
from core.places import zone_of
from core.reflex import recognise
from core.reflex_answers import place_time_answer
from core.reflex_steps import builtin_local_intents

RU, EN = builtin_local_intents().speaker("ru"), builtin_local_intents().speaker("en")  # the clock's responses


def test_a_place_in_any_case_or_language_is_its_zone():
    assert zone_of("нью-йорке") == zone_of("New York") == "America/New_York"
    assert zone_of("Владивостоке") == "Asia/Vladivostok"
    assert zone_of("японии") == "Asia/Tokyo"
    assert zone_of("the city of London") == "Europe/London"
    assert zone_of("Buenos Aires") == "America/Argentina/Buenos_Aires"  # the tz database's own city
    assert zone_of("Кукуеве") is None and zone_of("") is None


def test_a_world_clocks_moment_is_said_in_the_users_words():
    iso = '{"timezone": "Asia/Tokyo", "datetime": "2026-03-15T00:00:00+09:00", "is_dst": false}'
    assert place_time_answer(RU, recognise("который час в Токио?"), iso) == "В Токио сейчас 00:00, воскресенье, 15 марта."
    assert place_time_answer(EN, recognise("what time is it in Tokyo"), iso) == "In Tokyo it's 00:00, Sunday, 15 March."
    words = "vladivostok: Sunday, 15 March, 01:00 (Asia/Vladivostok)"
    assert place_time_answer(RU, recognise("сколько времени во владивостоке"), words).startswith("Во Владивостоке сейчас 01:00")
    assert place_time_answer(EN, recognise("what time is it in Tokyo"), "unknown city 'tokyo'") is None  # the model's


def test_a_city_said_in_short_is_that_city():
    from core.places import place_name, zone_of

    assert zone_of("LA") == "America/Los_Angeles" and place_name("la") == "los angeles"
    assert zone_of("nyc") == "America/New_York" and zone_of("laos") is None


async def test_a_city_by_its_colloquial_name_is_asked_of_the_world_clock_by_its_dictionary_name(tmp_path):
    # h28, h30: "который час щас во владике" asked the world clock of "владике", which it does not know
    import sys
    from pathlib import Path

    from core.config import McpServerConfig
    from test_mcp_agent import finals, system_with

    assert zone_of("владике") == "Asia/Vladivostok" and zone_of("новосибе") == "Asia/Novosibirsk"
    clock = McpServerConfig(command=[sys.executable, str(Path(__file__).with_name("mcp_worldclock_server.py"))],
                            env={"WORLDCLOCK_NOW": "1773500400"}, timeout_s=30.0)  # 2026-03-14 15:00 UTC
    async with system_with(tmp_path, {"worldclock": clock}, lambda messages: "The model's answer.") as system:
        shown = await system.turn("s", "который час щас во владике", timeout=30)
        calls = [m["content"] for m in await system.history("s") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
    assert calls == ["TOOL_CALL: worldclock_time_now|владивосток"]
    assert "01:00" in finals(shown)[-1]


def test_a_place_said_by_its_initials_is_written_back_in_capitals():
    # h37: "and in LA?" was answered "In La it's 08:00"
    from core.reflex_answers import _place_as_said
    assert [_place_as_said(said, False) for said in ("la", "l.a.", "nyc", "vegas", "new york")] == \
        ["LA", "L.A.", "NYC", "Vegas", "New York"]
    assert _place_as_said("нью-йорке", True) == "Нью-Йорке"


def test_a_places_name_in_another_spelling_is_that_place():
    # h38: "wat time is it in tokio right now" went to the model, which made up "12:34 PM"
    assert zone_of("tokio") == "Asia/Tokyo"
    assert recognise("wat time is it in tokio right now").kind == "time_elsewhere"
