"""The system prompt in a given state, built from the real catalog and skills (for budgets)."""
from __future__ import annotations

from core.config import Config
from core.loading import default_catalog, intent_files
from core.local_intents import read_frame_spec
from core.frame import frame_messages
from core.prompt import Scope, build_prompt, build_system_prompt, layout
from core.skills import SkillRepository
from core.skills_notice import SKILLS_HOWTO
from core.toolsets import ToolsetRegistry
from protocol import ChatMessage


def prompt_for_state(config: Config, state: int, session: str = "budget") -> str:
    """State 1: nothing active. State 3: the first toolset of the catalog active (S7)."""
    registry = ToolsetRegistry(default_catalog())
    repo = SkillRepository(config.builtin_skill_dirs(), config.path(config.skills.user_dir))
    active = registry.toolset_names()[:1] if state == 3 else []
    scope = Scope(config.session.index_budget_tokens, config.session.max_active_tools, config.session.toolset_first_tools)
    return build_system_prompt(registry, active, repo.index(session), SKILLS_HOWTO, scope=scope)


WARMUP_WORDS = "…"  # the user's turn of a warm-up request: anything; only the prefix before it is kept


def warmup_requests(config: Config) -> list[list[ChatMessage]]:
    """What the LLM worker evaluates at start (issue 54) so a session's first request finds its
    prefix computed: a fresh session's prompt (the static part, then the state part with no
    toolset active), and, with the frame on, the frame's fixed instructions and examples (the
    backend keeps each in its own context). Only the prefix before the user's words is shared."""
    registry = ToolsetRegistry(default_catalog())
    repo = SkillRepository(config.builtin_skill_dirs(), config.path(config.skills.user_dir))
    scope = Scope(config.session.index_budget_tokens, config.session.max_active_tools, config.session.toolset_first_tools)
    prompt = build_prompt(registry, [], repo.index("warmup"), SKILLS_HOWTO, scope=scope)
    requests = [layout(prompt, [ChatMessage(role="user", content=WARMUP_WORDS)], 1, [])]
    if config.session.frame and config.session.reflexes:
        requests.append(frame_messages(WARMUP_WORDS, nearest=0, spec=read_frame_spec(intent_files(config))))
    return requests
