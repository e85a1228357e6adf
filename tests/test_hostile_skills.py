"""Issue 17, finding 4: one user skill file must never stop the runtime. Each attack is a real
file in the user's skills folder, served by a real SkillStore over ipc:// sockets; every one is
rejected with a reason ("skill rejected: ...") while the good skills keep being served at once."""
import logging
import os
from pathlib import Path

import anyio
import pytest

import protocol as p
from harness import override, until
from core.skills import SkillRepository
from test_skill_store_actor import serving, write_skill

GOOD = "cooking"


def nested_brackets(user: Path) -> Path:
    path = user / "deep" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: deep\ndescription: " + "[" * 5000 + "\n---\nbody\n")
    return path


def yaml_bomb(user: Path) -> Path:
    path = user / "bomb" / "SKILL.md"
    path.parent.mkdir(parents=True)
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]")
    path.write_text("---\nname: bomb\ndescription: boom\n" + "\n".join(lines) + "\n---\nbody\n")
    return path


def fifo(user: Path) -> Path:
    path = user / "pipe" / "SKILL.md"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    return path


def sparse_4gb(user: Path) -> Path:
    path = user / "huge" / "SKILL.md"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as f:
        f.write(b"---\nname: huge\ndescription: x\n---\n")
        f.truncate(4 << 30)
    return path


def dev_zero(user: Path) -> Path:
    path = user / "zero" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.symlink_to("/dev/zero")
    return path


def fifty_mb(user: Path) -> Path:
    path = user / "fat" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\nname: fat\ndescription: x\n---\n" + b"x" * (50 << 20))
    return path


def folder_link_out(user: Path) -> Path:
    outside = user.parent / "outside" / "secret"
    write_skill(outside.parent, "secret", "a skill outside the skills folder", "TOP SECRET")
    (user / "secret").symlink_to(outside, target_is_directory=True)
    return user / "secret" / "SKILL.md"


def not_utf8(user: Path) -> Path:
    path = user / "latin" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\nbody\n")
    return path


ATTACKS = {
    "5000 nested [": (nested_brackets, "nested too deeply"),
    "YAML alias bomb": (yaml_bomb, "aliases"),
    "FIFO": (fifo, "not a regular file"),
    "4 GB sparse file": (sparse_4gb, "the limit is 65536"),
    "link to /dev/zero": (dev_zero, "leads out of the skills folder"),
    "50 MB file": (fifty_mb, "the limit is 65536"),
    "folder symlink out of the skills dir": (folder_link_out, "leads out of the skills folder"),
    "not UTF-8": (not_utf8, "not UTF-8"),
}


@pytest.fixture
def user_dir(tmp_path):
    user = tmp_path / "user-skills"
    write_skill(user, GOOD, "recipes step by step", "Boil water.")
    return user


@pytest.mark.parametrize("attack", ATTACKS, ids=list(ATTACKS))
async def test_a_hostile_skill_file_is_rejected_and_the_store_keeps_serving(attack, user_dir, ipc_config, caplog):  # noqa: F811
    make, reason = ATTACKS[attack]
    config = override(ipc_config, skills={"builtin_dir": "skills", "user_dir": str(user_dir)})
    with caplog.at_level(logging.WARNING, logger="porfiry.skills"):
        async with serving(config, refresh_interval_s=0.05) as client:
            bad = make(user_dir)  # added while the store runs: picked up by its next look
            await until(lambda: any(str(bad) in r.getMessage() for r in caplog.records if r.getMessage().startswith("skill rejected:")))
            with anyio.fail_after(5):
                index = await client.ask("skills", p.SkillIndexRequest(), session="s1")
                body = await client.ask("skills", p.SkillRead(name=GOOD), session="s1")
                stolen = await client.ask("skills", p.SkillRead(name=bad.parent.name), session="s1")
    assert [e.name for e in index.entries if not e.builtin] == [GOOD]
    assert body.found and body.text == "Boil water."
    assert not stolen.found and "TOP SECRET" not in stolen.text
    rejected = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skill rejected:")]
    assert any(reason in line and str(bad) in line for line in rejected), rejected


def test_the_size_check_comes_before_reading(user_dir, tmp_path):
    """A 50 MB file is refused from its size alone: nothing of it is read into memory."""
    fat = fifty_mb(user_dir)
    repo = SkillRepository(tmp_path / "none", user_dir, max_skill_bytes=1000)
    assert f"is {fat.stat().st_size} bytes" in repo.problems()[str(fat)] and "the limit is 1000" in repo.problems()[str(fat)]
    assert [s.name for s in repo.skills()] == [GOOD]


def test_a_file_that_cannot_be_read_in_time_is_rejected(user_dir, tmp_path, monkeypatch):
    """The read timeout: a read that hangs (a stuck network file system) is abandoned."""
    import core.skills_format as fmt

    real_read = os.read
    slow = write_skill(user_dir, "slow", "slow", "x")

    def hanging_read(fd, n):
        if os.readlink(f"/proc/self/fd/{fd}") == str(slow):
            import time
            time.sleep(1.0)  # the hanging read itself: the behaviour under test
        return real_read(fd, n)

    monkeypatch.setattr(fmt.os, "read", hanging_read)
    repo = SkillRepository(tmp_path / "none", user_dir, read_timeout_s=0.2)
    assert "took longer than 0.2 s" in repo.problems()[str(slow)]
    assert [s.name for s in repo.skills()] == [GOOD]
