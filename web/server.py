"""The web console's HTTP server (Starlette on hypercorn's trio worker).

    GET  /                      the page (web/static: plain HTML, CSS and JS; no build step)
    GET  /api/stream?session=S  server-sent events: the session list, S's kept facts, then S's live facts
    POST /api/send              {"session", "action": "text"|"stop"|"button", "text"}: an event from the page's phone
    GET  /api/admin             model profiles and status, skills and exclusions
    POST /api/admin/profile     {"profile"}: swap the model profile
    POST /api/admin/skills      {"op": "exclude"|"include"|"reload", "name", "target"}
    GET  /metrics               Prometheus text format
    POST /channels/NAME         a signed webhook for a session (web/channels.py; its signature is its auth)

Bound to loopback unless told otherwise; on any other host every request needs the token (a
`Authorization: Bearer` header, the `porfiry_token` cookie, or `?token=` once, which sets the cookie).
Before any route, web/guard.py refuses a Host that does not name this console and cross-origin
state changes (DNS rebinding).
"""
from __future__ import annotations

import ipaddress
import logging
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import protocol as p
from core.config import Config
from core.edge_limits import GarbageLog, session_id_problem
from phone.client import EventRejected, PhoneError
from web import channels
from web.guard import Guard, GuessThrottle, HostCheck, client_address, same_token
from web.journal import Journal, PageStream
from web.link import RuntimeLink
from web.metrics import CONTENT_TYPE, Metrics

STATIC = Path(__file__).resolve().parent / "static"
HEARTBEAT_S = 15.0
COOKIE = "porfiry_token"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def console_token(config: Config, host: str) -> str:
    """"" on loopback; else `web.token`, or the token kept in `web.token_path` (made on first use)."""
    if is_loopback(host):
        return ""
    if config.web.token:
        return config.web.token
    path = config.path(config.web.token_path)
    if path.exists() and path.read_text().strip():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(24)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return token


class Console:
    """The state the routes share: the journal, the metrics, the link to the runtime."""

    def __init__(self, config: Config, link: RuntimeLink | None, journal: Journal, metrics: Metrics,
                 default_session: str = "web", token: str = "", host: str = "127.0.0.1"):
        self.config = config
        self.hosts = HostCheck(host, config.web.allowed_hosts)  # its port is set once the server listens
        self.throttle = GuessThrottle(config.web.token_guesses_per_min)
        self.link = link
        self.journal = journal
        self.metrics = metrics
        self.default_session = default_session
        self.token = token
        self.channels = channels.ChannelGate(config.channels, max_depth=config.web.max_json_depth,
                                             max_session_chars=config.phone.max_session_id_chars)
        self.refusals = GarbageLog(config.channels.log_interval_s)  # refused console requests: one line per route per interval

    # ---- auth -----------------------------------------------------------------------------------
    def authorized(self, request: Request) -> bool:
        if not self.token:
            return True
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip() or request.cookies.get(COOKIE, "")
        return self._proves(request, given)

    def _proves(self, request: Request, given: str) -> bool:
        """Is `given` the token? A wrong one counts against the client's address (GuessThrottle)."""
        if given and same_token(given, self.token):
            return True
        if given:
            self.throttle.failed(client_address(request.scope))
        return False

    async def _json(self, request: Request) -> dict | Response:
        """A command's JSON object, or the 4xx that refuses it (logged in one line): not JSON
        (415), a body over web.max_body_bytes (413: refused before it is read whole), JSON that
        is malformed, nested past web.max_json_depth, or not an object (400)."""
        web = self.config.web
        try:
            if (refusal := _not_json(request)) is not None:
                raise channels.Refused(415, msgspec.json.decode(refusal.body)["error"])
            body = channels.decode_json(await channels.read_bounded(request, web.max_body_bytes, "web.max_body_bytes"),
                                        web.max_json_depth)
        except channels.Refused as refused:
            count = self.refusals.note(request.url.path.encode()[:64])
            if count:
                logging.getLogger("porfiry.web").warning("web: refused %d request(s) to %s (latest: %d %s)",
                                                         count, request.url.path[:64], refused.status, refused.reason)
            return JSONResponse({"error": refused.reason}, status_code=refused.status)
        if not isinstance(body, dict):
            return _bad("send a JSON object")
        return body

    # ---- routes ---------------------------------------------------------------------------------
    async def page(self, request: Request) -> Response:
        given = request.query_params.get("token", "")
        if self.token and given and self._proves(request, given):
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict")
            return response
        if not self.authorized(request):
            return _refused()
        return FileResponse(STATIC / "index.html")

    async def stream(self, request: Request) -> Response:
        if not self.authorized(request):
            return _refused()
        session = request.query_params.get("session", "") or self.default_session
        if (problem := session_id_problem(session, self.config.phone.max_session_id_chars)) is not None:
            return _bad(problem)
        page = PageStream(self.config.web.stream_max_bytes)
        for item in self.journal.snapshot(session):
            page.send_nowait(item)
        if not self.journal.attach(session, page):
            return JSONResponse({"error": f"too many pages open (web.max_clients = {self.journal.max_clients})"}, status_code=503)
        if self.link is not None:
            self.link.watch_changed()
        hello = msgspec.json.encode({"type": "Hello", "session": session, "default_session": self.default_session})

        async def events():
            try:
                yield b"data: " + hello + b"\n\n"
                while True:
                    data = None
                    with anyio.move_on_after(HEARTBEAT_S):
                        data = await page.receive()
                    yield (b"data: " + data + b"\n\n") if data is not None else b": keep-alive\n\n"
            finally:
                self.journal.detach(page)
                page.close()

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    async def send(self, request: Request) -> Response:
        if not self.authorized(request):
            return _refused()
        body = await self._json(request)
        if isinstance(body, Response):
            return body
        session = str(body.get("session") or "").strip()
        action = str(body.get("action") or "")
        text = str(body.get("text") or "").strip()
        if (problem := session_id_problem(session, self.config.phone.max_session_id_chars)) is not None:
            return _bad(problem)
        if action not in ("text", "stop", "button", "glasses"):
            return _bad("action must be text, stop, button or glasses")
        if action == "glasses" and text not in ("on", "off"):
            return _bad(f"the glasses are 'on' or 'off', not {text[:20]!r}")
        if action in ("text", "button") and not text:
            return _bad("nothing to send: the text is empty")
        if len(text) > self.config.web.max_text_chars:
            return _bad(f"the text has {len(text)} characters; at most {self.config.web.max_text_chars} (web.max_text_chars)")
        assert self.link is not None
        try:
            with anyio.fail_after(15):
                event_id = await self.link.send(session, action, text)
        except EventRejected as exc:
            return JSONResponse({"error": f"{exc.code}: {exc.detail}"}, status_code=409)
        except (PhoneError, TimeoutError) as exc:
            return JSONResponse({"error": f"the runtime did not take the event: {exc}"}, status_code=503)
        return JSONResponse({"event_id": event_id})

    async def admin(self, request: Request) -> Response:
        if not self.authorized(request):
            return _refused()
        assert self.link is not None
        llm = await self.link.ask_quietly("llm", p.LLMStatusRequest(), timeout=5.0)
        skills = await self.link.ask_quietly("skills", p.SkillsAdmin(op="list"))
        return JSONResponse({
            "profiles": sorted(self.config.llm.profiles),
            "llm": msgspec.to_builtins(llm) if isinstance(llm, p.LLMStatus) else None,
            "skills": skills.text if isinstance(skills, p.SkillsAdminReply) else "(the skill store did not answer)",
            "sessions": self.journal.session_list(),
        })

    async def use_profile(self, request: Request) -> Response:
        if not self.authorized(request):
            return _refused()
        body = await self._json(request)
        if isinstance(body, Response):
            return body
        profile = str(body.get("profile") or "")
        if profile not in self.config.llm.profiles:
            return _bad(f"unknown profile {profile!r}; profiles: {', '.join(sorted(self.config.llm.profiles))}")
        assert self.link is not None
        reply = await self.link.ask_quietly("llm", p.UseProfile(profile=profile), timeout=30.0)
        if reply is None:
            return JSONResponse({"error": "the model worker did not answer"}, status_code=503)
        if isinstance(reply, p.ErrorReply):
            return JSONResponse({"error": reply.detail}, status_code=409)
        return JSONResponse({"detail": getattr(reply, "detail", "")})

    async def skills(self, request: Request) -> Response:
        if not self.authorized(request):
            return _refused()
        body = await self._json(request)
        if isinstance(body, Response):
            return body
        op = str(body.get("op") or "")
        if op not in ("exclude", "include", "reload", "show"):
            return _bad("op must be exclude, include, reload or show")
        assert self.link is not None
        reply = await self.link.ask_quietly("skills", p.SkillsAdmin(op=op, name=str(body.get("name") or ""), target=str(body.get("target") or "")))
        if reply is None:
            return JSONResponse({"error": "the skill store did not answer"}, status_code=503)
        return JSONResponse({"text": getattr(reply, "text", None) or getattr(reply, "detail", "")})

    async def metrics_page(self, request: Request) -> Response:
        if not self.authorized(request):
            return _refused()
        if self.link is not None:
            status = await self.link.ask_quietly("supervisor", p.StatusRequest(), timeout=1.0)
            edge = await self.link.ask_quietly("glasses", p.EdgeStatsRequest(), timeout=1.0)
            admission = await self.link.ask_quietly("session", p.AdmissionStatsRequest(), timeout=1.0)
            self.metrics.take_status(status, edge, admission)
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def channel_post(self, request: Request) -> Response:
        """POST /channels/NAME: no console token; the channel's signature is checked instead."""
        name = request.path_params["name"]
        try:
            body = await channels.read_bounded(request, self.config.channels.max_body_bytes)
        except channels.Refused as refusal:
            self.channels.note(name, refusal)
            return JSONResponse({"error": refusal.reason}, status_code=refusal.status)
        try:
            post = self.channels.check(name, request.headers, body)
        except channels.Refused as refusal:
            return JSONResponse({"error": refusal.reason}, status_code=refusal.status)
        except channels.Replayed as replay:  # delivered once already: answered as the session answers a duplicate
            return JSONResponse({"event_id": replay.event_id, "duplicate": True}, status_code=202)
        assert self.link is not None
        status, answer = await channels.deliver(lambda msg, sid: self.link.admin.ask("session", msg, session=sid, timeout=5.0), post)
        if status == 202:
            self.channels.delivered(post)
        return JSONResponse(answer, status_code=status)

    def app(self) -> Guard:
        return Guard(Starlette(routes=[
            Route("/", self.page),
            Route("/api/stream", self.stream),
            Route("/api/send", self.send, methods=["POST"]),
            Route("/api/admin", self.admin),
            Route("/api/admin/profile", self.use_profile, methods=["POST"]),
            Route("/api/admin/skills", self.skills, methods=["POST"]),
            Route("/metrics", self.metrics_page),
            Route("/channels/{name}", self.channel_post, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC)),
        ]), self.hosts, self.throttle)


def _refused() -> Response:
    return JSONResponse({"error": "this console needs its token (see the line `run.py web` printed at start)"}, status_code=401)


def _bad(detail: str) -> Response:
    return JSONResponse({"error": detail}, status_code=400)


def _not_json(request: Request) -> Response | None:
    """Commands come as application/json only: another web site cannot send that to this console
    without a CORS preflight, which it does not answer (no cross-site requests on loopback)."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return JSONResponse({"error": "send commands as application/json"}, status_code=415)
    return None




async def serve_console(config: Config, host: str, port: int, *, default_session: str = "web", client_id: str = "web",
                        task_status=anyio.TASK_STATUS_IGNORED) -> None:
    """Run the console until cancelled. `task_status.started(url)` once it listens."""
    from hypercorn.config import Config as HypercornConfig
    from hypercorn.trio import serve

    from phone.client import PhoneClient

    token = console_token(config, host)
    journal = Journal(config.web.timeline_facts, config.web.sessions_kept, config.web.max_clients)
    metrics = Metrics()
    journal.on_fact.append(metrics.take)

    def seed(sessions: list[p.SessionSummary]) -> None:
        journal.seed(sessions)
        metrics.seed(sessions)

    phone = PhoneClient(config.phone.endpoint, client_id=client_id, connect_timeout_s=None,
                        max_message_bytes=config.protocol.max_message_bytes)
    async with phone:
        link = RuntimeLink(config, journal.take, seed, phone, journal.watched)
        console = Console(config, link, journal, metrics, default_session, token, host)
        hyper = HypercornConfig()
        hyper.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
        hyper.accesslog = None
        hyper.errorlog = logging.getLogger("porfiry.web.http")
        hyper.graceful_timeout = 1.0
        async with anyio.create_task_group() as tg:
            await tg.start(link.run)
            urls = await tg.start(serve, console.app(), hyper)
            url = urls[0] if urls else f"http://{host}:{port}"
            console.hosts.port = urlsplit(url).port or port
            task_status.started((url, token))
