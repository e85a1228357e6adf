"""Which GGUF file a llamacpp profile loads: a packaged model (llm.packaged_models) or Gemma."""
from __future__ import annotations

from pathlib import Path

from llm.gemma_model import model_path as gemma_path
from llm.packaged_models import PACKAGED, assemble


def resolve_model_path(model_path: str, model: str) -> Path:
    """The GGUF a llamacpp profile loads: its `model_path` if set, else the packaged model its
    `model` names, else the packaged Gemma 3 270M."""
    if model_path:
        return Path(model_path).expanduser()
    packaged = PACKAGED.get(model)
    if packaged is not None:
        return assemble(packaged)
    return gemma_path()
