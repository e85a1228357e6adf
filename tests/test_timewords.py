"""Times, years and units said in words, read as digits before the reflexes and the frame
(core/timewords.py)."""
import pytest

from core.timewords import in_digits, spans_said, spoken_clock, spoken_year, unsaid_length


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


def test_every_time_of_day_said_in_words_is_put_in_digits_not_the_first_alone():
    """A correction says a second time ("remind me at eight thirty... no, make it eight fifteen"),
    a remark before it a third: the frame and the model copy digits, they do not count them."""
    said = in_digits("my sister lands at nine thirty so remind me at eight thirty to head to the airport... "
                     "hmm no make it eight fifteen, traffic's gonna be bad")
    assert "9:30" in said and "8:30" in said and "8:15" in said and "fifteen" not in said
    assert in_digits("в семь тридцать утра и ещё в девятнадцать сорок пять") == "в 7:30 утра и ещё в 19:45"


def test_an_alarms_hour_said_in_words_is_a_morning_hour():
    assert "6:30" in in_digits("поставь будильник на полседьмого") and "18:30" not in in_digits("поставь будильник на полседьмого")
    assert "6:30" in in_digits("wake me up at half past six")
    assert "18:30" in in_digits("напомни в полседьмого позвонить маме")  # a reminder's early hour: the evening
    # "на полседьмого" is a clock time as "в полседьмого" is ("на в 6:30" matched no alarm sentence);
    # "на двадцать пять минут" stays a length
    assert in_digits("поставь будильник на завтра на полседьмого") == "поставь будильник на завтра в 6:30"
    assert in_digits("поставь таймер на двадцать пять минут") == "поставь таймер на двадцать пять минут"
    # British "half six" after a lead is half past six; "in half" is no time
    assert in_digits("wake me at half six") == "wake me at 6:30"
    assert "5:30" in in_digits("set an alarm for half five tomorrow")
    assert in_digits("cut it in half one more time") == "cut it in half one more time"


def test_every_clock_word_of_every_language_is_read():
    """The clock's words are data (core/words/<language>/clock.toml): each hour, ordinal, minute and
    half-of-the-day word a file lists is read as what its table says."""
    from core import lexicon

    for word, hour in lexicon.topic("en", "clock")["hours"].items():
        assert spoken_clock(f"at {word} fifteen in the morning") == f"at {hour}:15 in the morning", word
    for word, hour in lexicon.topic("ru", "clock")["hours"].items():
        assert spoken_clock(f"без четверти {word} утра") == f"в {(hour - 1) or 12}:45", word
    for word, hour in lexicon.table("clock", "ordinal_hours").items():
        assert spoken_clock(f"в пол{word} утра") == f"в {(hour - 1) or 12}:30", word
    for word, minutes in lexicon.table("clock", "minutes_before").items():
        assert spoken_clock(f"без {word} восемь утра") == f"в 7:{60 - minutes:02d}", word
    for mark, half in lexicon.table("clock", "day_halves").items():
        said = spoken_clock(f"at seven fifteen {mark}")  # "в 19:15" after a Russian half of the day
        assert said.split()[-1] == f"{19 if half == 'evening' else 7}:15", mark


@pytest.mark.parametrize("said, lengths", [
    ("тесто поставила подходить, в рецепте сказано полтора часа. засеки, пожалуйста", {5400}),
    ("timer for 5 minutes and 10 seconds", {310}),
    ("1 hour 15 minute 30 second timer", {4530}),
    ("start a 1 hour and 30 second timer", {3630}),
    ("поставь таймер на двадцать пять минут", {1500}),
    ("in an hour", {3600}),
    ("set a timer for an hour and a half", {5400}),
    ("напомни через полчаса и ещё через 10 минут", {1800, 600}),
    ("поставь таймер на два с половиной часа", {9000}), ("two and a half hours", {9000}), ("3 and a half minutes", {210}),
    ("напомни через час пятнадцать позвонить", {4500}),
    # a count not read, or a number apart from a unit: nothing is judged
    ("in a few minutes", None), ("минут через двадцать", None), ("set a timer for half a minute", None),
    ("set a timer for 10 minutes, actually 15", None), ("half past two", None),
    ("set a timer for 1 and a 1/2 hours", None), ("remind me at 7:30 to call mum", None),
])
def test_the_lengths_words_say_are_read_whole_or_not_at_all(said, lengths):
    found = spans_said(said)
    assert (None if found is None else set(found)) == lengths


def test_a_length_is_judged_against_the_whole_length_said():
    dough = "тесто поставила подходить, в рецепте сказано полтора часа. засеки, пожалуйста"
    assert unsaid_length("in 1 hour", dough) == "1 h 30 min"
    assert unsaid_length("in 90 minutes", dough) == unsaid_length("in 1 hours 30 minutes", dough) == ""
    assert unsaid_length("19:30", dough) == ""  # a clock time: its numbers are judged one by one
    assert unsaid_length("in 126 minutes", "remind me 10 minutes before the film ends", "runtime 136 min") == ""


@pytest.mark.parametrize("said, digits", [
    ("напомни в семь вечера позвонить", "напомни в 7:00 вечера позвонить"),  # h24: an hour word with its half of the day
    ("remind me at seven pm to call", "remind me at 7:00 pm to call"),
    ("разбуди в семь утра", "разбуди в 7:00 утра"),
    ("напомни в 7 вечера позвонить", "напомни в 7 вечера позвонить"),  # in digits already: as the timer patterns read it
    ("поставь таймер на два с половиной часа", "поставь таймер на 2.5 часа"),
    # h24: the minutes of a length said with no unit ("15" was a reminder's text, the timer an hour)
    ("напомни через час пятнадцать позвонить", "напомни через 1 час 15 минут позвонить"),
    ("remind me in an hour fifteen to call", "remind me in 1 hour 15 minutes to call"),
    ("поставь таймер на два часа тридцать пять", "поставь таймер на 2 часа 35 минут"),
    ("напомни в час пятнадцать позвонить", "напомни в 1:15 позвонить"),  # a clock time, not a length (the nearest 1:15)
    ("поставь таймер на час три раза", "поставь таймер на час три раза"),  # bare minutes are said in fives
])
def test_an_hour_said_in_words_with_its_half_of_the_day_is_put_in_digits(said, digits):
    assert in_digits(said) == digits
