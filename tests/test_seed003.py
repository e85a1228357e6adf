"""Seed 003's experiments 4-4 and 4-5 played as written, through the real processes: `run.py serve`
(a process per actor), `run.py web` taking signed webhooks over HTTP, a real MCP server (stdio),
`run.py say` and a PhoneClient as the phone over tcp, and a scripted capable model behind an
OpenAI-compatible HTTP endpoint (tests/scripted_openai_server.py) that reads its prompt and
answers as an agent would.

4-4: three mails arrive while the user's glasses are off - an invitation (the calendar checked,
a reply drafted), a customer complaint (flagged, the user notified: pushed to the phone, kept
unread), an advert (archived, nothing for the user). Each wakes a full agent cycle with no user
input. When the glasses are back, what was kept is shown once, oldest first, in one display."""
from __future__ import annotations

import re
import signal
import sys
import time
from pathlib import Path

import anyio
import httpx
import msgspec

import protocol as p
from harness import free_port, until
from phone.client import PhoneClient
from phone.credentials import SessionTokens, tokens_file
from tests.scripted_openai_server import Reply, ScriptedOpenAIServer
from tests.test_process_mode import _write_config
from tests.test_restart_recovery import cli, remote, serve
from web.channels import sign

REPO = Path(__file__).resolve().parent.parent
SECRET = "mail-s3cret"

MAILS = {
    "m1": ("Ольга", "[m1] Приглашение: обсуждение бюджета 2026-12-08 11:00, придёте?"),
    "m2": ("ООО Ромашка", "[m2] Жалоба: заказ 4411 пришёл разбитым, требуем возврат до пятницы"),
    "m3": ("shop@example.com", "[m3] Распродажа! Скидки до 70% только сегодня"),
}


def _current(request) -> str:
    """The prompt from the latest event on: what the agent handles now, and its results so far."""
    text = "\n".join(m["content"] for m in request["messages"] if m["role"] != "system")
    start = max(text.rfind("[Channel message"), text.rfind("[User said]"))
    return text[start:]


def mail_agent(request) -> Reply:
    """A capable model playing the seed's mail agent, one step per request."""
    now = _current(request)
    done = set(re.findall(r"\[Tool result from (\w+)\]", now))
    if not now.startswith("[Channel message"):
        return Reply(chunks=["Привет! Я на связи."])
    if "[m1]" in now:  # an invitation: the calendar, a draft, then the answer for the user
        if "mail_calendar" not in done:
            return Reply(chunks=["TOOL_CALL: mail_calendar|2026-12-08 11:00"])
        if "mail_draft" not in done:
            return Reply(chunks=["TOOL_CALL: mail_draft|m1; Спасибо, буду 8 декабря в 11:00."])
        return Reply(chunks=["Приглашение от Ольги на 8 декабря 11:00: время свободно, ", "черновик «буду» готов."])
    if "[m2]" in now:  # a complaint: flagged, the user told
        if "mail_flag" not in done:
            return Reply(chunks=["TOOL_CALL: mail_flag|m2; high"])
        if "notify_user" not in done:
            return Reply(chunks=["TOOL_CALL: notify_user|Жалоба от ООО Ромашка: заказ 4411 разбит, "
                                 "требуют возврат до пятницы; urgency=high"])
        return Reply(chunks=["Готово: пользователь уведомлён."])
    if "[m3]" in now:  # an advert: archived, nothing for the user
        if "mail_archive" not in done:
            return Reply(chunks=["TOOL_CALL: mail_archive|m3"])
        return Reply(chunks=["TOOL_CALL: notify_nothing|рекламная рассылка, архивирована"])
    return Reply(chunks=["Не понял письмо."])


def _config(tmp_path: Path, ipc_dir: str, base_url: str, mail_log: Path) -> Path:
    return _write_config(tmp_path, ipc_dir, llm=remote(base_url), extra=f"""
[session]
reflexes = false
frame = false

[channels.mail]
secret = "{SECRET}"
sessions = ["u1"]

[mcp.servers.mail]
command = ["{sys.executable}", "{REPO / 'tests' / 'mcp_mail_server.py'}"]
env = {{ MAIL_LOG = "{mail_log}" }}
timeout_s = 20.0
""")


async def _web(config: Path, port: int, log: Path):
    process = await anyio.open_process([sys.executable, "run.py", "--config", str(config), "web", "--port", str(port)],
                                       cwd=REPO, stdout=open(log, "ab"), stderr=open(log, "ab"))

    async def up():
        try:
            async with httpx.AsyncClient() as client:
                return (await client.get(f"http://127.0.0.1:{port}/metrics")).status_code < 500
        except httpx.HTTPError:
            return False
    await until(up, timeout=60, every_s=0.3)
    return process


async def _post_mail(port: int, mail_id: str) -> str:
    sender, text = MAILS[mail_id]
    body = msgspec.json.encode({"session": "u1", "text": text, "sender": sender, "id": mail_id})
    headers = {"x-porfiry-signature": sign(SECRET, body), "x-porfiry-timestamp": str(int(time.time()))}
    async with httpx.AsyncClient() as client:
        reply = await client.post(f"http://127.0.0.1:{port}/channels/mail", content=body, headers=headers)
    assert reply.status_code == 202, reply.text
    return reply.json()["event_id"]


async def _stop(process) -> None:
    process.send_signal(signal.SIGTERM)
    with anyio.fail_after(30):
        await process.wait()


async def test_4_4_three_mails_with_the_glasses_off_are_handled_and_told_once(tmp_path, ipc_dir):
    mail_log = tmp_path / "mail.log"
    mail_log.write_text("")
    async with ScriptedOpenAIServer(respond=mail_agent) as model:
        config = _config(tmp_path, ipc_dir, model.base_url, mail_log)
        runtime, _ = await serve(config, tmp_path / "serve.log")
        port = free_port()
        web = await _web(config, port, tmp_path / "web.log")
        try:
            code, out = await cli(config, "say", "--client-id", "anna", "--session", "u1", "--timeout", "30", "привет")
            assert code == 0 and "Привет! Я на связи." in out, out
            tokens = SessionTokens(tokens_file(tmp_path, "anna"))  # the same user as `say`: her session
            async with PhoneClient(_endpoint(config), client_id="anna", tokens=tokens) as phone, \
                    phone.events("u1") as incoming:
                await phone.glasses("u1", "off")  # she takes the glasses off (no model turn)
                seen: list[p.Msg] = []
                for mail_id in ("m1", "m2", "m3"):  # one after another, each a full agent cycle
                    event_id = await _post_mail(port, mail_id)
                    with anyio.fail_after(60):
                        async for env in incoming:
                            seen.append(env.body)
                            if isinstance(env.body, p.TurnDone) and event_id in env.body.event_ids:
                                break
            assert mail_log.read_text().splitlines() == [
                "draft m1: Спасибо, буду 8 декабря в 11:00.", "flag m2: high", "archive m3"], "the real MCP server acted"
            assert not [m for m in seen if isinstance(m, p.Display) and m.text], "nothing shown to glasses that are off"
            pushed = [m.text for m in seen if isinstance(m, p.PushNotification)]
            assert pushed == ["Жалоба от ООО Ромашка: заказ 4411 разбит, требуют возврат до пятницы"], pushed
            told = [r for r in model.requests if "[Tool result from notify_user]" in r["messages"][-1]["content"]]
            assert "Kept unread: the glasses are off" in told[0]["messages"][-1]["content"], "the model is told the truth"

            # she puts them on again: what was kept, once, oldest first, in one display
            code, out = await cli(config, "say", "--client-id", "anna", "--session", "u1", "--glasses", "on")
            assert code == 0, out
            assert out.splitlines() == [
                "Пока вас не было:",
                "• Приглашение от Ольги на 8 декабря 11:00: время свободно, черновик «буду» готов.",
                "• ❗ Жалоба от ООО Ромашка: заказ 4411 разбит, требуют возврат до пятницы",
                "(glasses on)"], out
            for state in ("off", "on"):  # delivered once: another return shows nothing
                code, out = await cli(config, "say", "--client-id", "anna", "--session", "u1", "--glasses", state)
                assert code == 0 and "•" not in out and "Жалоба" not in out, out
            code, out = await cli(config, "sessions", "export", "u1")
            assert "notify_nothing|рекламная рассылка, архивирована" in out, "the silent end is in the journal, with why"
            assert "Готово: пользователь уведомлён." in out, "the reply after the notice is recorded, not shown"
        finally:
            await _stop(web)
            await _stop(runtime)


def _endpoint(config: Path) -> str:
    return re.search(r'endpoint = "(tcp://[^"]+)"', config.read_text()).group(1)
