"""core.done_said: what a turn did, said when the model's answer leaves it out (each call by the kind of
action its tool declares: core.intent.action_kind)."""
import datetime as dt

from core.done_said import unsaid_done
from core.reflex_steps import builtin_local_intents
from protocol.results import Playing, TimerSet

RU, EN = builtin_local_intents().speaker("ru"), builtin_local_intents().speaker("en")  # the toolsets' responses

AT_18 = dt.datetime(2026, 3, 14, 18, 0, tzinfo=dt.timezone.utc).timestamp()
SET = ("timer_set", "(toolset timers was enabled on the way)\nTimer t3 set for 18:07 today (in 7 min): каша готова",
       TimerSet(id="t3", due=AT_18 + 7 * 60, text="каша готова", set_at=AT_18), True)
PLAYED = ("play", "«Матрица» (matrix-1999): play sent to the phone (task 5); its confirmation arrives as a later event",
          Playing(media_id="matrix-1999", action="play", state="sent", title="Матрица", task_id="5"), True)
HOME = ("change", "home city set: Berlin (Europe/Berlin)", None, True)


def test_an_answer_that_says_nothing_of_the_timer_or_the_film_gets_both_said():
    assert unsaid_done("Порridge готово.", [SET, PLAYED], russian=True, say=RU) == [
        "Таймер поставлен на 7 минут, сработает в 18:07: каша готова.", "Включаю «Матрица»."]
    morning = TimerSet(id="t1", due=AT_18 + 15 * 3600, text="wake up", set_at=AT_18)
    assert unsaid_done("OK", [("timer_set", "Timer t1 set for 09:00 tomorrow (in 15 h): wake up", morning, True)],
                       russian=False, say=EN) == [
        "Set for tomorrow at 09:00: wake up."]  # far ahead: its day and time, as the fast path says it
    by_clock = TimerSet(id="t2", due=AT_18 + 2 * 3600 + 22 * 60 + 5, text="кино", set_at=AT_18)  # "в 20:22"
    assert unsaid_done("Ок.", [("timer_set", "Timer t2 set for 20:22 today (in 2 h 22 min): кино", by_clock, True)],
                       russian=True, say=RU) == ["Таймер поставлен на 2 часа 22 минуты, сработает в 20:22: кино."]
    assert unsaid_done("OK", [("timer_set", "Timer t3 …", TimerSet(id="t3", due=AT_18 + 45, text="tea", set_at=AT_18), True)],
                       russian=False, say=EN) == ["Timer set for 45 seconds, it goes off at 18:00: tea."]
    assert unsaid_done("Done", [HOME], russian=False, say=EN) == ["Home city set: Berlin (Europe/Berlin)."]  # an MCP tool's change
    assert unsaid_done("", [HOME], russian=False, say=EN) == ["Home city set: Berlin (Europe/Berlin)."]  # nothing said
    # h36: a word or two that names nothing of the change ("Спасибо!" after the home city was set)
    assert unsaid_done("Спасибо!", [HOME], russian=True, say=RU) == ["Home city set: Berlin (Europe/Berlin)."]


def test_an_answer_that_says_when_or_how_long_or_which_film_in_any_case_gets_nothing_added():
    assert unsaid_done("Поставила таймер на семь минут и включила Матрицу.", [SET, PLAYED], russian=True, say=RU) == []
    assert unsaid_done("Done, it rings at 18:07. Enjoy The Matrix!", [SET, PLAYED], russian=False, say=EN) == []
    assert unsaid_done("Berlin is your home city now.", [HOME], russian=False, say=EN) == []
    notified = ("notify", "Sent to the user (high): call mum.", None, True)
    assert unsaid_done("Told you.", [notified], russian=False, say=EN) == []  # only a bare "Done" gets another tool's line


def test_calls_that_failed_or_changed_nothing_are_not_said():
    refused = ("timer_set", "not executed (not_requested): timers_set was not run: the user did not ask for this", None, True)
    found = ("", "matrix-1999 — Матрица / The Matrix (1999)", None, False)
    assert unsaid_done("Понятно.", [refused, found], russian=True, say=RU) == []


def test_a_play_the_phone_did_not_start_is_not_said_as_playing():
    paused = Playing(media_id="matrix-1999", action="play", state="paused", title="Матрица")
    assert unsaid_done("OK", [("play", "«Матрица» (matrix-1999) is paused on the phone", paused, True)], russian=False, say=EN) == []
