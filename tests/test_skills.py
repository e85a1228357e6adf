"""Skills: format, merge order, hot reload, per-session exclusion, versions, change notices."""
import logging
import os
import re
import shutil
from pathlib import Path

import pytest

from core.skills import SKILLS_HOWTO, SkillChangeTracker, SkillRepository, render_index
from core.skills_admin import run_admin

REAL_SKILLS = Path(__file__).resolve().parent.parent / "toolsets"


def write_skill(root: Path, folder: str, *, name: str | None = None, description: str = "when testing",
                body: str = "step one", mtime: float | None = None, raw: str | None = None) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is None:
        raw = f"---\nname: {name or folder}\ndescription: \"{description}\"\n---\n{body}\n"
    path.write_text(raw, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def dirs(tmp_path):
    builtin, user = tmp_path / "builtin", tmp_path / "user"
    builtin.mkdir()
    user.mkdir()
    write_skill(builtin, "media", description="films: search, details, playback", body="call enable_toolset|media")
    return builtin, user


def names(repo, session="s1", phone=""):
    return [entry.name for entry in repo.index(session, phone)]


# --- format ---------------------------------------------------------------------------------------
def test_valid_skill_with_optional_keys_loads(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "cooking", raw="---\nname: cooking\ndescription: >\n  recipes and\n  timers\n"
                "license: MIT\ncompatibility: any\nmetadata:\n  author: me\nallowed-tools: show_text\n---\n\n"
                "Boil water.\n")
    repo = SkillRepository(builtin, user, clock=manual_clock)
    cooking = repo.get("cooking")
    assert cooking.description == "recipes and timers"
    assert cooking.body == "Boil water."
    assert cooking.extra["license"] == "MIT" and cooking.extra["metadata"] == {"author": "me"}
    assert names(repo) == ["media", "cooking"]


BAD_SKILLS = {
    "uppercase name": ("Cooking", "---\nname: Cooking\ndescription: x\n---\nbody", "lowercase"),
    "leading hyphen": ("-cook", "---\nname: -cook\ndescription: x\n---\nbody", "hyphen"),
    "double hyphen": ("co--ok", "---\nname: co--ok\ndescription: x\n---\nbody", "hyphen"),
    "name too long": ("a" * 65, f"---\nname: {'a' * 65}\ndescription: x\n---\nbody", "limit is 64"),
    "name differs from folder": ("cooking", "---\nname: baking\ndescription: x\n---\nbody", "folder"),
    "missing description": ("cooking", "---\nname: cooking\n---\nbody", "no description"),
    "empty description": ("cooking", "---\nname: cooking\ndescription: '  '\n---\nbody", "empty"),
    "description too long": ("cooking", f"---\nname: cooking\ndescription: {'x' * 1025}\n---\nbody", "limit is 1024"),
    "no frontmatter": ("cooking", "# Cooking\nBoil water.", "must start with"),
    "unclosed frontmatter": ("cooking", "---\nname: cooking\ndescription: x\nbody", "not closed"),
    "bad yaml": ("cooking", "---\nname: [cooking\ndescription: x\n---\nbody", "not valid YAML"),
    "frontmatter not a mapping": ("cooking", "---\n- cooking\n---\nbody", "mapping"),
    "name not text": ("cooking", "---\nname: 12\ndescription: x\n---\nbody", "must be text"),
}


@pytest.mark.parametrize("case", BAD_SKILLS, ids=list(BAD_SKILLS))
def test_invalid_skill_is_rejected_with_reason_and_others_load(dirs, manual_clock, case, caplog):
    builtin, user = dirs
    folder, raw, reason = BAD_SKILLS[case]
    bad = write_skill(user, folder, raw=raw)
    write_skill(user, "tea", description="brewing tea")
    with caplog.at_level(logging.WARNING, logger="porfiry.skills"):
        repo = SkillRepository(builtin, user, clock=manual_clock)
    assert names(repo) == ["media", "tea"]
    assert reason in repo.problems()[str(bad)]
    assert any(reason in record.getMessage() for record in caplog.records if record.name == "porfiry.skills")


def test_rejection_is_logged_once_not_on_every_refresh(dirs, manual_clock, caplog):
    builtin, user = dirs
    write_skill(user, "cooking", raw="no frontmatter")
    with caplog.at_level(logging.WARNING, logger="porfiry.skills"):
        repo = SkillRepository(builtin, user, clock=manual_clock)
        for _ in range(3):
            manual_clock.now += 1
            repo.index("s1")
    assert sum("cooking" in r.getMessage() for r in caplog.records) == 1


def test_builtin_media_skill_loads_from_the_repository():
    repo = SkillRepository(REAL_SKILLS)
    media = repo.get("media")
    assert media is not None and media.builtin, repo.problems()
    assert "films" in media.description.lower() and "playback" in media.description
    for needed in ("enable_toolset|media", "media_search|", "media_info|<id>", "media_play|<id>",
                   "pause", "resume", "stop"):
        assert needed in media.body
    assert repo.problems() == {}


# --- order and merge ------------------------------------------------------------------------------
def test_builtins_first_alphabetical_then_user_newest_first(dirs, manual_clock):
    builtin, user = dirs
    write_skill(builtin, "alarm", description="alarms")
    write_skill(user, "old", mtime=1_000_000)
    write_skill(user, "newest", mtime=3_000_000)
    write_skill(user, "middle", mtime=2_000_000)
    repo = SkillRepository(builtin, user, clock=manual_clock)
    assert names(repo) == ["alarm", "media", "newest", "middle", "old"]
    assert [entry.builtin for entry in repo.index("s1")] == [True, True, False, False, False]


def test_user_skill_cannot_shadow_a_builtin(dirs, manual_clock):
    builtin, user = dirs
    shadow = write_skill(user, "media", description="my own media", body="do something else")
    repo = SkillRepository(builtin, user, clock=manual_clock)
    assert repo.read("media", "s1")[1] == "call enable_toolset|media"
    assert names(repo) == ["media"]
    assert "built-in" in repo.problems()[str(shadow)]


def test_missing_user_dir_is_empty_and_picked_up_when_created(dirs, manual_clock):
    builtin, user = dirs
    shutil.rmtree(user)
    repo = SkillRepository(builtin, user, clock=manual_clock)
    assert names(repo) == ["media"] and repo.problems() == {}
    write_skill(user, "tea")
    manual_clock.now += 1
    assert names(repo) == ["media", "tea"]


# --- read -----------------------------------------------------------------------------------------
def test_read_returns_body_and_forgives_case_and_spaces(dirs, manual_clock):
    repo = SkillRepository(*dirs, clock=manual_clock)
    found, text, body_version = repo.read(" Media ", "s1")
    assert found and text == "call enable_toolset|media" and len(body_version) == 8


def test_read_unknown_lists_available_and_suggests(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "cooking")
    repo = SkillRepository(builtin, user, clock=manual_clock)
    assert repo.read("weather", "s1") == (False, "skill weather not found; available: media, cooking", "")
    assert repo.read("cookin", "s1")[1] == "skill cookin not found; did you mean cooking?; available: media, cooking"
    assert repo.read("", "s1")[1] == "skill name missing; available: media, cooking"


def test_path_escape_is_just_an_unknown_name(dirs, manual_clock, tmp_path):
    builtin, user = dirs
    write_skill(tmp_path, "outside", body="SECRET")  # a valid skill, but outside both dirs
    repo = SkillRepository(builtin, user, clock=manual_clock)
    for name in ("../outside", "../../outside", str(tmp_path / "outside"), "../../etc/passwd", "media/../outside"):
        found, text, _ = repo.read(name, "s1")
        assert not found and "SECRET" not in text and text.endswith("available: media")


# --- hot reload -----------------------------------------------------------------------------------
def test_added_skill_appears_after_the_rate_limit_or_on_force(dirs, manual_clock):
    builtin, user = dirs
    repo = SkillRepository(builtin, user, clock=manual_clock)
    write_skill(user, "tea")
    manual_clock.now += 0.1
    assert names(repo) == ["media"]  # checked less than 0.5 s ago: no new scan
    manual_clock.now += 0.5
    assert names(repo) == ["media", "tea"]
    write_skill(user, "coffee")
    assert repo.refresh(force=True) is True
    assert "coffee" in names(repo)


def test_refresh_reparses_only_changed_files(dirs, manual_clock, monkeypatch):
    import core.skills
    builtin, user = dirs
    for folder in ("tea", "coffee", "cocoa"):
        write_skill(user, folder, mtime=1_000_000)
    repo = SkillRepository(builtin, user, clock=manual_clock)
    parsed = []
    real_load = core.skills.load_skill
    monkeypatch.setattr(core.skills, "load_skill", lambda path, *a: parsed.append(path.parent.name) or real_load(path, *a))
    assert repo.refresh(force=True) is False and parsed == []
    write_skill(user, "tea", body="steep longer", mtime=1_000_010)
    assert repo.refresh(force=True) is True and parsed == ["tea"]


def test_edited_skill_is_served_new_and_removed_one_disappears(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "tea", body="steep 3 minutes", mtime=1_000_000)
    repo = SkillRepository(builtin, user, clock=manual_clock)
    old_version = repo.read("tea", "s1")[2]
    write_skill(user, "tea", body="steep 5 minutes", mtime=1_000_010)
    manual_clock.now += 1
    found, text, new_version = repo.read("tea", "s1")
    assert found and text == "steep 5 minutes" and new_version != old_version
    shutil.rmtree(user / "tea")
    manual_clock.now += 1
    assert names(repo) == ["media"]
    assert repo.read("tea", "s1")[0] is False


def test_invalid_edit_keeps_serving_last_good_version(dirs, manual_clock, caplog):
    builtin, user = dirs
    path = write_skill(user, "tea", description="brewing", body="steep 3 minutes", mtime=1_000_000)
    repo = SkillRepository(builtin, user, clock=manual_clock)
    write_skill(user, "tea", raw="---\nname: tea\n---\nsteep forever", mtime=1_000_010)
    manual_clock.now += 1
    with caplog.at_level(logging.WARNING, logger="porfiry.skills"):
        assert repo.read("tea", "s1")[1] == "steep 3 minutes"
    assert "last good" in repo.problems()[str(path)]
    assert any("last good" in r.getMessage() for r in caplog.records)
    write_skill(user, "tea", description="brewing", body="steep 4 minutes", mtime=1_000_020)
    manual_clock.now += 1
    assert repo.read("tea", "s1")[1] == "steep 4 minutes"
    assert repo.problems() == {}


# --- versions -------------------------------------------------------------------------------------
def test_version_stable_when_unchanged_and_changes_on_edit(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "tea", description="brewing", body="steep", mtime=1_000_000)
    repo = SkillRepository(builtin, user, clock=manual_clock)
    first = repo.skills_version("s1")
    manual_clock.now += 1
    assert repo.skills_version("s1") == first
    assert SkillRepository(builtin, user, clock=manual_clock).skills_version("s2") == first  # across instances
    write_skill(user, "tea", description="brewing", body="steep longer", mtime=1_000_010)
    manual_clock.now += 1
    body_edit = repo.skills_version("s1")
    write_skill(user, "tea", description="brewing green tea", body="steep longer", mtime=1_000_020)
    manual_clock.now += 1
    description_edit = repo.skills_version("s1")
    assert len({first, body_edit, description_edit}) == 3
    assert all(re.fullmatch(r"[0-9a-f]{8}", v) for v in (first, body_edit, description_edit))


# --- exclusions -----------------------------------------------------------------------------------
def test_exclusion_by_session_hides_from_index_read_and_version(dirs, manual_clock, tmp_path):
    builtin, user = dirs
    write_skill(user, "cooking", body="boil")
    repo = SkillRepository(builtin, user, clock=manual_clock)
    without_cooking = SkillRepository(builtin, clock=manual_clock).skills_version("any")
    assert repo.exclude("cooking", "s1") is True
    assert names(repo, "s1") == ["media"]
    assert names(repo, "s2") == ["media", "cooking"]
    assert repo.read("cooking", "s1") == (False, "skill cooking not found; available: media", "")
    assert repo.read("cooking", "s1")[1] == repo.read("weather", "s1")[1].replace("weather", "cooking")
    assert repo.skills_version("s1") == without_cooking  # the excluded session gets nothing of it
    assert repo.read("cooking", "s2")[:2] == (True, "boil")


def test_exclusion_by_phone_key_and_include_restores(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "cooking")
    repo = SkillRepository(builtin, user, clock=manual_clock)
    repo.exclude("cooking", "phone-42")
    assert names(repo, "s1", "phone-42") == ["media"]
    assert names(repo, "s2", "phone-7") == ["media", "cooking"]
    assert names(repo, "s3") == ["media", "cooking"]
    assert repo.include("cooking", "phone-42") is True
    assert repo.include("cooking", "phone-42") is False
    assert names(repo, "s1", "phone-42") == ["media", "cooking"]


def test_initial_exclusions_from_config_and_bad_config_is_clear(dirs, manual_clock):
    builtin, user = dirs
    repo = SkillRepository(builtin, user, clock=manual_clock, exclusions={"media": ["kid-phone", "s9"]})
    assert names(repo, "s1", "kid-phone") == [] and names(repo, "s9") == [] and names(repo, "s1") == ["media"]
    with pytest.raises(ValueError, match="list of session ids"):
        SkillRepository(builtin, user, clock=manual_clock, exclusions={"media": [1, 2]})
    with pytest.raises(ValueError, match="lowercase"):
        SkillRepository(builtin, user, clock=manual_clock, exclusions={"Bad Name": ["s1"]})


# --- change notices -------------------------------------------------------------------------------
def test_tracker_notice_once_after_change_naming_the_reread_skill(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "cooking", body="boil", mtime=1_000_000)
    repo = SkillRepository(builtin, user, clock=manual_clock)
    tracker = SkillChangeTracker()
    assert tracker.annotate(*repo.snapshot("s1")) == ""  # first call: records only
    found, _, body_version = repo.read("cooking", "s1")
    tracker.note_read("cooking", body_version)
    assert tracker.annotate(*repo.snapshot("s1")) == ""

    write_skill(user, "cooking", body="boil, then salt", mtime=1_000_010)
    write_skill(user, "tea", mtime=1_000_020)
    manual_clock.now += 1
    snapshot = repo.snapshot("s1")
    notice = tracker.annotate(*snapshot)
    assert notice == (f"skills_version: {snapshot.version}\n"
                      "skills_changed: media, tea (new), cooking\n"
                      "re-read before relying on it: cooking (changed since you read it)")
    assert tracker.annotate(*repo.snapshot("s1")) == ""
    manual_clock.now += 1
    assert tracker.annotate(*repo.snapshot("s1")) == ""

    tracker.note_read("cooking", repo.read("cooking", "s1")[2])
    shutil.rmtree(user / "tea")
    manual_clock.now += 1
    assert tracker.annotate(*repo.snapshot("s1")) == (
        f"skills_version: {repo.skills_version('s1')}\nskills_changed: media, cooking; removed: tea")


def test_tracker_tells_once_when_a_read_skill_is_gone(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "cooking")
    repo = SkillRepository(builtin, user, clock=manual_clock)
    tracker = SkillChangeTracker()
    tracker.annotate(*repo.snapshot("s1"))
    tracker.note_read("cooking", repo.read("cooking", "s1")[2])
    repo.exclude("cooking", "s1")
    notice = tracker.annotate(*repo.snapshot("s1"))
    assert "removed: cooking" in notice and "cooking (no longer available)" in notice
    write_skill(user, "tea")
    manual_clock.now += 1
    assert "cooking" not in tracker.annotate(*repo.snapshot("s1"))


def test_howto_and_index_rendering_are_terse(dirs, manual_clock):
    repo = SkillRepository(*dirs, clock=manual_clock)
    text = render_index(repo.index("s1"))
    assert text == SKILLS_HOWTO + "\nmedia: films: search, details, playback"
    assert "read_skill|name" in SKILLS_HOWTO and len(SKILLS_HOWTO.split()) < 30
    assert render_index([]) == ""


# --- admin ----------------------------------------------------------------------------------------
def test_admin_ops_describe_state_and_never_raise(dirs, manual_clock):
    builtin, user = dirs
    write_skill(user, "cooking", body="boil")
    write_skill(user, "broken", raw="nope")
    repo = SkillRepository(builtin, user, clock=manual_clock)
    assert run_admin(repo, "exclude", "cooking", "s1") == "skill cooking excluded for s1"
    assert run_admin(repo, "exclude", "cooking", "s1") == "skill cooking was already excluded for s1"
    listing = run_admin(repo, "list")
    assert "media" in listing and "built-in" in listing
    assert "[excluded for: s1]" in listing
    assert "broken" in listing and "must start with" in listing
    shown = run_admin(repo, "show", "cooking")
    assert "description: when testing" in shown and shown.endswith("---\nboil")
    assert run_admin(repo, "include", "cooking", "s1") == "skill cooking open again for s1"
    assert "not excluded" in run_admin(repo, "include", "cooking", "s1")
    assert "lowercase" in run_admin(repo, "exclude", "Bad Name", "s1")
    assert "needs a target" in run_admin(repo, "exclude", "cooking")
    assert "unknown op" in run_admin(repo, "delete", "cooking")
    assert "not found; available: media, cooking" in run_admin(repo, "show", "nope")
    assert run_admin(repo, "reload").startswith("reloaded: 2 skills")


def test_a_slow_look_at_a_half_written_skill_never_hides_the_finished_one(dirs, monkeypatch):
    """The store's watcher and a request refresh from worker threads at once: a look that read
    SKILL.md half written, and finished last, recorded its failure over the finished file's skill
    (a skill just added missing from the index; seen once in CI). One look at a time now."""
    import threading
    import core.skills as skills_module

    builtin, user = dirs
    repo = SkillRepository(builtin, user, refresh_interval_s=3600)  # looks only when told: the index is the last look's
    half = write_skill(user, "tea", raw="---\nname: tea\n")  # the writer has not finished
    real_load, reading_half, let_go = skills_module.load_skill, threading.Event(), threading.Event()

    def slow_load(path, *args, **kwargs):
        if path != half or path.stat().st_size >= 40:
            return real_load(path, *args, **kwargs)
        try:  # the half-written file, read now and judged late (a slow disk)
            return real_load(path, *args, **kwargs)
        finally:
            reading_half.set()
            let_go.wait(5)

    monkeypatch.setattr(skills_module, "load_skill", slow_load)
    watcher = threading.Thread(target=repo.refresh, kwargs={"force": True})
    watcher.start()
    assert reading_half.wait(5)
    write_skill(user, "tea", description="how to brew tea", body="Steep 3 minutes.", mtime=4_000_000)
    request = threading.Thread(target=repo.refresh, kwargs={"force": True})
    request.start()
    request.join(0.5)  # a request's look at the finished file (without the lock it ends here, first)
    let_go.set()
    watcher.join(5)
    request.join(5)
    assert "tea" in names(repo)
