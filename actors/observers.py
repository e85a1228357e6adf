"""The SessionActor's subscribers: who asked `Observe`, until when, and the stream back to them.

A fact goes to every live subscriber as a reply correlated with its `Observe` request, over the
connection that request came in on (the subscriber needs no inbox). A lease not renewed in time
ends the subscription, so a subscriber that vanished costs nothing after `lease_s`.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Iterable


import protocol as p
from actors.base import Inbound


class _Subscription:
    __slots__ = ("request", "lease_s", "expires", "prompts")

    def __init__(self, request: Inbound, lease_s: float, now: float, prompts: list[str]):
        self.request = request
        self.lease_s = lease_s
        self.expires = now + lease_s
        self.prompts = frozenset(prompts)


class Subscribers:
    def __init__(self, endpoint, limit: int, clock: Callable[[], float] = time.monotonic):
        self.endpoint = endpoint  # the actor replying
        self.limit = limit
        self.clock = clock
        self._subs: dict[str, _Subscription] = {}

    def __bool__(self) -> bool:
        return bool(self._subs)

    def listening(self) -> bool:
        return bool(self._subs)

    def wants_prompt(self, session: str) -> bool:
        return any(session in sub.prompts for sub in self._subs.values())

    def handle(self, msg: Inbound, summaries: Callable[[], list[p.SessionSummary]]) -> None:
        """Observe, ObserveRenew or ObserveStop."""
        body = msg.body
        now = self.clock()
        self._expire(now)
        if isinstance(body, p.Observe):
            if len(self._subs) >= self.limit:
                msg.reply(self.endpoint, p.ErrorReply(code="too_many_subscribers",
                                                      detail=f"{len(self._subs)} subscribers already (web.max_subscribers); try later"))
                return
            lease = min(max(body.lease_s, 1.0), 300.0)
            sub_id = os.urandom(6).hex()
            self._subs[sub_id] = _Subscription(msg, lease, now, body.prompt_sessions)
            msg.reply(self.endpoint, p.Observing(subscription_id=sub_id, sessions=summaries()))
        elif isinstance(body, p.ObserveRenew):
            sub = self._subs.get(body.subscription_id)
            if sub is None:
                msg.reply(self.endpoint, p.ErrorReply(code="unknown_subscription", detail=f"no subscription {body.subscription_id}; subscribe again"))
                return
            sub.expires = now + sub.lease_s
            sub.prompts = frozenset(body.prompt_sessions)
            msg.reply(self.endpoint, p.Ok())
        elif isinstance(body, p.ObserveStop):
            self._subs.pop(body.subscription_id, None)
            msg.reply(self.endpoint, p.Ok())

    def publish(self, fact: p.Msg) -> None:
        if not self._subs:
            return
        now = self.clock()
        for sub_id, sub in list(self._subs.items()):
            if now > sub.expires:
                del self._subs[sub_id]
                continue
            if isinstance(fact, p.PromptFact) and fact.session not in sub.prompts:
                continue
            try:
                sub.request.reply(self.endpoint, fact)
            except Exception:  # noqa: BLE001 - a slow or gone subscriber loses facts, never the session
                pass

    def shown(self, session: str, body: p.Msg) -> None:
        """What a session sent towards the glasses, as a fact."""
        if isinstance(body, p.Display):
            self.publish(p.DisplayFact(session=session, ts=time.time(), turn_id=body.turn_id, text=body.text,
                                       final=body.final, clear=body.clear))

    def gone(self, sessions: Iterable[str]) -> None:
        self.publish(p.SessionGoneFact(ts=time.time(), sessions=list(sessions)))

    def _expire(self, now: float) -> None:
        for sub_id in [s for s, sub in self._subs.items() if now > sub.expires]:
            del self._subs[sub_id]
