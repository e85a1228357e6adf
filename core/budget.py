"""The system prompt in a given state, built from the real catalog and skills (for budgets)."""
from __future__ import annotations

from core.config import Config
from core.loading import default_catalog
from core.prompt import Scope, build_system_prompt
from core.skills import SkillRepository
from core.skills_notice import SKILLS_HOWTO
from core.toolsets import ToolsetRegistry


def prompt_for_state(config: Config, state: int, session: str = "budget") -> str:
    """State 1: nothing active. State 3: the first toolset of the catalog active (S7)."""
    registry = ToolsetRegistry(default_catalog())
    repo = SkillRepository(config.builtin_skill_dirs(), config.path(config.skills.user_dir))
    active = registry.toolset_names()[:1] if state == 3 else []
    scope = Scope(config.session.index_budget_tokens, config.session.max_active_tools, config.session.toolset_first_tools)
    return build_system_prompt(registry, active, repo.index(session), SKILLS_HOWTO, scope=scope)
