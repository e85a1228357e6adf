"""SessionActor <-> SkillStore (S10, V1-V4) and the skills admin commands."""
import msgspec

from protocol.base import Msg


class SkillEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    description: str
    builtin: bool = False


class SkillIndexRequest(Msg):
    """For the session in the envelope; phone_key lets exclusions by phone key apply."""

    phone_key: str = ""


class SkillIndex(Msg):
    version: str
    entries: list[SkillEntry]
    body_versions: dict[str, str] = {}


class SkillsChanged(Msg):
    """SkillStore -> SessionActor: what some session may see changed (a SKILL.md added, edited or
    removed, an exclusion). Sessions keep their skills index until told, instead of asking for it
    on every step; the next step of each session asks again."""

    generation: int = 0


class SkillRead(Msg):
    name: str
    phone_key: str = ""


class SkillBody(Msg):
    name: str
    found: bool
    text: str  # the body, or "skill X not found; available: a, b"
    version: str
    body_version: str = ""  # hash of this skill's body, to tell the session it changed since read


class SkillsAdmin(Msg):
    """op: list | show | exclude | include | reload. target: a session id or phone key."""

    op: str
    name: str = ""
    target: str = ""


class SkillsAdminReply(Msg):
    text: str
