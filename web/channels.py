"""Webhooks: `POST /channels/NAME` on the web server, a signed message for a session (E10).

    X-Porfiry-Timestamp: <unix seconds; refused outside channels.replay_window_s of now>
    X-Porfiry-Signature: sha256=<hex HMAC-SHA256 of TIMESTAMP + "." + the raw body, keyed by
                         the channel's secret>   (as Stripe and Slack sign: the time is covered)
    body: {"session": ID, "text": …, "urgency": "low|normal|high", "sender": …}

Every refusal is a clear 4xx with a JSON {"error"}, logged once per channel per
`channels.log_interval_s` with a count; nothing reaches a session unless it passed every check.
A signature seen within the window is a replay: answered as a duplicate, delivered to no session
(ReplayCache). The event id is a hash of the channel and the raw body, so the same body signed
again later is still a duplicate the session drops; a sender that means to repeat a message puts
an "id" in it. The gate is plain logic (`ChannelGate.check`); the route only reads and delivers.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import msgspec

import protocol as p
from core.channels import channel_event
from core.config import ChannelsConfig, channel_secrets
from core.edge_limits import GarbageLog, TokenBucket, session_id_problem
from core.notify import urgency_of

_log = logging.getLogger("porfiry.web.channels")

SIGNATURE_HEADER = "x-porfiry-signature"
TIMESTAMP_HEADER = "x-porfiry-timestamp"


class Refused(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


class Replayed(Exception):
    """A signature already delivered within the window: answered as a duplicate, delivered again to no one."""

    def __init__(self, event_id: str):
        super().__init__(event_id)
        self.event_id = event_id


@dataclass(frozen=True, slots=True)
class Post:
    session: str
    event: p.Event
    signature: bytes = b""  # channel NAME \0 signature: the replay cache's key


def sign(secret: str | bytes, timestamp: str, body: bytes) -> str:
    """The X-Porfiry-Signature header's value for `body` sent with X-Porfiry-Timestamp
    `timestamp` (exactly the header's text): HMAC-SHA256 of `timestamp.body` (senders and tests
    use this)."""
    key = secret.encode() if isinstance(secret, str) else secret
    return "sha256=" + hmac.new(key, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def signed_headers(secret: str | bytes, body: bytes, now: float | None = None) -> dict[str, str]:
    """Both headers for a post of `body` now (a sender's whole signing step)."""
    stamp = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(secret, stamp, body)}


class ReplayCache:
    """The signatures seen in the last `window_s`: a replay within the window is recognised
    whatever the session has seen since (its event ids are only its last 256). Bounded by the
    window and the channel's rate limit: at most posts_per_min a minute pass to be remembered."""

    def __init__(self, window_s: float, clock: Callable[[], float]):
        self.window_s, self.clock = window_s, clock
        self.seen: dict[bytes, tuple[float, str]] = {}  # signature -> (until, event id), oldest first

    def get(self, signature: bytes) -> str | None:
        """The event id a signature was first delivered as, while it is remembered."""
        self._expire()
        seen = self.seen.get(signature)
        return seen[1] if seen else None

    def add(self, signature: bytes, event_id: str) -> None:
        # twice the window: a timestamp may be up to window_s ahead of now as well as behind
        self.seen[signature] = (self.clock() + 2 * self.window_s, event_id)

    def _expire(self) -> None:
        now = self.clock()
        while self.seen:
            oldest = next(iter(self.seen))
            if self.seen[oldest][0] > now:
                break
            del self.seen[oldest]


class ChannelGate:
    def __init__(self, config: ChannelsConfig, env: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic,
                 max_depth: int = 32, max_session_chars: int = 128):
        self.config, self.clock, self.max_depth, self.max_session_chars = config, clock, max_depth, max_session_chars
        env = os.environ if env is None else env
        # ValueError (one line naming the key) for an unset secret_env or a short secret
        self.secrets: dict[str, bytes] = {name: secret.encode() for name, secret in channel_secrets(config, env).items()}
        burst = max(1.0, config.posts_per_min)
        self.buckets = {name: TokenBucket(config.posts_per_min / 60.0, burst, monotonic) for name in self.secrets}
        self.refusals = GarbageLog(config.log_interval_s, monotonic)
        self.refused = 0
        self.replays = ReplayCache(config.replay_window_s, monotonic)

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
            raise Refused(401, 'missing X-Porfiry-Signature: sha256=<hex HMAC-SHA256 of TIMESTAMP + "." + body>')
        stamp = headers.get(TIMESTAMP_HEADER, "")
        self._fresh(stamp)
        expected = sign(secret, stamp, body).encode()
        if not hmac.compare_digest(given.encode(errors="replace"), expected):
            raise Refused(401, "bad signature: X-Porfiry-Signature does not match X-Porfiry-Timestamp, "
                               "the body and the channel's secret (HMAC-SHA256 of TIMESTAMP.BODY)")
        replayed = self.replays.get(name.encode() + b"\0" + expected)
        if replayed is not None:
            raise Replayed(replayed)
        if not self.buckets[name].take():
            raise Refused(429, f"more than {cfg.posts_per_min:g} posts a minute on channel {name} (channels.posts_per_min); retry later")
        post = self._post(name, body)
        return Post(post.session, post.event, name.encode() + b"\0" + expected)

    def delivered(self, post: Post) -> None:
        """The session has the post's event: its signature is a replay from now on, for the window."""
        if post.signature:
            self.replays.add(post.signature, post.event.event_id)

    def _fresh(self, stamp: str) -> None:
        try:
            ts = float(stamp)
        except ValueError:
            raise Refused(401, "missing or malformed X-Porfiry-Timestamp (unix seconds)") from None
        window = self.config.replay_window_s
        if not math.isfinite(ts) or abs(self.clock() - ts) > window:  # nan compares false: checked first
            raise Refused(401, f"X-Porfiry-Timestamp {stamp[:32]!r} is not a time within {window:g} s of now "
                               "(channels.replay_window_s)")

    def _post(self, name: str, body: bytes) -> Post:
        fields = decode_json(body, self.max_depth)
        if not isinstance(fields, dict):
            raise Refused(400, 'the body must be a JSON object: {"session", "text", "urgency", "sender"}')
        session, text = fields.get("session"), fields.get("text")
        sender, urgency = fields.get("sender", ""), fields.get("urgency", "")
        if not isinstance(session, str):
            raise Refused(400, '"session" must be a session id (a string)')
        if (problem := session_id_problem(session, self.max_session_chars)) is not None:
            raise Refused(400, f'"session": {problem}')
        if not isinstance(text, str) or not text.strip():
            raise Refused(400, '"text" must be a non-empty string')
        if len(text) > self.config.max_text_chars:
            raise Refused(413, f'"text" has {len(text)} characters; at most {self.config.max_text_chars} (channels.max_text_chars)')
        if not isinstance(sender, str):
            raise Refused(400, '"sender" must be a string')
        if len(sender) > self.config.max_sender_chars:
            raise Refused(413, f'"sender" has {len(sender)} characters; at most {self.config.max_sender_chars} (channels.max_sender_chars)')
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


async def read_bounded(request, limit: int, key: str = "channels.max_body_bytes") -> bytes:
    """The raw body, refused (413) as soon as it is past `limit` (config key `key`): a declared
    Content-Length over it before a byte is read, else while it streams: a huge post is never
    read whole."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"the body has {declared[:20]} bytes; at most {limit} ({key})")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Refused(413, f"the body is over {limit} bytes ({key})")
    return bytes(body)


# a string (to the end when unterminated: each byte is looked at once) or a bracket
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


def decode_json(body: bytes, max_depth: int) -> object:
    """The body's JSON, or Refused(400): not JSON, or nested deeper than `max_depth` (checked
    before decoding, so no decoder recursion limit is ever met: a 400, never a 500)."""
    depth = 0
    for token in _JSON_TOKEN.finditer(body):
        first = token.group()[:1]
        if first in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                raise Refused(400, f"the JSON is nested more than {max_depth} deep (web.max_json_depth)")
        elif first in (b"]", b"}"):
            depth -= 1
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise Refused(400, f"the body is not JSON: {str(exc)[:200]}") from None


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
