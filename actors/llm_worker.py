"""LLMWorker: serves Generate requests on the active model profile, streams chunks back, cancels on
request, and swaps profiles at runtime (S13).

A request is pinned to the profile active when it arrived: a swap (`UseProfile`) affects only new
requests, so nothing in flight restarts and no session loses state. Backends are created on first
use and kept, so swapping back is instant.

At start an embedded (llamacpp) profile is warmed (`llm.warmup`, issue 54): its model is loaded and
the prompts every session starts with (core.budget.warmup_requests) evaluated, one token each, so
the first user's first answer does not pay for the load (minutes on a busy 2-core machine).
Requests that arrive meanwhile queue behind it (the backend serves in arrival order). `LLMStatus`
says how far it is; `run.py up` shows it and the supervisor says "ready" once it is done.
"""
from __future__ import annotations

import time

import anyio

import protocol as p
from actors.base import Actor, Inbound
from core import tracing
from core.budget import warmup_requests
from core.config import Config
from llm.adapt import strip_think
from llm.base import Backend, LLMError
from llm.chunks import ChunkCoalescer
from llm.backends import make_backend
from llm.profiles import context_of


class LLMWorker(Actor):
    name = "llm"

    def __init__(self, config: Config, *, backends: dict[str, Backend] | None = None, **kwargs):
        super().__init__(config, **kwargs)
        self.profiles = config.llm.profiles
        self.active = config.llm.profile
        self._backends: dict[str, Backend] = dict(backends or {})
        self._in_flight: dict[str, anyio.CancelScope] = {}
        self.warm: str = "none"  # protocol.LLMStatus.warm
        self._warm_started = self._warm_took = 0.0
        self._warm_detail = ""

    def backend(self, profile: str) -> Backend:
        backend = self._backends.get(profile)
        if backend is None:
            backend = make_backend(self.profiles[profile], name=profile)
            self._backends[profile] = backend
        return backend

    async def on_start(self) -> None:
        self.backend(self.active)  # fail fast on a broken profile
        self.tell("session", self.model_info())
        if self.config.llm.warmup and self.profiles.get(self.active) and self.profiles[self.active].kind == "llamacpp":
            self.warm, self._warm_started = "warming", time.monotonic()
            self.spawn(self._warm_up, self.active, name="warmup")

    async def _warm_up(self, profile: str) -> None:
        """Load the model and evaluate the prompts sessions start with (see the module's doc)."""
        backend = self.backend(profile)
        try:
            requests = await anyio.to_thread.run_sync(warmup_requests, self.config)
            for messages in requests:
                await backend.stream(messages, tools=[], max_tokens=1).collect()
            self.warm = "warm"
        except Exception as exc:  # noqa: BLE001 - a model that cannot load says so on its first request too
            self.warm, self._warm_detail = "failed", f"{type(exc).__name__}: {exc}"
        self._warm_took = time.monotonic() - self._warm_started
        self.log.info("actor=llm warm-up profile=%s %s in %.1f s %s", profile, self.warm, self._warm_took, self._warm_detail)

    def _warm_seconds(self) -> float:
        return self._warm_took or (time.monotonic() - self._warm_started if self.warm == "warming" else 0.0)

    def model_info(self) -> p.ModelInfo:
        """What sessions need to keep their prompts inside the active model's context."""
        profile = self.profiles.get(self.active)
        return p.ModelInfo(profile=self.active, context_tokens=context_of(profile) if profile else 0,
                           worker_started=self.started_at, frame=profile.frames() if profile else True)

    async def handle(self, msg: Inbound) -> None:
        body = msg.body
        if isinstance(body, p.Generate):
            profile = body.profile or self.active
            if profile not in self.profiles and profile not in self._backends:
                msg.reply(self, p.LLMFailed(request_id=body.request_id, error=f"unknown profile {profile!r}"))
                return
            scope = anyio.CancelScope()
            self._in_flight[body.request_id] = scope
            self.spawn(self._generate, msg, body, profile, scope, name=f"generate-{body.request_id}")
        elif isinstance(body, p.CancelGenerate):
            scope = self._in_flight.get(body.request_id)
            if scope is not None:
                scope.cancel()
            msg.reply(self, p.Ok(detail="cancelled" if scope else "not running"))
        elif isinstance(body, p.UseProfile):
            known = set(self.profiles) | set(self._backends)
            if body.profile not in known:
                msg.reply(self, p.ErrorReply(code="unknown_profile", detail=f"profile {body.profile!r} does not exist; profiles: {', '.join(sorted(known))}"))
                return
            previous, self.active = self.active, body.profile
            self.tell("session", self.model_info())
            self.log.info("actor=llm profile swap from=%s to=%s in_flight=%d", previous, self.active, len(self._in_flight))
            msg.reply(self, p.Ok(detail=f"active profile: {self.active} (was {previous}); {len(self._in_flight)} request(s) in flight finish on {previous}"))
        elif isinstance(body, p.LLMStatusRequest):
            self.spawn(self._status, msg)
        else:
            await super().handle(msg)

    async def _status(self, msg: Inbound) -> None:
        try:
            healthy, detail = await self.backend(self.active).health()
        except Exception as exc:  # noqa: BLE001 - status must answer even when the backend is broken
            healthy, detail = False, f"{type(exc).__name__}: {exc}"
        msg.reply(self, p.LLMStatus(
            active=self.active, profiles=sorted(set(self.profiles) | set(self._backends)),
            healthy=healthy, detail=detail, in_flight=len(self._in_flight),
            context_tokens=self.model_info().context_tokens, frame=self.model_info().frame,
            warm=self.warm, warm_s=round(self._warm_seconds(), 1), warm_detail=self._warm_detail,
        ))

    async def _generate(self, msg: Inbound, body: p.Generate, profile: str, scope: anyio.CancelScope) -> None:
        request_id = body.request_id
        with tracing.tracer.serve("llm.generate", msg.env.trace) as traced:
            try:
                with scope:
                    done = await self._stream(msg, body, profile)
                    msg.reply(self, done)
                    traced.usage(done)
                if scope.cancelled_caught:
                    traced.outcome("cancelled")
                    msg.reply(self, p.LLMFailed(request_id=request_id, error="cancelled"))
            except LLMError as exc:
                traced.outcome("error")
                msg.reply(self, p.LLMFailed(request_id=request_id, error=str(exc)))
            except Exception as exc:  # noqa: BLE001 - one broken request must not take the worker down
                traced.outcome("error")
                self.log.exception("actor=llm request=%s failed", request_id)
                msg.reply(self, p.LLMFailed(request_id=request_id, error=f"{type(exc).__name__}: {exc}"))
            finally:
                self._in_flight.pop(request_id, None)

    async def _stream(self, msg: Inbound, body: p.Generate, profile: str) -> p.LLMDone:
        """The reply's pieces as LLMChunks; the LLMDone to end it with."""
        backend = self.backend(profile)
        chunks = ChunkCoalescer(self.config.llm.stream_interval_ms / 1000, anyio.current_time)
        async with backend.stream(body.messages, tools=body.tools, max_tokens=body.max_tokens,
                                  arg_choices=body.arg_choices) as generation:
            async for piece in generation:
                text = chunks.add(piece) if piece else ""
                if text:
                    msg.reply(self, p.LLMChunk(request_id=body.request_id, text=text))
        # what is still held back rides on the LLMDone: one message less per call
        return p.LLMDone(
            request_id=body.request_id, text=strip_think(generation.text), profile=profile, tail=chunks.flush(),
            finish_reason=generation.finish_reason or "stop",
            prompt_tokens=generation.prompt_tokens, completion_tokens=generation.completion_tokens,
            reused_tokens=generation.reused_tokens,
        )
