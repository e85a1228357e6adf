"""Skills (S1, S4, S10, V2-V3): the repository that merges built-in and user skills, serves the
per-session index and bodies, and reloads user edits on use.

Pure logic: no sockets, no threads. The SkillStore actor is a thin shell around one
SkillRepository; sessions hold a SkillChangeTracker (core.skills_notice).
"""
import difflib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from core.skills_format import (
    MAX_SKILL_BYTES, READ_TIMEOUT_S, SKILL_FILE, Skill, SkillFormatError, load_skill, name_problem, short_hash,
)
from core.skills_notice import SKILLS_HOWTO, SkillChangeTracker, render_index
from protocol.skills import SkillEntry

log = logging.getLogger("porfiry.skills")

__all__ = [
    "SkillRepository", "SessionSkills", "Skill", "SkillFormatError", "SkillChangeTracker",
    "SKILLS_HOWTO", "render_index",
]

REFRESH_INTERVAL_S = 0.5


class SessionSkills(NamedTuple):
    """What one session may see now: everything a SkillIndex reply and a change notice need."""

    version: str
    entries: list[SkillEntry]
    body_versions: dict[str, str]


@dataclass
class _FileState:
    """What we know of one `<folder>/SKILL.md`: the (mtime_ns, size) it had when last parsed, the
    last version that parsed (served), and why the current file is not served, if it is not."""

    signature: tuple[int, int]
    skill: Skill | None
    problem: str = ""


class SkillRepository:
    """Built-in skills (shipped with the code) merged with the user's skills.

    Order (V2): built-ins first, alphabetical; then user skills newest first (SKILL.md mtime,
    ties by name).

    Name clash: a user skill named like a built-in is NOT loaded; the built-in wins and the clash
    is logged and listed in `problems()`. Built-ins carry the runtime's own contract (a toolset's
    skill says "enable_toolset|NAME"), so a user file must not silently replace it; rename the user
    skill to keep both.

    Hot reload is check-on-use, not a file watcher: every serving call runs `refresh()`, which at
    most once per `refresh_interval_s` (injectable clock) lists the skill folders and stats each
    SKILL.md (mtime_ns, size), re-parsing only files whose stat changed. Why not a watcher:
    no extra dependency (watchdog/inotify), no background thread inside an actor, and it is exact
    when asked: a session sees an edit on its next request, never a half-applied one. The cost is a
    few stat calls per request. (An edit that keeps both size and mtime_ns is missed; with
    nanosecond mtimes that needs deliberate effort.)

    A removed file disappears. An edited file that is now invalid (a typo, a half-written save)
    keeps serving its LAST GOOD version; the reason is logged and listed in `problems()`.

    Exclusions (V3): skill name -> targets, a target being a session id or a phone key. An excluded
    session gets nothing of that skill: not in its index, version or available-list, and reading it
    answers exactly as for an unknown name. Exclusions live in memory; initial ones come from
    config (`{skill: [targets]}`), so a restart returns to the configured set.
    """

    def __init__(self, builtin_dir: str | Path | Sequence[str | Path], user_dir: str | Path | None = None, *,
                 exclusions: Mapping[str, Iterable[str]] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 refresh_interval_s: float = REFRESH_INTERVAL_S,
                 max_skill_bytes: int = MAX_SKILL_BYTES, read_timeout_s: float = READ_TIMEOUT_S):
        self._max_skill_bytes = max_skill_bytes
        self._read_timeout_s = read_timeout_s
        builtin = [builtin_dir] if isinstance(builtin_dir, (str, Path)) else list(builtin_dir)
        self._sources: list[tuple[Path, bool]] = [(Path(d), True) for d in builtin]
        if user_dir is not None:
            self._sources.append((Path(user_dir), False))
        self._files: dict[Path, _FileState] = {}
        # one look at the folders at a time: the store's watcher and a request both refresh from
        # worker threads, and a slow look that read a half-written SKILL.md must not record its
        # stale verdict over the one a later look made of the finished file
        self._refreshing = threading.RLock()
        self._clock = clock
        self._refresh_interval_s = refresh_interval_s
        self._last_refresh: float | None = None
        self._skills: list[Skill] = []
        self._by_name: dict[str, Skill] = {}
        self._problems: dict[str, str] = {}
        self._exclusions: dict[str, set[str]] = {}
        self.generation = 0  # +1 whenever what some session sees may have changed
        for name, targets in _checked_exclusions(exclusions or {}).items():
            for target in targets:
                self.exclude(name, target)
        self.refresh(force=True)

    # --- reload ---------------------------------------------------------------------------------
    def refresh_due(self) -> bool:
        """True when the next look at the skills will read the folders (a refresh is due)."""
        return self._last_refresh is None or self._clock() - self._last_refresh >= self._refresh_interval_s

    def refresh(self, force: bool = False) -> bool:
        """Pick up added, edited and removed SKILL.md files. Rate-limited unless `force`.
        Returns True when the served skills changed."""
        with self._refreshing:
            if not force and not self.refresh_due():
                return False
            self._last_refresh = self._clock()
            for directory, builtin in self._sources:
                self._scan(directory, builtin)
            changed = self._merge()
            if changed:
                self.generation += 1
            return changed

    def _scan(self, directory: Path, builtin: bool) -> None:
        try:
            folders = [entry for entry in os.scandir(directory)
                       if not entry.name.startswith(".") and entry.is_dir()]
        except FileNotFoundError:
            folders = []  # a user dir may appear later; a missing built-in dir shows in problems()
        except OSError as exc:
            log.warning("cannot list skills in %s (%s); keeping what was loaded", directory, exc)
            return
        present = set()
        root = os.path.realpath(directory)
        for folder in folders:
            path = directory / folder.name / SKILL_FILE
            try:
                stat = path.stat()
            except OSError:
                continue  # a folder without SKILL.md is not a skill
            present.add(path)
            signature = (stat.st_mtime_ns, stat.st_size)
            state = self._files.get(path)
            if state is not None and state.signature == signature:
                continue
            last_good = state.skill if state is not None else None
            try:
                if os.path.commonpath([root, os.path.realpath(path)]) != root:
                    raise SkillFormatError("SKILL.md leads out of the skills folder (a symlink); copy the skill in instead")
                skill = load_skill(path, builtin, stat.st_mtime_ns, self._max_skill_bytes, self._read_timeout_s)
            except Exception as exc:  # noqa: BLE001 - a rejected skill never stops the store
                if not isinstance(exc, SkillFormatError):
                    exc = SkillFormatError(f"{type(exc).__name__}: {exc}")
                problem = (f"invalid edit, still serving the last good version: {exc}"
                           if last_good is not None else str(exc))
                self._files[path] = _FileState(signature, last_good, problem)
            else:
                self._files[path] = _FileState(signature, skill)
        for path in [p for p in self._files if p.parent.parent == directory and p not in present]:
            del self._files[path]

    def _merge(self) -> bool:
        problems: dict[str, str] = {}
        for directory, builtin in self._sources:
            if builtin and not directory.is_dir():
                problems[str(directory)] = "the built-in skills folder does not exist"
        builtins, users = [], []
        for path, state in self._files.items():
            if state.problem:
                problems[str(path)] = state.problem
            if state.skill is not None:
                (builtins if state.skill.builtin else users).append(state.skill)
        builtins.sort(key=lambda s: s.name)
        builtin_names = {s.name for s in builtins}
        shadowed = [s for s in users if s.name in builtin_names]
        for skill in shadowed:
            problems[str(skill.path)] = f"not loaded: a built-in skill is named {skill.name!r}; rename this one"
        users = sorted((s for s in users if s.name not in builtin_names), key=lambda s: (-s.mtime_ns, s.name))
        skills = builtins + users
        for where, reason in problems.items():
            if self._problems.get(where) != reason:
                log.warning("skill rejected: %s: %s", reason, where)
        changed = [(s.name, s.body_version, s.description) for s in skills] != \
                  [(s.name, s.body_version, s.description) for s in self._skills]
        if changed:
            log.info("skills now: %s", ", ".join(s.name for s in skills) or "(none)")
        self._skills, self._problems = skills, problems
        self._by_name = {s.name: s for s in skills}
        return changed

    # --- admin view (ignores exclusions) --------------------------------------------------------
    def skills(self) -> list[Skill]:
        """Every served skill, in index order, whoever it is excluded for."""
        self.refresh()
        return list(self._skills)

    def get(self, name: str) -> Skill | None:
        self.refresh()
        return self._by_name.get(_normalised(name))

    def problems(self) -> dict[str, str]:
        """Path -> why that SKILL.md is not served (or is served from its last good version)."""
        self.refresh()
        return dict(self._problems)

    # --- exclusions (V3) ------------------------------------------------------------------------
    def exclude(self, name: str, target: str) -> bool:
        """Close skill `name` for a session id or phone key. True if it was open before.
        The skill need not exist yet: the exclusion applies when it appears."""
        name, target = _normalised(name), target.strip()
        problem = name_problem(name)
        if problem:
            raise ValueError(f"cannot exclude: {problem}")
        if not target:
            raise ValueError("cannot exclude: the target (session id or phone key) is empty")
        targets = self._exclusions.setdefault(name, set())
        if target in targets:
            return False
        targets.add(target)
        self.generation += 1
        return True

    def include(self, name: str, target: str) -> bool:
        """Reopen skill `name` for a target. True if it had been excluded."""
        name, target = _normalised(name), target.strip()
        targets = self._exclusions.get(name, set())
        if target not in targets:
            return False
        targets.discard(target)
        if not targets:
            del self._exclusions[name]
        self.generation += 1
        return True

    def exclusions(self) -> dict[str, list[str]]:
        return {name: sorted(targets) for name, targets in sorted(self._exclusions.items())}

    def is_excluded(self, name: str, session_id: str, phone_key: str = "") -> bool:
        targets = self._exclusions.get(name)
        if not targets:
            return False
        return session_id in targets or (bool(phone_key) and phone_key in targets)

    # --- serving one session --------------------------------------------------------------------
    def visible(self, session_id: str, phone_key: str = "") -> list[Skill]:
        """The skills this session may see, in index order."""
        self.refresh()
        return [s for s in self._skills if not self.is_excluded(s.name, session_id, phone_key)]

    def index(self, session_id: str, phone_key: str = "") -> list[SkillEntry]:
        """The prompt's skills index (S4): name + trigger per skill, for this session."""
        return [_entry(s) for s in self.visible(session_id, phone_key)]

    def skills_version(self, session_id: str, phone_key: str = "") -> str:
        """8 hex of what this session may see (names, descriptions, bodies, in order)."""
        return _version(self.visible(session_id, phone_key))

    def body_versions(self, session_id: str, phone_key: str = "") -> dict[str, str]:
        return {s.name: s.body_version for s in self.visible(session_id, phone_key)}

    def snapshot(self, session_id: str, phone_key: str = "") -> SessionSkills:
        """Version, index and body versions in one consistent look (one refresh)."""
        skills = self.visible(session_id, phone_key)
        return SessionSkills(_version(skills), [_entry(s) for s in skills],
                             {s.name: s.body_version for s in skills})

    def read(self, name: str, session_id: str, phone_key: str = "") -> tuple[bool, str, str]:
        """(found, text, body_version) for read_skill. `name` is only looked up among the loaded
        skills this session may see, never joined to a path, so `../../etc/passwd` is merely an
        unknown name. Forgiving: surrounding spaces and capitals are ignored."""
        skills = self.visible(session_id, phone_key)
        wanted = _normalised(name)
        for skill in skills:
            if skill.name == wanted:
                return True, skill.body, skill.body_version
        return False, _not_found(name, [s.name for s in skills]), ""


def _normalised(name: str) -> str:
    return name.strip().lower() if isinstance(name, str) else ""


def _entry(skill: Skill) -> SkillEntry:
    return SkillEntry(name=skill.name, description=skill.description, builtin=skill.builtin)


def _version(skills: list[Skill]) -> str:
    return short_hash(*(part for s in skills for part in (s.name, s.description, s.body_version)))


def _not_found(name: str, available: list[str]) -> str:
    shown = " ".join(str(name).split())[:64] if isinstance(name, str) else ""
    if not shown:
        text = "skill name missing"
    else:
        text = f"skill {shown} not found"
        close = difflib.get_close_matches(_normalised(name), available, n=1, cutoff=0.75)
        if close:
            text += f"; did you mean {close[0]}?"
    return f"{text}; available: {', '.join(available) or '(none)'}"


def _checked_exclusions(config: Mapping) -> dict[str, list[str]]:
    """Validate the config's `{skill: [targets]}`; a bad shape is a clear ValueError at startup."""
    if not isinstance(config, Mapping):
        raise ValueError("skill exclusions must be a mapping {skill: [session ids or phone keys]}")
    checked = {}
    for name, targets in config.items():
        if isinstance(targets, str):
            targets = [targets]
        if not isinstance(targets, (list, tuple, set)) or not all(isinstance(t, str) for t in targets):
            raise ValueError(f"skill exclusions for {name!r} must be a list of session ids or phone keys")
        checked[name] = list(targets)
    return checked
