"""Tool discovery at scale (issue 53): the catalog and skills index within a token budget,
`discover_tools|<need>` over toolsets, tools and skills, big MCP servers usable whole.

End to end: the real actors over inproc ZeroMQ, a real MCP server over stdio with 120 tools
(tests/mcp_hub_server.py), 16 user skills the size of the public Agent Skills
(evals/discovery/skills/), and a scripted model that calls what the user tells it to."""
import re
import shutil
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import pytest

import protocol as p
from core import discovery
from core.config import Config, McpConfig, McpServerConfig
from core.loading import default_catalog
from core.prompt import Scope, build_prompt, estimate_tokens
from core.skills_notice import SKILLS_HOWTO
from core.toolsets import ToolsetRegistry
from evals import discovery as needs_eval
from harness import ToolsSeen, call_what_is_said, inproc_system, make_config, session_knows
from protocol.skills import SkillEntry

HERE = Path(__file__).resolve().parent
HUB = str(HERE / "mcp_hub_server.py")
NOTES = str(HERE / "mcp_notes_server.py")
MANY = str(HERE / "mcp_many_server.py")
PAPERS = str(HERE / "mcp_papers_server.py")
STATE_1_MAX_TOKENS = 800  # the issue's bound on the state-1 prompt with the 16 skills and the hub


model = call_what_is_said


def prompt_of(messages) -> str:
    return "\n\n".join(m.content for m in messages if m.role == "system")


def model_tokens(text: str) -> int:
    """The embedded model's count (`run.py prompt`), or the calibrated estimate without llama-cpp."""
    try:
        from llm.gemma_model import count_tokens

        return count_tokens(text)
    except Exception:  # noqa: BLE001 - no tokenizer here: the budget's own estimate
        return round(estimate_tokens(text) * discovery.TOKENS_PER_ESTIMATE)


@asynccontextmanager
async def system_with(tmp_path, servers, *, wait_for=(), mcp=None, reply_fn=None, **session):
    shutil.copytree(needs_eval.SKILLS_DIR, tmp_path / "user-skills")
    # the words are for the scripted model: no reflex takes them, none is judged small talk
    # and the model calls discover_tools itself unless a test says otherwise
    config = make_config(tmp_path, **{"reflexes": False, "small_talk_plain": False, "discover_first": False, **session})
    config = msgspec.structs.replace(config, mcp=McpConfig(servers=servers, restart_backoff_s=0.1,
                                                           check_interval_s=5.0, **(mcp or {})))
    backend = ToolsSeen(reply_fn=reply_fn or model)
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        system.backend = backend
        for name in wait_for:
            await session_knows(system, name, timeout=60)
        yield system


def hub() -> McpServerConfig:
    return McpServerConfig(command=[sys.executable, HUB], timeout_s=30.0)


async def say(system, text, session="s1"):
    shown = await system.turn(session, text, timeout=30)
    return [m.text for m in shown if isinstance(m, p.Display) and m.final][-1]


# --- retrieval ------------------------------------------------------------------------------------------
def test_a_need_said_in_russian_finds_the_tool_an_mcp_server_described_in_english():
    registry, skills = needs_eval.catalog()
    index = discovery.index_for(registry, skills)
    assert "hub_stock_quote" in [e.name for e in index.search("сколько сейчас стоят акции Apple")[:3]]
    assert "pptx" in [e.name for e in index.search("сделай презентацию со слайдами")[:3]]
    assert "timers" in [e.toolset for e in index.search("напомни мне позвонить маме")[:3]]


def test_the_test_split_of_the_needs_set_is_found_in_the_top_3_nine_times_in_ten():
    """The set is fixed (evals/discovery/needs.toml): `run.py discover-eval` prints the same figure."""
    result = needs_eval.score("test")
    assert result.total >= 30 and len(needs_eval.needs()) >= 60
    assert result.rate >= 0.9, result.misses


# --- the budget -----------------------------------------------------------------------------------------
def _state_1(scope: Scope, registry=None, skills=None):
    registry, pairs = (registry, skills) if registry else needs_eval.catalog()
    entries = [SkillEntry(name=name, description=description) for name, description in pairs]
    return build_prompt(registry, [], entries, SKILLS_HOWTO, scope=scope)


def test_past_the_budget_the_index_lists_what_the_conversation_is_about_and_says_how_many_more():
    config = Config().session
    scope = Scope(config.index_budget_tokens, config.max_active_tools, recent="сделай презентацию про проект")
    prompt = _state_1(scope)
    assert "pptx:" in prompt.state  # what the words are about
    assert "mcp-builder:" not in prompt.state  # unlisted, but found on demand
    assert "more toolsets and skills are not listed here: discover_tools|<what you need>" in prompt.state
    assert "discover_tools|<need>" in prompt.static and prompt.discover
    other = _state_1(scope._replace(recent="write an internal newsletter", used=("xlsx",)))
    assert other.static == prompt.static  # the words change the state part only: the prefix stays cached
    assert "internal-comms:" in other.state and "xlsx:" in other.state and "pptx:" not in other.state


def test_the_state_1_prompt_with_16_skills_and_a_120_tool_server_stays_within_800_tokens():
    config = Config().session
    for recent in ("", "сделай презентацию про проект", "what is the weather in Oslo tomorrow"):
        prompt = _state_1(Scope(config.index_budget_tokens, config.max_active_tools, recent=recent))
        text = prompt.static + "\n\n" + prompt.state
        assert model_tokens(text) <= STATE_1_MAX_TOKENS, recent
    unbounded = _state_1(Scope())
    assert model_tokens(unbounded.static + "\n\n" + unbounded.state) > 1200  # what it was without the budget


def test_within_the_budget_the_prompt_is_what_it_was():
    """The built-in catalog and skills fit: nothing is left out and discover_tools is not offered."""
    registry = ToolsetRegistry(default_catalog())
    skills = (("media", "Films: search, details, playback."), ("timers", "Reminders and timers: set, list, cancel."))
    bounded = _state_1(Scope(400, 24, recent="найди фильм"), registry, skills)
    plain = _state_1(Scope(), registry, skills)
    assert (bounded.static, bounded.state) == (plain.static, plain.state)
    assert not bounded.discover and "discover_tools" not in bounded.static


# --- end to end -----------------------------------------------------------------------------------------
async def test_every_one_of_120_tools_can_be_discovered_and_then_called(tmp_path):
    rows = needs_eval.hub_rows()
    assert len(rows) == 120
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",)) as system:
        assert await say(system, "hello") == "plain answer"
        state_1 = prompt_of(system.backend.calls[-1])
        assert model_tokens(state_1) <= STATE_1_MAX_TOKENS
        assert "hub — " in state_1 and "hub_stock_quote" not in state_1
        for name, args, description in rows:
            found = await say(system, f"call discover_tools|{description}")
            assert f"hub_{name}|" in found or f"hub_{name} —" in found, (name, found)
            assert "Callable now:" in found
            given = "; ".join(f"{arg}=x{n}" for n, (arg, required) in enumerate(args) if required)
            answer = await say(system, f"call hub_{name}|{given}")
            assert answer.startswith(f"ok: {name}:") and given in answer, (name, answer)
        prompt = prompt_of(system.backend.calls[-1])
        assert "hub: " in prompt and "more tools not shown; discover_tools|<what you need> finds them" in prompt
        shown = [line for line in prompt.splitlines() if line.startswith("hub_")]
        assert len(shown) <= Config().session.max_active_tools  # the least recently used went
        assert any(line.startswith("hub_podcast_search|") for line in shown)
        assert not any(line.startswith("hub_stock_quote|") for line in shown)


async def test_after_tools_are_found_the_model_is_told_to_call_one_and_after_nothing_to_answer(tmp_path):
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",)) as system:
        await say(system, "call discover_tools|weather forecast for a city")
        closing = system.backend.last_read[-1]
        assert "Call the one the user's request needs" in closing and "If it answers" not in closing
        await say(system, "call discover_tools|zzqx wvvb")  # nothing matches: nothing was made callable
        closing = system.backend.last_read[-1]
        assert "If it answers the user's request" in closing, closing


async def test_enabling_a_big_toolset_shows_its_tools_most_like_the_words_and_says_how_many_are_hidden(tmp_path):
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",), toolset_first_tools=5) as system:
        await say(system, "what's the weather in Oslo?")
        await say(system, "call enable_toolset|hub")
        prompt = prompt_of(system.backend.calls[-1])
        shown = [line.split("|")[0].split(" ")[0] for line in prompt.splitlines() if line.startswith("hub_")]
        assert 1 <= len(shown) <= 5 and "hub_weather_forecast" in shown, shown
        assert f"hub: {120 - len(shown)} more tools not shown" in prompt
        offered = system.backend.offered[-1]  # the grammar offers the tools shown, not all 120
        assert set(shown) <= set(offered) and "hub_stock_quote" not in offered and "discover_tools" in offered


def calls_what_it_is_shown(messages) -> str:
    """A small model's way with a big catalog: it never calls discover_tools itself; shown the
    forecast tool in the prompt, it calls it; given the forecast, it tells it."""
    said = [m for m in messages if m.role != "system"]
    if said[-1].role == "tool" and said[-1].content.startswith("weather_forecast:"):
        return "Rain in Oslo tomorrow: " + said[-1].content
    if "hub_weather_forecast|<place>" in prompt_of(messages):
        return "TOOL_CALL: hub_weather_forecast|Oslo"
    return "I don't know the weather."


@pytest.mark.parametrize("first", [True, False])
async def test_a_request_past_the_budget_has_its_tools_found_before_the_models_first_step(tmp_path, first):
    """The embedded model called discover_tools in 6 of 12 requests over the hub and otherwise
    answered from nothing: the session searches the request itself and shows the tools found,
    so the forecast tool is in front of the model, callable, at its first step. Off
    (`session.discover_first = false`), the model is on its own."""
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",), reply_fn=calls_what_it_is_shown,
                           discover_first=first) as system:
        answer = await say(system, "will it rain in Oslo tomorrow?")
        calls = [m["content"] for m in await system.history("s1") if m["role"] == "assistant" and "TOOL_CALL" in m["content"]]
        if first:
            assert answer == "Rain in Oslo tomorrow: weather_forecast: place=Oslo", answer
            assert calls == ["TOOL_CALL: hub_weather_forecast|Oslo"], calls
            assert "hub_weather_forecast" in system.backend.offered[-2]  # the grammar lets it be called
            assert len(system.backend.calls) == 1 + 2, "one rewording of the request, two steps of the model"
        else:
            assert answer == "I don't know the weather." and calls == []


class DoesOneTaskUnlessTold:
    """A small model's way with a request of two tasks: it makes the first call and answers
    after its result, unless the closing notice (`backend.last_read`) says a task is left."""
    backend: ToolsSeen | None = None

    def __call__(self, messages) -> str:
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return "TOOL_CALL: hub_stock_quote|AAPL" if "hub_stock_quote|<symbol>" in prompt_of(messages) else "no idea"
        if "«find related news», not done yet" in self.backend.last_read[-1] and len(results) == 1:
            return "TOOL_CALL: hub_company_news|Apple"
        return "Here you are: " + " / ".join(results)


@pytest.mark.parametrize("first", [True, False])
async def test_a_request_of_two_tasks_is_told_the_task_left_after_the_first_result(tmp_path, first):
    model = DoesOneTaskUnlessTold()
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",), reply_fn=model, discover_first=first) as system:
        model.backend = system.backend
        answer = await say(system, "get the latest Apple stock price and find related news")
        if first:
            assert answer == "Here you are: stock_quote: symbol=AAPL / company_news: symbol=Apple", answer
        else:
            assert answer == "no idea"


def opens_issues(messages) -> str:
    """A model that opens an issue whenever GitHub issues come up."""
    said = [m for m in messages if m.role != "system"]
    if said[-1].role == "tool":
        return "ok: " + said[-1].content
    return "TOOL_CALL: hub_github_create_issue|my-repo; crash on start"


async def test_a_question_about_what_the_assistant_can_do_opens_no_issue_and_an_order_does(tmp_path):
    """"can you actually open issues on GitHub for me, or do you just read stuff?" opened one (the
    discovery traps, dtrap-en-02, with or without discover_first): asked what it can do, nothing
    is done; asked to do it, it is."""
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",), reply_fn=opens_issues) as system:
        await say(system, "Wait, can you actually open issues on GitHub for me, or do you just read stuff?")
        results = [m for m in await system.history("s1") if m["role"] == "tool"]
        assert results[-1]["name"] == "hub_github_create_issue" and results[-1]["content"].startswith("not executed")
        made = await say(system, "open an issue in my-repo on GitHub: crash on start")
        assert made.endswith("github_create_issue: repo=my-repo; title=crash on start"), made


def test_a_request_is_cut_into_its_tasks_and_a_call_serves_the_task_that_names_it_best():
    registry, skills = needs_eval.catalog()
    index = discovery.index_for(registry, skills)
    said = "Find recent arXiv papers about transformers, and download the top one please."
    assert discovery.request_parts(said) == ["Find recent arXiv papers about transformers", "download the top one please"]
    parts = [part for part, _tools in discovery.part_tools(index, discovery.request_parts(said))]
    assert discovery.part_left(index, parts, []) == parts[0]
    assert discovery.part_left(index, parts, ["hub_arxiv_search"]) == "download the top one please"
    assert discovery.part_left(index, parts, ["hub_arxiv_search", "hub_arxiv_download"]) == ""
    assert discovery.part_left(index, parts, ["hub_weather_current"]) == parts[0]  # serves neither
    one_task = "will it rain in Oslo tomorrow? check the forecast"  # two sentences, one tool
    assert discovery.part_tools(index, discovery.request_parts(one_task)) == []
    assert discovery.request_parts("and then") == ["and then"]


async def test_small_talk_and_a_request_the_prompt_already_serves_are_not_searched(tmp_path):
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",), reply_fn=calls_what_it_is_shown,
                           discover_first=True) as system:
        assert await say(system, "thanks, that's great!") == "I don't know the weather."
        assert "hub_weather_forecast" not in system.backend.offered[-1] and len(system.backend.calls) == 1
    async with system_with(tmp_path / "unbound", {}, reply_fn=calls_what_it_is_shown, discover_first=True,
                           index_budget_tokens=0) as system:
        await say(system, "set a timer for the tea")  # no budget: nothing is left out of the prompt
        assert "discover_tools" not in system.backend.offered[-1] and len(system.backend.calls) == 1, "not searched"
        assert "timers_set" not in system.backend.offered[-1]  # the model turns timers on, as always


def rewords_umbrella(messages) -> str:
    """A scripted model that, asked to reword a need, says it plainly; otherwise `model`."""
    if messages[0].content == discovery.rewording_messages("")[0].content:
        return "weather forecast: will it rain" if "зонтик" in messages[-1].content else "TOOL_CALL: timers_set|5 min"
    return model(messages)


@pytest.mark.parametrize("rewording", [True, False])
async def test_a_need_in_words_no_word_list_knows_is_found_by_the_models_rewording(tmp_path, rewording):
    """«мне нужен зонтик» has no word any description or the word list has: the model's
    rewording finds the forecast, and the tool is callable; with the rewording off, nothing is
    found. A rewording that is a tool call is no query: the need's own words decide."""
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",), reply_fn=rewords_umbrella,
                           discover_rewording=rewording) as system:
        found = await say(system, "call discover_tools|мне нужен зонтик")
        if rewording:
            assert found.startswith("ok: 3 match(es) for «мне нужен зонтик»") and "hub_weather_forecast|" in found
            assert await say(system, "call hub_weather_forecast|Oslo") == "ok: weather_forecast: place=Oslo"
        else:
            assert found == "ok: nothing matches «мне нужен зонтик»; say it in other words, or answer the user without a tool"
        asked = [call for call in system.backend.calls if call[0].content == discovery.rewording_messages("")[0].content]
        assert len(asked) == rewording
        plain = await say(system, "call discover_tools|a timer for tea")
        assert "timers_set|" in plain and "hub_weather" not in plain


def asks_for_papers(messages) -> str:
    """A small model's way with discovery: the need it writes names the topic, not the task."""
    last = messages[-1].content
    if messages[0].content == discovery.rewording_messages("")[0].content:
        return "search scientific papers on arXiv" if "архиве" in last else "transformer neural networks"
    if last.startswith("[User said] найди на архиве"):
        return "TOOL_CALL: discover_tools|трансформеры"
    return model(messages)


async def test_a_need_of_one_word_is_reworded_from_the_request_it_came_from(tmp_path):
    """«трансформеры» alone finds nothing; the request it came from («найди на архиве свежие статьи
    про трансформеры») says the task: reworded from it, the papers' tools are found."""
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",), reply_fn=asks_for_papers) as system:
        await say(system, "найди на архиве свежие статьи про трансформеры")
        found = [m["content"] for m in await system.history("s1") if m["role"] == "tool"]
        assert len(found) == 1 and "hub_arxiv_" in found[0] and "Callable now:" in found[0], found
        asked = [call[-1].content for call in system.backend.calls
                 if call[0].content == discovery.rewording_messages("")[0].content]
        assert asked == ["найди на архиве свежие статьи про трансформеры"]


def test_a_rewording_is_the_first_line_of_the_reply_and_never_a_tool_call():
    assert discovery.reworded('"weather forecast"\nThis finds the weather.') == "weather forecast"
    assert discovery.reworded("TOOL_CALL: discover_tools|weather") == ""
    assert discovery.reworded("   \n  ") == ""
    assert len(discovery.reworded("word " * 200)) == discovery.MAX_NEED_CHARS
    registry, skills = needs_eval.catalog()
    index = discovery.index_for(registry, skills)  # a rewording of stop words alone adds nothing
    assert index.search("weather forecast", reworded="the and of") == index.search("weather forecast")


async def test_an_empty_need_gets_a_clear_answer_and_the_session_goes_on(tmp_path):
    async with system_with(tmp_path, {"hub": hub()}, wait_for=("hub",)) as system:
        empty = await say(system, "call discover_tools|   ")
        assert empty == "ok: arguments invalid for discover_tools; expected: discover_tools|need"
        assert "say what you need in a few words" in await say(system, "call discover_tools|мне нужно, please?")
        found = await say(system, "call discover_tools|I need the weather forecast for tomorrow, in Oslo, if it rains")
        assert len(found) < 2000 and "hub_weather_forecast|<place> — Weather forecast" in found
        assert await say(system, "call hub_weather_current|Oslo") == "ok: weather_current: place=Oslo"


def test_a_10_kb_need_is_cut_to_its_first_words():
    registry, skills = needs_eval.catalog()
    index = discovery.index_for(registry, skills)
    need = "прогноз погоды " * 20 + "x" * 10_000
    found = index.search(need)
    assert "hub_weather_forecast" in [entry.name for entry in found]
    assert len(discovery.result_text(need, found)) < 1500


async def test_two_servers_with_the_same_tool_names_are_told_apart_by_server(tmp_path):
    notes = McpServerConfig(command=[sys.executable, NOTES], timeout_s=20.0)
    async with system_with(tmp_path, {"notes": notes, "jot": notes}, wait_for=("notes", "jot")) as system:
        found = await say(system, "call discover_tools|add a note")
        assert "notes_add|<text>" in found and "jot_add|<text>" in found
        assert "several servers have a tool named add: notes_add of notes, jot_add of jot" in found
        assert await say(system, "call jot_add|milk") == "ok: note 1 added"


async def test_a_server_with_10000_tools_is_cut_to_the_hard_cap_and_the_rest_is_found_by_need(tmp_path):
    many = McpServerConfig(command=[sys.executable, MANY], env={"MANY_TOOLS": "10000"}, timeout_s=60.0)
    notes = McpServerConfig(command=[sys.executable, NOTES], timeout_s=20.0)
    async with system_with(tmp_path, {"many": many, "notes": notes}, wait_for=("many", "notes")) as system:
        rows = {row.name: row for row in (await system.client.ask("toolsets", p.ToolsetsRequest())).toolsets}
        assert rows["many"].tools == Config().mcp.max_tools == 2000 and rows["many"].state == "available"
        assert rows["many"].error == ("8000 of 10000 listed tool(s) refused: tool 't2000' and 7999 more refused: "
                                      "more than mcp.max_tools (2000) tools")
        assert await say(system, "hello") == "plain answer"
        state_1 = prompt_of(system.backend.calls[-1])
        assert "discover_tools|<need>" in state_1 and "many_t0" not in state_1
        assert model_tokens(state_1) <= STATE_1_MAX_TOKENS
        found = await say(system, "call discover_tools|the tool number 1999")
        assert "many_t1999|" not in found and "many_t1999 — The tool number 1999." in found
        assert await say(system, "call many_t1999|hi") == "ok: t1999 hi"
        assert await say(system, "call notes_add|milk") == "ok: note 1 added"  # the neighbour is undisturbed
        assert len(system.backend.offered[-1]) < 100  # the grammar is not 2,000 names long


# --- a made-up id ---------------------------------------------------------------------------------------
def knows_the_paper_by_heart(messages) -> str:
    """The eval's small model: asked for an abstract, it calls the tool with the id the user said,
    or else with one of its own, whatever any result showed (the one it "remembers"); otherwise `model`."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "user" and "abstract" in last.content:
        return "TOOL_CALL: papers_abstract|" + (re.findall(r"\d{4}\.\d{5}", last.content) or ["1706.03762"])[0]
    if last.role == "tool" and last.content.startswith("not executed (unseen_id)"):
        return "I need the paper's exact id: let me search for it first."
    return model(messages)


@asynccontextmanager
async def papers_system(tmp_path):
    """The papers server (`search` lists ids, `abstract` by `paperId`) over stdio; its log: the ids it was asked for."""
    log = tmp_path / "papers.log"
    log.write_text("")
    server = McpServerConfig(command=[sys.executable, PAPERS], env={"PAPERS_LOG": str(log)}, timeout_s=20.0)
    async with system_with(tmp_path, {"papers": server}, wait_for=("papers",), reply_fn=knows_the_paper_by_heart) as system:
        system.papers_log = log
        yield system


async def test_an_id_no_result_showed_and_no_user_said_never_reaches_the_server_and_the_model_is_told_why(tmp_path):
    async with papers_system(tmp_path) as system:
        answer = await say(system, "show me the abstract of the attention paper")
        assert system.papers_log.read_text() == ""  # the server never saw the call
        results = [m["content"] for m in await system.history("s1") if m["role"] == "tool"]
        assert len(results) == 1 and answer == "I need the paper's exact id: let me search for it first."
        assert [m.content for m in system.backend.calls[-1] if m.role == "tool"] == results  # the model read why
        assert results[0].startswith("not executed (unseen_id): papers_abstract was not run: the paper_id "
                                     "«1706.03762» is in no result of this conversation and the user did not say it")
        assert "exactly as a result shows it (search or list first)" in results[0]


async def test_an_id_a_search_result_listed_reaches_the_server(tmp_path):
    async with papers_system(tmp_path) as system:
        await say(system, "show me the abstract of the attention paper")  # made up: refused
        assert (await say(system, "call papers_search|attention")).endswith("1706.03762 Attention Is All You Need")
        answer = await say(system, "show me the abstract of the attention paper")
        assert answer == "ok: 1706.03762: Attention Is All You Need: the abstract."
        assert system.papers_log.read_text().split() == ["1706.03762"]


async def test_an_id_the_user_dictated_reaches_the_server_with_no_search_first(tmp_path):
    async with papers_system(tmp_path) as system:
        await say(system, "show me the abstract of the attention paper")  # made up: refused
        answer = await say(system, "and the abstract of paper 1810.04805?")
        assert answer.endswith("1810.04805: BERT: Pre-training of Deep Bidirectional Transformers: the abstract.")
        assert system.papers_log.read_text().split() == ["1810.04805"]


def test_the_three_mode_eval_plays_30_needs_over_the_hub_in_flat_toolsets_and_discovery_modes():
    from evals.runner import UNBOUNDED_TOOLS, mode_config, with_hub
    from evals.scenarios import SETS, load_scenarios

    scenarios = load_scenarios(SETS["discovery"])
    assert len(scenarios) >= 30 and {s.lang for s in scenarios} == {"ru", "en"}
    hub_tools = {f"hub_{name}" for name, _, _ in needs_eval.hub_rows()}
    assert all(call.split("|")[0] in hub_tools for s in scenarios for turn in s.turns for call in turn.calls)
    config = with_hub(Config())
    assert "hub" in config.mcp.servers and Path(config.skills.builtin_dir) == needs_eval.SKILLS_DIR
    for mode in ("flat", "toolsets"):
        session = mode_config(config, mode).session
        assert (session.index_budget_tokens, session.max_active_tools) == (0, UNBOUNDED_TOOLS)
    assert mode_config(config, "discovery").session == config.session


def test_a_catalog_past_half_the_budget_keeps_a_fixed_static_part_and_lists_the_rest_by_the_words():
    from protocol import ToolsetSpec, ToolSpec

    domains = {}
    for name, _, description in needs_eval.hub_rows():
        domains.setdefault(name.split("_")[0], []).append((name, description))
    specs = [ToolsetSpec(name=domain, summary=f"{domain}: " + "; ".join(d for _, d in tools[:2]),
                         tools=[ToolSpec(name=f"{domain}_{name}", summary=d) for name, d in tools])
             for domain, tools in domains.items() if domain.isalpha()]
    registry = ToolsetRegistry(specs)
    weather = _state_1(Scope(400, 24, recent="what's the weather tomorrow"), registry, ())
    travel = _state_1(Scope(400, 24, recent="find me a flight to Rome"), registry, ())
    assert weather.static == travel.static and weather.discover  # the static catalog: the catalog's alone
    listed = weather.static.split("Toolsets (turn on with enable_toolset|name):\n")[1].splitlines()
    assert 0 < len(listed) < len(specs)
    assert "\nweather — " in weather.state and "\nweather — " not in weather.static
    assert "\nflight — " in travel.state and "\nflight — " not in weather.state + weather.static
    assert "more toolsets and skills are not listed here" in weather.state


def test_tools_made_active_beyond_the_cap_drop_the_least_recently_used():
    from core.activity import ToolsetActivity

    registry, _ = needs_eval.catalog()
    activity = ToolsetActivity(registry, max_tools=3)
    for tool in ("hub_stock_quote", "hub_fx_rate", "hub_web_search", "hub_stock_quote", "hub_geocode", "media_search"):
        activity.make_active(tool)
    assert activity.made_active() == ("hub_web_search", "hub_stock_quote", "hub_geocode")  # media is small: all shown
