"""The SessionActor's side of the world around each session (core.world): which events from
outside are shown, what the user sees while the glasses are off, and the monitors' tasks.

The SessionActor calls three hooks: `incoming` for every event it is handed (phone presence,
channel events matched against the session's watches), `outgoing` for what a conversation sends
the user (a display while the glasses are off becomes an unread note; a notice is shown or kept,
and pushed to the phone when urgent), and `restore`/`snapshot` with the journal. The toolsets of
this feature (toolsets/channels, tasks, monitors) reach it as `settings.world` (core.world.WorldPort),
through their SessionContext. What the world needs of the actor is `WorldHost`.
"""
from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Mapping, Protocol

import anyio
import msgspec

import protocol as p
from core.background import BACKGROUND
from core.channels import CHANNEL_KIND, labelled, matching
from core.config import Config
from core.conversation import Conversation
from core.monitors import FIRED, RUNNING, MonitorRow, Probe, fetch_url, fired_event, holds, parse_condition, run_command
from core.notify import PRESENCE_OFF, PRESENCE_ON, delivery_text
from core.progress import PROGRESS_KIND
from core.user_texts import text as user_text
from core.world import SessionWorld, WorldState
from storage.journal import Journal


class WorldHost(Protocol):
    """What the world needs of the actor that hosts the sessions (actors/session.py's SessionActor)."""

    config: Config
    log: logging.Logger
    sessions: Mapping[str, Conversation]  # the sessions in memory
    journal: Journal
    clock: Callable[[], float]

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None: ...

    def send(self, session: str, body: p.Msg) -> None:
        """To the user's glasses, as a conversation sends."""

    def show(self, session: str, text: str) -> None:
        """A display of its own, outside any turn: no TurnDone follows it."""

    def save_state(self, sid: str) -> None:
        """Journal the session's state (its world's snapshot among it)."""

    async def conversation(self, sid: str) -> Conversation: ...


class World:
    def __init__(self, actor: WorldHost):
        self.actor = actor
        self.config = actor.config
        self.sessions: dict[str, SessionWorld] = {}
        self._monitors: dict[tuple[str, str], anyio.CancelScope] = {}
        self.kept = 0  # channel events kept, not shown (all sessions)
        self.latest: dict[str, str] = {}  # task id -> its latest progress line (tasks_status)
        self._progress_count = 0
        self._status_at: dict[str, float] = {}  # task id -> when its last status line went out
        self._urgent: set[str] = set()  # sessions answering an urgent event while the glasses are off

    # ---- state ------------------------------------------------------------------------------
    def of(self, sid: str) -> SessionWorld:
        world = self.sessions.get(sid)
        if world is None:
            world = self.sessions[sid] = self._new(None)
        return world

    def _new(self, state: WorldState | None) -> SessionWorld:
        return SessionWorld(state, max_watches=self.config.channels.max_watches, max_notes=self.config.notify.max_kept)

    def restore(self, sid: str, state: WorldState) -> None:
        """A session read back from the journal: its world as it was, its monitors running again.
        One that stayed here while the session was out of memory (a monitor runs) is the live one."""
        if sid in self.sessions:
            return
        self.sessions[sid] = self._new(state)
        for row in self.sessions[sid].monitors.running():
            self._spawn_monitor(sid, row)

    def snapshot(self, sid: str) -> WorldState:
        world = self.sessions.get(sid)
        return world.snapshot() if world is not None else WorldState()

    def forget(self, sid: str) -> None:
        """The session left memory; a session with a running monitor keeps its world here."""
        world = self.sessions.get(sid)
        if world is not None and not world.needs_runtime():
            del self.sessions[sid]

    def drop(self, sid: str) -> None:
        """The session is deleted: its monitors stop, its world is gone."""
        for key in [key for key in self._monitors if key[0] == sid]:
            self._monitors.pop(key).cancel()
        self.sessions.pop(sid, None)

    def save(self, sid: str) -> None:
        self.actor.save_state(sid)

    def allowed_monitors(self) -> Mapping[str, Any]:
        return self.config.monitors.named

    # ---- events in --------------------------------------------------------------------------
    def incoming(self, sid: str, event: p.Event) -> p.Event | None:
        """The event as the session is to see it, or None: kept in the journal, not shown (a
        channel event no watch matched, on a channel that wakes only for watched ones)."""
        if sid not in self.sessions and event.source not in ("user", "phone") and self._fresh(sid):
            # a session a webhook opens has no glasses yet: what it says waits for them
            self.sessions[sid] = self._new(WorldState(glasses_on=False))
        if event.kind == "glasses":  # the phone says so (protocol.GlassesState)
            self._presence(sid, event.data.get("state") == "on")
        elif event.kind in PRESENCE_ON and event.source in ("user", "phone"):
            self._presence(sid, True)
        elif event.kind in PRESENCE_OFF:
            self._presence(sid, False)
        if event.kind != CHANNEL_KIND:
            return event
        channels = self.config.channels
        section = channels.named.get(event.channel)
        urgency = event.data.get("urgency") or (section.urgency if section else "normal")
        if section is not None:
            wake = section.wake
        else:
            wake = "always" if event.source == "webhook" else channels.phone_wake
        event = msgspec.structs.replace(event, data={**event.data, "urgency": urgency})
        world = self.of(sid)
        watch = matching(world.watches.watches, event)
        if watch is None and wake == "watched":
            world.unshown += 1
            self.kept += 1
            return None
        if urgency == "high" and not world.glasses_on:
            self._urgent.add(sid)  # the answer to it reaches the phone as a push
        return labelled(event, watch)

    def _fresh(self, sid: str) -> bool:
        """Nothing has happened in this session yet (no phone has used it)."""
        conversation = self.actor.sessions.get(sid)
        return conversation is None or (not conversation.seen and not len(conversation.trajectory))

    def _presence(self, sid: str, on: bool) -> None:
        world = self.sessions.get(sid)
        if world is None and on:
            return  # on, as every session starts: no world kept for it until it needs one
        world = world or self.of(sid)
        if world.glasses_on == on:
            return
        world.glasses_on = on
        self.actor.log.info("actor=session session=%s glasses %s", sid, "on" if on else "off")
        if on:
            unread = world.notes.unread()
            if unread:
                lines = [delivery_text(n) for n in unread]
                header = user_text("away_header", self.language(sid))
                text = lines[0] if len(lines) == 1 else "\n".join([header, *("• " + line for line in lines)])
                world.notes.mark_read(unread)
                self._show(sid, text)
        self.save(sid)

    def language(self, sid: str) -> str:
        """The session's language ("ru", "en") for a text of the runtime's own."""
        conversation = self.actor.sessions.get(sid)
        return conversation.language_code() if conversation is not None else "en"

    def progress(self, sid: str, body: p.ToolProgress) -> None:
        """A running call's progress (core.progress): the glasses' status line; while a turn runs,
        an event at its next safe point (one per task waiting at a time); an idle session is not
        woken, its tasks_status tells the latest."""
        conversation = self.actor.sessions.get(sid)
        run = conversation.runs.get(body.call_id) if conversation is not None else None
        if run is None:
            return  # finished or cancelled meanwhile
        self.latest[run.task_id] = body.text
        while len(self.latest) > 4096:
            self.latest.pop(next(iter(self.latest)))
        now = anyio.current_time()
        if self.of(sid).glasses_on and now - self._status_at.get(run.task_id, -1e9) >= self.config.notify.status_interval_s:
            self._status_at[run.task_id] = now
            while len(self._status_at) > 4096:
                self._status_at.pop(next(iter(self._status_at)))
            self.actor.send(sid, p.StatusLine(task_id=run.task_id, text=f"{run.tool}: {body.text}"))
        waiting = any(e.kind == PROGRESS_KIND and e.data.get("task_id") == run.task_id for e in conversation.queue)
        if conversation.running and run.state == BACKGROUND and not waiting:
            self._progress_count += 1
            conversation.submit(p.Event(event_id=f"progress-{body.call_id}-{self._progress_count}", kind=PROGRESS_KIND,
                                        source=run.tool, channel="tool", content=body.text, ts=self.actor.clock(),
                                        context=f"task {run.task_id}, still running", data={"task_id": run.task_id}))

    # ---- what the user is told ----------------------------------------------------------------
    def outgoing(self, sid: str, body: p.Msg) -> bool:
        """True when this took `body` (the caller sends nothing): a notice, or a display while
        the glasses are off (its final text becomes an unread note; partial ones are dropped)."""
        if isinstance(body, p.UserNotice):
            self._notice(sid, body)
            return True
        if not isinstance(body, p.Display):
            return False
        world = self.sessions.get(sid)
        if world is None or world.glasses_on:
            return False
        if body.final and body.text.strip():
            urgency = "high" if sid in self._urgent else "normal"
            self._urgent.discard(sid)
            self._notice(sid, p.UserNotice(text=body.text, urgency=urgency, source="reply"))
        return True

    def _notice(self, sid: str, notice: p.UserNotice) -> None:
        world = self.of(sid)
        text = notice.text[:self.config.notify.max_text_chars]
        note = world.notes.add(text, notice.urgency, notice.source, self.actor.clock(), read=world.glasses_on)
        if world.glasses_on:
            self._show(sid, delivery_text(note))
        if notice.to_phone or not world.glasses_on and notice.urgency == "high":
            note.pushed = True
            self.actor.send(sid, p.PushNotification(note_id=note.note_id, text=text, ts=note.ts))  # backpressure-safe
        self.save(sid)

    def _show(self, sid: str, text: str) -> None:
        """A display of its own (no TurnDone: a phone waiting for its turn's end must not take
        this for it)."""
        self.actor.show(sid, text)

    # ---- monitors -----------------------------------------------------------------------------
    def start_monitor(self, sid: str, name: str, condition: str) -> str:
        world = self.of(sid)
        monitors = self.config.monitors
        row, text = world.monitors.start(name, condition, monitors.named, monitors.max_per_session, self.actor.clock(),
                                         runtime_running=len(self._monitors), runtime_limit=monitors.max_total)
        if row is not None:
            self._spawn_monitor(sid, row)
            self.save(sid)
        return text

    def stop_monitor(self, sid: str, monitor_id: str) -> None:
        scope = self._monitors.pop((sid, monitor_id), None)
        if scope is not None:
            scope.cancel()
        self.save(sid)

    def _spawn_monitor(self, sid: str, row: MonitorRow) -> None:
        scope = anyio.CancelScope()
        self._monitors[(sid, row.monitor_id)] = scope
        self.actor.spawn(self._watch, sid, row, scope, name=f"monitor-{sid}-{row.monitor_id}")

    async def _watch(self, sid: str, row: MonitorRow, scope: anyio.CancelScope) -> None:
        """Check until the condition holds (one event), the monitor is stopped, or it is not
        allowed any more (the operator removed it from the config)."""
        spec = self.config.monitors.named.get(row.name)
        limit = self.config.monitors.max_output_chars
        with scope:
            condition = parse_condition(row.condition)
            while row.state == RUNNING and spec is not None:
                probe = await self._probe(spec, limit)
                row.checks += 1
                row.last_output = probe.output
                if holds(condition, probe):
                    await self._fire(sid, row)
                    return
                await anyio.sleep(spec.interval_s)
            if spec is None:
                self.actor.log.warning("actor=session session=%s monitor %s (%s) is no longer allowed; stopped", sid, row.monitor_id, row.name)
        self._monitors.pop((sid, row.monitor_id), None)

    @staticmethod
    async def _probe(spec, limit: int) -> Probe:
        if spec.command:
            return await run_command(list(spec.command), spec.timeout_s, limit)
        return await fetch_url(spec.url, spec.timeout_s, limit)

    async def _fire(self, sid: str, row: MonitorRow) -> None:
        """The one event, journaled with the monitor's new state (nothing awaited in between)."""
        conversation = await self.actor.conversation(sid)
        now = self.actor.clock()
        row.state, row.fired_at = FIRED, now
        event = fired_event(row, sid, now)
        self.save(sid)
        if event.event_id not in conversation.seen:
            self.actor.journal.note_event(sid, event)
            conversation.submit(event)
        self.actor.log.info("actor=session session=%s monitor %s (%s) fired after %d check(s)", sid, row.monitor_id, row.name, row.checks)
