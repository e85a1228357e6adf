"""A reply that only repeats what the model was shown, refuses what a tool did, or says nothing of
what a lookup found is not an answer (core/echo.py)."""
from core.echo import echoed, refused, uninformative


def test_the_users_own_words_back_are_an_echo_whatever_the_case_and_punctuation():
    assert echoed("Который час?", "[User said] который час") == "the user's words"
    assert echoed("  who directed Inception? Check the catalog. ", "[User said] Who directed Inception? Check the catalog.") == "the user's words"


def test_a_greeting_given_back_is_an_answer_not_an_echo():
    assert echoed("Доброе утро!", "[User said] доброе утро!") == ""
    assert echoed("Хм, ладно.", "[User said] хм, ладно") == ""
    assert echoed("Который час?", "[User said] который час?") == "the user's words"


def test_the_state_part_back_is_an_echo():
    assert echoed("Active toolsets: media\nmedia_info|<id> — details", "[User said] найди фильм") == "the tool list"
    assert echoed("Skills (name: when to use; read_skill|name gives its recipe):\nmedia: Films", "x") == "the tool list"


def test_the_runtimes_notes_to_the_model_back_are_an_echo_in_any_language():
    refusal = ("not executed (ungrounded_text): timers_set was not run: the time «in 1 hour» has the number 1, "
               "which the user did not say.")
    assert echoed(refusal, "[User said] мама просила напомнить ей про лекарства") != ""
    translated = "Вот результат вашего последнего вызова инструмента. Если он отвечает на ваш запрос, напишите его"
    assert echoed(translated, "[User said] включи первую серию") != ""
    again = "Вот результат вашей последней команды. Если она отвечает на ваш запрос, напишите его прямо сейчас"
    assert echoed(again, "[User said] если будет дождь, напомни взять зонт") != ""
    assert echoed("The film runs 136 minutes.", "[User said] how long is it?") == ""


def test_a_real_answer_is_not_an_echo_even_when_it_quotes_the_user():
    assert echoed("Сейчас 18:00.", "[User said] который час?") == ""
    assert echoed("Который час? Сейчас 18:00.", "[User said] который час?") == ""
    assert echoed("", "[User said] hi") == ""


async def test_the_session_asks_again_once_and_the_glasses_get_the_answer_not_the_echo(tmp_path):
    import protocol as p
    from harness import inproc_system
    from llm.scripted import ScriptedBackend

    def model(messages):
        if messages[-1].content.startswith("[System notice] Your last reply only repeated"):
            return "It is 18:00."
        return "which time is it"  # the user's words back

    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend) as system:
        shown = await system.turn("e1", "Which time is it?")
        history = await system.history("e1")
    finals = [m.text for m in shown if isinstance(m, p.Display) and m.final]
    assert finals == ["It is 18:00."]
    assert [m["content"] for m in history if m["role"] == "assistant"] == ["It is 18:00."]
    assert len(backend.calls) == 2


async def _play(tmp_path, said: str, model):
    """One turn through the real session loop on a scripted model: every request and its reply."""
    from bench.conversation import Turn, record_conversation
    from bench.runtime import scratch_config
    from core.config import load_config
    from llm.scripted import ScriptedBackend

    import msgspec

    config = scratch_config(load_config(None, env={}), tmp_path)  # the model's turn: no reflex takes it
    config = msgspec.structs.replace(config, session=msgspec.structs.replace(config.session, reflexes=False))
    return await record_conversation(config, [Turn(said)], backend=ScriptedBackend(reply_fn=model))


async def _finals(tmp_path, said: str, model) -> tuple[list[str], int]:
    """One turn through the real actors on a scripted model (no reflex): the final displays, and
    how many times the model was asked."""
    import protocol as p
    from harness import inproc_system, make_config
    from llm.scripted import ScriptedBackend

    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, config=make_config(tmp_path, reflexes=False)) as system:
        shown = await system.turn("r1", said)
    return [m.text for m in shown if isinstance(m, p.Display) and m.final], len(backend.calls)


async def test_a_stock_refusal_asked_again_and_given_again_never_reaches_the_user(tmp_path):
    """The small model's English "I can't assist" to a Russian remark, twice: the user is asked
    to say it another way in Russian, not refused in English."""
    finals, asked = await _finals(tmp_path, "что-то ты сегодня медленный", lambda messages: "I'm sorry, but I can't assist with that.")
    assert finals == ["Не понял просьбу. Скажите, пожалуйста, иначе."] and asked == 2


async def test_a_stock_refusal_after_a_play_that_ran_leaves_the_word_to_what_was_done(tmp_path):
    def model(messages):
        if messages[-1].role == "tool" or "System notice" in messages[-1].content:
            return "I'm sorry, but I can't assist with that."
        return "TOOL_CALL: media_play|Матрица"

    finals, _ = await _finals(tmp_path, "включи матрицу", model)
    assert len(finals) == 1 and "can't assist" not in finals[0] and "Матриц" in finals[0], finals


def test_a_canned_refusal_is_told_apart_from_an_answer():
    assert refused("I'm sorry, but I can't assist with that.")
    assert not refused("Sorry, «Матрица» is not in the catalog.")


async def test_a_refusal_right_after_a_call_that_worked_is_asked_again_once(tmp_path):
    def model(messages):
        last = messages[-1]
        if last.content.startswith("[System notice] Your last reply refused"):
            assert "in Russian" in last.content
            return "Включаю «Матрицу»."
        if last.role == "tool":
            return "I'm sorry, but I can't assist with that."
        return "TOOL_CALL: media_play|Матрица"

    requests = await _play(tmp_path, "включи матрицу", model)
    assert [r.reply for r in requests] == ["TOOL_CALL: media_play|Матрица", "I'm sorry, but I can't assist with that.",
                                           "Включаю «Матрицу»."]


async def test_a_refusal_after_a_call_that_failed_is_not_told_the_call_worked(tmp_path):
    # The call turns media on as it runs (S8), so its result starts with the runtime's
    # "(toolset media was enabled on the way)" note; the error after it is still an error.
    def model(messages):
        if "stock refusal" in messages[-1].content:
            return "Не нашёл такого фильма."
        if messages[-1].role == "tool" or "refused" in messages[-1].content:
            return "I'm sorry, but I can't assist with that."
        return "TOOL_CALL: media_play|Нет Такого Фильма"  # a title: an unseen slug is refused before it runs

    requests = await _play(tmp_path, "включи матрицу", model)
    result = requests[1].messages[-1] if requests[1].messages[-1].role == "tool" else requests[1].messages[-2]
    assert result.content.startswith("(toolset media was enabled on the way)\ntool error: ")
    # asked once more, but never told the call worked: the stock refusal is no answer either way
    assert len(requests) == 3, [r.messages[-1].content for r in requests]
    notice = requests[2].messages[-1].content
    assert "stock refusal" in notice and "worked" not in notice


SEARCH_RESULT = ("(toolset media was enabled on the way)\n"
                 "avatar-2009 — Аватар / Avatar (2009, James Cameron, 162 min): Бывший морпех в теле аватара.\n"
                 "showing 1–1 of 1; that is all")


def test_a_few_words_that_share_nothing_with_the_lookup_are_no_answer():
    assert uninformative("Найдено!", SEARCH_RESULT)
    assert uninformative("Done.", SEARCH_RESULT)
    assert not uninformative("Нашёл «Аватара» (2009).", SEARCH_RESULT)  # an inflected title is the title
    assert not uninformative("2009, Кэмерон.", SEARCH_RESULT)  # a number from the result
    assert not uninformative("Да, есть такой фильм, снял его Джеймс Кэмерон.", SEARCH_RESULT)  # a sentence: an answer
    assert not uninformative("", SEARCH_RESULT)


async def test_a_reply_that_says_nothing_of_a_search_is_asked_again_once(tmp_path):
    def model(messages):
        last = messages[-1]
        if last.content.startswith("[System notice] Your last reply told the user nothing"):
            assert "in Russian" in last.content
            assert "It begins: «avatar-2009 — Аватар / Avatar (2009, James Cameron, 162 min)" in last.content
            return "Нашёл «Аватар» (2009, Джеймс Кэмерон)."
        if any(m.role == "tool" and m.name == "media_search" for m in messages):
            return "Найдено!"
        return "TOOL_CALL: media_search|Аватар"

    requests = await _play(tmp_path, "найди Аватар", model)
    assert [r.reply for r in requests] == ["TOOL_CALL: media_search|Аватар", "Найдено!",
                                           "Нашёл «Аватар» (2009, Джеймс Кэмерон)."]


async def test_a_short_reply_after_a_tool_that_does_something_is_left_alone(tmp_path):
    # "Готово." after a play, or after a timer is set, tells the user what they wanted to know
    def model(messages):
        return "Готово." if messages[-1].role == "tool" or "[System notice]" in messages[-1].content else "TOOL_CALL: media_play|matrix-1999"

    requests = await _play(tmp_path, "включи матрицу", model)
    assert [r.reply for r in requests] == ["TOOL_CALL: media_play|matrix-1999", "Готово."]


def test_a_sentence_with_no_letter_of_the_users_script_is_in_the_wrong_language():
    from core.echo import wrong_language

    assert wrong_language("Sorry, but I can't find any information about it.", "[User said] найди вечера на хуторе") == "Russian"
    assert wrong_language("Включаю фильм «Мимино» прямо сейчас.", "[User said] play Mimino please") == "English"
    assert wrong_language('Sorry, but I can\'t find any information about "вечера на хуторе близ диканьки".',
                          "[User said] найди пожалуйста вечера на хуторе близ диканьки") == "Russian"  # the title is the user's
    assert wrong_language("В каталоге нет такого фильма.", "[User said] найди вечера на хуторе") == ""
    assert wrong_language("Playing «Шрек».", "[User said] включи шрек") == ""  # a few words may be a title
    assert wrong_language("Включаю «Back to the Future», приятного просмотра.", "[User said] включи Back to the Future") == ""


async def test_a_reply_in_the_other_language_is_asked_again_in_the_users(tmp_path):
    import protocol as p
    from harness import inproc_system
    from llm.scripted import ScriptedBackend

    def model(messages):
        if messages[-1].content.startswith("[System notice] Your last reply was not in Russian"):
            return "Не знаю, но могу подсказать время или поставить таймер."
        return "Sorry, I don't know anything about that at all."

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model)) as system:
        shown = await system.turn("l1", "расскажи что-нибудь про вечера на хуторе близ диканьки")
    finals = [m.text for m in shown if isinstance(m, p.Display) and m.final]
    assert finals == ["Не знаю, но могу подсказать время или поставить таймер."]


def test_a_name_of_a_worked_example_nobody_said_is_the_examples():
    # h75: "Скажу, когда Анна напишет." after a watch for Катя: the channels example's answer, copied
    from core.echo import example_name_echoed, example_names

    names = example_names('"скажи, когда напишет Анна" -> TOOL_CALL: channels_watch|any; Анна -> "Скажу, когда Анна напишет."')
    assert names == frozenset({"анна"})
    assert example_name_echoed("Скажу, когда Анна напишет.", names, "если Катя из Лондона напишет, скажи", "watching: Катя") == "анна"
    assert example_name_echoed("Скажу, когда Анна напишет.", names, "скажи, когда напишет анна", "") == ""
    assert example_name_echoed("Скажу, когда Катя напишет.", names, "если Катя напишет, скажи", "") == ""


async def test_an_answer_copied_from_a_toolsets_example_is_asked_again(tmp_path):
    import protocol as p
    from harness import inproc_system
    from llm.scripted import ScriptedBackend

    def model(messages):
        if messages[-1].content.startswith("[System notice] Your last reply only repeated"):
            return "Слежу за WhatsApp: напишу, когда придёт от Кати."
        if any("channels_watch" in m.content for m in messages if m.role == "system"):
            return "Скажу, когда Анна напишет."
        return "TOOL_CALL: enable_toolset|channels"

    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=model)) as system:
        await system.turn("c1", "последи за вотсапом: если Катя из Лондона напишет — сразу мне скажи")
        shown = await system.turn("c1", "слушай, а вот эти твои наблюдения за вотсапом, они как вообще устроены?")
    finals = [m.text for m in shown if isinstance(m, p.Display) and m.final]
    assert finals[-1] == "Слежу за WhatsApp: напишу, когда придёт от Кати."
