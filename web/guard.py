"""The console's front door, before any route: whom it answers at all.

DNS rebinding: a page on attacker.example re-points its name at 127.0.0.1 and talks to the
console as a same-origin page of attacker.example. The browser then sends `Host:
attacker.example:PORT`, which no legitimate client does, so every request must name this console
in `Host`: its bind address, a loopback name (127.0.0.1, localhost, [::1]) with its port, any IP
literal when it listens on every address (an IP cannot be rebound), or a name in
`web.allowed_hosts`. State changes (any method but GET/HEAD/OPTIONS) must also come from the
console's own origin: a foreign or `null` Origin is refused, and so is a browser request without
one (it says `Sec-Fetch-Site`); a client that is no browser (curl, scripts) sends neither.
"""
from __future__ import annotations

import collections
import hmac
import ipaddress
import time
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

import trio  # the console runs on hypercorn's trio worker

from starlette.responses import JSONResponse

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
Asgi = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


class HostCheck:
    """Which Host and Origin values name this console. `port`: the port it listens on (0 until
    known: then any port is taken)."""

    def __init__(self, bind_host: str = "127.0.0.1", allowed_hosts: list[str] | tuple[str, ...] = (), port: int = 0):
        bind = bind_host.strip("[]").lower()
        bind_ip = _ip(bind)
        self.port = port
        self.any_ip = bind in ("", "0.0.0.0", "::") or (bind_ip is not None and bind_ip.is_unspecified)
        self.names = set(LOOPBACK_NAMES) | ({bind} if bind and not self.any_ip else set())
        self.extra: dict[str, int] = {}  # configured name -> its port (0: any)
        for entry in allowed_hosts:
            name, port_of = _split(entry)
            if name:
                self.extra[name] = port_of or 0

    def host_ok(self, host: str) -> bool:
        """Does a Host header (or an Origin's host[:port]) name this console?"""
        name, port = _split(host)
        if not name:
            return False
        if name in self.extra:
            return self.extra[name] in (0, port)
        ip = _ip(name)
        if name in self.names or (self.any_ip and ip is not None) or (ip is not None and ip.is_loopback):
            return not self.port or (port or 80) == self.port
        return False

    def origin_ok(self, origin: str) -> bool:
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and not parts.path.strip("/") and self.host_ok(parts.netloc)

    def refusal(self, method: str, headers: dict[str, str]) -> str:
        """"" when the request may go on; else why not (one line for the client)."""
        host = headers.get("host", "")
        if not self.host_ok(host):
            return (f"this console does not answer to Host {host!r}; use its own address "
                    "(127.0.0.1, localhost or [::1] with its port), or add the name to web.allowed_hosts")
        if method in SAFE_METHODS:
            return ""
        origin = headers.get("origin")
        if origin is not None:
            return "" if self.origin_ok(origin) else f"cross-origin request refused: Origin {origin!r} is not this console"
        if headers.get("sec-fetch-site", "same-origin") != "same-origin":
            return "cross-origin request refused: a browser sent it without an Origin of this console"
        return ""


def _split(host: str) -> tuple[str, int | None]:
    """'Name:port' -> ('name', port or None); unparseable (a bad port too) -> ('', None)."""
    try:
        parts = urlsplit("//" + host.strip())
        return (parts.hostname or ""), parts.port
    except ValueError:
        return "", None


def same_token(given: str, token: str) -> bool:
    """Constant-time for any input: a header may carry any byte (latin-1), a query any character."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass"))


class GuessThrottle:
    """Wrong tokens per client address: after `per_min` within a minute the address is refused
    (429) until the oldest of them is a minute old. Bounded in addresses (oldest forgotten)."""

    def __init__(self, per_min: int, clock: Callable[[], float] = time.monotonic, max_addresses: int = 10_000):
        self.per_min, self.clock, self.max_addresses = per_min, clock, max_addresses
        self._failures: collections.OrderedDict[str, collections.deque[float]] = collections.OrderedDict()

    def wait_s(self, address: str) -> float:
        """Seconds until `address` may present a token again (0: now)."""
        failures = self._failures.get(address)
        if failures is None or len(failures) < self.per_min:
            return 0.0
        return max(0.0, failures[0] + 60.0 - self.clock())

    def failed(self, address: str) -> None:
        failures = self._failures.pop(address, None) or collections.deque(maxlen=self.per_min)
        failures.append(self.clock())
        self._failures[address] = failures
        while len(self._failures) > self.max_addresses:
            self._failures.popitem(last=False)


class Guard:
    """ASGI middleware: HostCheck before the app, a 403 with the reason otherwise; an address
    that guessed too many wrong tokens gets 429 before its token is even looked at."""

    def __init__(self, app: Asgi, check: HostCheck, throttle: GuessThrottle | None = None):
        self.app = app
        self.check = check
        self.throttle = throttle

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            why = self.check.refusal(scope.get("method", "GET"), headers)
            if why:
                await JSONResponse({"error": why}, status_code=403)(scope, receive, send)
                return
            wait = self.throttle.wait_s(client_address(scope)) if self.throttle is not None else 0.0
            if wait > 0:
                text = (f"too many wrong tokens from this address: {self.throttle.per_min} a minute at most "
                        f"(web.token_guesses_per_min); try again in {wait:.0f} s")
                await JSONResponse({"error": text}, status_code=429, headers={"Retry-After": str(int(wait) + 1)})(scope, receive, send)
                return
        await self.app(scope, receive, _until_hung_up(send))


def _until_hung_up(send):
    """`send`, quiet once the client has gone. A client that hangs up mid-answer makes
    hypercorn's trio worker half-close the socket while the answer is still being written
    (BusyResourceError, or Broken/Closed): nobody is left to read it, so it is no error and no
    traceback in the operator's log; later sends of the same answer are dropped too."""
    gone = False

    async def quiet_send(message: dict) -> None:
        nonlocal gone
        if gone:
            return
        try:
            await send(message)
        except (trio.BusyResourceError, trio.BrokenResourceError, trio.ClosedResourceError):
            gone = True

    return quiet_send


def client_address(scope: dict[str, Any]) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"
