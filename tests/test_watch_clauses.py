"""A watch said in clauses among remarks (issue 50: the held-out blocks h20-h25 lost six watches
this way), through the real session loop: the condition and the call to tell in either order,
openers people use ("the moment", "как"), what goes with a watch ("ignore everything else",
"даже если я сплю"), the app named in a remark; and never a watch for someone else's words or
a watch refused."""
from __future__ import annotations

import pytest

import protocol as p
from harness import inproc_system
from llm.scripted import ScriptedBackend


def _liar(messages):
    return "Готово! TOOL_CALL: channels_watch|any; everything"


async def _watched(tmp_path, said: str) -> tuple[list[str], str, bool]:
    """(the watches' calls the turn made, its final display, whether the model was asked)."""
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend) as system:
        shown = [m.text for m in await system.turn("s", said) if isinstance(m, p.Display) and m.final]
        history = await system.history("s")
    calls = [m["content"].removeprefix("TOOL_CALL: ") for m in history
             if m["role"] == "assistant" and m["content"].startswith("TOOL_CALL: channels_watch")]
    return calls, shown[-1], bool(backend.calls)


@pytest.mark.parametrize("said, channel, who", [
    ("I'm under a car right now, so give me a shout when my landlord messages me on WhatsApp, okay?", "whatsapp", "landlord"),
    ("I'm waiting on the contract, so ping me the moment my boss emails back", "mail", "boss"),
    ("как Катя напишет в телеге, сразу скажи мне", "telegram", "катя"),
    ("я в бассейн на час. если в телеге Олег Петрович что-нибудь про отчёт напишет — сразу дёрни меня, а всё остальное пусть ждёт",
     "telegram", "петрович"),
    ("I'm heading into a long meeting. if anything comes in on Slack from Priya about the deploy, ping me right away. "
     "ignore everything else", "slack", "priya"),
    ("сестра сегодня рожает, я весь на нервах. если она или артём её муж напишут в телеграм сразу дай знать, даже если я сплю",
     "telegram", "арт"),
    # "he" of the remark that names the app
    ("I'm heading into the gym, but my boss might ping me on Telegram about Monday's meeting. let me know when he writes? "
     "don't bug me with anything else though", "telegram", "boss"),
    ("последи за вотсапом, ага? если Света напишет, что ключи у консьержа оставила, — сразу скажи мне", "whatsapp", "свет"),
    # h26: the app, then what to wait for
    ("watch telegram for messages from Oleg about the car", "telegram", "oleg"),
    ("also keep an eye on whatsapp for anything from my landlord", "whatsapp", "landlord"),
    ("последи в телеге за сообщениями от Олега", "telegram", "олег"),
    # h29: speech with no comma before the condition, the app in the instrumental; "my" before the app
    ("следи за телегой и если от начальника что-нибудь прилетит сразу дай знать", "telegram", "начальник"),
    ("keep an eye on my email for anything from the bank", "mail", "bank"),
    # h30: a webhook's message "says" (what it says is the watch's, no words told), the call to tell
    # a toolset's word ("wake me up"), what goes with a watch after it
    ("we're shipping the release tonight and I'm off to dinner, phone's going in my bag. if the github webhook says "
     "a build failed, wake me up, otherwise leave me alone", "github", "build failed"),
    # h38: the app, then "and tell me when" what to wait for (one request, not two)
    ("I'm waiting on a job offer from Acme and I keep refreshing my inbox like a maniac. just keep an eye on my mail "
     "and tell me when something from Acme lands", "mail", "acme"),
    # h39: "что-то … придёт" is a message; "от него" is the one the remark names with the app
    ("шеф грозился в выходные в ватсап написать насчёт квартального отчёта, а я с сыном на хоккее весь вечер. "
     "дёрни меня, если от него в ватсапе что-то про отчёт придёт", "whatsapp", "шеф"),
])
async def test_a_watch_said_in_clauses_among_remarks_is_set_without_the_model(tmp_path, said, channel, who):
    calls, shown, asked = await _watched(tmp_path, said)
    assert len(calls) == 1 and not asked, (calls, shown)
    where, _, what = calls[0].partition("|")[2].partition("; ")
    assert where == channel and who in what.casefold(), calls


@pytest.mark.parametrize("said", [
    "она мне вчера говорит: дай знать, если Петя напишет в телегу",
    "my sister always says, let me know when mum texts on whatsapp, and I never do",
    "не говори мне, если Петя напишет в телегу, мне всё равно",
    # a message to pass on, not a watch for the user
    "если Петя напишет, скажи ему, что я опоздаю",
    "если Петя напишет в телегу, разбуди его",
    "она говорит следи за телегой и если Петя напишет дай знать",
])
async def test_someone_elses_words_or_a_refusal_set_no_watch_by_the_fast_path(tmp_path, said):
    calls, _shown, asked = await _watched(tmp_path, said)
    assert asked  # the model reads it (its own call then meets the guards)


async def test_this_watch_is_the_one_there_is_and_what_is_watched_is_listed(tmp_path):
    # h23, h25: "а что у тебя вообще сейчас на слежке стоит?", "убери эту слежку", "эту слежку можно убирать"
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "если гоша напишет в вотсап про ключи от дачи, разбуди меня")
        listed = [m.text for m in await system.turn("s", "а что у тебя вообще сейчас на слежке стоит?")
                  if isinstance(m, p.Display) and m.final][-1]
        await system.turn("s", "о, вон он сам идёт с ключами. эту слежку можно убирать")
        history = await system.history("s")
    assert "whatsapp" in listed and "гоша" in listed.casefold() and not backend.calls, listed
    assert [m["content"] for m in history if m["content"].startswith("TOOL_CALL: channels_unwatch")]


async def test_dropping_a_watch_by_its_app_with_no_timer_set_cancels_no_timers(tmp_path):
    # h31: "drop the whatsapp one, …" was read as a timer's cancel: "There are no timers to cancel"
    # and a call cancelling them all; with no timer set, something else of that name is meant
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "keep an eye on whatsapp and wake me up if anyone mentions the apartment viewing")
        shown = await system.turn("s", "drop the whatsapp one, the agent just called me instead")
        history = await system.history("s")
    assert not [m for m in history if m["role"] == "assistant" and "timers_cancel" in m["content"]]
    # the watch the first turn set (its call to tell, "and wake me up if", is read since h80) is the one dropped
    assert [m.text for m in shown if isinstance(m, p.Display) and m.final][-1].startswith("OK, I've stopped watching")


async def test_that_one_after_the_watches_were_listed_is_the_watch(tmp_path):
    # h39: "nah, drop that one, he just called me about it" after the one watch was listed went to the model,
    # which ended "any" and told the user it would watch; with a timer talked about, "that one" is the timer
    backend = ScriptedBackend(reply_fn=_liar)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "keep an eye on my email and ping me if the landlord writes anything about the lease renewal")
        await system.turn("s", "what are you watching for me now?")
        shown = [m.text for m in await system.turn("s", "nah, drop that one, he just called me about it")
                 if isinstance(m, p.Display) and m.final]
        await system.turn("s", "set a timer for 5 minutes")
        await system.turn("s", "nah, drop that one")
        session = system.actors["session"].sessions["s"]
        assert not session.timers.pending() and not backend.calls, shown
    assert shown[-1].startswith("OK, I've stopped watching"), shown
