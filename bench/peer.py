"""`run.py bench --peer langgraph`: the bench's turns through LangGraph's ReAct agent, for scale.

The peer plays the very plans the load benchmark plays (same seed, sessions, turns, think
pauses) through `langgraph.prebuilt.create_react_agent` in this process (asyncio, no network),
one thread per session in an in-memory checkpointer, so each session keeps its history as
Porfiry's does. Its model is scripted like Porfiry's (`llm/scripted.py`) and its tools do the
same work: `read_skill` returns the media skill's body, `enable_toolset` activates the toolset
(a session's second media turn skips it, as Porfiry's scripted model does when media is already
active), `media_search` searches the same embedded catalog (SQLite FTS5). LangGraph has no
toolsets, so a substitution turn ("search X") is a plain media_search and an answer there.
Interrupts have no equivalent: `--peer` refuses a mix with them.

Needs the optional extra: `pip install -e '.[peer]'`.
"""

import re
import time
import warnings
from typing import Any

import anyio
import msgspec

from bench.load import LoadOptions, SessionPlan, check_answer, plan_sessions
from bench.stats import Percentiles, summarize
from core.config import Config

PEERS = ("langgraph",)
PEER_KINDS = ("plain", "media", "substitution")
INSTALL_HINT = "pip install -e '.[peer]'"
MEDIA_WORDS = r"\b(film|films|movie|movies|music|song|songs|album|video|videos|podcast|series|watch|listen|play)\b"


class PeerUnavailable(RuntimeError):
    """The peer cannot run here (not installed, or asked for what it cannot play); says what to do."""


class PeerReport(msgspec.Struct, kw_only=True):
    name: str
    version: str
    turns: int  # turns completed
    duration_s: float
    turns_per_s: float
    cpu_ms_per_turn: float  # this process's CPU time (all threads) / turns
    latency_ms: Percentiles  # wall time per turn, as its users wait for it
    model_calls: int
    errors: dict[str, int]
    ratio: float = 0.0  # Porfiry's turns/s over the peer's, set once both ran
    floor_turns_per_s: float = 0.0  # the most media turns/s the floor allows on this machine (`bench --floor`); 0: not measured

    @property
    def floor_ratio(self) -> float:
        """The most media turns/s this machine's floor allows, over the peer's (0: not measured)."""
        return self.floor_turns_per_s / max(self.turns_per_s, 1e-9)


def check_peer(name: str, options: LoadOptions) -> None:
    """Before anything starts: the peer is known and installed, and can play the mix."""
    if name not in PEERS:
        raise PeerUnavailable(f"unknown peer {name!r}; peers: {', '.join(PEERS)}")
    unsupported = [kind for kind, _ in options.mix if kind not in PEER_KINDS]
    if unsupported:
        raise PeerUnavailable(f"the {name} peer has no equivalent of {', '.join(unsupported)} turns; "
                              f"use --mix with {', '.join(PEER_KINDS)}")
    try:
        import langgraph.prebuilt  # noqa: F401
        import langchain_core  # noqa: F401
    except ImportError:
        raise PeerUnavailable(f"the {name} peer is not installed; install it with: {INSTALL_HINT}") from None


def run_peer(name: str, config: Config, options: LoadOptions, progress=None) -> PeerReport:
    """Play `options`' plans through the peer; blocks (its own asyncio event loop, via anyio)."""
    check_peer(name, options)
    return anyio.run(_run_langgraph, config, options, progress, backend="asyncio")


# ---- the agent ----------------------------------------------------------------------------------
def _user_words(text: str) -> str:
    return " ".join(text.split())


def _search_words(text: str) -> str:
    return re.sub(r"^search\s+", "", _user_words(text), flags=re.IGNORECASE)


def _make_agent(config: Config):
    """LangGraph's ReAct agent with a scripted chat model and the media turn's three tools."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's create_agent
        from langgraph.prebuilt import create_react_agent

    tools = _peer_tools(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in favour of langchain's create_agent, which it wraps
        agent = create_react_agent(_scripted_chat_model()(), tools, checkpointer=InMemorySaver())
    return agent, HumanMessage


def _peer_tools(config: Config) -> list:
    """The media turn's three tools, over the same catalog, skill and media provider as Porfiry's."""
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool

    from toolsets.media.executor import default_provider
    from actors.skill_store import build_repository
    from core.budget import default_catalog
    from core.toolsets import ToolsetRegistry
    from toolsets.media.tools import run_search

    provider = default_provider(config)
    ready = getattr(provider, "ensure_ready", None)
    if ready is not None:
        ready()
    found, skill_body, _ = build_repository(config).read("media", "peer", "")
    if not found:
        raise PeerUnavailable("the media skill is missing: the peer's read_skill has nothing to return")
    registry = ToolsetRegistry(default_catalog())
    enabled: dict[str, set[str]] = {}  # thread -> toolsets enabled in it

    @tool
    def read_skill(name: str) -> str:
        """Read a skill's instructions by name."""
        return skill_body if name.strip().lower() == "media" else f"skill {name} does not exist"

    @tool
    def enable_toolset(name: str, config: RunnableConfig) -> str:
        """Make a toolset's tools callable."""
        name = name.strip().lower()
        if registry.toolset(name) is None:
            return registry.unknown_toolset_text(name)
        thread = enabled.setdefault(config["configurable"]["thread_id"], set())
        already = name in thread
        thread.add(name)
        return (f"toolset {name} already active, timeout extended" if already else
                f"Toolset {name} activated: its tools are listed under Active toolsets. Call the one you need now.")

    @tool
    def media_search(query: str, page: str = "") -> str:
        """Find films/series by title (ru/en)."""
        reply = run_search(provider, {"query": query, **({"page": page} if page else {})})
        return reply.text if reply.ok else f"tool error: {reply.text}"

    return [read_skill, enable_toolset, media_search]


def _scripted_chat_model() -> type:
    """A LangChain chat model following the rules of llm/scripted.py for plain, media and
    substitution turns, as tool calls."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    def _call(name: str, args: dict[str, str], turn: int) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{turn}-{name}", "type": "tool_call"}])

    def _enabled_in(messages: list, toolset: str) -> bool:
        return any(isinstance(m, ToolMessage) and m.name == "enable_toolset" and toolset in str(m.content) for m in messages)

    class ScriptedChatModel(BaseChatModel):
        """The rules of llm/scripted.py for plain, media and substitution turns, as tool calls."""

        @property
        def _llm_type(self) -> str:
            return "porfiry-scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
            return self

        def _reply(self, messages: list) -> AIMessage:
            last = messages[-1]
            user = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
            words = _user_words(str(user.content)) if user is not None else ""
            turn = len(messages)
            if isinstance(last, ToolMessage):
                if last.name == "read_skill":
                    if _enabled_in(messages, "media"):
                        return _call("media_search", {"query": words}, turn)
                    return _call("enable_toolset", {"name": "media"}, turn)
                if last.name == "enable_toolset":
                    return _call("media_search", {"query": words}, turn)
                if last.name == "media_search":
                    first = next((line.strip() for line in str(last.content).splitlines() if line.strip()), "")
                    return AIMessage(content=f"Here is what I found: {first}")
                return AIMessage(content="Done.")
            if re.match(r"search\s+\S", words, re.IGNORECASE):
                return _call("media_search", {"query": _search_words(words)}, turn)
            if re.search(MEDIA_WORDS, words, re.IGNORECASE):
                return _call("read_skill", {"name": "media"}, turn)
            return AIMessage(content=f"Sure. Here is a short answer to: {words}")

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

        async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            # no thread hop: Porfiry's scripted model answers in its event loop too
            return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    return ScriptedChatModel


async def _run_langgraph(config: Config, options: LoadOptions, progress) -> PeerReport:
    from importlib.metadata import version

    from bench.stats import Tally

    agent, human = _make_agent(config)
    plans = plan_sessions(options)
    latencies: list[float] = []
    errors = Tally()
    counts = {"turns": 0, "model_calls": 0}

    async def session(index: int, plan: SessionPlan) -> None:
        thread = {"configurable": {"thread_id": f"{options.session_prefix}-{index}"}}
        await anyio.sleep(plan.start_after_s)
        for turn in plan.turns:
            await anyio.sleep(turn.think_s)
            started = time.perf_counter()
            try:
                state = await agent.ainvoke({"messages": [human(content=turn.text)]}, thread)
            except Exception as exc:  # noqa: BLE001 - counted, like a wrong answer
                errors.add("peer_error", f"{type(exc).__name__}: {exc}")
                continue
            latencies.append(time.perf_counter() - started)
            messages = state["messages"]
            mine = messages[_last_human(messages):]
            counts["model_calls"] += sum(1 for m in mine if m.type == "ai")
            counts["turns"] += 1
            wrong = check_answer(turn.kind, [str(messages[-1].content)])
            if wrong:
                errors.add("wrong_answer", f"session {index}: {wrong}")

    async def report_progress() -> None:
        while True:
            await anyio.sleep(1.0)
            if progress is not None:
                elapsed = time.perf_counter() - wall
                progress(f"[{elapsed:6.1f} s] langgraph turns {counts['turns']}/{options.sessions * options.turns}  "
                         f"{counts['turns'] / elapsed:7.1f} turns/s")

    cpu, wall = time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as outer:
        outer.start_soon(report_progress)
        async with anyio.create_task_group() as tg:
            for index, plan in enumerate(plans):
                tg.start_soon(session, index, plan)
        outer.cancel_scope.cancel()
    duration = max(time.perf_counter() - wall, 1e-9)
    cpu_s = time.process_time() - cpu
    turns = counts["turns"]
    figures = summarize(s * 1000 for s in latencies)
    return PeerReport(
        name="langgraph", version=version("langgraph"), turns=turns, duration_s=round(duration, 3),
        turns_per_s=round(turns / duration, 1), cpu_ms_per_turn=round(cpu_s * 1000 / max(1, turns), 3),
        latency_ms=msgspec.structs.replace(figures, **{k: round(getattr(figures, k), 3) for k in ("p50", "p95", "p99", "max")}),
        model_calls=counts["model_calls"], errors=dict(errors.counts),
    )


def _last_human(messages: list) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].type == "human":
            return index
    return 0
