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
