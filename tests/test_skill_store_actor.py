"""SkillStore through real sockets: index, read, exclusion, admin, and an edit on disk."""
import os
import shutil
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

import protocol as p
from actors.base import AskTimeout, Endpoint
from actors.skill_store import SkillStore
from harness import override, start_killable, until

REPO = Path(__file__).resolve().parent.parent


def write_skill(root: Path, name: str, description: str, body: str, mtime: float | None = None) -> Path:
    path = root / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: \"{description}\"\n---\n{body}\n", encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def user_dir(tmp_path):
    user = tmp_path / "user-skills"
    write_skill(user, "cooking", "recipes step by step", "Boil water.", mtime=1_000_000)
    write_skill(user, "weather", "forecasts", "Look outside.", mtime=2_000_000)
    return user


@pytest.fixture
def config(user_dir, ipc_config, tmp_path):
    builtin = tmp_path / "builtin" / "media"  # the real media skill alone: the index stays small
    builtin.mkdir(parents=True)
    shutil.copyfile(REPO / "toolsets" / "media" / "SKILL.md", builtin / "SKILL.md")
    return override(ipc_config, skills={"builtin_dir": str(builtin.parent), "toolsets_dir": str(tmp_path / "no-toolsets"),
                                        "user_dir": str(user_dir), "exclusions": {"weather": ["phone-kid"]}})


@asynccontextmanager
async def serving(config, **kw):
    store = SkillStore(config, **kw)
    async with anyio.create_task_group() as tg:
        await tg.start(store.run)
        client = Endpoint(config, name="test")
        async with client.running():
            yield client
        tg.cancel_scope.cancel()


async def test_index_has_builtins_first_then_user_newest_first(config):
    async with serving(config) as client:
        index = await client.ask("skills", p.SkillIndexRequest(), session="s1")
    assert isinstance(index, p.SkillIndex)
    assert [(e.name, e.builtin) for e in index.entries] == [
        ("media", True), ("weather", False), ("cooking", False)]
    assert set(index.body_versions) == {"media", "weather", "cooking"}
    assert len(index.version) == 8


async def test_read_returns_the_body_and_unknown_names_list_the_available(config):
    async with serving(config) as client:
        body = await client.ask("skills", p.SkillRead(name="Cooking "), session="s1")
        missing = await client.ask("skills", p.SkillRead(name="../../etc/passwd"), session="s1")
        index = await client.ask("skills", p.SkillIndexRequest(), session="s1")
    assert body.found is True and body.text.strip() == "Boil water."
    assert body.body_version == index.body_versions["cooking"] and body.version == index.version
    assert missing.found is False and missing.body_version == ""
    assert missing.text == "skill ../../etc/passwd not found; available: media, weather, cooking"


async def test_exclusion_from_config_hides_a_skill_by_phone_key_only(config):
    async with serving(config) as client:
        kid = await client.ask("skills", p.SkillIndexRequest(phone_key="phone-kid"), session="s1")
        adult = await client.ask("skills", p.SkillIndexRequest(phone_key="phone-mum"), session="s2")
        kid_read = await client.ask("skills", p.SkillRead(name="weather", phone_key="phone-kid"), session="s1")
    assert [e.name for e in kid.entries] == ["media", "cooking"]
    assert [e.name for e in adult.entries] == ["media", "weather", "cooking"]
    assert kid.version != adult.version
    assert kid_read.found is False and kid_read.text == "skill weather not found; available: media, cooking"


async def test_admin_exclude_and_include_at_runtime(config):
    async with serving(config) as client:
        excluded = await client.ask("skills", p.SkillsAdmin(op="exclude", name="cooking", target="s1"))
        hidden = await client.ask("skills", p.SkillIndexRequest(), session="s1")
        other = await client.ask("skills", p.SkillIndexRequest(), session="s2")
        listing = await client.ask("skills", p.SkillsAdmin(op="list"))
        included = await client.ask("skills", p.SkillsAdmin(op="include", name="cooking", target="s1"))
        back = await client.ask("skills", p.SkillIndexRequest(), session="s1")
        bad = await client.ask("skills", p.SkillsAdmin(op="explode"))
    assert excluded == p.SkillsAdminReply(text="skill cooking excluded for s1")
    assert "cooking" not in [e.name for e in hidden.entries]
    assert "cooking" in [e.name for e in other.entries]
    assert "[excluded for: s1]" in listing.text
    assert included == p.SkillsAdminReply(text="skill cooking open again for s1")
    assert "cooking" in [e.name for e in back.entries]
    assert bad.text.startswith("unknown op 'explode'")


async def test_a_skill_edited_on_disk_shows_a_new_version(config, user_dir):
    async with serving(config, refresh_interval_s=0) as client:
        before = await client.ask("skills", p.SkillIndexRequest(), session="s1")
        again = await client.ask("skills", p.SkillIndexRequest(), session="s1")
        write_skill(user_dir, "cooking", "recipes step by step", "Boil water. Add salt.", mtime=3_000_000)
        after = await client.ask("skills", p.SkillIndexRequest(), session="s1")
        body = await client.ask("skills", p.SkillRead(name="cooking"), session="s1")
        write_skill(user_dir, "tea", "how to brew tea", "Steep 3 minutes.", mtime=4_000_000)
        added = await client.ask("skills", p.SkillIndexRequest(), session="s1")
    assert again.version == before.version  # nothing changed, nothing new
    assert after.version != before.version
    assert after.body_versions["cooking"] != before.body_versions["cooking"]
    assert after.body_versions["weather"] == before.body_versions["weather"]
    assert body.text.strip() == "Boil water. Add salt." and body.version == after.version
    assert [e.name for e in added.entries] == ["media", "tea", "cooking", "weather"]


async def test_admin_reload_picks_up_an_edit_inside_the_rate_limit(config, user_dir):
    async with serving(config, refresh_interval_s=3600) as client:
        before = await client.ask("skills", p.SkillIndexRequest(), session="s1")
        write_skill(user_dir, "weather", "forecasts and rain", "Look outside.", mtime=5_000_000)
        stale = await client.ask("skills", p.SkillIndexRequest(), session="s1")
        reload = await client.ask("skills", p.SkillsAdmin(op="reload"))
        fresh = await client.ask("skills", p.SkillIndexRequest(), session="s1")
    assert stale.version == before.version
    assert reload.text.startswith("reloaded: 3 skills, changed")
    assert fresh.version != before.version
    assert [e.description for e in fresh.entries if e.name == "weather"] == ["forecasts and rain"]


async def test_bad_exclusions_in_config_fail_start_up(user_dir, ipc_config):
    config = override(ipc_config, skills={"user_dir": str(user_dir), "exclusions": {"Bad Name!": ["s1"]}})
    with pytest.raises(BaseException) as caught:
        with anyio.fail_after(5):
            async with serving(config):
                pass
    assert "cannot exclude" in _messages(caught.value)


def _messages(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return " ".join(_messages(e) for e in exc.exceptions)
    return str(exc)


class SwallowsReads(SkillStore):
    """Takes SkillReads and never answers them: a store whose process dies with the request."""

    async def handle(self, msg):
        if isinstance(msg.body, p.SkillRead):
            SwallowsReads.swallowed += 1
            return
        await super().handle(msg)


@asynccontextmanager
async def session_and_store(config, first_store=SkillStore):
    """A real SessionActor (and the toolset executor it needs to start) reading skills from a store
    that `session.kill()` ends and `session.restart()` follows with a SkillStore on its address."""
    from actors.session import SessionActor
    from actors.toolsets import ToolsetSupervisor

    async with anyio.create_task_group() as tg:
        kill, restart = await start_killable(tg, first_store(config))
        await tg.start(ToolsetSupervisor(config).run)
        session = SessionActor(config)
        await tg.start(session.run)
        session.kill = kill
        session.restart = lambda: restart(SkillStore(config))
        yield session
        tg.cancel_scope.cancel()


async def test_a_skill_read_lost_with_the_store_is_asked_again_of_its_successor(config):
    """The user asked for a film as the skill store's process died with the read of its skill:
    the read is asked again (reading changes nothing) and the turn gets the skill's text."""
    config = override(config, supervisor={"ask_timeout_s": 0.5})
    SwallowsReads.swallowed = 0
    async with session_and_store(config, SwallowsReads) as session:
        async with anyio.create_task_group() as tg:
            got = {}

            async def read():
                got["body"] = await session.read_skill("s1", "", "media")

            tg.start_soon(read)
            await until(lambda: SwallowsReads.swallowed)
            session.kill()
            await session.restart()
    assert got["body"].found and "media_search" in got["body"].text
    assert session.skill_retries == 1


async def test_a_skill_store_that_stays_silent_is_a_clear_failure_not_a_hang(config):
    config = override(config, supervisor={"ask_timeout_s": 0.3})
    SwallowsReads.swallowed = 0
    async with session_and_store(config, SwallowsReads) as session:
        with anyio.fail_after(3):
            with pytest.raises(AskTimeout):
                await session.read_skill("s1", "", "media")
    # it answered the Ping (alive, only not answering reads): asked once more, then given up
    assert SwallowsReads.swallowed == 2 and session.skill_retries == 1
