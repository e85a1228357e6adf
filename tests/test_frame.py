"""The frame (core.frame): words no reflex knows, put by the model as one command of a short list
and carried out by a reflex only when every name and number in it is the user's.

The phrasings are written for these tests, in no eval set."""
import pytest

import protocol as p
from core.frame import frame_messages, read_frame
from core.reflex import recognise
from core.reflex_steps import builtin_local_intents
from harness import ToolsSeen, inproc_system, until
from llm.scripted import ScriptedBackend


@pytest.mark.parametrize("reply, said, kind", [
    ("play Назад в будущее", "а поставь-ка нам Назад в будущее на вечерок", "play"),
    ("set a timer for 8 minutes to макароны", "минут на восемь засеки, макароны варятся", "timer_set"),
    ("remind me at 20:15 to feed the cat", "at a quarter past eight tonight ping me, I need to feed the cat", "timer_set"),
    ("what time is it in Токио", "у меня коллега в Токио, он спит уже?", "time_elsewhere"),
    ("how long is the third one", "а третий фильм сколько длится-то?", "details"),
    ("cancel the timer проветрить", "проветривание уже не нужно, отбой", "timer_cancel"),
    ("resume", "so, where were we, go on", "playback"),
])
def test_a_command_whose_names_and_numbers_the_user_said_is_carried_out(reply, said, kind):
    frame = read_frame(reply, said)
    assert frame.intent is not None and frame.intent.kind == kind, frame


@pytest.mark.parametrize("reply, said, why", [
    ("play Весёлых ребят", "спасибо, ты лучший", "unsaid: веселых"),  # an example's title copied
    ("set a timer for 5 minutes to позвонить", "позвонить бы маме вечером", "unsaid: 5"),  # a number nobody said
    ("play The Matrix", "что-нибудь интересное посоветуешь?", "unsaid: matrix"),
    ("-", "I had a long day, honestly", "none"),
    ("tell me something funny", "tell me something funny", "unknown"),  # not a command of the list
])
def test_a_command_naming_what_the_user_never_said_is_not_taken(reply, said, why):
    assert read_frame(reply, said).refused == why


def test_a_title_of_the_request_before_counts_as_said():
    frame = read_frame("who directed Kin-dza-dza", "who directed it?", before="find Kin-dza-dza")
    assert frame.intent is not None and frame.intent.kind == "details" and frame.intent.subject == "kin-dza-dza"


def test_the_request_before_never_grounds_what_to_do_now():
    # "and another one, half an hour, to move the car": the model said the last timer again
    frame = read_frame("set a timer for 5 minutes to the tea", "and another one, half an hour, to move the car",
                       before="Set a timer for five minutes for the tea, please")
    assert frame.intent is None and frame.refused.startswith("unsaid")


def test_of_several_lines_the_one_that_holds_up_is_taken_and_two_that_do_are_two_requests():
    said, before = "and another one, half an hour, to move the car", "Set a timer for five minutes for the tea, please"
    frame = read_frame("set a timer for 5 minutes for the tea, please\nset a timer for 30 minutes to move the car",
                       said, before)  # the local model's: the request before on a line of its own
    assert frame.intent.kind == "timer_set" and frame.intent.text == "move the car"
    two = read_frame("find Сталкер\nset a timer for 10 minutes to чай", "найди сталкер и ещё таймер на 10 минут чай")
    assert two.intent is None and two.refused == "several"


def test_the_answer_is_in_the_language_the_user_spoke():
    frame = read_frame("tell me when Катя writes in telegram", "как Катя напишет в телеге, маякни")
    assert frame.intent.russian and frame.intent.text == "когда напишет Катя" and frame.intent.channel == "telegram"


def test_every_command_of_the_list_is_one_a_reflex_reads_or_a_toolsets_sentence_declares():
    from core.frame import NONE, builtin_frame
    from core.reflex_steps import builtin_local_intents

    local = builtin_local_intents()
    for said, command in builtin_frame().examples:
        if command != NONE:
            frame = read_frame(command, said, local=local)
            assert frame.taken and (recognise(command) is not None or frame.declared.call is not None), (command, frame)


def test_the_question_keeps_its_fixed_part_first_so_a_backend_can_keep_it():
    from core.frame import builtin_frame

    one, two = frame_messages("первое"), frame_messages("второе", before="первое")
    fixed = 1 + 2 * len(builtin_frame().examples)  # the instructions, then each example's request and command
    assert one[:fixed] == two[:fixed] and "первое" in two[-1].content


# ---- through the real session loop -------------------------------------------------------------
def _frame_or_answer(command: str):
    """A model that puts the frame's question as `command` and answers a turn with plain words."""
    def reply(messages):
        if "ONE command from this list" in messages[0].content:
            return command
        return "Хорошо."
    return reply


async def test_words_no_reflex_knows_are_played_through_the_frame(tmp_path):
    said = "было бы здорово сейчас глянуть Мастера и Маргариту Локшина"
    assert recognise(said) is None  # the reflexes alone do not know this form
    backend = ScriptedBackend(reply_fn=_frame_or_answer("play Мастера и Маргариту Локшина"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        shown = await system.turn("s", said)
        history = await system.history("s")
        played = [m["content"] for m in history if m["role"] == "assistant" and "media_play|" in m["content"]]
        assert played == ["TOOL_CALL: media_play|master-and-margarita-2024"]
        assert "Мастер и Маргарита" in [m for m in shown if isinstance(m, p.Display) and m.final][-1].text
        assert len(backend.calls) == 1  # the frame's one question; the model took no step


async def test_a_request_quoted_from_someone_else_is_not_played_through_the_frame(tmp_path):
    # h84's trap: the local model put a sister's quoted words (a title quoted inside the quote) as a play, and
    # the film played; a frame's reading of a change needs words that ask for it, as the model's calls do
    backend = ScriptedBackend(reply_fn=_frame_or_answer("play Бриллиантовую руку"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        await system.turn("s", "сестра пишет: «включи мне „Бриллиантовую руку“, я соскучилась» — вот смешная, как будто я у "
                               "неё пульт от телевизора в Дубае")
        assert not [m for m in await system.history("s") if m["role"] == "tool"]  # nothing searched, nothing played


async def test_a_frame_naming_a_title_nobody_said_plays_nothing(tmp_path):
    backend = ScriptedBackend(reply_fn=_frame_or_answer("play Мастера и Маргариту"))  # not what was said
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        shown = await system.turn("s", "а поставь-ка нам что-нибудь доброе на вечерок")
        history = await system.history("s")
        assert not [m for m in history if m["role"] == "tool"]  # no call ran
        assert [m for m in shown if isinstance(m, p.Display) and m.final][-1].text == "Хорошо."  # the model's turn


async def test_small_talk_asks_no_frame(tmp_path):
    backend = ScriptedBackend(reply_fn=_frame_or_answer("set a timer for 5 minutes to чай"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        await system.turn("s", "спасибо, ты очень помог с чаем")
        assert all("ONE command from this list" not in call[0].content for call in backend.calls)
        assert not [m for m in await system.history("s") if m["role"] == "tool"]


async def test_a_remark_the_frame_finds_no_command_in_is_answered_without_tools(tmp_path):
    def looker(messages):  # the local model's, on a story: a lookup nobody asked for
        if "ONE command from this list" in messages[0].content:
            return "-"
        return "Ну, бывает." if messages[-1].content.startswith("[System notice]") else "TOOL_CALL: timers_list|"
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=looker), frame=True) as system:
        shown = await system.turn("s", "короче мой брат опять ставит по пять будильников и просыпается к обеду")
        assert not [m for m in await system.history("s") if m["role"] == "tool"]  # no lookup ran
        assert [m for m in shown if isinstance(m, p.Display) and m.final][-1].text == "Ну, бывает."


async def test_a_remark_echoed_back_twice_is_acknowledged_not_repeated(tmp_path):
    story = "я сегодня встал в семь утра и всё равно опоздал"

    def parrot(messages):  # the local model's, on a story: the user's own words back, asked again or not
        return "-" if "ONE command from this list" in messages[0].content else story
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=parrot), frame=True) as system:
        shown = await system.turn("s", story)
        finals = [m.text for m in shown if isinstance(m, p.Display) and m.final]
        assert finals[-1] == "Понимаю."
        assert story not in [m.text for m in shown if isinstance(m, p.Display)]


def test_a_remark_asks_for_nothing_and_an_order_or_a_question_does():
    from core.intent import remark

    assert remark("honestly the ending of that film made no sense to me")
    assert remark("пробки сегодня жесть, час ехал")
    assert not remark("ну поставь таймер на десять минут")
    assert not remark("what time is it in Lima")
    assert not remark("мне нужен таймер")
    assert not remark("Сталкера включай")
    assert not remark("завари мне чай как положено, по рецепту")  # an order for the speaker: the recipe's
    # an order by its form, for a toolset the frame does not know (issue 50), and a noun of that form
    assert not remark("узнай последнюю цену акций Apple")
    assert not remark("подготовь отчёт по продажам")
    assert remark("случай был смешной, ты бы видел")
    # an order not given is no order; one given beside it still is
    assert remark("не включай ничего, я просто думаю вслух")
    assert remark("don't play anything, I'm just thinking out loud")
    assert not remark("не включай фильм и поставь таймер на 5 минут")


def test_cancel_all_timers_needs_words_that_say_all_of_them_and_a_stop_of_the_film_is_no_cancel():
    # the sixteenth blind block: "ugh, stop it, they're fighting over the remote again" cancelled every timer
    assert read_frame("cancel all timers", "ugh, stop it, they're fighting over the remote again").intent is None
    assert read_frame("cancel all timers", "отмени таймер").refused == "unsaid: all"
    assert read_frame("cancel all timers", "отмени все напоминания").intent.all_timers


@pytest.mark.parametrize("kind, questions", [("llamacpp", 1), ("openai", 0)])
async def test_the_frame_is_the_profiles_choice_on_for_a_local_model_off_for_a_server(tmp_path, kind, questions):
    # a capable server model reads the words itself: no one question more before its turn
    from harness import make_config, override
    from llm.profiles import ProfileConfig

    base = make_config(tmp_path, frame=True)
    config = override(base, llm={"profiles": {**base.llm.profiles, "test": ProfileConfig(kind=kind, base_url="http://127.0.0.1:9")}})
    backend = ScriptedBackend(reply_fn=_frame_or_answer("play Мастера и Маргариту Локшина"))
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        await until(lambda: system.actors["session"].settings is not None
                    and system.actors["session"].settings.model.frame == (kind != "openai"))
        await system.turn("s", "было бы здорово сейчас глянуть Мастера и Маргариту Локшина")
        framed = [call for call in backend.calls if "ONE command from this list" in call[0].content]
        assert len(framed) == questions


async def test_words_sent_to_the_phone_are_never_shown_on_the_screen(tmp_path):
    # h23: "скинь мне на телефон код домофона…" was put as "show on the screen: …" and shown
    said = "я сейчас очки сниму, скинь мне на телефон код домофона: сто сорок семь, вызов, два-два-восемь"
    backend = ScriptedBackend(reply_fn=_frame_or_answer("show on the screen: код домофона: сто сорок семь, вызов, два-два-восемь"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        await system.turn("s", said)
        assert not [m for m in await system.history("s") if m["role"] == "tool" and m.get("name") == "show_text"]


# ---- a toolset's own sentences are the frame's targets (issue 50): no reflex reads them -----------
async def _framed_turn(tmp_path, said: str, command: str, tool: str) -> tuple[list[str], str, int]:
    """(the turn's calls of `tool`, its final display, the model's calls) when the frame puts
    `said` as `command`; the model answers "Хорошо." otherwise."""
    backend = ScriptedBackend(reply_fn=_frame_or_answer(command))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        shown = await system.turn("s", said)
        history = await system.history("s")
    calls = [m["content"] for m in history if m["role"] == "assistant" and f"{tool}|" in m["content"]]
    return calls, [m for m in shown if isinstance(m, p.Display) and m.final][-1].text, len(backend.calls)


_OVEN = "бабушкин рецепт американский, там 375 по фаренгейту стоит, а духовка у меня только в цельсиях"


async def test_a_conversion_among_remarks_is_put_as_the_converters_own_sentence_and_answered(tmp_path):
    calls, final, asked = await _framed_turn(tmp_path, _OVEN, "convert 375 fahrenheit to celsius", "units_convert")
    assert calls == ["TOOL_CALL: units_convert|375; F; C"] and "190.6" in final
    assert asked == 1  # the frame's one question; the model took no step


async def test_a_conversion_whose_number_the_user_never_said_is_not_made(tmp_path):
    calls, final, _ = await _framed_turn(tmp_path, _OVEN, "convert 350 fahrenheit to celsius", "units_convert")
    assert not calls and final == "Хорошо."  # the model's turn


async def test_hundreds_said_in_words_are_read_whole_and_a_part_of_them_is_no_number_said(tmp_path):
    # h32: "a hundred and ten" was put by the frame as 100 and converted (the user heard 62 mph, not 68)
    said = "what's a hundred and ten kilometers an hour in miles per hour"
    calls, final, _ = await _framed_turn(tmp_path, said, "convert 100 kilometers per hour to miles per hour", "units_convert")
    assert calls == ["TOOL_CALL: units_convert|110; km/h; mph"] and "68" in final
    among_remarks = "ugh the sign said a hundred and ten kilometers an hour and my car only shows miles"
    assert read_frame("convert 100 kilometers per hour to miles per hour", among_remarks,
                      local=builtin_local_intents()).refused == "unsaid: 100"
    assert read_frame("convert 110 kilometers per hour to miles", among_remarks, local=builtin_local_intents()).taken


async def test_the_glasses_talked_about_are_no_place_to_put_a_text(tmp_path):
    # h33: "чё-то очки греются … глянь, что сейчас запущено" put "что сейчас запущено" on the screen
    said = "чё-то очки греются и тупят, может у тебя там куча всего в фоне крутится? глянь, что сейчас запущено"
    calls, final, _ = await _framed_turn(tmp_path, said, "show on the screen: что сейчас запущено", "show_text")
    assert not calls and "что сейчас запущено" not in final  # the tasks toolset's sentence answers it, or the model
    calls, _, _ = await _framed_turn(tmp_path, "кинь на экран очков, что сейчас запущено", "show on the screen: что сейчас запущено",
                                     "show_text")
    assert calls == ["TOOL_CALL: show_text|что сейчас запущено"]


async def test_a_note_for_the_phone_among_remarks_is_sent_as_the_notify_sentence_says(tmp_path):
    calls, final, _ = await _framed_turn(tmp_path, "my glasses are about to die so quick, get it onto my phone, the gate code is 3318",
                                         "send to my phone: the gate code is 3318", "notify_user")
    assert calls == ["TOOL_CALL: notify_user|the gate code is 3318; to=phone"] and "3318" in final


async def test_the_frames_note_for_the_phone_that_nobody_asked_for_is_refused_by_the_call_guards(tmp_path):
    # a story of a note sent before: the frame put it as a send, every word the user's; the guard
    # that judges the model's calls judges the frame's too, and the turn is the model's, unrecorded
    calls, final, _ = await _framed_turn(tmp_path, "my wife sent the grocery list to my phone this morning, milk eggs and bread",
                                         "send to my phone: the grocery list milk eggs and bread", "notify_user")
    assert not calls and final == "Хорошо."


async def test_this_before_a_colon_is_what_follows_it_never_the_remark_before(tmp_path):
    # "this" sent to the phone was the words before it: "my glasses are about to die so quick"
    calls, _, _ = await _framed_turn(tmp_path, "my glasses are about to die so quick, push this to my phone: the gate code is 3318",
                                     "-", "notify_user")
    assert calls == ["TOOL_CALL: notify_user|the gate code is 3318; to=phone"]


async def test_a_number_said_as_another_places_hour_is_no_timers_length(tmp_path):
    # h72: "брат в Лос-Анджелесе раньше десяти утра по-ихнему трубку не берёт. напомни мне ему набрать, когда у него будет
    # десять": the frame put it "set a timer for 10 minutes", and a 10-minute timer was set
    said = "брат в Лос-Анджелесе раньше десяти утра по-ихнему трубку не берёт, проверено. напомни мне ему набрать, когда у него будет десять"
    backend = ScriptedBackend(reply_fn=_frame_or_answer("set a timer for 10 minutes to набрать"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        await system.turn("s", said)
        history = await system.history("s")
    assert not [m for m in history if m["role"] == "tool" and m.get("name") == "timers_set" and m["content"].startswith("Timer ")]


_HEPARIN = "the transfer chart is American again, patient weighs one seventy six pounds. I need kilos for the heparin dose"


def _converter(frame_command: str):
    """The local model on a conversion the fast path missed: the frame's command with a number the
    user did not say; as the agent, it turns on what it is offered first and converts."""
    def reply(messages):
        if "ONE command from this list" in messages[0].content:
            return frame_command
        last = messages[-1]
        if last.role == "tool":
            return "176 lb = 79.83 kg."
        if "Toolset units activated" in last.content:
            return "TOOL_CALL: units_convert|176; lb; kg"
        return "TOOL_CALL: enable_toolset|units"
    return reply


async def test_words_the_frame_reads_as_one_toolsets_request_let_the_model_turn_on_that_toolset_alone(tmp_path):
    """h80: "…patient weighs one seventy six pounds, what's that in kilos" went to the model, which
    read the media skill and searched the catalog for the sentence; the frame had read it as a
    conversion (refused: its number was not the one said). While that toolset is off, it is the
    only one the model may turn on, and no other toolset's tools are offered."""
    backend = ToolsSeen(reply_fn=_converter("convert 167 pounds to kilograms"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        await system.turn("s", "найди Сталкер")  # media is on from the turn before
        await system.turn("s", _HEPARIN)
        first_step = backend.choices.index(next(c for c in backend.choices if c.get("enable_toolset") == ["units"]))
        assert not [tool for tool in backend.offered[first_step] if tool.startswith(("media_", "timers_"))]
        assert backend.choices[first_step]["read_skill"] == []  # units has no skill; media's is not offered
        assert "units_convert" in backend.offered[first_step + 1]  # on, its tools are offered
        history = await system.history("s")
        assert [m["content"] for m in history if m["role"] == "assistant" and "units_convert" in m["content"]]


async def test_words_the_frame_reads_as_no_request_route_nowhere(tmp_path):
    backend = ToolsSeen(reply_fn=_converter("-"))
    async with inproc_system(tmp_path, backend=backend, frame=True) as system:
        await system.turn("s", _HEPARIN)
        assert {"media", "timers", "units"} <= set(backend.choices[1]["enable_toolset"])  # [0]: the frame's question


async def test_a_routed_turn_still_offers_the_toolsets_the_frame_does_not_know(tmp_path):
    """The frame knows the built-in toolsets' commands, not an MCP server's: "… you keep giving me Moscow
    time, make Chicago my home" framed as a timer (refused: its 7 unsaid) must leave the world clock's
    home city to the model."""
    import sys
    from pathlib import Path

    import msgspec

    from core.config import McpConfig, McpServerConfig
    from harness import make_config, session_knows

    server = McpServerConfig(command=[sys.executable, str(Path(__file__).parent / "mcp_worldclock_server.py")],
                             env={"WORLDCLOCK_NOW": "1773500400"}, timeout_s=10.0)
    config = msgspec.structs.replace(make_config(tmp_path, frame=True), mcp=McpConfig(servers={"worldclock": server}))
    backend = ToolsSeen(reply_fn=_converter("set a timer for 7:00 AM to Chicago"))
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        await session_knows(system, "worldclock")
        await system.turn("s", "I'm stuck at this conference in Chicago all week and you keep giving me Moscow time, "
                               "so make Chicago home", timeout=30)
        offered = next(c["enable_toolset"] for c in backend.choices if "enable_toolset" in c)
        assert "timers" in offered and "worldclock" in offered and "media" not in offered, offered
