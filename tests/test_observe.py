"""Observation: the facts a session publishes to subscribers (real SessionActor over inproc
ZeroMQ), the console's journal, the Prometheus metrics, and the console's token."""
from __future__ import annotations

from contextlib import asynccontextmanager

import anyio

import protocol as p
from actors.observers import Subscribers
from actors.base import Inbound
from core.budget import default_catalog
from core.observe import QUIET, Observer, dynamic_sections
from core.prompt import build_prompt, build_system_prompt
from core.skills_notice import SKILLS_HOWTO
from core.toolsets import ToolsetRegistry
from harness import inproc_system, override, start_killable, until as _until
from llm.scripted import ScriptedBackend
from test_session_events import SlowToolsets, model as slow_tool_model
from web.journal import Journal
from web.metrics import Metrics

CLOCK_START = 0.0  # manual_clock: the lease test counts its seconds from zero


@asynccontextmanager
async def observed(system, prompt_sessions=()):
    """Subscribe like the console does; yields (Observing, a list that fills with facts)."""
    facts: list[p.Msg] = []
    async with system.client.ask_stream("session", p.Observe(lease_s=30, prompt_sessions=list(prompt_sessions))) as replies:
        first = (await replies.receive()).body
        assert isinstance(first, p.Observing), first
        async with anyio.create_task_group() as tg:
            async def collect():
                async for envelope in replies:
                    facts.append(envelope.body)

            tg.start_soon(collect)
            yield first, facts
            tg.cancel_scope.cancel()


def _of(facts, kind, **match):
    return [f for f in facts if isinstance(f, kind) and all(getattr(f, k) == v for k, v in match.items())]


# ---- facts from a real session ---------------------------------------------------------------------
async def test_a_media_turn_publishes_its_events_prompts_model_and_tool_calls_and_state(tmp_path):
    # the model's turn, step by step: no reflex (core.reflex) carries the search out without it
    async with inproc_system(tmp_path, backend=ScriptedBackend(), reflexes=False) as system:
        async with observed(system, prompt_sessions=["s1"]) as (observing, facts):
            assert observing.sessions == []
            await system.turn("s2", "hello")  # a session nobody looks at: no prompts (the bulk of the bytes)
            await system.turn("s1", "find films about space")
            await _until(lambda: _of(facts, p.TurnFact, phase="end", session="s1") and isinstance(facts[-1], p.StateFact))
        assert _of(facts, p.ModelCallFact, session="s2") and not _of(facts, p.PromptFact, session="s2")
        facts = [f for f in facts if getattr(f, "session", "") == "s1"]
        event = _of(facts, p.EventFact)[0]
        assert (event.session, event.kind, event.strategy, event.content) == ("s1", "user_text", "now", "find films about space")
        start, end = _of(facts, p.TurnFact, phase="start")[0], _of(facts, p.TurnFact, phase="end")[0]
        assert start.turn_id == end.turn_id and end.event_ids == [event.event_id] and end.model_calls == 3
        calls = _of(facts, p.ModelCallFact, turn_id=end.turn_id)
        assert [c.step for c in calls] == [1, 2, 3]  # reading the media skill turned media on
        assert all(c.outcome == "ok" and c.prompt_tokens > 0 and c.first_token_s >= 0 and c.profile == "test" for c in calls)
        assert calls[0].reply.startswith("TOOL_CALL: read_skill|media")
        prompts = _of(facts, p.PromptFact, turn_id=end.turn_id)
        assert len(prompts) == 3 and "media_info" in prompts[-1].tools  # media_search: not twice in a row
        # media is on: its skill left the index (the timers skill stays), its tools are listed
        assert [s.label for s in prompts[-1].dynamic] == ["skills index", "active toolsets", "notice"]
        index = prompts[-1].dynamic[0]
        shown = prompts[-1].messages[index.message].content[index.start:index.end]
        assert "timers:" in shown and "media:" not in shown
        tools = [(f.tool, f.outcome) for f in _of(facts, p.ToolCallFact)]
        assert tools == [("read_skill", "running"), ("enable_toolset", "invisible"), ("read_skill", "ok"),
                         ("media_search", "running"), ("media_search", "ok")]  # session.enable_on_skill_read
        # the state after the turn: media active for about session.toolset_ttl_s, nothing queued
        state = _of(facts, p.StateFact)[-1]
        assert not state.busy and state.queue == [] and state.skills_version
        assert 590 < state.active_toolsets["media"] <= 600
        finals = [f for f in _of(facts, p.DisplayFact) if f.final]
        assert finals and finals[-1].text.startswith("Here is what I found")


async def test_an_interrupt_is_published_with_its_strategy_a_cancelled_call_and_a_cleared_display(tmp_path):
    backend = ScriptedBackend(token_delay_s=0.02)
    async with inproc_system(tmp_path, backend=backend) as system:
        glasses = system.actors["glasses"]
        async with observed(system) as (_, facts):
            await system.deliver("s", "tell me a long story", event_id="e1")
            await _until(lambda: any(isinstance(m, p.Display) and m.text for m in glasses.shown.get("s", [])))
            await system.deliver("s", "", kind="user_interrupt", event_id="e2")
            await glasses.wait_event_done("s", "e2")
            await _until(lambda: len(_of(facts, p.TurnFact, phase="end")) == 2)
        assert _of(facts, p.EventFact, event_id="e2")[0].strategy == "cancel"
        first_end = _of(facts, p.TurnFact, phase="end")[0]
        assert first_end.interrupted and first_end.event_ids == ["e1"]
        assert _of(facts, p.ModelCallFact, turn_id=first_end.turn_id)[0].outcome == "cancelled"
        assert _of(facts, p.DisplayFact, turn_id=first_end.turn_id, clear=True)


async def test_a_tool_left_running_by_an_interrupt_shows_as_placeholder_then_late(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=slow_tool_model), stand_ins={"media": SlowToolsets},
                             execute_substituted_calls=True) as system:
        slow = system.actors["media"]
        async with observed(system) as (_, facts):
            await system.deliver("s", "search lara", event_id="e1")
            await slow.started.wait()
            await _until(lambda: _of(facts, p.StateFact) and _of(facts, p.StateFact)[-1].running_tools == ["media_search"])
            await system.deliver("s", "wait, first tell me a joke", event_id="e2")  # INTERRUPT: the tool keeps running
            await system.actors["glasses"].wait_event_done("s", "e2")
            slow.release.set()
            await _until(lambda: _of(facts, p.ToolCallFact, outcome="late"))
        running = _of(facts, p.ToolCallFact, outcome="running")[0]
        placeholder = _of(facts, p.ToolCallFact, outcome="placeholder")[0]
        late = _of(facts, p.ToolCallFact, outcome="late")[0]
        assert running.call_id == placeholder.call_id == late.call_id
        assert late.result == "slow result for lara"


async def test_a_renewal_the_actor_does_not_know_is_refused_so_the_subscriber_subscribes_again(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend()) as system:
        reply = await system.client.ask("session", p.ObserveRenew(subscription_id="nope"))
        assert isinstance(reply, p.ErrorReply) and reply.code == "unknown_subscription"


# ---- the subscription table ------------------------------------------------------------------------
class _Replier:
    name = "session"
    codec = p.Codec()


def _request(body, sent: list):
    return Inbound(p.Envelope(body=body), lambda payload: sent.append(p.Codec().decode(payload).body))


def test_a_lease_not_renewed_ends_the_subscription_and_the_limit_is_kept(manual_clock):
    clock = manual_clock
    subs = Subscribers(_Replier(), limit=1, clock=clock)
    first, second = [], []
    subs.handle(_request(p.Observe(lease_s=10), first), lambda: [])
    sub_id = first[0].subscription_id
    subs.handle(_request(p.Observe(lease_s=10), second), lambda: [])
    assert isinstance(second[0], p.ErrorReply) and second[0].code == "too_many_subscribers"
    clock.now = 8
    subs.handle(_request(p.ObserveRenew(subscription_id=sub_id), []), lambda: [])
    clock.now = 15
    subs.publish(p.SessionGoneFact(ts=0, sessions=["a"]))
    assert isinstance(first[-1], p.SessionGoneFact)  # renewed at 8: alive until 18
    clock.now = 19
    subs.publish(p.SessionGoneFact(ts=0, sessions=["b"]))
    assert first[-1].sessions == ["a"] and not subs.listening()


def test_unobserved_sessions_build_no_facts():
    published = []
    assert Observer().model_call(None, "t", 1, [], []) is QUIET  # type: ignore[arg-type]
    quiet = Observer(published.append, listening=lambda: False)
    quiet.turn(None, "t", "start")  # type: ignore[arg-type]
    assert published == []


# ---- the prompt's dynamic sections -------------------------------------------------------------------
def test_dynamic_sections_mark_the_skills_index_the_active_toolsets_and_a_notice():
    registry = ToolsetRegistry(default_catalog())
    skills = [p.SkillEntry(name="media", description="films"), p.SkillEntry(name="cooking", description="recipes")]
    prompt = build_prompt(registry, ["media"], skills, SKILLS_HOWTO)
    system = prompt.state  # the state part: a system message before the current turn
    messages = [p.ChatMessage(role="system", content=prompt.static), p.ChatMessage(role="user", content="[User said] hi"),
                p.ChatMessage(role="user", content="[System notice] Toolset media activated"),
                p.ChatMessage(role="system", content=system)]
    sections = {s.label: s for s in dynamic_sections(messages)}
    assert sections["skills index"].message == sections["active toolsets"].message == 3
    skills_text = system[sections["skills index"].start:sections["skills index"].end]
    assert skills_text.startswith(SKILLS_HOWTO) and "cooking: recipes" in skills_text and "Active" not in skills_text
    assert system[sections["active toolsets"].start:].startswith("Active toolsets: media")
    assert sections["active toolsets"].end == len(system)
    assert (sections["notice"].message, sections["notice"].start) == (2, 0)
    assert dynamic_sections([p.ChatMessage(role="system", content=build_system_prompt(registry, [], [], ""))]) == []


# ---- the console's journal and the metrics ------------------------------------------------------------
def _turn(session, turn_id, ts, phase, **kw):
    return p.TurnFact(session=session, ts=ts, turn_id=turn_id, phase=phase, **kw)


def test_the_journal_keeps_a_bounded_recent_past_per_session_and_forgets_gone_sessions():
    journal = Journal(timeline_facts=3, sessions_kept=2, max_clients=1)
    for index in range(5):
        journal.take(_turn("a", f"t{index}", index, "start"))
    journal.take(p.DisplayFact(session="a", ts=6, turn_id="t4", text="hello", final=True))
    snapshot = journal.snapshot("a")
    assert b'"Sessions"' in snapshot[0]
    assert [b'"t2"' in s or b'"t3"' in s or b'"t4"' in s for s in snapshot[1:4]] == [True, True, True]
    assert b'"hello"' in snapshot[-1]
    journal.take(_turn("b", "x", 7, "start"))
    journal.take(_turn("c", "y", 8, "start"))
    assert list(journal.sessions) == ["b", "c"]  # "a" was the least recently active
    journal.take(p.SessionGoneFact(ts=9, sessions=["b"]))
    assert [s["session"] for s in journal.session_list()] == ["c"]
    sent, receive = anyio.create_memory_object_stream[bytes](10)
    assert journal.attach("c", sent) and not journal.attach("c", anyio.create_memory_object_stream[bytes](1)[0])
    journal.take(_turn("c", "z", 10, "end"))
    assert b'"z"' in receive.receive_nowait()


def test_metrics_count_turns_model_and_tool_calls_and_take_the_runtime_time_per_turn():
    metrics = Metrics()
    metrics.take(p.EventFact(session="s", ts=0, event_id="e", kind="user_text", strategy="now"))
    metrics.take(_turn("s", "t", 100.0, "start"))
    metrics.take(p.ModelCallFact(session="s", ts=100.0, turn_id="t", step=1, duration_s=0.75))
    metrics.take(p.ToolCallFact(session="s", ts=100.8, turn_id="t", call_id="c", tool="media_search", outcome="running"))
    metrics.take(p.ToolCallFact(session="s", ts=100.8, turn_id="t", call_id="c", tool="media_search", outcome="ok"))
    metrics.take(p.StateFact(session="s", ts=101, queue=["User said: hi"]))
    metrics.take(_turn("s", "t", 101.0, "end"))
    metrics.take_status(p.SystemStatus(mode="ipc", actors=[p.ActorStatus(name="llm", alive=True, restarts=2, inbox_depth=3)]),
                        p.EdgeStats(busy=4, dropped_frames=1), p.AdmissionStats(running=9, waiting=30, limit=9, waited=41))
    text = metrics.render().decode()
    for line in ("porfiry_turns_total 1.0", 'porfiry_model_calls_total{outcome="ok"} 1.0',
                 'porfiry_tool_calls_total{outcome="ok",tool="media_search"} 1.0', 'porfiry_events_total{strategy="now"} 1.0',
                 "porfiry_turn_runtime_seconds_count 1.0", "porfiry_turn_runtime_seconds_sum 0.25",
                 "porfiry_session_queue_depth 1.0", "porfiry_sessions_in_memory 1.0", 'porfiry_actor_restarts_total{actor="llm"} 2.0',
                 'porfiry_actor_inbox_depth{actor="llm"} 3.0', "porfiry_phone_busy_answers_total 4.0", "porfiry_phone_dropped_frames_total 1.0",
                 "porfiry_turns_waiting 30.0", "porfiry_turn_admission_limit 9.0", "porfiry_turns_admission_waited_total 41.0"):
        assert line in text.splitlines(), line
    assert 'outcome="running"' not in text  # a call still running is not an outcome
    metrics.take_status(None, None)  # nobody answered this scrape: no stale figures
    assert "porfiry_actor_restarts" not in metrics.render().decode()
    assert "porfiry_turns_waiting" not in metrics.render().decode()


# ---- the console's token ---------------------------------------------------------------------------------
async def test_a_console_off_loopback_needs_its_token(tmp_path, inproc_config):
    """Real HTTP on loopback (hypercorn's trio worker); the token is what a non-loopback host requires."""
    import httpx
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.trio import serve

    from web.server import Console, console_token

    config = override(inproc_config, web={"token_path": str(tmp_path / "token")})
    assert console_token(config, "127.0.0.1") == ""
    token = console_token(config, "0.0.0.0")
    assert token and (tmp_path / "token").read_text().strip() == token
    assert console_token(config, "0.0.0.0") == token  # kept, not drawn again
    console = Console(config, None, Journal(), Metrics(), token=token)
    hyper = HypercornConfig()
    hyper.bind = ["127.0.0.1:0"]
    async with anyio.create_task_group() as tg:
        url = (await tg.start(serve, console.app(), hyper))[0]
        async with httpx.AsyncClient(base_url=url) as client:
            assert (await client.get("/")).status_code == 401
            assert (await client.get("/metrics")).status_code == 401
            assert (await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})).status_code == 200
            assert (await client.get("/?token=wrong")).status_code == 401
            assert (await client.get(f"/?token={token}")).status_code == 303
            assert (await client.get("/")).status_code == 200  # the cookie it set
            assert "porfiry_turns_total 0.0" in (await client.get("/metrics")).text
            # a command another web site could send without a preflight (a "simple" request) is refused
            forged = await client.post("/api/send", content='{"session": "s", "action": "stop"}', headers={"content-type": "text/plain"})
            assert forged.status_code == 415
            assert (await client.post("/api/send", json={"session": "", "action": "stop"})).status_code == 400
            dim = await client.post("/api/send", json={"session": "s", "action": "glasses", "text": "dim"})
            assert dim.status_code == 400 and "'on' or 'off', not 'dim'" in dim.text, "the glasses buttons: on or off only"
        tg.cancel_scope.cancel()


async def test_the_console_subscribes_again_after_the_session_actor_restarts(tmp_path, ipc_config):
    """Over ipc:// as between processes (the console is always another process)."""
    from actors.session import SessionActor
    from web.link import RuntimeLink

    async with inproc_system(tmp_path, backend=ScriptedBackend(), actors=("skills", "toolsets", "llm", "glasses"),
                             config=ipc_config) as system:
        facts, seeded = [], []
        link = RuntimeLink(system.config, facts.append, seeded.append, None, lease_s=1.5)
        async with anyio.create_task_group() as tg:
            kill, restart = await start_killable(tg, SessionActor(system.config, zmq_context=system.zmq))
            await tg.start(link.run)
            await _until(lambda: seeded)
            await system.turn("before", "hello")
            await _until(lambda: _of(facts, p.TurnFact, session="before", phase="end"))
            kill()  # the session actor dies; a new one starts with no subscribers
            await restart(SessionActor(system.config, zmq_context=system.zmq))
            await _until(lambda: len(seeded) == 2)  # the renewal was refused: subscribed again
            await system.turn("after", "hello again")
            await _until(lambda: _of(facts, p.TurnFact, session="after", phase="end"))
            tg.cancel_scope.cancel()
        assert len(seeded) == 2, "subscribed once, and once more after the restart"
        assert _of(facts, p.EventFact, session="after"), "the new session actor's facts reach the console"
