"""The SessionActor's sessions: memory holds the active ones, the journal holds them all.

What it keeps, and the promises behind it:
- an accepted event is acked only once the journal has committed it (`accept`), so an ack means
  it survives any restart; a resend of an event whose first copy is not committed yet is acked by
  that same commit (`after_first_copy`), never before;
- a session's history, the events it accepted, its timers, what it knows of skills and its world
  are journaled as they change (the Trajectory's sink, `save_state`, `turn_done`, `fire_timers`);
- a session not in memory is read back from the journal on its next event (`conversation`, once
  however many ask at the same time), and continued if a restart cut its turn (core.resume); after
  a restart the sessions with unanswered events or timers come back at once (`bring_back`);
- a session idle for `session.idle_session_ttl_s` leaves memory (`forget_idle`); with several
  nodes, a session is served only where its lease is (`conversation` takes it, `hand_over_wanted`
  and `let_go` give it up).
The actor turns messages into these calls and their results into messages; the store sends no
message (it tells the actor's observers through `on_gone`).
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable, Literal, Protocol

import anyio
import msgspec

import protocol as p
from core.conversation import Conversation, SessionSettings
from core.resume import resume
from core.timer_wheel import TimerWheel
from core.timers import Timer
from core.trajectory import Trajectory
from core.world import WorldState
from storage.journal import Fence, Fenced, Journal, JournalError, NoJournal, SessionState, StoredSession, TimerRow

if TYPE_CHECKING:
    from storage.leases import NodeLeases

_log = logging.getLogger("porfiry.session")

Stored = Callable[[JournalError | None], None]  # told once the journal committed (None) or could not


class Worlds(Protocol):
    """The world around each session (actors/world.py), as far as the store keeps it."""

    def restore(self, sid: str, state: WorldState) -> None: ...
    def snapshot(self, sid: str) -> WorldState: ...
    def forget(self, sid: str) -> None: ...
    def drop(self, sid: str) -> None: ...


class SessionStore:
    def __init__(self, journal: Journal, world: Worlds, wheel: TimerWheel, *, leases: NodeLeases | None = None,
                 clock: Callable[[], float] = time.time, on_gone: Callable[[list[str]], None] = lambda sessions: None,
                 log: logging.Logger = _log):
        self.journal = journal
        self.world = world
        self.wheel = wheel
        self.leases = leases  # several nodes: which one serves a session
        self.clock = clock
        self.on_gone = on_gone  # told of sessions that left memory, idle or handed over (observers)
        self.log = log
        self.settings: SessionSettings | None = None  # what conversations share, once the actor has it
        self.sessions: dict[str, Conversation] = {}
        self._loading: dict[str, anyio.Event] = {}  # sessions being read back from the journal
        self._unstored: dict[tuple[str, str], object] = {}  # (session, event) accepted, its commit not done yet
        self._restored: set[str] = set()  # sessions in memory that came back from the journal
        self._stale: set[str] = set()  # being read back when this node's lease lapsed
        if leases is not None:  # every write of a session carries its lease's fencing token
            journal.fence_of = leases.fence_of
            journal.on_fenced = self._fenced

    def loading(self, sid: str) -> bool:
        return sid in self._loading

    def restored(self, sid: str) -> bool:
        return sid in self._restored

    # ---- in memory, or back from the journal ----------------------------------------------------
    async def start(self) -> list[str]:
        """At start: the sessions to bring back (unanswered events or timers), this node's share
        of them with several nodes."""
        if self.leases is None:
            return await self.journal.unfinished()
        await self.leases.beat()
        return await self.leases.adopt(due_only=False)

    async def conversation(self, sid: str, phone_key: str = "", *, create: bool = True) -> Conversation | None:
        """The session in memory, else read back from the journal (and continued if a restart cut
        it), else a new one (None when `create` is false). Raises JournalError."""
        while (loading := self._loading.get(sid)) is not None:
            await loading.wait()
        conversation = self.sessions.get(sid)
        if conversation is not None:
            return conversation
        done = self._loading[sid] = anyio.Event()
        try:
            stored = await self._take_and_load(sid)
            if stored is None and not create:
                return None
            conversation = self._build(sid, phone_key, stored)
            self.sessions[sid] = conversation
        finally:
            del self._loading[sid]
            done.set()
        if stored is not None:
            self._restored.add(sid)
            self._continue(sid, conversation, stored)
        return conversation

    async def _take_and_load(self, sid: str) -> StoredSession | None:
        """With several nodes the session's lease first, taken while this node's own lease is
        alive; taken anew when this node's lease lapsed meanwhile (`drop_if_lapsed`)."""
        if self.leases is None:
            return await self.journal.load(sid)
        while True:
            with anyio.move_on_after(self.leases.settings.handover_wait_s):
                while not self.leases.serving():
                    await anyio.sleep(self.leases.settings.handover_poll_s)
            if not self.leases.serving():
                raise JournalError(f"this node's lease lapsed and is not renewed (node {self.leases.node}); try again")
            if holder := await self.leases.take(sid):
                raise JournalError(f"session {sid} is served by node {holder} (its lease is alive); try again")
            stored = await self.journal.load(sid)
            if sid not in self._stale:
                return stored
            self._stale.discard(sid)

    async def bring_back(self, sessions: list[str], chunk: int) -> None:
        """After a restart, the sessions with unanswered events or timers, read back while the
        actor already serves (one at a time, thousands of them would keep every user waiting while
        the phones resend); `chunk` at a time, the journal reads a chunk in one transaction. An
        event for a session not back yet reads it back itself (`conversation` loads each once)."""
        started = time.monotonic()
        failed = 0

        async def one(sid: str) -> None:
            nonlocal failed
            try:
                await self.conversation(sid)
            except JournalError as exc:  # its next event tries again
                failed += 1
                self.log.error("actor=session session=%s could not be read back: %s", sid, exc)

        for start in range(0, len(sessions), chunk):
            async with anyio.create_task_group() as tg:
                for sid in sessions[start:start + chunk]:
                    tg.start_soon(one, sid)
        self.log.info("actor=session brought back %d session(s) with unanswered events or timers in %.1f s%s",
                      len(sessions) - failed, time.monotonic() - started, f"; {failed} could not be read" if failed else "")

    def _build(self, sid: str, phone_key: str, stored: StoredSession | None) -> Conversation:
        assert self.settings is not None
        conversation = Conversation(sid, self.settings, phone_key or (stored.phone_key if stored else ""))
        sink = lambda entry: self.journal.append(sid, entry)  # noqa: E731
        if stored is None:
            conversation.trajectory.sink = sink
        else:
            conversation.trajectory = Trajectory.restore(stored.entries, sink)
            conversation.seen.update(dict.fromkeys(stored.seen))
            state = stored.state
            conversation.timers.restore([Timer(t.timer_id, t.due, t.text, t.every, t.days) for t in state.timers], state.next_timer)
            conversation.tracker.restore(state.skills_version, state.skills_names, state.skills_read)
            conversation.last_active = stored.last_active
            self.world.restore(sid, state.world)
        conversation.timers.on_change = lambda: self._timer_table_changed(sid)
        return conversation

    def _continue(self, sid: str, conversation: Conversation, stored: StoredSession) -> None:
        """After a restart (core.resume): a turn the crash cut goes on (told of the restart only
        when a call was cut; its TurnDone covers the cut turn's events); accepted events that
        never reached the history are queued again. Timers due meanwhile fire from the wheel."""
        point = resume(conversation.trajectory, stored.entries, stored.open_events, self.clock())
        if point.event is not None or point.waiting:
            self.log.info("actor=session session=%s continues after a restart: %d cut, %d waiting",
                          sid, len(point.cut), len(point.waiting))
        conversation.resume_at(point)
        if len(conversation.timers):
            self.wheel.schedule(sid, conversation.timers.next_due())
            self.wheel.wake()

    async def info(self, sid: str) -> p.SessionInfo:
        """A session in memory as it is; one that left memory as its journal holds it. Raises
        JournalError."""
        conversation = self.sessions.get(sid)
        if conversation is not None:
            return msgspec.structs.replace(conversation.info(), restored=sid in self._restored, resident=True)
        stored = await self.journal.load(sid)
        if stored is None:
            return p.SessionInfo(exists=False)
        history = [msgspec.structs.asdict(entry.message()) for entry in stored.entries if entry.role]
        return p.SessionInfo(exists=True, history=history, queued=len(stored.open_events))

    # ---- the journal: accepted events on disk before the ack ---------------------------------
    def accept(self, sid: str, phone_key: str, event: p.Event, then: Stored) -> None:
        """Journal an event the session took; `then` is told once it is committed (the ack), by
        the journal's writer: no task per event."""
        key = (sid, event.event_id)
        waiter = self._unstored[key] = self.journal.accept_event(sid, phone_key, event)

        def stored(error: JournalError | None) -> None:
            del self._unstored[key]
            then(error)

        self.journal.on_stored(waiter, stored)

    def after_first_copy(self, sid: str, event_id: str, then: Stored) -> None:
        """A resend of an event the session already took: `then` at once when its first copy is
        on disk, else with that copy's commit. An ack before it would promise what a crash before
        the commit breaks (the phone stops resending, the event is gone)."""
        unstored = self._unstored.get((sid, event_id))
        if unstored is not None:
            self.journal.on_stored(unstored, then)
        else:
            then(None)

    def turn_done(self, sid: str, event_ids: list[str]) -> None:
        """A TurnDone closes its events in the journal (a restart will not run them again), and
        the session's skills knowledge is saved with it."""
        if event_ids:
            self.journal.events_done(sid, event_ids)
        self.save_state(sid)

    def save_state(self, sid: str) -> None:
        conversation = self.sessions.get(sid)
        if conversation is None:
            return
        timers, next_number = conversation.timers.snapshot()
        skills_version, skills_names, skills_read = conversation.tracker.state()
        self.journal.save_state(sid, SessionState(
            timers=[TimerRow(t.timer_id, t.due, t.text, t.every, t.days) for t in timers], next_timer=next_number,
            skills_version=skills_version, skills_names=skills_names, skills_read=skills_read,
            world=self.world.snapshot(sid)))

    def _timer_table_changed(self, sid: str) -> None:
        """After every change of a session's timers: journaled, and its next due on the wheel."""
        self.save_state(sid)
        conversation = self.sessions.get(sid)
        self.wheel.schedule(sid, conversation.timers.next_due() if conversation is not None else None)

    def fire_timers(self, sid: str, now: float) -> None:
        """The session's due timers become events, journaled in the same transaction as the
        timers' new state (nothing awaited in between), so a crash neither loses a firing nor
        repeats it."""
        conversation = self.sessions.get(sid)
        if conversation is None or not len(conversation.timers):
            return
        assert self.settings is not None
        for timer in conversation.timers.due(now):
            event = timer.to_event(now, self.settings.tz)
            if event.event_id in conversation.seen:
                continue
            stored = self.journal.note_event(sid, event)
            if self.leases is None:
                conversation.submit(event)
            else:  # it rings once its firing committed under this node's lease: never on two nodes
                self.journal.on_stored(stored, lambda error, event=event: self._fired(sid, conversation, event, error))

    def _fired(self, sid: str, conversation: Conversation, event: p.Event, error: JournalError | None) -> None:
        if isinstance(error, Fenced) or self.sessions.get(sid) is not conversation:
            return  # another node holds the session now: its wheel fires the timer
        conversation.submit(event)

    async def purge_expired(self, days: float) -> None:
        if days <= 0:
            return
        try:
            deleted = await self.journal.purge(self.clock() - days * 86400.0)
        except JournalError as exc:
            self.log.error("actor=session retention purge failed: %s", exc)
            return
        if deleted:
            self.log.info("actor=session deleted %d journal entries older than %g days", deleted, days)

    # ---- leaving memory -------------------------------------------------------------------
    def forget_idle(self, now: float, ttl: float) -> list[str]:
        """The sessions idle for `ttl` leave memory (their journal holds it all: the next event
        brings them back); none without a journal, nothing would bring them back."""
        if isinstance(self.journal, NoJournal):
            return []
        idle = [sid for sid, c in self.sessions.items() if (since := c.idle_since()) is not None and now - since >= ttl]
        for sid in idle:
            del self.sessions[sid]
            self._restored.discard(sid)
            self.world.forget(sid)
        if idle:
            self.on_gone(idle)
        return idle

    def let_go(self, sid: str) -> None:
        """Another node serves the session now, or it was deleted: out of memory (its toolset
        activity and monitors with it; the node that serves it runs them), its turn in progress
        stopped, nothing more of it journaled here and no timer of it fired here."""
        conversation = self.sessions.pop(sid, None)
        if conversation is not None:
            self._restored.discard(sid)
            conversation.timers.on_change = None
            conversation.trajectory.sink = None
            conversation.abandon()
            self.wheel.schedule(sid, None)
            self.world.drop(sid)
            self.on_gone([sid])
        if self.leases is not None:
            self.leases.forget([sid])

    async def delete(self, sid: str) -> Literal["busy", "deleted", "unknown"]:
        """Out of memory, then out of the journal; a session in the middle of a turn stays.
        Raises JournalError."""
        conversation = self.sessions.get(sid)
        if conversation is not None and (conversation.running or conversation.queue):
            return "busy"
        if conversation is not None:
            del self.sessions[sid]
            self._restored.discard(sid)
            conversation.timers.on_change = None
        self.world.drop(sid)
        existed = await self.journal.delete(sid)
        return "deleted" if existed or conversation is not None else "unknown"

    async def hand_over_wanted(self) -> list[tuple[str, str]]:
        """Sessions another node asked for (a phone reached it): an idle one leaves memory and goes
        at once, one mid-turn after its turn (a later call). Its toolset activity stays behind.
        (session, node) for each that went."""
        assert self.leases is not None
        moves = []
        for sid, to in await self.leases.wanted():
            conversation = self.sessions.get(sid)
            if sid in self._loading or (conversation is not None and (conversation.running or conversation.queue)):
                continue
            self.let_go(sid)
            moves.append((sid, to))
        if moves:
            await self.leases.hand_over(moves)
        return moves

    async def drop_if_lapsed(self) -> list[str] | None:
        """None while this node's lease is alive by its own clock (storage/leases.py `serving`).
        Else it must assume other nodes took its sessions: every one leaves memory (turns in
        progress stopped, what they would still show or write dropped), the leases still its own
        are released (any node may take them, due timers are adopted), and it serves again once
        its lease is renewed. The sessions dropped."""
        assert self.leases is not None
        if self.leases.serving():
            return None
        # the tokens first: `let_go` forgets a session's token, and a lease left unreleased stays
        # this node's once it renews, so no node would adopt what the session had accepted
        held = self.leases.forget(list(self.leases.epochs))
        dropped = list(self.sessions)
        for sid in dropped:
            self.let_go(sid)
        self._stale.update(self._loading)  # taken before the lapse: taken anew once read
        if held:
            await self.leases.release(held)
        self.leases.recovered()
        return dropped

    def _fenced(self, fences: list[Fence]) -> None:
        """The journal refused writes of these sessions (their lease moved on): those still in
        memory under the refused token leave it, the node serving them now answers."""
        assert self.leases is not None
        lost = [sid for sid, _node, epoch in fences if self.leases.epochs.get(sid) == epoch]
        for sid in lost:
            self.let_go(sid)
        if lost:
            self.log.warning("actor=session node=%s lost %d session(s) to other nodes (writes refused by their "
                             "lease's fence): %s", self.leases.node, len(lost), ", ".join(lost[:10]))

    def forget_deleted(self) -> list[str]:
        """Sessions `run.py sessions delete` deleted on any node or none (PostgreSQL's NOTIFY,
        storage/leases.py): out of memory here too, so no prompt holds what was deleted."""
        assert self.leases is not None
        deleted = self.leases.deleted()
        for sid in deleted:
            self.let_go(sid)
            self.world.drop(sid)
        return deleted

    async def adopt_due(self) -> list[str]:
        """Sessions of dead nodes whose timers came due, not in memory here yet: this node's now."""
        assert self.leases is not None
        return [sid for sid in await self.leases.adopt(due_only=True) if sid not in self.sessions]
