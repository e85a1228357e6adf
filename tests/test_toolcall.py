"""S12: the TOOL_CALL line parser on messy small-model output, and argument binding."""
import pytest

from core.toolcall import ArgumentError, ToolCall, bind_args, find_call_start, parse_reply

FENCE = "```"

# (model output, expected call (name, raw_args) or None, expected user-visible text_before)
CORPUS = [
    ("TOOL_CALL: media_search|dune", ("media_search", "dune"), ""),
    ("TOOL_CALL:media_search|dune", ("media_search", "dune"), ""),
    ("TOOL_CALL :  media_search | dune  ", ("media_search", "dune"), ""),
    ("tool_call: media_search|dune", ("media_search", "dune"), ""),
    ("Tool_Call: Media_Search|Dune", ("media_search", "Dune"), ""),
    ("TOOL CALL: media_info|tt42", ("media_info", "tt42"), ""),
    ("`TOOL_CALL: media_search|dune`", ("media_search", "dune"), ""),
    ('"TOOL_CALL: media_search|dune"', ("media_search", "dune"), ""),
    ("'TOOL_CALL: read_skill|media'", ("read_skill", "media"), ""),
    ("**TOOL_CALL:** media_search|dune", ("media_search", "dune"), ""),
    ("**TOOL_CALL: media_search|dune**", ("media_search", "dune"), ""),
    (f"{FENCE}\nTOOL_CALL: media_info|tt42\n{FENCE}", ("media_info", "tt42"), ""),
    (f"Let me look.\n{FENCE}text\nTOOL_CALL: media_info|tt42\n{FENCE}\nThat gives details.",
     ("media_info", "tt42"), "Let me look."),
    (f"{FENCE}TOOL_CALL: media_search|alien{FENCE}", ("media_search", "alien"), ""),
    ("Let me check the time.\nTOOL_CALL: get_current_time", ("get_current_time", ""), "Let me check the time."),
    ("Sure! TOOL_CALL: read_skill|media", ("read_skill", "media"), "Sure!"),
    ('Okay: "TOOL_CALL: show_text|He said "hi""', ("show_text", 'He said "hi"'), "Okay:"),
    ("TOOL_CALL: media_search|dune\nThis searches the catalogue for Dune.", ("media_search", "dune"), ""),
    ("TOOL_CALL: timers_list", ("timers_list", ""), ""),
    ("TOOL_CALL: media_search dune part two", ("media_search", "dune part two"), ""),
    ('TOOL_CALL: media_search(query="dune, part two", page=2)',
     ("media_search", 'query="dune, part two"; page=2'), ""),
    ('TOOL_CALL: media_search|{"query": "dune"}', ("media_search", '{"query": "dune"}'), ""),
    ("TOOL_CALL: show_text|Milk; eggs = 2; bread", ("show_text", "Milk; eggs = 2; bread"), ""),
    ("<think>Maybe TOOL_CALL: media_info|x? No.</think>TOOL_CALL: media_search|dune",
     ("media_search", "dune"), ""),
    ("I should search first.</think>\nTOOL_CALL: media_search|dune", ("media_search", "dune"), ""),
    ("- TOOL_CALL: timers_set|in 5 minutes; tea", ("timers_set", "in 5 minutes; tea"), ""),
    ("> TOOL_CALL: media_play|tt42; pause", ("media_play", "tt42; pause"), ""),
    ("TOOL_CALL:\nmedia_search|dune", ("media_search", "dune"), ""),
    ('TOOL_CALL: "media_search|dune"', ("media_search", "dune"), ""),
    ("Here is the tool call: TOOL_CALL: media_search|dune", ("media_search", "dune"), "Here is the tool call:"),
    ("TOOL_CALL: media-search|dune", ("media_search", "dune"), ""),
    ("It is a sunny day. Nothing to call.", None, "It is a sunny day. Nothing to call."),
    ("I cannot make a tool call: the network is down.", None,
     "I cannot make a tool call: the network is down."),
    ("TOOL_CALL: ", None, "TOOL_CALL:"),
    ("", None, ""),
]


@pytest.mark.parametrize("text,expected_call,expected_before", CORPUS)
def test_messy_model_output_yields_the_intended_call(text, expected_call, expected_before):
    reply = parse_reply(text)
    assert reply.call == (ToolCall(*expected_call) if expected_call else None)
    assert reply.text_before == expected_before


def test_corpus_is_large_enough():
    assert sum(1 for _, call, _ in CORPUS if call) >= 25


def test_only_the_first_call_counts_and_the_rest_are_counted():
    reply = parse_reply("TOOL_CALL: media_search|dune\nTOOL_CALL: media_info|tt1\n"
                        "and also TOOL_CALL: media_play|tt1")
    assert reply.call == ToolCall("media_search", "dune")
    assert reply.extra_calls == 2


def test_explanation_after_the_call_is_not_shown_but_kept_for_logs():
    reply = parse_reply(f"{FENCE}\nTOOL_CALL: media_info|tt42\n{FENCE}\nThis gets details.")
    assert reply.text_before == ""
    assert reply.text_after == "This gets details."


@pytest.mark.parametrize("text, call, before", [
    ("TIMERS_SET: in 23:00; забрать торт", ToolCall("timers_set", "in 23:00; забрать торт"), ""),
    ("Хорошо.\n**TIMERS_CANCEL**: t1", ToolCall("timers_cancel", "t1"), "Хорошо."),
    ("- MEDIA_PLAY: brother-1997", ToolCall("media_play", "brother-1997"), ""),
])
def test_a_call_line_without_the_marker_named_by_an_offered_tool_is_a_call(text, call, before):
    parsed = parse_reply(text, ["timers_set", "timers_cancel", "media_play"])
    assert parsed.call == call and parsed.text_before == before


def test_a_line_that_names_no_offered_tool_or_none_given_is_text():
    assert parse_reply("TIMERS_SET: in 5 minutes").call is None  # no tools given: as before
    assert parse_reply("NOT_A_TOOL: x", ["timers_set"]).call is None
    assert parse_reply("Try MEDIA_PLAY: it plays", ["media_play"]).call is None  # not at the line's start
    assert parse_reply("Напомню: в 18:30", ["timers_set"]).call is None
    # a discover_tools or catalog line quoted back is no call: `name|…` without the marker is text
    assert parse_reply("3 matches:\n- hub_stock_quote|<symbol> — Get the price", ["hub_stock_quote"]).call is None
    assert parse_reply("timers_set: sets a timer", ["timers_set"]).call is None


def test_a_call_inside_thinking_is_ignored():
    reply = parse_reply("<think>TOOL_CALL: media_info|x</think>The answer is 42.")
    assert reply.call is None
    assert reply.text_before == "The answer is 42."


# --- streaming: where to stop showing text -------------------------------------------------------
@pytest.mark.parametrize("text,visible", [
    ("Looking it up. TOOL_CALL: media_sea", "Looking it up."),
    ("Looking it up.\nTOOL_C", "Looking it up.\n"),
    ("Looking it up.\nTOOL", "Looking it up.\n"),
    ("Looking it up.\n`TOOL_CALL: media", "Looking it up.\n"),
    (f"Looking it up.\n{FENCE}\nTOOL_CALL: x", "Looking it up.\n"),
    ("Looking it up.\n**TOOL_CALL:**", "Looking it up.\n"),
    ("The film is great", None),
    ("Stream ends mid-wordTOOL", None),  # not at a word start: cannot be the marker
    ("Tool calls are", None),
])
def test_find_call_start_hides_a_call_line_while_it_streams(text, visible):
    index = find_call_start(text)
    if visible is None:
        assert index is None
    else:
        assert index is not None and text[:index] == visible


def test_find_call_start_then_shows_text_again_when_it_was_not_a_call():
    assert find_call_start("That is to") is not None  # "to" could start TOOL_CALL...
    assert find_call_start("That is to say") is None  # ...and it did not


# --- binding -------------------------------------------------------------------------------------
SEARCH = (["query", "page"], {"query"})
TIMER = (["when", "text"], {"when", "text"})


@pytest.mark.parametrize("raw,names_required,expected", [
    ("dune", SEARCH, {"query": "dune"}),
    ("dune; 2", SEARCH, {"query": "dune", "page": "2"}),
    ("dune; page=2", SEARCH, {"query": "dune", "page": "2"}),
    ("page=2; query=dune", SEARCH, {"query": "dune", "page": "2"}),
    ("page=2; dune", SEARCH, {"query": "dune", "page": "2"}),
    ('query="dune, part two"; page=2', SEARCH, {"query": "dune, part two", "page": "2"}),
    ("query: dune", SEARCH, {"query": "dune"}),
    ("dune|2", SEARCH, {"query": "dune", "page": "2"}),
    ("dune;", SEARCH, {"query": "dune"}),
    ('{"query": "dune", "page": 2}', SEARCH, {"query": "dune", "page": "2"}),
    ("10:00; call mom", TIMER, {"when": "10:00", "text": "call mom"}),
    ("10:00; 2+2=4", TIMER, {"when": "10:00", "text": "2+2=4"}),
    ("Milk; eggs = 2", (["text"], {"text"}), {"text": "Milk; eggs = 2"}),
    ("text=hello", (["text"], {"text"}), {"text": "hello"}),
    ('"media"', (["name"], {"name"}), {"name": "media"}),
    ('{"name": "media"}', (["name"], {"name"}), {"name": "media"}),
    ("anything", ([], set()), {}),
    ("", (["name"], set()), {}),
])
def test_bind_args_accepts_positional_keyed_and_json(raw, names_required, expected):
    names, required = names_required
    assert bind_args(raw, names, required) == expected


@pytest.mark.parametrize("raw,names_required,reason", [
    ("", SEARCH, "missing query"),
    ("; page=2", SEARCH, "missing query"),
    ("dune; 2; 3", SEARCH, "too many values"),
    ("query=a; query=b", SEARCH, "given twice"),
    ('{"title": "dune"}', SEARCH, "unknown argument title"),
    ("10:00", TIMER, "missing text"),
])
def test_bind_args_explains_what_is_wrong(raw, names_required, reason):
    names, required = names_required
    with pytest.raises(ArgumentError, match=reason):
        bind_args(raw, names, required)
