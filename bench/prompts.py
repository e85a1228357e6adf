"""`run.py bench --prompts`: what each request of a conversation costs the local model (issue 13).

A scripted 20-turn conversation (bench/conversation.py: two enables, a disable, an expiry) runs
through the real `Conversation` loop, in process; every request of every step is recorded, then
rendered exactly as the llamacpp backend renders it (`ChatRenderer`: the GGUF's own chat
template) and tokenized as the backend tokenizes it (`add_bos=True, special=True`; a vocab-only
load of the GGUF). For each request:

    prompt      its tokens
    evaluated   what llama.cpp computes: prompt - the common token prefix with the session's
                previous request (llama-cpp-python re-evaluates at least the last token; the
                first request is cold)
    new         rendered tokens of the messages the previous request did not have (each one
                with the role markers before it; a state part whose text changed is new)
    beyond      evaluated - new, at least 0: old content evaluated again because something
                before it changed. Issue 13's target: at most 400 for every request.
    ttft        time to first token on the real model: the requests run IN ORDER on one Llama
                instance with max_tokens=1, so its prefix cache behaves as in the runtime (and
                llama.cpp's own count of evaluated tokens is recorded beside ours)

Also the tokens of the state-1 (nothing active) and state-3 (media active) system prompt texts.
Default profile `local` (Qwen2.5-Coder-1.5B-Instruct); any llamacpp profile works (`gemma`).

Prompt vs prompt is what the figures compare. In the runtime the model also holds the tokens it
generated, so a step after a call may reuse a few more (the call line) than counted here: the
figures are an upper bound of the runtime's (the TTFT run generates one token, so it holds none).
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import msgspec

from bench.conversation import CONVERSATION, SESSION, RecordedRequest, record_conversation
from bench.runtime import scratch_config
from core.budget import prompt_for_state
from core.config import Config
from llm.llamacpp_backend import common_prefix_len
from llm.profiles import ProfileConfig
from protocol import ChatMessage

DEFAULT_PROFILE = "local"
TARGET_BEYOND_NEW = 400  # issue 13: no request evaluates more than this beyond its new messages
TTFT_MAX_TOKENS = 1

Tokenizer = Callable[[str], list[int]]
Render = Callable[[list[ChatMessage]], str]


class ModelText(NamedTuple):
    """How one model sees a request: messages -> prompt text -> tokens."""

    render: Render
    tokenize: Tokenizer
    model: str = ""  # what it is, for the report (the GGUF's file name)


# --- report ----------------------------------------------------------------------------------
class RequestPrefix(msgspec.Struct, kw_only=True):
    """One model request: its prompt tokens, and how many of them the previous request shared."""

    turn: int
    step: int
    prompt_tokens: int
    prefix_tokens: int
    share: float  # prefix_tokens / prompt_tokens; 0 for the session's first request (cold)


class RequestCost(RequestPrefix, kw_only=True):
    """One request as the model pays for it (see the module docstring)."""

    evaluated_tokens: int
    new_messages: int
    new_tokens: int
    beyond_new: int
    reply: str = ""  # what the scripted model answered: the call it made, or its answer
    ttft_ms: float | None = None
    llama_evaluated: int | None = None  # prompt - reused as the real llama reported it (TTFT run)


class TTFTSummary(msgspec.Struct, kw_only=True):
    min_ms: float
    p50_ms: float
    max_ms: float
    max_at: str  # "turn T step S"
    cold_last_ms: float  # the last request again after llama.reset(): nothing reused
    llama_agrees: int  # requests whose llama-reported evaluated tokens equal `evaluated_tokens`


class PromptReport(msgspec.Struct, kw_only=True):
    profile: str
    model: str
    state1_tokens: int
    state3_tokens: int
    turns: int
    requests: list[RequestCost]
    mean_share: float  # over every request after the first
    min_share: float  # likewise
    min_at: str  # "turn T step S" of the minimum
    max_evaluated: int
    max_evaluated_at: str
    max_beyond_new: int
    max_beyond_at: str
    over_target: int  # requests whose beyond_new exceeds the target
    target_beyond_new: int = TARGET_BEYOND_NEW
    within_target: bool = True
    ttft: TTFTSummary | None = None

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
    return statistics.fmean(r.share for r in warm), lowest.share, _where(lowest)


def evaluated_tokens(prompt_tokens: int, prefix_tokens: int) -> int:
    """What llama.cpp computes of a prompt whose first `prefix_tokens` it already holds: the rest,
    and always at least the last token (llama-cpp-python re-evaluates it for its logits)."""
    if prompt_tokens <= 0:
        return 0
    return prompt_tokens - min(prefix_tokens, prompt_tokens - 1)


def _key(message: ChatMessage) -> tuple[str, str, str]:
    return message.role, message.name or "", message.content


def new_message_indexes(previous: Sequence[ChatMessage] | None, messages: Sequence[ChatMessage]) -> list[int]:
    """Indexes of the messages of this request that the previous one did not have (as a
    multiset: a message said twice is new the second time; one that only moved is not new)."""
    if previous is None:
        return list(range(len(messages)))
    held = Counter(_key(m) for m in previous)
    new = []
    for index, message in enumerate(messages):
        key = _key(message)
        if held[key] > 0:
            held[key] -= 1
        else:
            new.append(index)
    return new


def message_ends(prompt: str, messages: Sequence[ChatMessage]) -> list[int]:
    """Where each message's content ends in the rendered prompt (searched in order; a chat
    template wraps contents in role markers and may merge turns, but keeps the words)."""
    ends, cursor = [], 0
    for index, message in enumerate(messages):
        content = message.content.strip()
        at = prompt.find(content, cursor)
        if at < 0:
            raise ValueError(f"message {index} ({message.role}) is not in the rendered prompt: "
                             "the chat template changes what it says")
        cursor = at + len(content)
        ends.append(cursor)
    return ends


def message_tokens(prompt: str, messages: Sequence[ChatMessage], indexes: Sequence[int], tokenize: Tokenizer) -> int:
    """Rendered tokens of messages[i] for each i: from the end of the previous message's content
    to the end of its own, so the role markers before it are its own; the first message's span
    starts the prompt (BOS included), the last one's runs to its end (the generation prompt)."""
    if not indexes:
        return 0
    bounds = [0, *message_ends(prompt, messages)[:-1], len(prompt)]
    counted: dict[int, int] = {0: 0}

    def upto(offset: int) -> int:
        if offset not in counted:
            counted[offset] = len(tokenize(prompt[:offset]))
        return counted[offset]

    return sum(upto(bounds[i + 1]) - upto(bounds[i]) for i in indexes)


def beyond_new(evaluated: int, new: int) -> int:
    """Evaluated tokens that are not new messages (0 when the new ones were partly reused)."""
    return max(0, evaluated - new)


def request_costs(requests: Sequence[RecordedRequest], prompts: Sequence[str], tokenize: Tokenizer) -> list[RequestCost]:
    """One session's requests in order, each with its rendered prompt -> what each one costs."""
    tokens = [tokenize(prompt) for prompt in prompts]
    shares = prefix_shares([(r.turn, r.step, t) for r, t in zip(requests, tokens, strict=True)])
    rows: list[RequestCost] = []
    previous: list[ChatMessage] | None = None
    for request, prompt, share in zip(requests, prompts, shares):
        evaluated = evaluated_tokens(share.prompt_tokens, share.prefix_tokens)
        fresh = new_message_indexes(previous, request.messages)
        new = message_tokens(prompt, request.messages, fresh, tokenize)
        rows.append(RequestCost(**msgspec.structs.asdict(share), evaluated_tokens=evaluated,
                                new_messages=len(fresh), new_tokens=new, beyond_new=beyond_new(evaluated, new),
                                reply=request.reply))
        previous = request.messages
    return rows


def _where(row: RequestPrefix) -> str:
    return f"turn {row.turn} step {row.step}"


def _maximum(rows: Sequence[RequestCost], field: str) -> tuple[int, str]:
    """(largest value of `field`, where: the first of equal maxima)."""
    if not rows:
        return 0, "-"
    top = max(rows, key=lambda r: getattr(r, field))
    return getattr(top, field), _where(top)


def summarize_ttft(rows: Sequence[RequestCost], cold_last_ms: float) -> TTFTSummary:
    timed = [r for r in rows if r.ttft_ms is not None]
    if not timed:
        raise ValueError("no request was timed")
    slowest = max(timed, key=lambda r: r.ttft_ms)
    return TTFTSummary(min_ms=min(r.ttft_ms for r in timed), p50_ms=statistics.median(r.ttft_ms for r in timed),
                       max_ms=slowest.ttft_ms, max_at=_where(slowest), cold_last_ms=cold_last_ms,
                       llama_agrees=sum(r.llama_evaluated == r.evaluated_tokens for r in timed))


# --- the model: tokens and timing ------------------------------------------------------------
def llamacpp_profile(config: Config, name: str) -> ProfileConfig:
    """The config's profile `name` (else the built-in one); it must run on llama.cpp."""
    from llm.profiles import default_profiles

    profile = config.llm.profiles.get(name) or default_profiles().get(name)
    if profile is None:
        raise ValueError(f"no profile {name!r}")
    if profile.kind != "llamacpp":
        raise ValueError(f"profile {name!r} is {profile.kind}, not llamacpp: its prompts are not measured here")
    return profile


def _model_path(profile: ProfileConfig) -> str:
    from llm.model_files import resolve_model_path

    return str(resolve_model_path(profile.model_path, profile.model))


def model_text(profile: ProfileConfig) -> ModelText:
    """The model's own rendering and tokens from a vocab-only load of its GGUF (no weights):
    `ChatRenderer` as the llamacpp backend renders, `tokenize` as it tokenizes."""
    import llama_cpp

    from llm.llamacpp_backend import ChatRenderer

    path = _model_path(profile)
    vocab = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    renderer = ChatRenderer(vocab)
    return ModelText(render=renderer.render, model=Path(path).name,
                     tokenize=lambda text: list(vocab.tokenize(text.encode("utf-8"), add_bos=True, special=True)))


async def _first_token(backend, request: RecordedRequest, clock: Callable[[], float] = time.perf_counter
                       ) -> tuple[float, int | None]:
    """(milliseconds to the first streamed piece or the end, evaluated tokens llama reported)."""
    started = clock()
    generation = backend.stream(request.messages, tools=request.tools, max_tokens=TTFT_MAX_TOKENS,
                                arg_choices=request.arg_choices)
    async with generation:
        async for _ in generation:
            break
    elapsed = (clock() - started) * 1000
    reused = generation.reused_tokens
    return elapsed, (generation.prompt_tokens - reused if reused >= 0 else None)


async def measure_ttft(profile: ProfileConfig, name: str, requests: Sequence[RecordedRequest],
                       rows: Sequence[RequestCost], *, progress: Callable[[str], None] = print) -> TTFTSummary:
    """Time every request in order on one real Llama (fills rows' ttft_ms and llama_evaluated),
    then the last one again cold."""
    import llama_cpp

    from llm.llamacpp_backend import LlamaCppBackend

    needed = max(r.prompt_tokens for r in rows) + 64
    n_ctx = max(profile.n_ctx, -(-needed // 256) * 256)
    path = _model_path(profile)
    threads = profile.n_threads or os.cpu_count() or 1  # as the backend loads it
    progress(f"loading {path} (n_ctx {n_ctx}, {threads} threads) ...")
    llama = await anyio.to_thread.run_sync(lambda: llama_cpp.Llama(
        model_path=path, n_ctx=n_ctx, n_threads=threads, seed=profile.seed, verbose=False))
    backend = LlamaCppBackend(profile, name=name, llama=llama)
    try:
        for index, (request, row) in enumerate(zip(requests, rows, strict=True), start=1):
            row.ttft_ms, row.llama_evaluated = await _first_token(backend, request)
            progress(f"ttft {index}/{len(rows)} (turn {row.turn} step {row.step}): {row.ttft_ms:.0f} ms, "
                     f"{row.evaluated_tokens} evaluated")
        await anyio.to_thread.run_sync(llama.reset)
        cold, _ = await _first_token(backend, requests[-1])
        progress(f"last request cold: {cold:.0f} ms")
    finally:
        await backend.aclose()
    return summarize_ttft(rows, cold)


async def measure_prompts(config: Config, *, profile: str = DEFAULT_PROFILE, turns: int = len(CONVERSATION),
                          ttft: bool = True, progress: Callable[[str], None] = print,
                          text: ModelText | None = None) -> PromptReport:
    """The whole `bench --prompts` measurement. `turns` takes the first turns of CONVERSATION;
    `text` defaults to the profile's model (tests pass a stand-in)."""
    if not 1 <= turns <= len(CONVERSATION):
        raise ValueError(f"turns must be between 1 and {len(CONVERSATION)}, got {turns}")
    chosen = llamacpp_profile(config, profile)
    if text is None:
        progress(f"tokenizer of profile {profile} ...")
        text = await anyio.to_thread.run_sync(model_text, chosen)
    with tempfile.TemporaryDirectory(prefix="porfiry-bench-") as tmp:
        config = scratch_config(config, Path(tmp))
        state1 = len(text.tokenize(prompt_for_state(config, 1, SESSION)))
        state3 = len(text.tokenize(prompt_for_state(config, 3, SESSION)))
        progress(f"system prompt: state 1 {state1} tokens, state 3 {state3} tokens")
        progress(f"running the {turns}-turn conversation ...")
        requests = await record_conversation(config, CONVERSATION[:turns])

    rows = request_costs(requests, [text.render(r.messages) for r in requests], text.tokenize)
    mean, lowest, where = summarize_shares(rows)
    max_evaluated, max_evaluated_at = _maximum(rows, "evaluated_tokens")
    max_beyond, max_beyond_at = _maximum(rows, "beyond_new")
    timing = None
    if ttft:
        timing = await measure_ttft(chosen, profile, requests, rows, progress=progress)
    return PromptReport(
        profile=profile, model=text.model, state1_tokens=state1, state3_tokens=state3, turns=turns, requests=rows,
        mean_share=mean, min_share=lowest, min_at=where, max_evaluated=max_evaluated,
        max_evaluated_at=max_evaluated_at, max_beyond_new=max_beyond, max_beyond_at=max_beyond_at,
        over_target=sum(r.beyond_new > TARGET_BEYOND_NEW for r in rows),
        within_target=max_beyond <= TARGET_BEYOND_NEW, ttft=timing)


def _cell(text: str, width: int = 48) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def format_report(report: PromptReport) -> str:
    """What `run.py bench --prompts` prints."""
    lines = [
        f"Profile {report.profile} ({report.model}): its chat template and tokens, as the llamacpp backend sends them",
        "System prompt text (tokens):",
        f"  state 1 (nothing active): {report.state1_tokens}",
        f"  state 3 (media active):   {report.state3_tokens}",
        "",
        f"Requests of a {report.turns}-turn conversation ({len(report.requests)} requests; evaluated = prompt - "
        "common prefix with the previous request; new = tokens of the messages it did not have):",
        f"  {'turn':>4} {'step':>4} {'prompt':>6} {'eval':>5} {'new':>5} {'beyond':>6} {'ttft ms':>8}  reply",
    ]
    for row in report.requests:
        ttft = "-" if row.ttft_ms is None else f"{row.ttft_ms:.0f}"
        lines.append(f"  {row.turn:>4} {row.step:>4} {row.prompt_tokens:>6} {row.evaluated_tokens:>5} "
                     f"{row.new_tokens:>5} {row.beyond_new:>6} {ttft:>8}  {_cell(row.reply)}")
    verdict = ("within" if report.within_target else
               f"over ({report.over_target} of {len(report.requests)} requests above it)")
    lines += [
        f"  prefix share after the first request: mean {report.mean_share:.1%}, "
        f"minimum {report.min_share:.1%} at {report.min_at}",
        f"  max evaluated: {report.max_evaluated} tokens at {report.max_evaluated_at}",
        f"  max beyond_new: {report.max_beyond_new} tokens at {report.max_beyond_at}: {verdict} "
        f"the target of {report.target_beyond_new}",
    ]
    if report.ttft is not None:
        t = report.ttft
        lines += [
            f"  time to first token (in order, prefix reused): min {t.min_ms:.0f} ms, median {t.p50_ms:.0f} ms, "
            f"max {t.max_ms:.0f} ms at {t.max_at}; the last request cold: {t.cold_last_ms:.0f} ms",
            f"  llama.cpp's own count of evaluated tokens agrees on {t.llama_agrees} of {len(report.requests)} requests",
        ]
    return "\n".join(lines)
