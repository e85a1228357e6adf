"""The Agent Skills file format: `<dir>/<name>/SKILL.md`, YAML frontmatter + Markdown body.

Parsing is strict about the two keys the runtime relies on (`name`, `description`) and tolerant
of everything else (`license`, `compatibility`, `metadata`, `allowed-tools`, future keys), so a
skill written for another Agent Skills client loads here unchanged.
"""
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SKILL_FILE = "SKILL.md"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_SKILL_BYTES = 256 * 1024  # a skill is a recipe, not a book; keeps one bad file from eating memory
_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*", re.ASCII)


class SkillFormatError(ValueError):
    """A SKILL.md that cannot be served; the message says what to fix."""


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
    try:
        meta = yaml.safe_load("".join(lines[1:closing]))
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


def load_skill(path: Path, builtin: bool, mtime_ns: int) -> Skill:
    """Read and parse one SKILL.md; every failure (size, encoding, format) is a SkillFormatError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkillFormatError(f"cannot read the file: {exc.strerror or exc}") from None
    if len(data) > MAX_SKILL_BYTES:
        raise SkillFormatError(f"SKILL.md is {len(data)} bytes; the limit is {MAX_SKILL_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFormatError(f"SKILL.md is not UTF-8 (byte {exc.start})") from None
    name, description, body, extra = parse_skill(text, path.parent.name)
    return Skill(name=name, description=description, body=body, builtin=builtin, path=path,
                 mtime_ns=mtime_ns, body_version=short_hash(body), extra=extra)
