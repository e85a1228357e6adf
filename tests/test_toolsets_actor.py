"""The toolset executor through real sockets: the catalog from the registry, routing, one error
wording, timeouts, cancellation, concurrency across sessions, results cut with offset=, and a
call lost with the executor's process, as the SessionActor finds it (ToolRunning) and answers it."""
import functools
import time
from contextlib import asynccontextmanager

import anyio
import pytest

import protocol as p
import toy_toolset
from actors.base import Endpoint
from actors.media_executor import MediaExecutor
from actors.toolsets import ToolsetSupervisor
from core.config import ConfigError
from core.loading import load_config
from core.toolsets import ExecutorToolset
from harness import override, start_killable, until

TOOL_TIMEOUT_S = 0.5
TOY = ["toy_toolset:TOOLSET"]


@pytest.fixture
def config(inproc_config):
    return override(inproc_config, session={"tool_timeout_s": TOOL_TIMEOUT_S}, toolsets={"extra": TOY, "max_result_chars": 200})


@asynccontextmanager
async def running(*actors):
    async with anyio.create_task_group() as tg:
        for actor in actors:
            await tg.start(actor.run)
        client = Endpoint(actors[0].config, zmq_context=actors[0].zmq, name="test")
        async with client.running():
            yield client
        tg.cancel_scope.cancel()


def invoke(tool, call_id="c1", offset=0, **args):
    return p.ToolInvoke(call_id=call_id, tool=tool, args=args, offset=offset)


async def test_catalog_lists_the_registry_then_the_extra_toolsets(config, zmq_ctx):
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx), MediaExecutor(config, zmq_context=zmq_ctx)) as client:
        catalog = await client.ask("toolsets", p.CatalogRequest())
        report = await client.ask("toolsets", p.ToolsetsRequest())
    assert [(ts.name, ts.runs) for ts in catalog.toolsets] == [("media", "executor"), ("timers", "session"),
                                                                ("channels", "session"), ("notify", "session"),
                                                                ("tasks", "session"), ("monitors", "session"),
                                                                ("units", "session"), ("toy", "executor")]
    for toolset in catalog.toolsets:
        assert toolset.summary and all(tool.name.startswith(toolset.name + "_") for tool in toolset.tools)
    assert [(row.name, row.runs, row.state, row.tools) for row in report.toolsets] == [
        ("media", "executor", "available", 3), ("timers", "session", "available", 3), ("channels", "session", "available", 3),
        ("notify", "session", "available", 2), ("tasks", "session", "available", 3), ("monitors", "session", "available", 2),
        ("units", "session", "available", 1), ("toy", "executor", "available", 6)]


async def test_a_toolset_whose_executor_actor_is_down_is_reported_unavailable(config, zmq_ctx):
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:  # no MediaExecutor
        report = await client.ask("toolsets", p.ToolsetsRequest(), timeout=5)
    rows = {row.name: row for row in report.toolsets}
    assert rows["media"].state == "unavailable" and "its executor (media) does not answer" in rows["media"].error
    assert rows["toy"].state == "available"


async def test_a_tool_without_its_toolset_prefix_fails_start_up(config, zmq_ctx):
    bad = ExecutorToolset(spec=p.ToolsetSpec(name="toy", summary="toys", tools=[p.ToolSpec(name="echo", summary="say")]),
                          factory=toy_toolset._executor)
    supervisor = ToolsetSupervisor(config, zmq_context=zmq_ctx, records=[bad])
    with pytest.raises(BaseException) as caught:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                await tg.start(supervisor.run)
    assert "lacks the prefix toy_" in _messages(caught.value)


def _messages(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return " ".join(_messages(e) for e in exc.exceptions)
    return str(exc)


async def test_routing_unknown_tools_and_session_toolsets(config, zmq_ctx):
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        unknown_in_set = await client.ask("toolsets", invoke("toy_rate", id="tt1"), session="s1")
        unknown = await client.ask("toolsets", invoke("weather_now"), session="s1")
        timers = await client.ask("toolsets", invoke("timers_list"), session="s1")
        core = await client.ask("toolsets", invoke("get_current_time"), session="s1")
        routed = await client.ask("toolsets", invoke("toy_echo", text="hi"), session="s1")
    assert unknown_in_set.ok is False
    assert unknown_in_set.text.startswith("tool toy_rate does not exist; toolset toy has: toy_echo")
    assert unknown.ok is False and unknown.text.startswith("tool weather_now does not exist; core tools:")
    assert "toolsets: media, timers, channels, notify, tasks, monitors, units, toy" in unknown.text
    assert timers == p.ToolOutcome(call_id="c1", ok=False, text="timers tools run in the session")
    assert core.ok is False and core.text.startswith("tool get_current_time does not exist")
    assert routed == p.ToolOutcome(call_id="c1", ok=True, text="echo: hi")


async def test_a_slow_tool_is_a_clear_error_at_its_timeout_and_the_executor_serves_on(config, zmq_ctx):
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        started = time.monotonic()
        outcome = await client.ask("toolsets", invoke("toy_wait", seconds="30"), session="s1", timeout=5)
        elapsed = time.monotonic() - started
        again = await client.ask("toolsets", invoke("toy_echo", call_id="c2", text="still here"), session="s1")
    assert outcome == p.ToolOutcome(call_id="c1", ok=False,
                                    text=f"tool toy_wait failed: no answer within {TOOL_TIMEOUT_S:g} s; try again")
    assert TOOL_TIMEOUT_S <= elapsed < TOOL_TIMEOUT_S + 1
    assert again.ok is True


async def test_a_failing_tool_is_one_tool_error(config, zmq_ctx):
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        outcome = await client.ask("toolsets", invoke("toy_fail"), session="s1")
    assert outcome == p.ToolOutcome(call_id="c1", ok=False,
                                    text="tool toy_fail failed: RuntimeError: the toy broke; try again")


async def test_cancel_stops_the_call_in_the_executor(config, zmq_ctx):
    config = override(config, session={"tool_timeout_s": 10})
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        toy = toy_toolset.INSTANCES[-1]
        answers = {}

        async def call():
            answers["invoke"] = await client.ask("toolsets", invoke("toy_wait", call_id="c7", seconds="30"),
                                                 session="s1", timeout=5)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await until(lambda: toy.calls)
            other = await client.ask("toolsets", p.ToolCancel(call_id="c7"), session="s2")
            started = time.monotonic()
            answers["cancel"] = await client.ask("toolsets", p.ToolCancel(call_id="c7"), session="s1")
        elapsed = time.monotonic() - started
        again = await client.ask("toolsets", p.ToolCancel(call_id="c7"), session="s1")
    assert other == p.Ok(detail="call c7 is not running")  # another session's cancel touches nothing
    assert answers["invoke"] == p.ToolOutcome(call_id="c7", ok=False, text="cancelled")
    assert elapsed < 1
    assert answers["cancel"] == p.Ok(detail="cancelled")
    assert again == p.Ok(detail="call c7 is not running")
    assert toy.cancelled == ["s1"]


async def test_a_slow_call_in_one_session_does_not_delay_another(config, zmq_ctx):
    config = override(config, session={"tool_timeout_s": 3})
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        done: dict[str, float] = {}
        started = time.monotonic()

        async def call(session, seconds):
            outcome = await client.ask("toolsets", invoke("toy_wait", call_id=session, seconds=seconds), session=session)
            assert outcome.ok is True
            done[session] = time.monotonic() - started

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "slow-session", "0.8")
            await until(lambda: any(session == "slow-session" for session, *_ in toy_toolset.INSTANCES[-1].calls))
            tg.start_soon(call, "fast-session", "0")
    assert done["fast-session"] < 0.4 < done["slow-session"]


async def test_a_long_result_is_cut_visibly_and_read_on_with_offset(config, zmq_ctx):
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        first = await client.ask("toolsets", invoke("toy_long", lines="30"), session="s1")
        toy = toy_toolset.INSTANCES[-1]
        second = await client.ask("toolsets", invoke("toy_long", call_id="c2", lines="30", offset=200), session="s1")
        last = await client.ask("toolsets", invoke("toy_long", call_id="c3", lines="30", offset=400), session="s1")
    whole = "\n".join(f"line {n:04d}" for n in range(1, 31))  # 299 characters
    assert first.text == whole[:200] + "\nshowing 200 of 299 characters; TOOL_CALL: toy_long|lines=30; offset=200"
    assert second.text == whole[200:] + "\nshowing 201\u2013299 of 299 characters; that is all"
    assert last.text == "offset=400 is past the end: the result has 299 characters"
    assert len(toy.calls) == 1  # read on from the kept result, not by running the tool again


async def test_a_toy_toolset_added_with_one_folder_and_one_line_is_called_through_the_actors(tmp_path, inproc_config):
    """tests/toy_toolset/ is the folder, `toolsets.extra` the line: the model enables it, calls it,
    and reads the result in its next request; its tools are in the prompt only while it is active."""
    from harness import call_what_is_said as model, inproc_system
    from llm.scripted import ScriptedBackend

    config = override(inproc_config, toolsets={"extra": TOY})
    backend = ScriptedBackend(reply_fn=model)
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        async def say(text):
            shown = await system.turn("s1", text)
            return [m.text for m in shown if isinstance(m, p.Display) and m.final][-1]

        assert await say("hello") == "plain answer"
        system_prompt = "\n".join(m.content for m in backend.calls[-1] if m.role == "system")
        assert "toy — a toy: echo, wait, fail, long texts" in system_prompt and "toy_echo" not in system_prompt
        await say("call enable_toolset|toy")
        # (not "hello ...": a greeting is small talk, offered no tool - core.intent.small_talk)
        assert await say("call toy_echo|the toy speaks") == "ok: echo: the toy speaks"
        assert "toy_echo|<text> — say a text back" in "\n".join(m.content for m in backend.calls[-1] if m.role == "system")
        assert await say("call toy_fail") == "ok: tool error: tool toy_fail failed: RuntimeError: the toy broke; try again"
        history = await system.history("s1")
    assert [m["content"] for m in history if m["role"] == "tool"] == [
        "echo: the toy speaks", "tool error: tool toy_fail failed: RuntimeError: the toy broke; try again"]


TOY_CONFIG = """
[topology]
mode = "inproc"

[toolsets]
extra = ["toy_toolset:TOOLSET"]

[toolsets.toy]
greeting = {greeting}

[toolsets.media]
db_path = "{tmp}/media.sqlite3"
"""


async def test_a_toolsets_own_config_section_is_decoded_and_reaches_its_factory(tmp_path, zmq_ctx):
    """`[toolsets.toy]` belongs to the toy: core.config keeps it raw, the toy's record decodes it."""
    path = tmp_path / "porfiry.toml"
    path.write_text(TOY_CONFIG.format(greeting='"hello"', tmp=tmp_path))
    config = load_config(path, env={})
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        outcome = await client.ask("toolsets", invoke("toy_echo", text="there"), session="s1")
    assert outcome == p.ToolOutcome(call_id="c1", ok=True, text="hello: there")
    assert toy_toolset.INSTANCES[-1].settings == toy_toolset.ToySettings(greeting="hello")


def test_a_wrong_type_in_a_toolsets_section_is_one_line_naming_the_key(tmp_path):
    path = tmp_path / "porfiry.toml"
    path.write_text(TOY_CONFIG.format(greeting="5", tmp=tmp_path))
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert str(caught.value) == f"config {path}: Expected `str`, got `int` - at `$.toolsets.toy.greeting`"


# ---- a call lost with the executor's process ------------------------------------------------
async def test_running_says_whether_a_call_of_that_session_runs(config, zmq_ctx):
    config = override(config, session={"tool_timeout_s": 10})
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(client.ask, "toolsets", invoke("toy_wait", call_id="c1", seconds="0.5"), session="s1"))
            await until(lambda: toy_toolset.INSTANCES[-1].calls)
            during = await client.ask("toolsets", p.ToolRunning(call_id="c1"), session="s1")
            other = await client.ask("toolsets", p.ToolRunning(call_id="c1"), session="s2")
        after = await client.ask("toolsets", p.ToolRunning(call_id="c1"), session="s1")
    assert during == p.Ok(detail="running")
    assert other == after == p.ErrorReply(code="not_running", detail="call c1 is not running")


@asynccontextmanager
async def session_and_toolsets(config, zmq_ctx, supervisor=ToolsetSupervisor):
    """A real SessionActor and a ToolsetSupervisor it calls; `kill()` ends the supervisor the way a
    SIGKILL does (its calls never answer), `restart()` starts its successor on the same address."""
    from actors.session import SessionActor

    async with anyio.create_task_group() as tg:
        kill, restart = await start_killable(tg, supervisor(config, zmq_context=zmq_ctx))
        session = SessionActor(config, zmq_context=zmq_ctx)
        await tg.start(session.run)
        # up a moment: it has pinged the executor's process at its start
        await until(lambda: "toolsets" in session._started_at)
        session.kill = kill
        session.restart = lambda: restart(supervisor(config, zmq_context=zmq_ctx))
        yield session
        tg.cancel_scope.cancel()


async def call_through_a_kill(session, tool: str, seconds: str, down_s: float = 0.0) -> tuple[p.ToolOutcome, float]:
    """`tool` called, its executor killed mid-call and, `down_s` later, restarted: the call's
    outcome, and how long after the kill it came."""
    outcome = {}

    async def call():
        outcome["c1"] = await session.invoke("s1", invoke(tool, "c1", seconds=seconds))
        outcome["at"] = time.monotonic()

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await until(lambda: toy_toolset.INSTANCES[-1].calls)
        session.kill()
        killed = time.monotonic()
        await anyio.sleep(down_s)  # how long the executor stays down: the behaviour under test
        assert "c1" not in outcome, "while the executor is down, a probe nobody answers is no verdict"
        await session.restart()
    return outcome["c1"], outcome["at"] - killed


class CountingSupervisor(ToolsetSupervisor):
    asked: list[str] = []  # the calls ToolRunning asked about, over every instance

    async def handle(self, msg):
        if isinstance(msg.body, p.ToolRunning):
            CountingSupervisor.asked.append(msg.body.call_id)
        await super().handle(msg)


class SlowFirstAnswer(CountingSupervisor):
    """Its first ToolRunning is answered only after the session has stopped waiting for it."""

    async def handle(self, msg):
        if isinstance(msg.body, p.ToolRunning) and not CountingSupervisor.asked:
            await anyio.sleep(1.5)  # the slow answer itself: later than the session waits for it
        await super().handle(msg)


async def test_a_call_lost_with_the_toolsets_process_is_answered_at_the_next_probe_not_its_timeout(config, zmq_ctx):
    config = override(config, session={"tool_timeout_s": 10, "probe_s": 0.3})
    CountingSupervisor.asked = []
    async with session_and_toolsets(config, zmq_ctx, CountingSupervisor) as session:
        outcome, after_kill = await call_through_a_kill(session, "toy_wait", "30", down_s=0.5)
        again = await session.invoke("s1", invoke("toy_echo", "c2", text="back"))
    assert outcome == p.ToolOutcome(call_id="c1", ok=False, text=(
        "tool toy_wait failed: the toolset executor restarted and lost this call before it finished; try again"))
    assert CountingSupervisor.asked == ["c1"], "asked about once its successor answered the Ping"
    assert after_kill < 2, "answered within a probe or two of the restart, not at the 12 s timeout"
    assert again.ok and again.text == "echo: back"


async def test_a_question_the_new_executor_does_not_answer_in_time_is_asked_again(config, zmq_ctx):
    # no verdict is not "it runs there": the call would then wait out its 12 s
    config = override(config, session={"tool_timeout_s": 10, "probe_s": 0.3})
    CountingSupervisor.asked = []
    async with session_and_toolsets(config, zmq_ctx, SlowFirstAnswer) as session:
        outcome, after_kill = await call_through_a_kill(session, "toy_wait", "30")
    assert "restarted and lost this call" in outcome.text and after_kill < 5
    assert len(CountingSupervisor.asked) >= 2


async def test_an_idempotent_call_lost_with_the_toolsets_process_is_made_again(config, zmq_ctx):
    config = override(config, session={"tool_timeout_s": 10, "probe_s": 0.3})
    async with session_and_toolsets(config, zmq_ctx) as session:
        outcome, _ = await call_through_a_kill(session, "toy_nap", "0.5")
    assert outcome == p.ToolOutcome(call_id="c1", ok=True, text="waited 0.5 s")
    assert toy_toolset.INSTANCES[-1].calls == [("s1", "toy_nap", {"seconds": "0.5"})], "made again, at the successor"
    assert session.tool_retries == 1


async def test_an_idempotent_call_found_lost_after_its_timeout_is_not_made_again(config, zmq_ctx):
    # down longer than the call may take: the user has waited it out, and a play now would be late
    config = override(config, session={"tool_timeout_s": 1.0, "probe_s": 0.3})
    async with session_and_toolsets(config, zmq_ctx) as session:
        outcome, after_kill = await call_through_a_kill(session, "toy_nap", "30", down_s=1.2)
    assert outcome.ok is False and "restarted and lost this call" in outcome.text
    assert session.tool_retries == 0 and after_kill < 3.0, "answered at the first probe after the restart"


async def test_slow_calls_still_running_are_waited_for_across_probes_without_asking_each(config, zmq_ctx):
    # the executor's process is pinged, once for all of them; no call is asked about while it lives
    config = override(config, session={"tool_timeout_s": 10, "probe_s": 0.2})
    CountingSupervisor.asked = []
    outcomes = []

    async def call(session_id):
        outcomes.append(await session.invoke(session_id, invoke("toy_wait", "c1", seconds="1")))

    async with session_and_toolsets(config, zmq_ctx, CountingSupervisor) as session:
        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(call, f"s{n}")
    assert outcomes == [p.ToolOutcome(call_id="c1", ok=True, text="waited 1 s")] * 5
    assert CountingSupervisor.asked == []


async def test_a_call_silent_past_its_timeout_is_still_a_timeout_error(config, zmq_ctx):
    # the session waits the toolset's timeout + 2 s; the executor itself gives up at the timeout
    config = override(config, session={"tool_timeout_s": 0.3, "probe_s": 0.2})
    async with session_and_toolsets(config, zmq_ctx) as session:
        outcome = await session.invoke("s1", invoke("toy_wait", "c1", seconds="30"))
    # the executor's own timeout error, not the session's (which waits 2 s more)
    assert outcome == p.ToolOutcome(call_id="c1", ok=False, text="tool toy_wait failed: no answer within 0.3 s; try again")


async def test_cut_results_are_kept_by_bytes_and_an_evicted_one_is_a_clear_answer(config, zmq_ctx):
    # each toy_long|lines=1000 is 9,999 characters (about 10 KB): two fit in 25,000 bytes, not three
    config = override(config, toolsets={"results_kept_bytes": 25_000})
    async with running(ToolsetSupervisor(config, zmq_context=zmq_ctx)) as client:
        for session in ("s1", "s2", "s3"):
            await client.ask("toolsets", invoke("toy_long", lines="1000"), session=session)
        toy = toy_toolset.INSTANCES[-1]
        evicted = await client.ask("toolsets", invoke("toy_long", call_id="c2", lines="1000", offset=200), session="s1")
        kept = await client.ask("toolsets", invoke("toy_long", call_id="c2", lines="1000", offset=200), session="s3")
    assert (evicted.ok, evicted.text) == (False, "the result of toy_long|lines=1000 is no longer kept (the runtime "
                                          "keeps only the last 24 KB of long results); call the tool again "
                                          "without offset to read it from the start")
    assert kept.ok and kept.text.startswith("line 0021")
    assert len(toy.calls) == 3  # an evicted result is not read on by running the tool again
