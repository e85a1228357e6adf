"""core.intent: which words ask for an action, which answers claim one (pure, no model)."""
import pytest

from core.intent import Refusal, check_call, claimed_action, grounded, requested, unshown_id
from core.loading import default_catalog
from core.toolsets import ToolsetRegistry
from protocol import ArgSpec, ToolSpec

spec = ToolsetRegistry(default_catalog()).spec  # the tools as their toolsets declare them (what they do)

TRAPS = ["спасибо!", "thanks a lot", "you're great", "привет!", "hello there", "хм, ладно",
         "вчера пила отличный чай с бергамотом", "расскажи анекдот", "ты молодец",
         "объясни, как работает таймер", "what is a timer?", "расскажи подробно историю кино",
         "как тебя зовут?", "Стоп! Я неправильно сказал", "what can you do?", "ok cool"]


@pytest.mark.parametrize("said", TRAPS)
@pytest.mark.parametrize("kind", ["timer_set", "play", "show"])
def test_casual_turns_ask_for_no_action(said, kind):
    assert not requested(kind, said)


@pytest.mark.parametrize("kind,said", [
    ("timer_set", "поставь таймер на 1 минуту, чтобы проверить чай"),
    ("timer_set", "напомни через 20 минут проверить духовку"),
    ("timer_set", "Remind me in 10 minutes to call mom"),
    ("timer_set", "Set a timer for 15 minutes: laundry"),
    ("timer_set", "через минуту напомни выключить плиту"),
    ("timer_set", "таймер на 3 минуты"),
    ("timer_set", "wake me at 7:30"),
    ("timer_cancel", "Cancel that timer"),
    ("timer_cancel", "отмени таймер"),
    ("play", "включи её"),
    ("play", "Play the second one"),
    ("play", "включи фильм Титаник"),
    ("play", "запусти тот, что 1979 года"),
    ("playback", "Pause it"),
    ("playback", "поставь на паузу"),
    ("show", "выведи на очки: купить молоко"),
    ("show", "Put 'meeting at 5' on my display"),
])
def test_requests_ask_for_their_action(kind, said):
    assert requested(kind, said)


def test_yes_to_an_offer_asks_for_what_was_offered():
    assert requested("play", "да", offered="Нашёл «Матрица» (1999). Включить?")
    assert not requested("play", "да", offered="Нашёл «Матрица» (1999).")
    assert not requested("timer_set", "yes", offered="Want me to play it?")


def test_show_needs_a_place_or_a_quoted_text():
    assert not requested("show", "покажи, что есть про Матрицу")
    assert requested("show", "покажи на экране: позвонить маме")


def test_a_side_effect_not_asked_for_is_refused_and_a_lookup_never():
    refusal = check_call(spec("timers_set"), {"when": "in 5 minutes", "text": "позвонить"}, said="you're great")
    assert isinstance(refusal, Refusal) and refusal.kind == "not_requested"
    assert "not executed" in refusal.text()
    assert check_call(spec("media_search"), {"query": "x"}, said="спасибо") is None
    assert check_call(spec("timers_set"), {"when": "in 4 minutes", "text": "tea"}, said="по рецепту",
                      recipe_tools=frozenset({"timers_set"})) is None


def test_a_timer_text_from_nowhere_is_refused():
    refusal = check_call(spec("timers_set"), {"when": "in 1 minute", "text": "позвонить"},
                         said="поставь таймер на 1 минуту, чтобы проверить чай")
    assert refusal is not None and refusal.kind == "ungrounded_text"
    assert check_call(spec("timers_set"), {"when": "in 1 minute", "text": "проверить чай"},
                      said="поставь таймер на 1 минуту, чтобы проверить чай") is None
    assert grounded("таймер", "set a timer for 2 minutes")


@pytest.mark.parametrize("when, said, refused", [
    ("in 1 hour", "напомни в полвосьмого позвонить маме", True),  # the local model's, on a clock time in words
    ("7:30", "напомни в полвосьмого позвонить маме", False),
    ("20:45", "remind me at a quarter to nine tonight about the стирку", False),
    ("in 120 minutes", "через 2 часа напомни про стирку", False),  # the other unit
    ("in 90 minutes", "через полтора часа напомни про стирку", False),
    ("2026-03-15T09:00", "напомни завтра в 9 про стирку", False),  # the date is not judged, the hour is
    ("in 5 minutes", "напомни про стирку", True),
])
def test_a_timer_time_with_a_number_the_user_never_said_is_refused(when, said, refused):
    refusal = check_call(spec("timers_set"), {"when": when, "text": "стирку" if "стирк" in said else "позвонить маме"},
                         said=said)
    assert (refusal is not None and refusal.kind == "ungrounded_text") is refused


@pytest.mark.parametrize("answer,kind", [
    ("Таймер установлен на 1 минуту.", "timer_set"),
    ("Timer set for 5 minutes.", "timer_set"),
    ("Напомню в 18:05.", "timer_set"),
    ("Включаю «Матрица».", "play"),
    ("Now playing The Matrix.", "play"),
    ("Нашёл «Матрица», 1999, реж. Вачовски.", None),
    ("Не могу включить этот фильм.", None),
    ("Сейчас 18:00, суббота.", None),
    ("ok: tool error: the MCP server notes stopped during the call and is being restarted", None),
    ("Paused the film.", "playback"),
])
def test_claimed_actions(answer, kind):
    assert claimed_action(answer) == kind


def test_a_tool_the_lexicons_do_not_know_runs_on_any_request_but_not_on_small_talk():
    assert requested("change", "run the backup command")
    assert requested("change", "start the report job")
    assert not requested("change", "thanks, you're great")
    assert not requested("change", "хм, ладно")
    assert not requested("change", "вчера пила отличный чай")


@pytest.mark.parametrize("said,expected", [
    ("спасибо!", True), ("хм, ладно", True), ("расскажи анекдот", True), ("объясни, как работает таймер", True),
    ("you're great", True), ("привет, который час?", False), ("как тебя зовут?", True),
    ("найди фильм Матрица", False), ("включи её", False), ("спасибо, а теперь найди Брат", False), ("", False),
    ("пошути про футбол", True), ("haha the timer went off in the middle of my nap", True),  # a timer is not the time
    ("ok, and what time is it", False), ("so what kind of stuff can you actually do for me?", True),
    ("объясни, чем комедия отличается от фарса?", True),
])
def test_small_talk_gets_no_tool(said, expected):
    from core.intent import small_talk

    assert small_talk(said) is expected


@pytest.mark.parametrize("tool, said, asked", [
    ("channels_watch", "включи Кин-дза-дза", False),
    ("channels_watch", "скажи, когда напишет Анна", True),
    ("channels_watch", "let me know when Bob writes", True),
    ("monitors_start", "спасибо!", False),
    ("monitors_start", "tell me when the build is done", True),
    ("tasks_cancel", "как дела?", False),
    ("tasks_cancel", "отмени загрузку", True),
])
def test_watches_and_task_cancels_need_words_that_ask_for_them(tool, said, asked):
    assert (check_call(spec(tool), {"id": "t1"}, said=said) is None) is asked


def test_the_clock_is_asked_for_by_time_words_not_by_a_greeting_that_names_the_day():
    from core.intent import asks_clock
    for words in ("который час?", "what's the date", "сколько осталось до нового года", "what day is it",
                  "through 20 minutes", "через 20 минут", "в 19:30"):
        assert asks_clock(words), words
    for words in ("Good evening! How are you?", "доброе утро, как спалось?", "hi there", "как тебе погодка сегодня",
                  "спокойной ночи"):
        assert not asks_clock(words), words


def test_a_change_is_offered_only_to_words_that_ask_for_its_kind():
    from core.intent import offerable
    assert not offerable(spec("show_text"), "мне грустно что-то")
    assert offerable(spec("show_text"), "выведи на экран: купить хлеб")
    assert not offerable(spec("timers_set"), "you're the best, thanks")
    assert offerable(spec("timers_set"), "remind me in ten minutes to check the oven")
    assert offerable(spec("media_play"), "поставь на паузу")  # a pause is media_play's too
    assert not offerable(spec("media_play"), "кто снял Сталкер?")
    assert offerable(spec("media_search"), "кто снял Сталкер?")  # a lookup is always offered
    assert not offerable(spec("get_current_time"), "привет! как дела?")


def test_how_the_user_feels_is_small_talk():
    from core.intent import small_talk
    for words in ("мне скучно", "устал я сегодня", "I'm so tired today", "I'm bored"):
        assert small_talk(words), words
    assert not small_talk("мне скучно, включи Матрицу")


def test_a_notification_needs_words_that_ask_for_one_or_a_world_events_turn():
    assert not requested("notify", "Start my morning workout routine")  # the local model notified it
    assert requested("notify", "сообщи мне на телефон, когда будет готово")
    assert requested("notify", "")  # a channel's message woke the session: its recipe may notify


def test_words_that_end_a_watch_or_report_someone_elses_request_ask_for_nothing():
    from core.intent import requested

    assert not requested("watch", "всё, можешь больше не следить, она уже позвонила")
    assert not requested("watch", "stop watching for Dave")
    assert requested("watch", "let me know if Dave texts me")
    assert not requested("timer_set", "my friend keeps telling me to set reminders for everything lol")
    assert requested("timer_set", "remind me in 10 minutes to call mom because she told me to")


def test_a_request_quoted_from_someone_else_is_not_offered_a_tool():
    from core.intent import offerable

    said = "my wife just yelled 'remind me to buy milk!' but she meant me, not you, lol"
    assert not offerable(spec("timers_set"), said)


def test_a_request_the_user_will_finish_later_asks_for_nothing_yet():
    from core.intent import requested

    assert not requested("timer_set", "next week I'll want a reminder for the vet, I'll tell you the day later")
    assert not requested("timer_set", "про стрижку напомнишь, а во сколько — скажу завтра")
    assert requested("timer_set", "remind me in 20 minutes to call back, I'll tell you why later")


@pytest.mark.parametrize("kind, said, asked", [
    ("timer_set", "поставь будильник на семь... а, нет, стоп, забудь, завтра ж воскресенье", False),
    ("show", "put 'happy birthday Sam' up on the glasses... oh wait, never mind", False),
    ("timer_set", "set an alarm for 7. Actually never mind.", False),
    ("play", "включи Брата... а, забей", False),
    ("timer_set", "set a timer for 5 minutes... no, forget it, make it 10 minutes", True),  # corrected, not taken back
    ("timer_set", "never mind the last one, set a timer for 10 minutes", True),
    ("play", "ладно, забей, включи Брата", True),
    ("play", "play Batman, never mind the popcorn", True),  # of a thing, not the request
    ("change", "forget that I like jazz", True),
    ("timer_cancel", "забудь про таймер", True),  # a cancel's own words
    ("timer_set", "поставь таймер на... хотя нет, ладно, не надо, я сам у плиты постою", False),  # h23
    ("timer_set", "set a timer for 5 minutes... actually no need, I'll watch it", False),
    ("timer_set", "поставь таймер на 5 минут, не надо будить", True),  # of a thing, not the request
])
def test_a_request_taken_back_in_the_same_breath_asks_for_nothing(kind, said, asked):
    assert requested(kind, said) is asked


def test_a_world_toolset_is_offered_only_for_the_words_its_spec_declares():
    from core.intent import toolset_offerable

    registry = ToolsetRegistry(default_catalog())
    channels, tasks, media = (registry.toolset(name) for name in ("channels", "tasks", "media"))
    assert not toolset_offerable(channels, "who are you?") and not toolset_offerable(tasks, "start my morning workout")
    assert toolset_offerable(channels, "tell me when Anna writes on telegram")  # its words
    assert toolset_offerable(tasks, "отмени эту задачу")  # a verb of the kind it declares
    assert toolset_offerable(media, "who are you?")  # a toolset that declares none: always
    assert toolset_offerable(channels, "")  # a world event's turn has no words: whatever its recipe needs


@pytest.mark.parametrize("said, is_remark", [
    ("convert twenty-six point two miles to kilometers", False),  # a held-out block's "I see." to an order
    ("translate 'good luck' into Italian", False),
    ("calculate a 15% tip on 80 dollars", False),
    ("ugh, you've been kinda slow today", True),
    ("i read that book yesterday", True),  # the verb after a subject: a statement
])
def test_an_english_order_opens_with_its_verb_and_a_statement_does_not(said, is_remark):
    from core.intent import remark

    assert remark(said) is is_remark


def test_an_id_like_value_must_appear_whole_in_what_was_shown_and_words_are_not_judged():
    abstract = ToolSpec(name="papers_abstract", summary="", args=[ArgSpec(name="paper_id")], id_args=["paper_id"])
    shown = "[User said] open arXiv:2301.01234, please\n1706.03762v2 Attention Is All You Need"
    for given in ("2301.01234", "ARXIV:2301.01234", "latest", "Attention Is All You Need", "GPT-4 report", ""):
        assert unshown_id(abstract, {"paper_id": given}, shown) is None, given
    made_up = {"1010.1234": "1010.1234", "2301.0123": "2301.0123", "1706.03762": "1706.03762",  # a part is not the id
               "2301.01234, 1010.1234": "1010.1234", '["2301.01234", "1010.1234"]': "1010.1234"}
    for given, item in made_up.items():
        refusal = unshown_id(abstract, {"paper_id": given}, shown)
        assert refusal is not None and refusal.kind == "unseen_id" and f"«{item}»" in refusal.reason, given


def test_dont_forget_asks_and_forget_it_takes_back():
    """"не забудь" / "don't forget it" said after a request asks for it; "забудь" alone takes it back."""
    from core.intent import requested
    assert requested("timer_set", "поставь будильник на 7 утра, не забудь")
    assert requested("timer_set", "set an alarm for 7, don't forget it")
    assert not requested("timer_set", "поставь будильник на семь… а, нет, забудь")
    assert not requested("timer_set", "set an alarm for seven, oh wait, forget it")


@pytest.mark.parametrize("said, elsewhere", [
    ("Jamie, can you set a timer for the pasta? I'm stuck on the phone with your mum", True),  # h60: a name no list holds
    ("Hey Priyanka, turn the oven off", True),
    ("Okay, set a timer for 5 minutes", False),  # words that open a request to the assistant too
    ("Honestly, just play Dune", False),
    ("Tomorrow, wake me at 7", False),
    ("Alexa, set a timer for ten minutes", False),  # the user calling the assistant by another's name
    ("jamie, can you set a timer", False),  # no capital, no list: the name is not told from a word
])
def test_a_capitalised_name_called_first_is_someone_else(said, elsewhere):
    from core.intent import addressed_elsewhere

    assert addressed_elsewhere(said) is elsewhere


@pytest.mark.parametrize("said, held", [
    # h61: a remark of what the speaker will not do ("не найду") took back the request after it
    ("адрес я в переписке не найду. скинь мне на телефон: проспект Андропова 39", False),
    ("я же сама не проснусь. разбуди меня в семь", False),
    ("не включай пока", True),  # an order taken back
    ("не надо ставить таймер", True),
    ("не ставь будильник", True),
])
def test_a_negated_statement_of_the_speaker_holds_back_no_request(said, held):
    from core.reflex import held_back

    assert held_back(said, "search") is held


@pytest.mark.parametrize("said, held", [
    # h61: "потом" in a remark before the request postponed it ("адрес я вечно потом не найду")
    ("слушай, завтра венчание, а адрес я вечно потом не найду. скинь мне на телефон: проспект Андропова 39", False),
    ("I never remember the code later. send this to my phone: gate code 3318", False),
    ("если я усну. выключи фильм", True),  # a condition written as its own sentence is the request's
    ("скинь мне потом на телефон код 3318", True),  # the request's own later time
    ("maybe play Solaris later", True),
    # h73: the speaker's own plan after the request ("…, I'll order it in the app later") is not the request's time
    ("and send that to my phone too, I'll order it in the app later", False),
    ("play Dune later", True),
])
def test_a_later_time_in_a_remark_before_the_request_is_not_the_requests(said, held):
    from core.reflex import held_back

    assert held_back(said, "search") is held
