"""`run.py bench --prompts`: what the prompts cost in real Gemma tokens, and how cache friendly they are.

Three measurements (issue 8):

1. Tokens of the state-1 (nothing active) and state-3 (media active) system prompts.
2. A scripted 20-turn conversation run through the real `Conversation` loop, in process (no
   sockets): every request of every step is recorded, rendered exactly as the Gemma backend
   renders it, and tokenized with the real tokenizer. For each request: the share of its prompt
   tokens that is a common prefix with the previous request of the same session - what the
   prefix caches of vLLM and llama.cpp can reuse.
3. Time to first token of one request (the last, by default) with the previous request's prefix
   reused versus cold, on the real in-process Gemma model.

The conversation (bench/conversation.py) is deterministic: a scripted model, a fixed clock, the shipped
skills and media catalog, a temporary user-skills dir and media database.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec

from bench.conversation import CONVERSATION, SESSION, RecordedRequest, record_conversation
from bench.runtime import scratch_config
from core.budget import prompt_for_state
from core.config import Config
from llm.adapt import render_gemma_prompt
from llm.llamacpp_backend import common_prefix_len

TTFT_REPEATS = 3
TTFT_PREVIOUS_MAX_TOKENS = 4  # the previous request runs to completion, briefly

Tokenizer = Callable[[str], list[int]]


# --- report ----------------------------------------------------------------------------------
class RequestPrefix(msgspec.Struct, kw_only=True):
    """One model request: its prompt tokens, and how many of them the previous request shared."""

    turn: int
    step: int
    prompt_tokens: int
    prefix_tokens: int
    share: float  # prefix_tokens / prompt_tokens; 0 for the session's first request (cold)


class TTFT(msgspec.Struct, kw_only=True):
    """Time to first token of one request, after its predecessor (prefix reused) and after a reset."""

    turn: int
    step: int
    prompt_tokens: int
    reused_tokens: int  # common prefix with the previous request: what the reused run skips
    reused_ms: float  # median over `repeats`
    cold_ms: float
    repeats: int


class PromptReport(msgspec.Struct, kw_only=True):
    state1_tokens: int
    state3_tokens: int
    turns: int
    requests: list[RequestPrefix]
    mean_share: float  # over every request after the first
    min_share: float  # likewise
    min_at: str  # "turn T step S" of the minimum
    ttft: TTFT | None = None

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


# --- pure arithmetic -------------------------------------------------------------------------
def prefix_shares(requests: Sequence[tuple[int, int, Sequence[int]]]) -> list[RequestPrefix]:
    """(turn, step, tokens) of one session's requests, in order -> each one's reusable prefix.

    The first request has nothing before it: prefix 0, share 0 (cold)."""
    rows: list[RequestPrefix] = []
    previous: Sequence[int] | None = None
    for turn, step, tokens in requests:
        shared = common_prefix_len(previous, tokens) if previous is not None else 0
        share = shared / len(tokens) if tokens else 0.0
        rows.append(RequestPrefix(turn=turn, step=step, prompt_tokens=len(tokens), prefix_tokens=shared, share=share))
        previous = tokens
    return rows


def summarize_shares(rows: Sequence[RequestPrefix]) -> tuple[float, float, str]:
    """(mean share, minimum share, where the minimum is) over every request after the first."""
    warm = list(rows[1:])
    if not warm:
        return 0.0, 0.0, "-"
    lowest = min(warm, key=lambda r: r.share)  # the first of equal minima
    return statistics.fmean(r.share for r in warm), lowest.share, f"turn {lowest.turn} step {lowest.step}"


# --- tokens and timing -----------------------------------------------------------------------
def gemma_tokenizer(path: str | Path | None = None) -> Tokenizer:
    """The real Gemma tokenizer, as the llama.cpp backend tokenizes a prompt (BOS, special tokens)."""
    from llm.gemma_model import _vocab, model_path

    vocab = _vocab(str(path or model_path()))
    return lambda text: list(vocab.tokenize(text.encode("utf-8"), add_bos=True, special=True))


def _gemma_profile(config: Config):
    from llm.profiles import default_profiles

    profile = config.llm.profiles.get("gemma")
    return profile if profile is not None and profile.kind == "llamacpp" else default_profiles()["gemma"]


async def _first_token_ms(backend, request: RecordedRequest, max_tokens: int = 1,
                          clock: Callable[[], float] = time.perf_counter) -> float:
    """Milliseconds from starting the generation to its first streamed piece (or its end)."""
    started = clock()
    async with backend.stream(request.messages, tools=request.tools, max_tokens=max_tokens) as pieces:
        async for _ in pieces:
            break
    return (clock() - started) * 1000


async def measure_ttft(config: Config, requests: Sequence[RecordedRequest], rows: Sequence[RequestPrefix],
                       *, index: int = -1, repeats: int = TTFT_REPEATS,
                       progress: Callable[[str], None] = print) -> TTFT:
    """TTFT of requests[index] on the real Gemma: after running requests[index-1] (reused) vs after reset (cold)."""
    import llama_cpp

    from llm.gemma_model import model_path
    from llm.llamacpp_backend import LlamaCppBackend

    index = index % len(requests)
    if index == 0:
        raise ValueError("the first request has no previous request to reuse; pick a later one")
    target, previous, row = requests[index], requests[index - 1], rows[index]
    profile = _gemma_profile(config)
    needed = row.prompt_tokens + 64
    n_ctx = max(profile.n_ctx, -(-needed // 256) * 256)
    path = profile.model_path or str(model_path())
    progress(f"loading {path} (n_ctx {n_ctx}) ...")
    llama = await anyio.to_thread.run_sync(lambda: llama_cpp.Llama(
        model_path=path, n_ctx=n_ctx, n_threads=profile.n_threads or None, seed=profile.seed, verbose=False))
    backend = LlamaCppBackend(profile, name="gemma", llama=llama)
    try:
        reused, cold = [], []
        for attempt in range(1, repeats + 1):
            await _first_token_ms(backend, previous, max_tokens=TTFT_PREVIOUS_MAX_TOKENS)
            reused.append(await _first_token_ms(backend, target))
            llama.reset()
            cold.append(await _first_token_ms(backend, target))
            progress(f"ttft {attempt}/{repeats}: reused {reused[-1]:.0f} ms, cold {cold[-1]:.0f} ms")
    finally:
        await backend.aclose()
    return TTFT(turn=target.turn, step=target.step, prompt_tokens=row.prompt_tokens,
                reused_tokens=row.prefix_tokens, reused_ms=statistics.median(reused),
                cold_ms=statistics.median(cold), repeats=repeats)


async def measure_prompts(config: Config, *, turns: int = 20, ttft: bool = True,
                          progress: Callable[[str], None] = print, tokenize: Tokenizer | None = None,
                          ttft_repeats: int = TTFT_REPEATS) -> PromptReport:
    """The whole `bench --prompts` measurement. `turns` takes the first turns of CONVERSATION
    (1..20); `tokenize` defaults to the real Gemma tokenizer."""
    if not 1 <= turns <= len(CONVERSATION):
        raise ValueError(f"turns must be between 1 and {len(CONVERSATION)}, got {turns}")
    if ttft_repeats < 1:
        raise ValueError(f"ttft_repeats must be at least 1, got {ttft_repeats}")
    if tokenize is None:
        tokenize = await anyio.to_thread.run_sync(gemma_tokenizer, _gemma_profile(config).model_path or None)
    with tempfile.TemporaryDirectory(prefix="porfiry-bench-") as tmp:
        config = scratch_config(config, Path(tmp))
        state1 = len(tokenize(prompt_for_state(config, 1, SESSION)))
        state3 = len(tokenize(prompt_for_state(config, 3, SESSION)))
        progress(f"system prompt: state 1 {state1} tokens, state 3 {state3} tokens")
        progress(f"running the {turns}-turn conversation ...")
        requests = await record_conversation(config, CONVERSATION[:turns])
    rows = prefix_shares([(r.turn, r.step, tokenize(render_gemma_prompt(r.messages))) for r in requests])
    mean, lowest, where = summarize_shares(rows)
    timing = None
    if ttft:
        if len(requests) < 2:
            raise ValueError("TTFT needs at least two requests; run more turns")
        timing = await measure_ttft(config, requests, rows, repeats=ttft_repeats, progress=progress)
    return PromptReport(state1_tokens=state1, state3_tokens=state3, turns=turns, requests=rows,
                        mean_share=mean, min_share=lowest, min_at=where, ttft=timing)


def format_report(report: PromptReport) -> str:
    """What `run.py bench --prompts` prints."""
    lines = [
        "System prompt (Gemma tokens):",
        f"  state 1 (nothing active): {report.state1_tokens}",
        f"  state 3 (media active):   {report.state3_tokens}",
        "",
        f"Prefix reuse over a {report.turns}-turn conversation ({len(report.requests)} requests):",
        f"  {'turn':>4} {'step':>4} {'prompt':>7} {'prefix':>7} {'share':>6}",
    ]
    for index, row in enumerate(report.requests):
        share = "cold" if index == 0 else f"{row.share:.1%}"
        lines.append(f"  {row.turn:>4} {row.step:>4} {row.prompt_tokens:>7} {row.prefix_tokens:>7} {share:>6}")
    lines.append(f"  mean share after the first request: {report.mean_share:.1%}; "
                 f"minimum {report.min_share:.1%} at {report.min_at}")
    if report.ttft is not None:
        t = report.ttft
        speedup = f" ({t.cold_ms / t.reused_ms:.1f}x)" if t.reused_ms > 0 else ""
        lines += [
            "",
            f"Time to first token, turn {t.turn} step {t.step} ({t.prompt_tokens} prompt tokens, "
            f"median of {t.repeats}):",
            f"  previous prefix reused ({t.reused_tokens} tokens): {t.reused_ms:.0f} ms",
            f"  cold (llama.reset()):            {t.cold_ms:.0f} ms{speedup}",
        ]
    return "\n".join(lines)
