"""Several runtime nodes on one PostgreSQL (storage/leases.py, docs/several-nodes.md): a session
is served by one node at a time; a dead node's sessions move, and their timers fire once; a
live node hands a session over to the node its phone reached (idle at once, mid-turn after it)."""
import anyio
import psycopg

import protocol as p
from llm.scripted import ScriptedBackend
from storage import leases
from storage import postgres as pg
from storage.postgres import connect
from tests.harness import inproc_system, make_config, override, until


def test_a_lease_is_taken_over_only_after_its_node_died(pg_url):
    conn = connect(pg_url)
    try:
        leases.beat(conn, "a", 0.0, 10.0)
        holder, first = leases.acquire(conn, "s1", "a", 0.0)
        assert holder == "" and first > 0
        leases.beat(conn, "b", 5.0, 10.0)
        assert leases.acquire(conn, "s1", "b", 5.0) == ("a", 0), "a lives: it keeps serving s1"
        leases.beat(conn, "a", 8.0, 10.0)  # a renews: alive until 18
        assert leases.acquire(conn, "s1", "b", 17.0)[0] == "a"
        leases.beat(conn, "b", 17.0, 10.0)
        holder, second = leases.acquire(conn, "s1", "b", 18.5)
        assert holder == "" and second > first, "a went silent: b takes s1 over, with a new fencing token"
        assert not pg.fence(conn, "s1", "a", first), "a's writes are refused from now on"
        assert pg.fence(conn, "s1", "b", second)
        assert leases.acquire(conn, "s1", "a", 19.0)[0] == "b", "a back from the dead does not take it back"
        leases.release(conn, {"s1": first}, "b")
        assert leases.acquire(conn, "s1", "a", 19.0)[0] == "b", "a release with an old token releases nothing"
        leases.release(conn, {"s1": second}, "b")
        holder, third = leases.acquire(conn, "s1", "a", 19.0)
        assert holder == "" and third > second, "a session handed back moves at once"
        assert sorted(leases.node_table(conn, 19.0)) == [("a", False, 1), ("b", True, 0)]
    finally:
        conn.close()


def _model(messages):
    last = messages[-1]
    if last.role == "tool":
        return "timer noted"
    if "remind me" in last.content:
        return "TOOL_CALL: timers_set|in 5 minutes; tea"
    if "Timer fired" in last.content:
        return "Reminder: tea is ready"
    return "ok"


def _reminders(system) -> int:
    shown = system.actors["glasses"].shown.get("tea", [])
    # a firing is shown by a reflex (core.reflex), labelled late when its node was down
    return sum(isinstance(m, p.Display) and m.final and m.text.startswith("⏰ Reminder: tea (late") for m in shown)


async def test_a_dead_nodes_timer_fires_once_on_one_of_the_live_nodes(tmp_path, pg_url, manual_clock):
    backend = ScriptedBackend(reply_fn=_model)

    def node(name):
        config = override(make_config(tmp_path / name), storage={"backend": "postgres", "url": pg_url},
                          node={"name": name, "heartbeat_s": 0.05, "lease_s": 10.0})
        return inproc_system(tmp_path / name, backend=backend, clock=manual_clock, config=config,
                             execute_substituted_calls=True)

    async with node("a") as a:
        await a.turn("tea", "remind me about tea in 5 minutes")
    # node a died with the session's lease (nothing released it); its timer comes due meanwhile
    manual_clock.advance(600)
    async with node("b") as b, node("c") as c:
        await until(lambda: _reminders(b) + _reminders(c))
        looks = _count_adoptions(b), _count_adoptions(c)
        await until(lambda: min(map(len, looks)) >= 5)  # both looked for due timers again, more than once
        assert _reminders(b) + _reminders(c) == 1, "nobody fires it again"
        served_by = "b" if _reminders(b) else "c"
        history = await (b if served_by == "b" else c).history("tea")
        fired = [m["content"] for m in history if "Timer fired" in m["content"]]
        assert len(fired) == 1 and "late" in fired[0], fired
        assert history[0]["content"] == "[User said] remind me about tea in 5 minutes", "the history moved with the session"
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT node FROM session_lease WHERE session = 'tea'").fetchone() == (served_by,)


def _count_adoptions(system) -> list[None]:
    """One item per look of the node's heartbeat for sessions of dead nodes, from now on."""
    leases, looks = system.actors["session"].leases, []
    adopt = leases.adopt

    async def counted(**kwargs):
        adopted = await adopt(**kwargs)
        looks.append(None)
        return adopted

    leases.adopt = counted
    return looks


def _lease(pg_url, session):
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT node FROM session_lease WHERE session = %s", (session,)).fetchone()
    return row[0] if row else None


async def test_a_session_moves_between_two_live_nodes_with_its_history_idle_at_once_mid_turn_after_it(tmp_path, pg_url):
    gates = [anyio.Event()]
    gates[0].set()

    async def model_time(_seconds):  # the model answers when the test opens the gate
        await gates[-1].wait()

    backend = ScriptedBackend(first_token_delay_s=0.001, sleep=model_time)

    def node(name):
        config = override(make_config(tmp_path / name), storage={"backend": "postgres", "url": pg_url},
                          node={"name": name, "heartbeat_s": 0.1, "handover_poll_s": 0.02, "lease_s": 10.0})
        return inproc_system(tmp_path / name, backend=backend, config=config)

    async with node("a") as a, node("b") as b:
        await a.turn("s", "my name is Aglaya")
        assert _lease(pg_url, "s") == "a"
        await b.turn("s", "what is my name")  # the phone reached b: a lets the idle session go at once
        assert "s" not in a.actors["session"].sessions and _lease(pg_url, "s") == "b"
        assert [m["content"] for m in await b.history("s") if m["role"] == "user"] == [
            "[User said] my name is Aglaya", "[User said] what is my name"]

        gates.append(anyio.Event())  # b's next turn hangs in the model
        story = await b.deliver("s", "tell me a long story", event_id="story")
        assert isinstance(story, p.EventAccepted)
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.turn, "s", "and then?")
            await until(lambda: a.actors["session"].leases is not None and _wanted(pg_url, "s"))
            assert _lease(pg_url, "s") == "b", "mid-turn: b keeps the session until its turn is done"
            gates[-1].set()
        assert _lease(pg_url, "s") == "a"
        history = await a.history("s")
        users = [m["content"] for m in history if m["role"] == "user"]
        assert users == ["[User said] my name is Aglaya", "[User said] what is my name",
                         "[User said] tell me a long story", "[User said] and then?"], users
        assert [m for m in history if m["role"] == "assistant"][2]["content"], "b's answer to the story moved too"


async def _answered(system, session) -> bool:
    return any(m["role"] == "assistant" for m in await system.history(session))


def _wanted(pg_url, session):
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT wanted_by FROM session_lease WHERE session = %s", (session,)).fetchone()
    return row[0] if row else None


async def test_a_node_whose_lease_lapsed_lets_go_of_the_sessions_another_node_took(tmp_path, pg_url, manual_clock):
    """A node cut off from the database longer than node.lease_s (a pause, a partition) comes
    back to find its sessions served elsewhere: it lets them go instead of serving them twice."""
    backend = ScriptedBackend()

    def node(name, heartbeat_s):
        config = override(make_config(tmp_path / name), storage={"backend": "postgres", "url": pg_url},
                          node={"name": name, "heartbeat_s": heartbeat_s, "handover_poll_s": 0.02, "lease_s": 10.0})
        return inproc_system(tmp_path / name, backend=backend, clock=manual_clock, config=config)

    async with node("a", 3.0) as a, node("b", 0.05) as b:
        await a.turn("s", "my name is Aglaya")
        manual_clock.advance(30)  # a has not renewed for longer than its lease: b may take its sessions
        # b's own lease lapsed by the same clock too: it lets go, renews, then takes "s" from a, whose
        # heartbeat (3 s) has to find its lapse first - on a loaded machine longer than a turn's 10 s
        await b.turn("s", "what is my name", timeout=60)
        assert _lease(pg_url, "s") == "b"
        await until(lambda: "s" not in a.actors["session"].sessions)  # a's next heartbeat finds its lease lapsed
        await a.turn("s", "and now?", timeout=60)  # back to a, by a hand-over: one history, nothing twice
        users = [m["content"] for m in await a.history("s") if m["role"] == "user"]
        said = ["my name is Aglaya", "what is my name", "and now?"]
        assert [text for content in users for text in said if text in content] == said, users  # each once, in order


async def test_a_turn_a_lapsed_lease_stopped_is_answered_once_the_node_serves_again(tmp_path, pg_url, manual_clock):
    """A node's lease lapses in the middle of a turn: the turn stops and the session leaves memory,
    and its lease is released with it, so the event it had accepted is adopted (here, by the same
    node once it renewed) and answered without a resend, once."""
    gate = anyio.Event()

    async def model_time(_seconds):
        await gate.wait()

    config = override(make_config(tmp_path), storage={"backend": "postgres", "url": pg_url},
                      node={"name": "b", "heartbeat_s": 0.05, "handover_poll_s": 0.02, "lease_s": 10.0})
    backend = ScriptedBackend(first_token_delay_s=0.001, sleep=model_time)
    async with inproc_system(tmp_path, backend=backend, clock=manual_clock, config=config) as b:
        sessions = b.actors["session"].sessions
        assert isinstance(await b.deliver("s", "tell me a long story"), p.EventAccepted)
        await until(lambda: "s" in sessions and sessions["s"].running)
        in_the_model = sessions["s"]
        manual_clock.advance(30)  # the lease lapsed by the database's clock while the turn waits
        await until(lambda: sessions.get("s") is not in_the_model)  # dropped, the turn stopped
        gate.set()
        await until(lambda: _answered(b, "s"))
        users = [m["content"] for m in await b.history("s") if m["role"] == "user"]
        assert users == ["[User said] tell me a long story"], users
        assert _lease(pg_url, "s") == "b"


async def test_an_event_a_dead_node_accepted_is_answered_by_a_live_node_without_a_resend(tmp_path, pg_url, manual_clock):
    """The node acked the event (it is in the journal) and died in the middle of its turn: a live
    node adopts the session once the dead node's lease expired and answers, unasked."""
    hung = anyio.Event()

    async def model_hangs(_seconds):
        await hung.wait()  # never set: the turn is in the model when its node dies

    def node(name, backend):
        config = override(make_config(tmp_path / name), storage={"backend": "postgres", "url": pg_url},
                          node={"name": name, "heartbeat_s": 0.05, "lease_s": 10.0})
        return inproc_system(tmp_path / name, backend=backend, clock=manual_clock, config=config)

    async with node("b", ScriptedBackend()) as b:
        async with node("a", ScriptedBackend(first_token_delay_s=0.001, sleep=model_hangs)) as a:
            reply = await a.deliver("s", "hello there", event_id="ev-1")
            assert isinstance(reply, p.EventAccepted)
        manual_clock.advance(30)  # a is gone and its lease expired; nobody sends anything
        await until(lambda: "s" in b.actors["session"].sessions and not b.actors["session"].sessions["s"].running)
        await until(lambda: _answered(b, "s"))
        assert _lease(pg_url, "s") == "b"
        users = [m["content"] for m in await b.history("s") if m["role"] == "user"]
        assert users.count("[User said] hello there") == 1, users


async def test_a_journal_write_carrying_a_lease_token_that_moved_on_is_refused(pg_url):
    """A lease is a fence (issue 51): the node that held the session (token `first`) writes nothing
    of it once another node took it over; it is told which session it lost."""
    import pytest

    from core.trajectory import Recorded
    from storage.journal import Fenced, Journal
    from storage.postgres import PostgresStore

    conn = connect(pg_url)
    leases.beat(conn, "a", 0.0, 10.0)
    _, first = leases.acquire(conn, "s", "a", 0.0)
    journal, fenced = Journal("", store=PostgresStore(pg_url)), []
    journal.fence_of = lambda session: ("a", first if session == "s" else -1)
    journal.on_fenced = fenced.extend

    def event(event_id):
        return p.Event(event_id=event_id, kind="user_text", source="user", channel="speech", content=event_id)

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(journal.run)
            await journal.stored(journal.accept_event("s", "", event("before")))
            leases.beat(conn, "b", 20.0, 10.0)
            assert leases.acquire(conn, "s", "b", 20.0)[0] == "", "a's lease expired: b takes the session"
            journal.append("s", Recorded(role="assistant", content="a's late answer"))
            with pytest.raises(Fenced):
                await journal.stored(journal.accept_event("s", "", event("after")))
            with pytest.raises(Fenced):
                await journal.stored(journal.accept_event("other", "", event("never held")))
            assert ("s", "a", first) in fenced
            tg.cancel_scope.cancel()
        assert [r[0] for r in conn.execute("SELECT event_id FROM events ORDER BY seq")] == ["before"]
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    finally:
        conn.close()
