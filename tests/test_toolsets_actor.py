"""ToolsetSupervisor through real sockets: catalog, validation before dispatch, prefix routing,
an executor that is down, slow, cancelled or failing, and concurrency across sessions."""
import time
from contextlib import asynccontextmanager

import anyio
import pytest
import zmq

import protocol as p
from actors.base import Actor, Endpoint
from actors.toolsets import ToolsetSupervisor
from core.config import Config, SessionConfig, TopologyConfig

TOOL_TIMEOUT_S = 0.5


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


@pytest.fixture
def config():
    return Config(topology=TopologyConfig(mode="inproc"), session=SessionConfig(tool_timeout_s=TOOL_TIMEOUT_S))


class StandInMedia(Actor):
    """Plays the media executor: records what reaches it and answers as told by the query:
    `slow` never answers (until cancelled), `error` raises, `sleep:<s>` answers after s seconds."""

    name = "media"

    def __init__(self, config, **kw):
        super().__init__(config, **kw)
        self.calls: list[tuple[str, p.ToolInvoke]] = []
        self.cancels: list[tuple[str, str]] = []

    async def handle(self, msg):
        body = msg.body
        if isinstance(body, p.ToolCancel):
            self.cancels.append((msg.session, body.call_id))
            return
        self.calls.append((msg.session, body))
        query = body.args.get("query", "")
        if query == "error":
            raise RuntimeError("catalog unreadable")
        self.spawn(self._answer, msg, body, query)

    async def _answer(self, msg, body, query):
        if query == "slow":
            await anyio.sleep_forever()
        if query.startswith("sleep:"):
            await anyio.sleep(float(query[6:]))
        msg.reply(self, p.ToolOutcome(call_id=body.call_id, ok=True, text=f"found {query}"))


@asynccontextmanager
async def running(*actors):
    async with anyio.create_task_group() as tg:
        for actor in actors:
            await tg.start(actor.run)
        client = Endpoint(actors[0].config, zmq_context=actors[0].zmq, name="test")
        async with client.running():
            yield client
        tg.cancel_scope.cancel()


def invoke(tool, call_id="c1", **args):
    return p.ToolInvoke(call_id=call_id, tool=tool, args=args)


async def test_catalog_lists_media_then_timers_with_prefixed_tools(config, ctx):
    async with running(ToolsetSupervisor(config, zmq_context=ctx)) as client:
        catalog = await client.ask("toolsets", p.CatalogRequest())
    assert isinstance(catalog, p.Catalog)
    assert [ts.name for ts in catalog.toolsets] == ["media", "timers"]
    for toolset in catalog.toolsets:
        assert toolset.summary and toolset.tools
        assert all(tool.name.startswith(toolset.name + "_") for tool in toolset.tools)
    media = {tool.name: tool for tool in catalog.toolsets[0].tools}
    assert {"media_search", "media_info", "media_play"} <= set(media)
    assert [a.name for a in media["media_info"].args] == ["id"]


async def test_a_tool_without_its_toolset_prefix_fails_start_up(config, ctx):
    bad = p.ToolsetSpec(name="media", summary="films", tools=[p.ToolSpec(name="search", summary="find")])
    supervisor = ToolsetSupervisor(config, zmq_context=ctx, toolsets=[bad])
    with pytest.raises(BaseException) as caught:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                await tg.start(supervisor.run)
    assert "lacks the prefix media_" in _messages(caught.value)


def _messages(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return " ".join(_messages(e) for e in exc.exceptions)
    return str(exc)


async def test_invalid_args_are_answered_before_dispatch(config, ctx):
    media = StandInMedia(config, zmq_context=ctx)
    async with running(ToolsetSupervisor(config, zmq_context=ctx), media) as client:
        missing = await client.ask("toolsets", invoke("media_info"), session="s1")
        blank = await client.ask("toolsets", invoke("media_info", id="  "), session="s1")
        stray = await client.ask("toolsets", invoke("media_info", id="tt1", colour="red"), session="s1")
        no_query = await client.ask("toolsets", invoke("media_search", page="2"), session="s1")
        assert media.calls == []  # the executor never saw any of them
        good = await client.ask("toolsets", invoke("media_search", call_id="c9", query="alien", page="2"),
                                session="s1")
    for outcome in (missing, blank, stray):
        assert outcome == p.ToolOutcome(call_id="c1", ok=False,
                                        text="arguments invalid for media_info; expected: media_info|id")
    assert no_query.ok is False and no_query.text.startswith("arguments invalid for media_search; expected: media_search|query")
    assert good == p.ToolOutcome(call_id="c9", ok=True, text="found alien")
    assert [(session, call.tool, call.args) for session, call in media.calls] == [
        ("s1", "media_search", {"query": "alien", "page": "2"})]


async def test_routing_by_prefix_unknown_tools_and_session_toolsets(config, ctx):
    media = StandInMedia(config, zmq_context=ctx)
    async with running(ToolsetSupervisor(config, zmq_context=ctx), media) as client:
        unknown_in_set = await client.ask("toolsets", invoke("media_rate", id="tt1"), session="s1")
        unknown = await client.ask("toolsets", invoke("weather_now"), session="s1")
        timers = await client.ask("toolsets", invoke("timers_list"), session="s1")
        core = await client.ask("toolsets", invoke("get_current_time"), session="s1")
        routed = await client.ask("toolsets", invoke("media_info", id="tt1"), session="s1")
    assert unknown_in_set.ok is False
    assert unknown_in_set.text.startswith("tool media_rate does not exist; toolset media has: media_search")
    assert unknown.ok is False and unknown.text.startswith("tool weather_now does not exist; core tools:")
    assert "toolsets: media, timers" in unknown.text
    assert timers == p.ToolOutcome(call_id="c1", ok=False, text="timers tools run in the session")
    assert core.ok is False and "core tool" in core.text
    assert routed.ok is True
    assert [call.tool for _, call in media.calls] == ["media_info"]


async def test_executor_down_gives_a_clear_error_within_the_timeout(config, ctx):
    async with running(ToolsetSupervisor(config, zmq_context=ctx)) as client:
        started = time.monotonic()
        outcome = await client.ask("toolsets", invoke("media_search", query="alien"), session="s1", timeout=5)
        elapsed = time.monotonic() - started
        # the supervisor is still serving
        catalog = await client.ask("toolsets", p.CatalogRequest())
    assert outcome == p.ToolOutcome(
        call_id="c1", ok=False,
        text=f"tool media_search failed: the media executor did not answer within {TOOL_TIMEOUT_S:g} s; try again")
    assert TOOL_TIMEOUT_S <= elapsed < TOOL_TIMEOUT_S + 1
    assert isinstance(catalog, p.Catalog)


async def test_executor_error_becomes_a_tool_error(config, ctx):
    media = StandInMedia(config, zmq_context=ctx)
    async with running(ToolsetSupervisor(config, zmq_context=ctx), media) as client:
        outcome = await client.ask("toolsets", invoke("media_search", query="error"), session="s1")
    assert outcome.ok is False
    assert outcome.text.startswith("tool media_search failed: the media executor reported RuntimeError: catalog unreadable")


async def test_cancel_stops_the_waiting_invoke_and_reaches_the_executor(config, ctx):
    media = StandInMedia(config, zmq_context=ctx)
    async with running(ToolsetSupervisor(config, zmq_context=ctx), media) as client:
        answers = {}

        async def call():
            answers["invoke"] = await client.ask("toolsets", invoke("media_search", call_id="c7", query="slow"),
                                                 session="s1", timeout=5)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(2):
                while not media.calls:
                    await anyio.sleep(0.01)
            started = time.monotonic()
            answers["cancel"] = await client.ask("toolsets", p.ToolCancel(call_id="c7"), session="s1")
        elapsed = time.monotonic() - started
        again = await client.ask("toolsets", p.ToolCancel(call_id="c7"), session="s1")
        with anyio.fail_after(2):
            while not media.cancels:
                await anyio.sleep(0.01)
    assert answers["invoke"] == p.ToolOutcome(call_id="c7", ok=False, text="cancelled")
    assert elapsed < TOOL_TIMEOUT_S  # did not wait for the timeout
    assert answers["cancel"] == p.Ok(detail="cancelled")
    assert again == p.Ok(detail="call c7 is not running")
    assert media.cancels == [("s1", "c7")]


async def test_cancel_from_another_session_does_not_touch_the_call(config, ctx):
    media = StandInMedia(config, zmq_context=ctx)
    async with running(ToolsetSupervisor(config, zmq_context=ctx), media) as client:
        answers = {}

        async def call():
            answers["invoke"] = await client.ask(
                "toolsets", invoke("media_search", call_id="c7", query="sleep:0.2"), session="s1")

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(2):
                while not media.calls:
                    await anyio.sleep(0.01)
            answers["cancel"] = await client.ask("toolsets", p.ToolCancel(call_id="c7"), session="s2")
    assert answers["cancel"] == p.Ok(detail="call c7 is not running")
    assert answers["invoke"].ok is True and media.cancels == []


async def test_a_slow_call_in_one_session_does_not_delay_another(ctx):
    config = Config(topology=TopologyConfig(mode="inproc"), session=SessionConfig(tool_timeout_s=3))
    media = StandInMedia(config, zmq_context=ctx)
    async with running(ToolsetSupervisor(config, zmq_context=ctx), media) as client:
        done: dict[str, float] = {}
        started = time.monotonic()

        async def call(session, query):
            outcome = await client.ask("toolsets", invoke("media_search", call_id=session, query=query),
                                       session=session)
            assert outcome.ok is True
            done[session] = time.monotonic() - started

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "slow-session", "sleep:0.8")
            await anyio.sleep(0.02)
            tg.start_soon(call, "fast-session", "sleep:0")
    assert done["fast-session"] < 0.4 < done["slow-session"]
