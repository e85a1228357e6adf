"""A text put before the user is a typed result (protocol.results.TextSent): "и на очки то же самое
выведи" after a note to the phone shows that note, "and send that to my phone too" after a text on
the glasses sends it; a dictated text keeps the commas it was said with. Through the real session
loop, with a model that must not be asked."""
import pytest

import protocol as p
from harness import inproc_system
from llm.scripted import ScriptedBackend


def _calls(history: list[dict]) -> list[str]:
    return [m["content"].removeprefix("TOOL_CALL: ") for m in history
            if m["role"] == "assistant" and m["content"].startswith("TOOL_CALL: ")]


@pytest.mark.parametrize("turns, calls", [
    (["скинь мне на телефон: купить шкурку, зерно двести сорок, и пару струбцин", "и на очки то же самое выведи"],
     ["notify_user|купить шкурку, зерно двести сорок, и пару струбцин; to=phone",
      "show_text|купить шкурку, зерно двести сорок, и пару струбцин"]),
    (["send this to my phone: 27 Baker Street, buzzer 31, leave at the door", "and put that on the glasses as well"],
     ["notify_user|27 Baker Street, buzzer 31, leave at the door; to=phone",
      "show_text|27 Baker Street, buzzer 31, leave at the door"]),
    (["выведи на очки: код 4471", "и на телефон тоже скинь это"],
     ["show_text|код 4471", "notify_user|код 4471; to=phone"]),
])
async def test_the_same_text_elsewhere_is_the_text_the_turn_before_sent(tmp_path, turns, calls):
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend) as system:
        for said in turns:
            shown = [m.text for m in await system.turn("s", said) if isinstance(m, p.Display) and m.final]
        assert _calls(await system.history("s")) == calls and not backend.calls
    assert calls[-1].split("|", 1)[1].split(";")[0] in shown[-1]


@pytest.mark.parametrize("before", [
    ["what time is it"],  # no text was sent: "that" is the model's to read
    ["send a note to my phone: buy milk", "what time is it"],  # a text sent, but not the turn before
])
async def test_that_on_the_glasses_with_no_text_just_sent_shows_nothing_by_itself(tmp_path, before):
    backend = ScriptedBackend(reply_fn=lambda messages: "The model's answer.")
    async with inproc_system(tmp_path, backend=backend) as system:
        for said in before:
            await system.turn("s", said)
        await system.turn("s", "and put that on the glasses as well")
        assert not [c for c in _calls(await system.history("s")) if c.startswith("show_text")] and backend.calls


@pytest.mark.parametrize("told, asked, shown", [
    # h59: the glasses showed "the wifi password" itself
    ("the hotel wifi password is bassline77, just so you know", "ok stick the wifi password up on my glasses",
     "wifi password: bassline77"),
    ("код от домофона 4471, запомни", "выведи код от домофона на очки", "код от домофона: 4471"),
])
async def test_a_thing_shown_by_its_name_shows_what_the_user_said_it_is(tmp_path, told, asked, shown):
    backend = ScriptedBackend(reply_fn=lambda messages: "Noted.")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", told)
        answer = [m.text for m in await system.turn("s", asked) if isinstance(m, p.Display) and m.final][-1]
        assert _calls(await system.history("s"))[-1] == f"show_text|{shown}" and answer == shown and len(backend.calls) == 1


async def test_a_thing_named_that_was_never_said_is_not_shown_as_its_name(tmp_path):
    backend = ScriptedBackend(reply_fn=lambda messages: "What is the password?")
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "put the wifi password on my glasses")
        assert not [c for c in _calls(await system.history("s")) if c.startswith("show_text")]
