"""The Agent Skills file format: `<dir>/<name>/SKILL.md`, YAML frontmatter + Markdown body.

Parsing is strict about the two keys the runtime relies on (`name`, `description`) and tolerant
of everything else (`license`, `compatibility`, `metadata`, `allowed-tools`, future keys), so a
skill written for another Agent Skills client loads here unchanged.
"""
import hashlib
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SKILL_FILE = "SKILL.md"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_SKILL_BYTES = 64 * 1024  # a skill is a recipe, not a book (skills.max_skill_bytes)
READ_TIMEOUT_S = 2.0  # skills.read_timeout_s
MAX_FRONTMATTER_DEPTH = 32  # nested [ and {: PyYAML's scanner is quadratic in them (5,000 took seconds)
_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*", re.ASCII)


class SkillFormatError(ValueError):
    """A SKILL.md that cannot be served; the message says what to fix."""


class _StrictLoader(yaml.SafeLoader):
    """safe_load without aliases: a frontmatter is two short keys, and `*alias` is how YAML
    bombs multiply a few bytes into gigabytes."""

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed", event.start_mark)
        return super().compose_node(parent, index)


@dataclass(frozen=True)
class Skill:
    """One loaded skill. `body_version` is a short hash of the body: it tells a session that a
    skill it read has changed since."""

    name: str
    description: str  # whitespace collapsed to one line: it is the trigger in the prompt index
    body: str
    builtin: bool
    path: Path
    mtime_ns: int
    body_version: str
    extra: dict = field(default_factory=dict)  # the tolerated optional frontmatter keys


def short_hash(*parts: str) -> str:
    """8 hex digits of blake2b over the parts (NUL-separated): stable across runs and processes."""
    digest = hashlib.blake2b(digest_size=4)
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


def name_problem(name: object) -> str:
    """Why `name` is not a valid skill name, or "" when it is."""
    if not isinstance(name, str):
        return f"name must be text, not {type(name).__name__}"
    if not name:
        return "name is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"name is {len(name)} characters; the limit is {MAX_NAME_CHARS}"
    if not _NAME_RE.fullmatch(name):
        return (f"name {name!r} may hold only lowercase letters, digits and single hyphens,"
                " not starting or ending with a hyphen")
    return ""


def split_frontmatter(text: str) -> tuple[dict, str]:
    """(frontmatter mapping, body). Raises SkillFormatError naming the problem."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError("SKILL.md must start with a '---' line opening the YAML frontmatter")
    for closing, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            break
    else:
        raise SkillFormatError("the frontmatter is not closed by a '---' line")
    frontmatter = "".join(lines[1:closing])
    depth = deepest = 0
    for char in frontmatter:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    if deepest > MAX_FRONTMATTER_DEPTH:
        raise SkillFormatError(f"frontmatter is nested too deeply ({deepest} levels; the limit is {MAX_FRONTMATTER_DEPTH})")
    try:
        meta = yaml.load(frontmatter, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
    except RecursionError:
        raise SkillFormatError("frontmatter is nested too deeply") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at frontmatter line {where.line + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SkillFormatError(f"frontmatter is not valid YAML{at}: {problem}") from None
    if meta is None:
        raise SkillFormatError("the frontmatter is empty; it needs name and description")
    if not isinstance(meta, dict):
        raise SkillFormatError("the frontmatter must be a mapping (name: ..., description: ...)")
    return meta, "".join(lines[closing + 1:]).strip()


def parse_skill(text: str, folder: str) -> tuple[str, str, str, dict]:
    """(name, description, body, extra keys) of a SKILL.md found in `folder`."""
    meta, body = split_frontmatter(text)
    if "name" not in meta:
        raise SkillFormatError("the frontmatter has no name")
    name = meta["name"]
    problem = name_problem(name)
    if problem:
        raise SkillFormatError(problem)
    if name != folder:
        raise SkillFormatError(f"name {name!r} differs from its folder {folder!r}; they must be equal")
    description = meta.get("description")
    if description is None:
        raise SkillFormatError("the frontmatter has no description (what the skill is for and when to use it)")
    if not isinstance(description, str):
        raise SkillFormatError(f"description must be text, not {type(description).__name__}")
    description = description.strip()
    if not description:
        raise SkillFormatError("description is empty")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillFormatError(f"description is {len(description)} characters; the limit is {MAX_DESCRIPTION_CHARS}")
    extra = {key: value for key, value in meta.items() if key not in ("name", "description")}
    return name, " ".join(description.split()), body, extra


def read_bounded(path: Path, max_bytes: int = MAX_SKILL_BYTES, timeout_s: float = READ_TIMEOUT_S) -> bytes:
    """The bytes of a file that may be hostile: a regular file only (not a FIFO, a device, a link
    to /dev/zero), its size checked before reading, never more than `max_bytes` read, within
    `timeout_s` (a worker thread reads; one that hangs is abandoned, the file rejected)."""
    outcome: list = []

    def read() -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)  # a FIFO opens without a writer
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise SkillFormatError("SKILL.md is not a regular file")
                if info.st_size > max_bytes:
                    raise SkillFormatError(f"SKILL.md is {info.st_size} bytes; the limit is {max_bytes}")
                chunks, total = [], 0
                while total <= max_bytes:
                    chunk = os.read(fd, min(1 << 16, max_bytes + 1 - total))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    total += len(chunk)
                if total > max_bytes:
                    raise SkillFormatError(f"SKILL.md grew past the limit of {max_bytes} bytes while being read")
                outcome.append(b"".join(chunks))
            finally:
                os.close(fd)
        except SkillFormatError as exc:
            outcome.append(exc)
        except OSError as exc:
            outcome.append(SkillFormatError(f"cannot read the file: {exc.strerror or exc}"))

    reader = threading.Thread(target=read, name="skill-read", daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not outcome:
        raise SkillFormatError(f"reading SKILL.md took longer than {timeout_s:g} s")
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def load_skill(path: Path, builtin: bool, mtime_ns: int, max_bytes: int = MAX_SKILL_BYTES,
               timeout_s: float = READ_TIMEOUT_S) -> Skill:
    """Read and parse one SKILL.md; every failure (type, size, time, encoding, format, a parser
    that recurses or runs out of memory) is a SkillFormatError."""
    data = read_bounded(path, max_bytes, timeout_s)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFormatError(f"SKILL.md is not UTF-8 (byte {exc.start})") from None
    try:
        name, description, body, extra = parse_skill(text, path.parent.name)
    except SkillFormatError:
        raise
    except RecursionError:
        raise SkillFormatError("SKILL.md is nested too deeply to parse") from None
    except Exception as exc:  # noqa: BLE001 - whatever a parser does with hostile input, reject the file
        raise SkillFormatError(f"SKILL.md could not be parsed ({type(exc).__name__}: {exc})") from None
    return Skill(name=name, description=description, body=body, builtin=builtin, path=path,
                 mtime_ns=mtime_ns, body_version=short_hash(body), extra=extra)
