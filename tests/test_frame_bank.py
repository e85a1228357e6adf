"""The frame's examples chosen per request (core.frame_bank) and the bank they come from
(tools.frame_bank); and the frame's guard against a change nobody asked for.

The phrasings are written for these tests, in no eval set."""
import pytest

import protocol as p
from core.frame import NONE, builtin_frame, command_of, frame_messages, read_frame
from core.frame_bank import BANK_PATH, Bank, read_bank
from core.reflex import recognise
from core.timewords import in_digits
from harness import inproc_system
from llm.scripted import ScriptedBackend
from tools.frame_bank import bank_text


def test_the_nearest_requests_come_last_and_the_words_themselves_never():
    bank = Bank([("поставь таймер на 5 минут", "set a timer for 5 minutes"), ("который час", "what time is it"),
                 ("который час в токио", "what time is it in токио"), ("час пик в метро", NONE), ("спасибо", NONE)])
    chosen = bank.nearest("который час", 3)
    assert chosen == [("час пик в метро", NONE), ("который час в токио", "what time is it in токио")]  # none shares a word with the rest
    assert bank.nearest("сколько сейчас в токио", 1) == [("который час в токио", "what time is it in токио")]


def test_an_empty_bank_or_no_shared_word_chooses_nothing():
    assert Bank([]).nearest("который час", 8) == []
    assert Bank([("спасибо", NONE)]).nearest("zzz", 3) == []


def test_a_bank_file_keeps_only_whole_lines():
    assert read_bank("# a note\n\nкоторый час\twhat time is it\nбез команды\n\t-\n") == [("который час", "what time is it")]


def test_the_shipped_bank_is_what_its_sources_give():
    # edit evals/frame_phrasings.txt (or the probe, or dev), then: python -m tools.frame_bank
    assert BANK_PATH.read_text(encoding="utf-8") == bank_text()


def test_every_command_of_the_shipped_bank_is_taken_back_for_its_request():
    pairs = read_bank(BANK_PATH.read_text(encoding="utf-8"))
    assert len(pairs) > 300 and sum(command == NONE for _, command in pairs) > 100  # no-requests shown as well
    for said, command in pairs:
        if command != NONE:
            assert read_frame(command, said).intent is not None, (said, command)


@pytest.mark.parametrize("said", [
    "поставь таймер минут на двадцать пять, пельмени", "remind me at 7:40 to grab the laundry", "включи второй",
    "what's the time in Oslo", "а кто режиссёр Сталкера", "stop watching for Mike", "на паузу", "какое число завтра",
])
def test_a_request_said_as_the_lists_command_is_read_as_the_same_request(said):
    intent = recognise(said)
    command = command_of(intent)
    again = read_frame(command, in_digits(said)).intent
    assert again is not None and again.kind == intent.kind, command


def test_the_question_shows_the_nearest_requests_after_the_fixed_examples():
    bank = Bank([("засеки минут десять на чай", "set a timer for 10 minutes to чай"), ("спасибо", NONE)])
    messages = frame_messages("засеки минут пять на кофе", nearest=1, bank=bank)
    fixed = 1 + 2 * len(builtin_frame().examples)
    assert [m.content for m in messages[fixed:]] == [
        "засеки минут десять на чай", "set a timer for 10 minutes to чай", "засеки минут пять на кофе"]
    assert len(frame_messages("засеки минут пять на кофе", nearest=0, bank=bank)) == fixed + 1


# ---- a change the words do not ask for ---------------------------------------------------------
@pytest.mark.parametrize("reply, said", [
    ("set a timer for 10 minutes", "мне через 10 минут выходить, а я не одет"),
    ("play Гладиатор", "Гладиатор у меня на втором месте после Терминатора"),
    ("set a timer for 10 minutes", "I need to leave in ten minutes, ugh"),  # no plain statement by core.intent.remark
    ("set a timer for 10 minutes", "how long do i boil eggs, like 10 minutes?"),
    ("play Матрицу", "не включай Матрицу"),  # an order not given
])
def test_a_change_the_words_do_not_ask_for_is_not_taken(reply, said):
    assert read_frame(reply, said).refused == "unrequested"


@pytest.mark.parametrize("reply, said", [
    ("play Интерстеллар", "maybe later play Интерстеллар, not now"),
    ("stop the movie", "если я усну, выключи фильм"),
    ("remind me at 9:00 to встреча", "напомни завтра в 9:00 про встречу"),  # not today's 9:00
    ("resume", "i already paused it, relax"),
    ("set a timer for 10 minutes to чай", "поставь таймер на 10 минут на чай и включи Матрицу"),  # half of two
])
def test_a_change_not_for_now_is_held_back(reply, said):
    assert read_frame(reply, said).refused == "held back"


def test_if_you_could_is_politeness_not_a_condition():
    frame = read_frame("set a timer for 30 minutes to feed the cat", "i'd be grateful if you could remind me in 30 minutes to feed the cat")
    assert frame.intent is not None and frame.intent.kind == "timer_set"
    assert read_frame("play Матрицу", "если не трудно, включи Матрицу").intent is not None


def test_a_watch_is_a_condition_and_a_cancel_may_say_no():
    watch = read_frame("tell me when мама writes in whatsapp", "если мама напишет в вотсапе, сразу маякни")
    assert watch.intent is not None and watch.intent.kind == "watch"
    cancel = read_frame("cancel the timer чайник", "про чайник уже не надо напоминать")
    assert cancel.intent is not None and cancel.intent.kind == "timer_cancel"


def test_the_assistants_name_is_no_reminder():
    frame = read_frame("set a timer for 5 minutes to порфирий", "порфирий, засеки пять минут")
    assert frame.intent.kind == "timer_set" and frame.intent.text == ""


def test_one_more_of_the_request_before_is_asked_for():
    frame = read_frame("set a timer for 30 minutes to move the car", "and another one, half an hour, to move the car",
                       before="set a timer for five minutes for the tea")
    assert frame.intent is not None and frame.intent.kind == "timer_set"


def test_a_unit_said_alone_is_one_of_it():
    assert read_frame("set a timer for 1 hours to полить цветы", "через часик полить цветы напомни").intent is not None
    assert read_frame("set a timer for 1 minute", "поставь таймер").refused == "unsaid: 1"


async def test_a_timer_the_frame_puts_on_a_remark_sets_nothing(tmp_path):
    def model(messages):
        if "ONE command from this list" in messages[0].content:
            return "set a timer for 10 minutes"  # what a bank full of timers might tempt the model to say
        return "Успеешь!"
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model), frame=True) as system:
        shown = await system.turn("s", "мне через 10 минут выходить, а я ещё в пижаме")
        assert not [m for m in await system.history("s") if m["role"] == "tool"]  # no timer, no lookup
        assert [m for m in shown if isinstance(m, p.Display) and m.final][-1].text == "Успеешь!"


def test_a_watch_in_words_the_lexicons_do_not_know_is_taken_and_a_story_is_not():
    asked = read_frame("tell me when Катя writes in telegram", "как Катя напишет в телеге, сразу скажи мне")
    assert asked.intent is not None and asked.intent.kind == "watch"
    assert read_frame("tell me when Катя writes in telegram", "Катя вчера написала в телеге").intent is None


def test_a_request_after_an_address_is_one_request_and_a_part_is_which_one_shown():
    said = "бабуль, а включи-ка мне «Москва слезам не верит», давно не смотрела"  # "а включи" after an address
    assert read_frame("play Москва слезам не верит", said).intent is not None
    assert recognise("ok, play part two") is None  # the frame's "the second one", or the model, picks
    assert read_frame("play the second one", "ok, play part two").intent.reference.ordinal == 2
