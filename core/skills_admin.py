"""`run.py skills list|show|exclude|include|reload` (and the SkillsAdmin message): pure functions
over a SkillRepository, each returning the text to print."""
from core.skills import SkillRepository

ADMIN_OPS = ("list", "show", "exclude", "include", "reload")


def admin_list(repo: SkillRepository) -> str:
    """Every skill in index order with its source and exclusions, then the rejected files."""
    skills = repo.skills()
    exclusions = repo.exclusions()
    lines = []
    width = max((len(s.name) for s in skills), default=0)
    for skill in skills:
        line = f"{skill.name:<{width}}  {'built-in' if skill.builtin else 'user    '}  {skill.description}"
        if skill.name in exclusions:
            line += f"  [excluded for: {', '.join(exclusions[skill.name])}]"
        lines.append(line)
    if not lines:
        lines.append("no skills loaded")
    waiting = {n: t for n, t in exclusions.items() if all(s.name != n for s in skills)}
    for name, targets in waiting.items():
        lines.append(f"(exclusion for absent skill {name}: {', '.join(targets)})")
    problems = repo.problems()
    if problems:
        lines.append(f"problems ({len(problems)}):")
        lines.extend(f"  {where}: {reason}" for where, reason in sorted(problems.items()))
    return "\n".join(lines)


def admin_show(repo: SkillRepository, name: str) -> str:
    """One skill in full, as an admin sees it (exclusions do not hide it here)."""
    skill = repo.get(name)
    if skill is None:
        return f"skill {name} not found; available: {', '.join(s.name for s in repo.skills()) or '(none)'}"
    excluded = repo.exclusions().get(skill.name, [])
    head = [f"name: {skill.name}", f"description: {skill.description}",
            f"source: {'built-in' if skill.builtin else 'user'} ({skill.path})",
            f"body_version: {skill.body_version}"]
    head += [f"{key}: {value}" for key, value in skill.extra.items()]
    if excluded:
        head.append(f"excluded for: {', '.join(excluded)}")
    problem = repo.problems().get(str(skill.path))
    if problem:
        head.append(f"problem: {problem}")
    return "\n".join(head) + "\n---\n" + skill.body


def admin_exclude(repo: SkillRepository, name: str, target: str) -> str:
    try:
        added = repo.exclude(name, target)
    except ValueError as exc:
        return str(exc)
    name = name.strip().lower()
    note = "" if repo.get(name) is not None else " (no such skill now; applies if it appears)"
    return (f"skill {name} excluded for {target.strip()}{note}" if added
            else f"skill {name} was already excluded for {target.strip()}")


def admin_include(repo: SkillRepository, name: str, target: str) -> str:
    name = name.strip().lower()
    if repo.include(name, target):
        return f"skill {name} open again for {target.strip()}"
    return f"skill {name} was not excluded for {target.strip()}; nothing to do"


def admin_reload(repo: SkillRepository) -> str:
    changed = repo.refresh(force=True)
    count, problems = len(repo.skills()), len(repo.problems())
    return (f"reloaded: {count} skills" + (", changed" if changed else ", unchanged")
            + (f", {problems} problems (see list)" if problems else ""))


def run_admin(repo: SkillRepository, op: str, name: str = "", target: str = "") -> str:
    """Dispatch a SkillsAdmin request; bad input gets an explanation, never an exception."""
    op = op.strip().lower()
    if op == "list":
        return admin_list(repo)
    if op == "reload":
        return admin_reload(repo)
    if op not in ADMIN_OPS:
        return f"unknown op {op!r}; use one of: {', '.join(ADMIN_OPS)}"
    if not name.strip():
        return f"{op} needs a skill name"
    if op == "show":
        return admin_show(repo, name)
    if not target.strip():
        return f"{op} needs a target: a session id or phone key"
    return admin_exclude(repo, name, target) if op == "exclude" else admin_include(repo, name, target)
