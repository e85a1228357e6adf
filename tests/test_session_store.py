"""The store of sessions (core/session_store.py) on its own, over a real SQLite journal and real
Conversations with a scripted model: an ack never comes before the journal's commit, a session
idle long enough leaves memory and comes back with its history, a due timer fires once."""
import sqlite3
from contextlib import asynccontextmanager

import anyio

import protocol as p
from core.clock import ManualClock
from core.conversation import SessionSettings
from core.inprocess import InProcessPorts
from core.loading import default_catalog
from core.session_store import SessionStore
from core.skills import SkillRepository
from core.timer_wheel import TimerWheel
from core.toolsets import ToolsetRegistry
from core.world import WorldState
from llm.scripted import ScriptedBackend
from storage.journal import Journal, NoJournal
from tests.harness import make_config, until

TTL = 600.0


class Worlds:
    """The world around each session, as the store sees it (actors/world.py in the runtime)."""

    def __init__(self):
        self.restored: list[str] = []
        self.forgotten: list[str] = []

    def restore(self, sid, state):
        self.restored.append(sid)

    def snapshot(self, sid):
        return WorldState()

    def forget(self, sid):
        self.forgotten.append(sid)

    def drop(self, sid):
        pass


@asynccontextmanager
async def running_store(tmp_path, clock, *, journal=True):
    """A store over the journal at tmp_path (NoJournal when `journal` is false), with the
    settings its conversations share; its journal's writer runs until the block ends. Yields the
    store, the conversations' ports and the sessions it said left memory."""
    config = make_config(tmp_path)
    ports = InProcessPorts(repo=SkillRepository(config.builtin_skill_dirs(), None), provider=None,
                           backend=ScriptedBackend())
    log = Journal(tmp_path / "journal.sqlite3", clock=clock) if journal else NoJournal(clock=clock)
    async with anyio.create_task_group() as tg:
        await tg.start(log.run)
        gone: list[str] = []
        store = SessionStore(log, Worlds(), TimerWheel(clock), clock=clock, on_gone=gone.extend)
        store.settings = SessionSettings(registry=ToolsetRegistry(default_catalog()), ports=ports, spawn=tg.start_soon,
                                         config=config.session, clock=clock)
        yield store, ports, gone
        tg.cancel_scope.cancel()


def _event(event_id: str, text: str) -> p.Event:
    return p.Event(event_id=event_id, kind="user_text", source="user", channel="speech", content=text)


def _on_disk(path, session: str) -> list[str]:
    """The events the journal's file holds for `session`, read by another connection."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [r[0] for r in conn.execute("SELECT event_id FROM events WHERE session = ? ORDER BY rowid", (session,))]


async def _turn(store, ports, sid: str, event: p.Event):
    """One user turn, as the actor delivers it: taken, journaled (acked once on disk), answered."""
    conversation = await store.conversation(sid, "phone-1")
    ports.begin_turn(1)
    assert conversation.submit(event) == "accepted"
    store.accept(sid, "phone-1", event, lambda error: None)
    with anyio.fail_after(10):
        await ports.turn_done.wait()
        await until(lambda: conversation.idle_since() is not None)
    _close_turn(store, ports, sid)
    return conversation


def _close_turn(store, ports, sid: str) -> None:
    """What the actor does with a TurnDone on its way to the phone: its events are done."""
    done = [m for m in ports.shown if isinstance(m, p.TurnDone)][-1]
    store.turn_done(sid, list(done.event_ids))


async def test_an_ack_is_sent_only_once_the_journal_holds_the_event(tmp_path):
    clock = ManualClock(1_000_000.0)
    path = tmp_path / "journal.sqlite3"
    async with running_store(tmp_path, clock) as (store, _, _):
        await store.conversation("s", "phone-1")
        acked = anyio.Event()
        seen_at_ack: list = []

        def ack(error):
            seen_at_ack.append((error, _on_disk(path, "s")))
            acked.set()

        store.accept("s", "phone-1", _event("e1", "hello"), ack)
        assert seen_at_ack == [], "no ack before the commit"
        with anyio.fail_after(5):
            await acked.wait()
        assert seen_at_ack == [(None, ["e1"])], "at the ack, the event is on disk"


async def test_a_resend_before_the_first_copy_is_committed_is_acked_by_that_commit(tmp_path):
    clock = ManualClock(1_000_000.0)
    path = tmp_path / "journal.sqlite3"
    async with running_store(tmp_path, clock) as (store, _, _):
        acks: list = []
        both = anyio.Event()

        def ack(which):
            def told(error):
                acks.append((which, error, _on_disk(path, "s")))
                if len(acks) == 2:
                    both.set()
            return told

        store.accept("s", "phone-1", _event("e1", "hello"), ack("first"))
        store.after_first_copy("s", "e1", ack("resend"))
        assert acks == [], "the resend is not acked before the first copy is on disk"
        with anyio.fail_after(5):
            await both.wait()
        assert acks == [("first", None, ["e1"]), ("resend", None, ["e1"])]
        store.after_first_copy("s", "e1", ack("later"))
        assert acks[-1] == ("later", None, ["e1"]), "once it is on disk, a resend is acked at once"


async def test_an_idle_session_leaves_memory_and_comes_back_with_its_history(tmp_path):
    clock = ManualClock(1_000_000.0)
    async with running_store(tmp_path, clock) as (store, ports, gone):
        before = await _turn(store, ports, "s", _event("e1", "what is a haiku"))
        history = before.trajectory.as_dicts()
        assert [m["role"] for m in history] == ["user", "assistant"]
        assert store.forget_idle(clock() + TTL - 1, TTL) == [], "not idle long enough"
        assert store.forget_idle(clock() + TTL, TTL) == ["s"]
        assert "s" not in store.sessions and gone == ["s"] and store.world.forgotten == ["s"]
        info = await store.info("s")
        assert info.exists and not info.resident and info.history[-1]["content"] == history[-1]["content"]
        back = await store.conversation("s")
        assert back is not before and store.restored("s")
        assert back.trajectory.as_dicts() == history
        assert back.submit(_event("e1", "what is a haiku")) == "duplicate", "it remembers what it answered"


async def test_a_session_is_read_back_once_however_many_ask_at_the_same_time(tmp_path):
    clock = ManualClock(1_000_000.0)
    async with running_store(tmp_path, clock) as (store, ports, _):
        await _turn(store, ports, "s", _event("e1", "hello"))
        store.forget_idle(clock() + TTL, TTL)
        conversations = []

        async def ask():
            conversations.append(await store.conversation("s"))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(ask)
        assert len(conversations) == 3 and conversations[0] is conversations[1] is conversations[2]
        assert store.world.restored == ["s"]


async def test_without_a_journal_no_session_is_forgotten(tmp_path):
    clock = ManualClock(1_000_000.0)
    async with running_store(tmp_path, clock, journal=False) as (store, ports, _):
        await _turn(store, ports, "s", _event("e1", "hello"))
        assert store.forget_idle(clock() + 10 * TTL, TTL) == [], "nothing would bring it back"
        assert "s" in store.sessions


async def test_a_due_timer_fires_once_and_the_journal_knows_it_fired(tmp_path):
    clock = ManualClock(1_000_000.0)
    async with running_store(tmp_path, clock) as (store, ports, _):
        conversation = await store.conversation("s", "phone-1")
        conversation.timers.set("in 5 minutes", "tea is ready")
        assert store.wheel.next_due() == clock() + 300
        clock.advance(300)
        ports.begin_turn(1)
        for sid in store.wheel.due():
            store.fire_timers(sid, clock())
        for sid in store.wheel.due():  # nothing is due twice
            store.fire_timers(sid, clock())
        store.fire_timers("s", clock())  # nor fires twice when asked again
        with anyio.fail_after(10):
            await ports.turn_done.wait()
        _close_turn(store, ports, "s")
        fired = [m for m in conversation.trajectory.as_dicts() if m["content"].startswith("[Timer fired] tea is ready")]
        assert len(fired) == 1 and len(conversation.timers) == 0
    async with running_store(tmp_path, clock) as (store, _, _):  # a restart on the same journal
        assert await store.start() == [], "no timer left and no event unanswered: nothing to bring back"
        back = await store.conversation("s")
        assert len(back.timers) == 0 and store.wheel.next_due() is None


async def test_a_session_in_the_middle_of_a_turn_is_not_deleted(tmp_path):
    clock = ManualClock(1_000_000.0)
    async with running_store(tmp_path, clock) as (store, ports, _):
        await _turn(store, ports, "s", _event("e1", "hello"))
        store.sessions["s"].running = True  # as while its loop runs
        assert await store.delete("s") == "busy" and "s" in store.sessions
        store.sessions["s"].running = False
        assert await store.delete("s") == "deleted"
        assert not (await store.info("s")).exists
        assert await store.delete("s") == "unknown"

