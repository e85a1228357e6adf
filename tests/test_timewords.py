"""Times, years and units said in words, read as digits before the reflexes and the frame
(core/timewords.py)."""
import pytest

from core.timewords import in_digits, spoken_clock, spoken_year


@pytest.mark.parametrize("said, read", [
    ("давай тот, что семьдесят девятого года", "давай тот, что 1979 года"),
    ("включи который восьмидесятого года", "включи который 1980 года"),
    ("он вышел в тысяча девятьсот девяносто девятом", "он вышел в 1999"),
    ("play the one from nineteen seventy nine", "play the one from 1979"),
    ("from nineteen ninety-nine", "from 1999"),
    ("the two thousand and three one", "the 2003 one"),
])
def test_a_year_said_in_words_is_read_as_digits(said, read):
    assert spoken_year(said) == read


@pytest.mark.parametrize("said", [
    "семьдесят девятого",  # no "года", no century: perhaps no year at all
    "мне семьдесят девять",
    "nineteen eighties hits",
])
def test_words_that_are_no_year_stay_words(said):
    assert spoken_year(said) == said


def test_a_unit_said_fondly_is_the_plain_unit_and_clock_words_are_digits():
    assert in_digits("и через часик напомни") == "и через час напомни"
    assert in_digits("через полчасика") == "через полчаса"
    assert in_digits("подожди минутку") == "подожди минуту"
    assert in_digits("напомни в полвосьмого вечера") == spoken_clock("напомни в полвосьмого вечера")
    assert "19:30" in in_digits("напомни в полвосьмого вечера")


def test_an_alarms_hour_said_in_words_is_a_morning_hour():
    assert "6:30" in in_digits("поставь будильник на полседьмого") and "18:30" not in in_digits("поставь будильник на полседьмого")
    assert "6:30" in in_digits("wake me up at half past six")
    assert "18:30" in in_digits("напомни в полседьмого позвонить маме")  # a reminder's early hour: the evening
