"""LLM backends behind one interface: OpenAI-compatible HTTP (Qwen), in-process llama.cpp (Gemma), scripted.

The LLMWorker actor calls `make_backend(profile)` and then only `Backend.stream/health/aclose`.
"""
from llm.base import Backend, Generation, LLMError
from llm.backends import make_backend
from llm.profiles import ProfileConfig, default_profiles

__all__ = ["Backend", "Generation", "LLMError", "ProfileConfig", "default_profiles", "make_backend"]
