"""Pure parts of the LLM layer: message adaptation, thinking filter, grammar text, profiles."""
import random

import pytest

from llm import ProfileConfig, default_profiles, make_backend
from llm.adapt import ThinkFilter, render_gemma_prompt, strip_think, to_gemma_turns, to_openai_messages
from llm.grammar import parse_constrained_output, tool_call_grammar
from protocol import ChatMessage


def msg(role, content, name=""):
    return ChatMessage(role=role, content=content, name=name)


HISTORY = [
    msg("system", "You are Porfiry."),
    msg("user", "Find a film"),
    msg("assistant", "TOOL_CALL: read_skill|media"),
    msg("tool", "Media skill body", name="read_skill"),
    msg("user", "quickly please"),
]


def test_openai_tool_results_become_labelled_user_turns_merged_with_the_next_user_turn():
    assert to_openai_messages(HISTORY) == [
        {"role": "system", "content": "You are Porfiry."},
        {"role": "user", "content": "Find a film"},
        {"role": "assistant", "content": "TOOL_CALL: read_skill|media"},
        {"role": "user", "content": "[Tool result from read_skill]\nMedia skill body\n\nquickly please"},
    ]


def test_openai_drops_thinking_from_earlier_assistant_turns():
    sent = to_openai_messages([msg("user", "hi"), msg("assistant", "<think>hmm</think>\n\nHello"), msg("user", "and?")])
    assert sent[1] == {"role": "assistant", "content": "Hello"}


def test_unknown_role_is_a_clear_error():
    with pytest.raises(ValueError, match="message 1 has role 'robot'"):
        to_openai_messages([msg("user", "hi"), msg("robot", "beep")])


def test_gemma_puts_system_text_into_the_first_user_turn_and_alternates():
    assert to_gemma_turns(HISTORY) == [
        ("user", "You are Porfiry.\n\nFind a film"),
        ("model", "TOOL_CALL: read_skill|media"),
        ("user", "[Tool result from read_skill]\nMedia skill body\n\nquickly please"),
    ]


def test_gemma_system_message_mid_history_is_a_labelled_user_turn():
    turns = to_gemma_turns([msg("user", "hi"), msg("assistant", "hello"), msg("system", "Timer fired")])
    assert turns[-1] == ("user", "[System]\nTimer fired")


def test_gemma_rejects_a_history_ending_with_the_model_speaking():
    with pytest.raises(ValueError, match="ends with an assistant turn"):
        to_gemma_turns([msg("user", "hi"), msg("assistant", "hello")])


def test_gemma_prompt_uses_the_gemma3_turn_format_and_keeps_the_system_text():
    prompt = render_gemma_prompt(HISTORY[:2])
    assert prompt == "<start_of_turn>user\nYou are Porfiry.\n\nFind a film<end_of_turn>\n<start_of_turn>model\n"


def test_gemma_prompt_of_a_longer_history_extends_the_shorter_ones_prompt():
    # prefix reuse in llama.cpp depends on this: earlier turns render the same way every time
    shorter = render_gemma_prompt(HISTORY[:2]).removesuffix("<start_of_turn>model\n")
    assert render_gemma_prompt(HISTORY).startswith(shorter)


def test_strip_think_removes_blocks_unterminated_thinking_and_stray_closers():
    assert strip_think("<think>plan</think>\n\nAnswer") == "Answer"
    assert strip_think("Answer<think>still thinking") == "Answer"
    assert strip_think("plan</think>Answer") == "planAnswer"


def test_think_filter_matches_strip_think_for_any_chunking():
    text = "<think>\nmaybe a < b\n</think>\n\nHello <b>bold</b> <thi"
    rng = random.Random(7)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(0, 12)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        think = ThinkFilter()
        assert "".join(think.feed(p) for p in pieces) + think.finish() == "Hello <b>bold</b> <thi"


def test_think_filter_holds_back_only_what_could_be_a_tag():
    think = ThinkFilter()
    assert think.feed("Hello <") == "Hello "
    assert think.feed("b>") == "<b>"


def test_grammar_lists_exactly_the_given_tools():
    grammar = tool_call_grammar(["media_search", "read_skill", "read_skill"])
    assert 'name ::= "media_search" | "read_skill"\n' in grammar
    assert grammar.startswith("root ::= call | text")


def test_grammar_without_tools_admits_only_text():
    assert tool_call_grammar([]).startswith("root ::= text\n")
    assert "TOOL_CALL" not in tool_call_grammar([])


def test_plain_text_may_not_open_a_line_with_a_capital_to():
    """The local model, kept from TOOL_CALL, wrote "TOO_CALL:" and "TOOOL_CALL:": a line may
    start "To"/"to"/"Today" but not "TO"; llama.cpp compiles the rule."""
    llama_cpp = pytest.importorskip("llama_cpp")
    grammar = tool_call_grammar([])
    assert '"T" after-cap-t' in grammar and 'after-cap-t ::= "" | [^Oo\\n] [^\\n]* | "o" after-to' in grammar
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)


def test_grammar_rejects_tool_names_that_would_break_it():
    with pytest.raises(ValueError, match="not a plain identifier"):
        tool_call_grammar(['x" | "evil'])


def test_parse_constrained_output():
    tools = ["media_search"]
    assert parse_constrained_output("TOOL_CALL: media_search|jazz films", tools) == ("media_search", "jazz films")
    assert parse_constrained_output("Just words.\nMore words.", tools) == "Just words.\nMore words."
    with pytest.raises(ValueError, match="unknown tool"):
        parse_constrained_output("TOOL_CALL: media_play|1", tools)
    with pytest.raises(ValueError, match="TOOL_ line"):
        parse_constrained_output("Sure!\nTOOL_CALL: media_search|x", tools)
    with pytest.raises(ValueError, match="TOOL_ line"):
        parse_constrained_output("TOO_CALL: read_skill|anecdote", tools)  # the local model's misspelling
    assert parse_constrained_output("Today is Saturday.\nTo be sure: yes.", tools) == "Today is Saturday.\nTo be sure: yes."


def test_default_profiles_read_the_environment():
    profiles = default_profiles({"PORFIRY_QWEN_BASE_URL": "http://gpu:9000/v1", "PORFIRY_QWEN_API_KEY": "k",
                                 "PORFIRY_QWEN_MODEL": "Qwen-other"})
    assert set(profiles) == {"local", "qwen", "gemma", "scripted"}
    qwen = profiles["qwen"]
    assert (qwen.kind, qwen.base_url, qwen.api_key, qwen.model, qwen.enable_thinking) == (
        "openai", "http://gpu:9000/v1", "k", "Qwen-other", False)
    assert (profiles["gemma"].kind, profiles["gemma"].grammar) == ("llamacpp", True)


def test_default_qwen_profile_without_environment():
    qwen = default_profiles({})["qwen"]
    assert (qwen.base_url, qwen.model, qwen.api_key) == ("http://127.0.0.1:8000/v1", "Qwen3.8-27B-NVFP4", "")


def test_bad_profiles_are_clear_errors():
    with pytest.raises(ValueError, match="needs base_url"):
        ProfileConfig(kind="openai")
    with pytest.raises(ValueError, match="max_concurrency must be at least 1"):
        ProfileConfig(kind="scripted", max_concurrency=0)


async def test_make_backend_builds_each_kind_without_loading_anything():
    profiles = default_profiles({})
    kinds = {}
    for name, profile in profiles.items():
        backend = make_backend(profile, name=name)
        kinds[name] = type(backend).__name__
        assert backend.name == name
        await backend.aclose()
    assert kinds == {"local": "LlamaCppBackend", "qwen": "OpenAIBackend", "gemma": "LlamaCppBackend", "scripted": "ScriptedBackend"}
