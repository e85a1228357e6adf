"""What the model is told about skills: the startup line (V1), the index lines (S4), and the
change notice appended to tool results (V4)."""
from collections.abc import Iterable

from protocol.skills import SkillEntry

# V1: few tokens, said once at the top of the skills index.
SKILLS_HOWTO = "Skills (name: when to use; read_skill|name gives its recipe):"


def render_index(entries: Iterable[SkillEntry], howto: str = SKILLS_HOWTO) -> str:
    """The prompt's skills section: the howto line, then one `name: trigger` line per skill.
    Empty when there are no skills (no point paying for the howto)."""
    lines = [f"{entry.name}: {entry.description}" for entry in entries]
    return "\n".join([howto, *lines]) if lines else ""


class SkillChangeTracker:
    """One per session: what this session last saw of the skills, to tell it about changes (V4).

    There is no push mid-conversation; instead the session calls `annotate()` with the current
    snapshot for every tool result and appends what it returns. It returns "" when nothing changed
    since the last call (the issue: the version is carried only where it changed), else

        skills_version: ab12cd34
        skills_changed: notes, cooking (new); removed: tea
        re-read before relying on it: cooking (changed since you read it)

    The first call only records the version: the prompt's index was built from the current skills
    (it is rebuilt on every request, S4), so there is nothing to announce yet.

    Skills read via read_skill are remembered with their body_version (`note_read`); a read skill
    whose body changed is named in the re-read line each time the version changes, until the
    session reads it again; one that vanished (removed, or excluded) is named once.
    """

    __slots__ = ("seen_version", "_seen_names", "_read")  # one per session

    def __init__(self) -> None:
        self.seen_version: str | None = None
        self._seen_names: list[str] = []
        self._read: dict[str, str] = {}

    def state(self) -> tuple[str | None, list[str], dict[str, str]]:
        """What the journal keeps of it: (version seen, names seen, skills read -> body version)."""
        return self.seen_version, list(self._seen_names), dict(self._read)

    def restore(self, seen_version: str | None, seen_names: list[str], read: dict[str, str]) -> None:
        self.seen_version, self._seen_names, self._read = seen_version, list(seen_names), dict(read)

    def note_read(self, name: str, body_version: str) -> None:
        """The session received this skill's body (a successful read_skill)."""
        if body_version:
            self._read[name] = body_version

    def annotate(self, current_version: str, entries: Iterable[SkillEntry],
                 body_versions: dict[str, str]) -> str:
        """The suffix for a tool result: "" when the skills are unchanged since the last call."""
        names = [entry.name for entry in entries]
        first = self.seen_version is None
        changed = current_version != self.seen_version
        previous = self._seen_names
        self.seen_version, self._seen_names = current_version, names
        if first or not changed:
            return ""
        known = set(previous)
        listed = ", ".join(f"{n} (new)" if n not in known else n for n in names) or "(none)"
        removed = [n for n in previous if n not in set(names)]
        lines = [f"skills_version: {current_version}",
                 f"skills_changed: {listed}" + (f"; removed: {', '.join(removed)}" if removed else "")]
        stale = []
        for name, read_version in list(self._read.items()):
            now = body_versions.get(name)
            if now is None:
                stale.append(f"{name} (no longer available)")
                del self._read[name]  # said once; it cannot be re-read
            elif now != read_version:
                stale.append(f"{name} (changed since you read it)")
        if stale:
            lines.append("re-read before relying on it: " + ", ".join(stale))
        return "\n".join(lines)
