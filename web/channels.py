"""Webhooks: `POST /channels/NAME` on the web server, a signed message for a session (E10).

    X-Porfiry-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed by the channel's secret>
    X-Porfiry-Timestamp: <unix seconds; refused outside channels.replay_window_s of now>
    body: {"session": ID, "text": …, "urgency": "low|normal|high", "sender": …}

Every refusal is a clear 4xx with a JSON {"error"}, logged once per channel per
`channels.log_interval_s` with a count; nothing reaches a session unless it passed every check.
The event id is a hash of the channel and the raw body, so a replayed body (whatever timestamp
it is given) is a duplicate the session drops; a sender that means to repeat a message puts an
"id" in it. The gate is plain logic (`ChannelGate.check`); the route only reads and delivers.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import msgspec

import protocol as p
from core.channels import channel_event
from core.config import ChannelsConfig, channel_secrets
from core.edge_limits import GarbageLog, TokenBucket
from core.notify import urgency_of

_log = logging.getLogger("porfiry.web.channels")

SIGNATURE_HEADER = "x-porfiry-signature"
TIMESTAMP_HEADER = "x-porfiry-timestamp"


class Refused(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass(frozen=True, slots=True)
class Post:
    session: str
    event: p.Event


def sign(secret: str | bytes, body: bytes) -> str:
    """The X-Porfiry-Signature header's value for `body` (senders and tests use this)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


class ChannelGate:
    def __init__(self, config: ChannelsConfig, env: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic):
        self.config, self.clock = config, clock
        env = os.environ if env is None else env
        # ValueError (one line naming the key) for an unset secret_env or a short secret
        self.secrets: dict[str, bytes] = {name: secret.encode() for name, secret in channel_secrets(config, env).items()}
        burst = max(1.0, config.posts_per_min)
        self.buckets = {name: TokenBucket(config.posts_per_min / 60.0, burst, monotonic) for name in self.secrets}
        self.refusals = GarbageLog(config.log_interval_s, monotonic)
        self.refused = 0

    def check(self, name: str, headers: Mapping[str, str], body: bytes) -> Post:
        """The post as an event for its session, or Refused(status, why)."""
        try:
            return self._check(name, headers, body)
        except Refused as refusal:
            self.note(name, refusal)
            raise

    def note(self, name: str, refusal: Refused) -> None:
        """Count a refusal; one log line per channel per interval, with the count."""
        self.refused += 1
        count = self.refusals.note(name.encode(errors="replace")[:64])
        if count:
            _log.warning("web: channel %r refused %d post(s) (latest: %d %s)", name[:64], count, refusal.status, refusal.reason)

    def _check(self, name: str, headers: Mapping[str, str], body: bytes) -> Post:
        cfg = self.config
        secret = self.secrets.get(name)
        if secret is None:
            raise Refused(404, f"no channel {name[:64]!r} with a secret is configured ([channels.NAME] secret or secret_env)")
        if len(body) > cfg.max_body_bytes:
            raise Refused(413, f"the body has {len(body)} bytes; at most {cfg.max_body_bytes} (channels.max_body_bytes)")
        given = headers.get(SIGNATURE_HEADER, "")
        if not given.startswith("sha256="):
            raise Refused(401, "missing X-Porfiry-Signature: sha256=<hex HMAC-SHA256 of the body>")
        self._fresh(headers.get(TIMESTAMP_HEADER, ""))
        if not hmac.compare_digest(given.encode(errors="replace"), sign(secret, body).encode()):
            raise Refused(401, "bad signature: X-Porfiry-Signature does not match the body and the channel's secret")
        if not self.buckets[name].take():
            raise Refused(429, f"more than {cfg.posts_per_min:g} posts a minute on channel {name} (channels.posts_per_min); retry later")
        return self._post(name, body)

    def _fresh(self, stamp: str) -> None:
        try:
            ts = float(stamp)
        except ValueError:
            raise Refused(401, "missing or malformed X-Porfiry-Timestamp (unix seconds)") from None
        window = self.config.replay_window_s
        if abs(self.clock() - ts) > window:
            raise Refused(401, f"X-Porfiry-Timestamp is more than {window:g} s from now (channels.replay_window_s)")

    def _post(self, name: str, body: bytes) -> Post:
        try:
            fields = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise Refused(400, f"the body is not JSON: {exc}") from None
        if not isinstance(fields, dict):
            raise Refused(400, 'the body must be a JSON object: {"session", "text", "urgency", "sender"}')
        session, text = fields.get("session"), fields.get("text")
        sender, urgency = fields.get("sender", ""), fields.get("urgency", "")
        if not isinstance(session, str) or not 0 < len(session) <= 128:
            raise Refused(400, '"session" must be a session id of 1-128 characters')
        if not isinstance(text, str) or not text.strip():
            raise Refused(400, '"text" must be a non-empty string')
        if len(text) > self.config.max_text_chars:
            raise Refused(413, f'"text" has {len(text)} characters; at most {self.config.max_text_chars} (channels.max_text_chars)')
        if not isinstance(sender, str) or len(sender) > 200:
            raise Refused(400, '"sender" must be a string of at most 200 characters')
        level = urgency_of(urgency, default="") if isinstance(urgency, str) else None
        if level is None:
            raise Refused(400, '"urgency" must be low, normal or high')
        allowed = self.config.named[name].sessions
        if session not in allowed:
            raise Refused(403, f"channel {name} may not feed session {session[:64]!r} ([channels.{name}] sessions)")
        digest = hashlib.sha256(name.encode() + b"\0" + body).hexdigest()[:24]
        event = channel_event(event_id=f"hook-{digest}", source="webhook", channel=name, sender=sender, text=text,
                              urgency=level, ts=self.clock())
        return Post(session, event)


async def read_bounded(request, limit: int) -> bytes:
    """The raw body, refused (413) as soon as it is past `limit`: a huge post is not read whole."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"the body has {declared} bytes; at most {limit} (channels.max_body_bytes)")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Refused(413, f"the body is over {limit} bytes (channels.max_body_bytes)")
    return bytes(body)


async def deliver(ask, post: Post) -> tuple[int, dict]:
    """Hand the event to the session actor: (HTTP status, JSON answer). `ask(body, session)`."""
    from actors.base import AskTimeout

    try:
        reply = await ask(p.DeliverEvent(event=post.event), post.session)
    except (AskTimeout, TimeoutError):
        return 503, {"error": "the runtime did not take the event in time; send it again (it is deduplicated)"}
    if isinstance(reply, p.EventAccepted):
        return 202, {"event_id": reply.event_id, "duplicate": reply.duplicate}
    if isinstance(reply, p.Busy):
        return 503, {"error": f"busy: {reply.detail}"}
    detail = getattr(reply, "detail", type(reply).__name__)
    return 409, {"error": f"the session refused the event: {detail}"}
