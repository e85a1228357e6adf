"""What a session knows of the world around it: whether the glasses are on, the notes kept for
the user, the channels it watches and the monitors it runs. Kept in the journal with the
session's state (storage.journal.SessionState.world), so a restart loses none of it."""
from __future__ import annotations

from typing import Any, Mapping, Protocol

import msgspec

from core.channels import Watch, WatchTable
from core.monitors import MonitorRow, MonitorTable
from core.notify import Note, Notes


class WorldState(msgspec.Struct, kw_only=True, omit_defaults=True):
    glasses_on: bool = True
    watches: list[Watch] = []
    next_watch: int = 1
    notes: list[Note] = []
    next_note: int = 1
    monitors: list[MonitorRow] = []
    next_monitor: int = 1
    unshown: int = 0  # channel events kept, not shown (no watch matched)


class SessionWorld:
    """One session's world, live."""

    __slots__ = ("glasses_on", "watches", "notes", "monitors", "unshown")

    def __init__(self, state: WorldState | None = None, *, max_watches: int = 20, max_notes: int = 100):
        state = state or WorldState()
        self.glasses_on = state.glasses_on
        self.watches = WatchTable(state.watches, state.next_watch, max_watches)
        self.notes = Notes(state.notes, state.next_note, max_notes)
        self.monitors = MonitorTable(state.monitors, state.next_monitor)
        self.unshown = state.unshown

    def snapshot(self) -> WorldState:
        copy = msgspec.structs.replace
        return WorldState(glasses_on=self.glasses_on, watches=list(self.watches.watches),
                          next_watch=self.watches.next_number, notes=[copy(n) for n in self.notes.items],
                          next_note=self.notes.next_number, monitors=[copy(m) for m in self.monitors.rows],
                          next_monitor=self.monitors.next_number, unshown=self.unshown)

    def needs_runtime(self) -> bool:
        """True while a monitor runs: the session is brought back at once after a restart."""
        return bool(self.monitors.running())


class WorldPort(Protocol):
    """What the session toolsets (channels, tasks, monitors) use of the world around every
    session: actors/world.py's World, reached through their SessionContext."""

    latest: dict[str, str]  # task id -> its latest progress line (a task's status)

    def of(self, sid: str) -> SessionWorld: ...

    def save(self, sid: str) -> None:
        """Journal the session's world after a change."""

    def allowed_monitors(self) -> Mapping[str, Any]:
        """The monitors the operator allowed, by name (core.config.MonitorConfig)."""

    def start_monitor(self, sid: str, name: str, condition: str) -> str: ...

    def stop_monitor(self, sid: str, monitor_id: str) -> None: ...


class MemoryWorld:
    """A WorldPort for callers without a session actor (`run.py eval`): watches and notes kept
    in memory as the actor's World keeps them, so "tell me when mum writes" is set and said back;
    no monitor is allowed (none runs without the actor)."""

    def __init__(self, *, max_watches: int = 20, max_notes: int = 100):
        self.latest: dict[str, str] = {}
        self.sessions: dict[str, SessionWorld] = {}
        self._limits = {"max_watches": max_watches, "max_notes": max_notes}

    def of(self, sid: str) -> SessionWorld:
        return self.sessions.setdefault(sid, SessionWorld(None, **self._limits))

    def save(self, sid: str) -> None:
        """Nothing to journal: the world lives as long as the caller keeps it."""

    def allowed_monitors(self) -> Mapping[str, Any]:
        return {}

    def start_monitor(self, sid: str, name: str, condition: str) -> str:
        return f"monitor {name!r} is not available here (no session actor runs monitors)"

    def stop_monitor(self, sid: str, monitor_id: str) -> None:
        """No monitor runs here."""
