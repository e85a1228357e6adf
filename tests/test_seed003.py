"""Seed 003's experiments 4-4 and 4-5 played as written, through the real processes: `run.py serve`
(a process per actor), `run.py web` taking signed webhooks over HTTP, a real MCP server (stdio),
`run.py say` and a PhoneClient as the phone over tcp, and a scripted capable model behind an
OpenAI-compatible HTTP endpoint (tests/scripted_openai_server.py) that reads its prompt and
answers as an agent would.

4-5: (1) an async tool with a time question answered meanwhile and `say --follow` showing its
late result; (3) a stop that cancels the running task; (4) three analysis scripts reporting
progress, the first to finish makes the agent look at the others and cancel the one under 50%,
on the standing instruction, and report when they are done.

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
from web.channels import signed_headers

REPO = Path(__file__).resolve().parent.parent
SECRET = "seed003-mail-secret-0123456789"  # channels.min_secret_chars: 16 at least

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
    headers = signed_headers(SECRET, body)
    async with httpx.AsyncClient() as client:
        reply = await client.post(f"http://127.0.0.1:{port}/channels/mail", content=body, headers=headers)
    assert reply.status_code == 202, reply.text
    return reply.json()["event_id"]


async def _mcp_up(config: Path, name: str) -> None:
    """Until `run.py toolsets list` shows the MCP server's toolset available (it starts in the
    background: the runtime never waits for it)."""
    async def up():
        _, out = await cli(config, "toolsets", "list")
        return any(line.split()[:3] == [name, "mcp", "available"] for line in out.splitlines())
    await until(up, timeout=60, every_s=0.3)


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
            await _mcp_up(config, "mail")
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


# ---- 4-5 ----------------------------------------------------------------------------------------
GATE: list[str] = [""]  # the file the analysis of 4-5 (1) waits for (the test creates it)


def _turn_now(request) -> tuple[str, str]:
    """(the whole conversation, the current turn: what came after the last plain answer)."""
    messages = [m for m in request["messages"] if m["role"] != "system"]
    answered = [i for i, m in enumerate(messages) if m["role"] == "assistant" and "TOOL_CALL" not in m["content"]]
    texts = [m["content"] for m in messages]
    return "\n".join(texts), "\n".join(texts[answered[-1] + 1 if answered else 0:])


def _scripts(text: str) -> dict[str, str]:
    """Script name -> its task id, from the calls and their placeholders in order."""
    names = re.findall(r"TOOL_CALL: jobs_analyze\|(\w+);", text)
    ids = re.findall(r"tool jobs_analyze started in the background as task (\w+)", text)
    return {name: task for name, task in zip(names, ids) if name != "logs"}


def async_agent(request) -> Reply:
    """A capable model playing the seed's async agent (4-5), one step per request."""
    text, now = _turn_now(request)

    results = re.findall(r"\[Tool result from (\w+)\]\n([^\n]*)", now)
    words = re.findall(r"(?:\[User said\] |User said: )([^\n]*)", now)  # alone, or in a batch
    if not words:
        finished = re.search(r"Tool result from jobs_analyze \(late[^\n]*?[\]:] analysis (\w+) done", now)
        if finished:
            return _standing_instruction(text, now, finished.group(1))
        return Reply(chunks=["TOOL_CALL: notify_nothing|only progress of running tasks; nothing new for the user"])
    said = words[-1].casefold()
    if "анализ продаж" in now:  # (2): the turn waits for it; the remarks meanwhile join its next step
        if "[Tool result from report_analyze]" not in now:
            return Reply(chunks=[f"TOOL_CALL: report_analyze|sales; 50; {GATE[0]}"])
        if "японском" in now and "веб-страниц" in now:
            return Reply(chunks=['<!DOCTYPE html><html lang="ja"><body><h1>売上分析</h1><p>分析完了: 100%</p></body></html>'])
        return Reply(chunks=["Анализ продаж готов."])
    if "три скрипта" in said:
        for name, rate in (("a", 25), ("b", 15), ("c", 3)):
            if f"jobs_analyze|{name};" not in now:
                return Reply(chunks=[f"TOOL_CALL: jobs_analyze|{name}; {rate}"])
        return Reply(chunks=["Три скрипта идут: " + ", ".join(f"{n} ({t})" for n, t in _scripts(text).items()) + "."])
    if "анализ логов" in said:
        if not results:
            return Reply(chunks=[f"TOOL_CALL: jobs_analyze|logs; 50; {GATE[0]}"])
        return Reply(chunks=["Анализ логов идёт в фоне; результат пришлю, когда он будет готов."])
    if "который час" in said:
        if not results:
            return Reply(chunks=["TOOL_CALL: get_current_time"])
        return Reply(chunks=[f"Сейчас {results[-1][1]}."])
    if "отмена" in said:
        return Reply(chunks=["Остановил."])
    return Reply(chunks=["Хорошо."])


def _standing_instruction(text: str, now: str, finished: str) -> Reply:
    """A script finished: look at the others, cancel those under 50%, report (4-5 (4)); the log
    analysis of (1) is simply reported."""
    if finished == "logs":
        return Reply(chunks=["Анализ логов готов: ошибок не найдено."])
    scripts = _scripts(text)
    others = [name for name in scripts if name != finished and f"analysis {name} done" not in text]
    first = not any(f"analysis {name} done" in text.replace(now, "") for name in scripts)
    if first:
        asked = re.findall(r"TOOL_CALL: tasks_status\|(\w+)", now)
        for name in others:
            if scripts[name] not in asked:
                return Reply(chunks=[f"TOOL_CALL: tasks_status|{scripts[name]}"])
        percent = {name: int(re.search(rf"{scripts[name]}: .*?Latest progress: (\d+)%", now, re.S).group(1)) for name in others}
        for name in others:
            if percent[name] < 50 and f"tasks_cancel|{scripts[name]}" not in now:
                return Reply(chunks=[f"TOOL_CALL: tasks_cancel|{scripts[name]}"])
        said = "; ".join(f"{n} на {p}% — " + ("отменён" if p < 50 else "продолжает") for n, p in percent.items())
        return Reply(chunks=[f"Скрипт {finished} готов; {said}."])
    cancelled = [n for n in scripts if f"tasks_cancel|{scripts[n]}" in text]
    done = [n for n in scripts if n not in cancelled]
    return Reply(chunks=[f"Итоговый отчёт: готовы {', '.join(done)}; отменён {', '.join(cancelled)}."])


def _jobs_config(tmp_path: Path, ipc_dir: str, base_url: str) -> Path:
    return _write_config(tmp_path, ipc_dir, llm=remote(base_url), extra=f"""
[session]
reflexes = false
frame = false

[mcp.servers.jobs]
command = ["{sys.executable}", "{REPO / 'tests' / 'mcp_progress_server.py'}"]
timeout_s = 20.0
long_running = ["analyze"]

[mcp.servers.report]
command = ["{sys.executable}", "{REPO / 'tests' / 'mcp_progress_server.py'}"]
timeout_s = 60.0
""")


async def _shown_until(incoming, done, timeout: float = 60) -> list[p.Msg]:
    """Messages of the session until `done(message)` holds for one."""
    got: list[p.Msg] = []
    with anyio.move_on_after(timeout):
        async for env in incoming:
            got.append(env.body)
            if done(env.body):
                return got
    raise AssertionError(f"not shown within {timeout:g} s; shown: {got}")


def _final(text: str):
    return lambda body: isinstance(body, p.Display) and body.final and text in body.text


async def test_4_5_an_async_task_a_question_meanwhile_its_late_result_and_say_follow(tmp_path, ipc_dir):
    GATE[0] = str(tmp_path / "logs.gate")
    async with ScriptedOpenAIServer(respond=async_agent) as model:
        config = _jobs_config(tmp_path, ipc_dir, model.base_url)
        runtime, _ = await serve(config, tmp_path / "serve.log")
        try:
            await _mcp_up(config, "jobs")
            tokens = SessionTokens(tokens_file(tmp_path, "anna"))
            async with PhoneClient(_endpoint(config), client_id="anna", tokens=tokens) as phone, \
                    phone.events("u1") as incoming:
                await phone.send_text("u1", "запусти анализ логов")
                await _shown_until(incoming, _final("Анализ логов идёт в фоне"))
                await phone.send_text("u1", "который час?")  # answered while the analysis runs
                await _shown_until(incoming, _final("Сейчас "))
                Path(GATE[0]).write_text("go")
                await _shown_until(incoming, _final("Анализ логов готов: ошибок не найдено."))
            # `say --follow`: the late result of a task the turn started, printed by the same `say`
            # (the gate is open: the analysis ends after its 2 s of work, long after the turn)
            code, out = await cli(config, "say", "--client-id", "anna", "--session", "u1", "--timeout", "30",
                                  "--follow", "10", "запусти анализ логов")
            lines = out.splitlines()
            assert code == 0 and "Анализ логов идёт в фоне; результат пришлю, когда он будет готов." in lines, out
            assert "Анализ логов готов: ошибок не найдено." in lines, out
            assert lines[-1] == "(follow: 10 s over; anything later waits in the session)", out
            code, out = await cli(config, "say", "--session", "u1", "--follow", "100000", "hi")
            assert code == 1 and "phone.max_follow_s" in out, "past its bound: a clear line, nothing sent"
        finally:
            await _stop(runtime)


async def test_4_5_a_stop_cancels_the_task_and_three_scripts_are_watched_on_a_standing_instruction(tmp_path, ipc_dir):
    GATE[0] = str(tmp_path / "never.gate")  # the log analysis never ends by itself: only the stop ends it
    async with ScriptedOpenAIServer(respond=async_agent) as model:
        config = _jobs_config(tmp_path, ipc_dir, model.base_url)
        runtime, _ = await serve(config, tmp_path / "serve.log")
        try:
            await _mcp_up(config, "jobs")
            tokens = SessionTokens(tokens_file(tmp_path, "anna"))
            async with PhoneClient(_endpoint(config), client_id="anna", tokens=tokens) as phone, \
                    phone.events("u1") as incoming:
                await phone.send_text("u1", "запусти анализ логов")
                await _shown_until(incoming, _final("Анализ логов идёт в фоне"))
                await phone.send_text("u1", "отмена")  # (3): the stop cancels the running task
                await _shown_until(incoming, _final("Остановил."))
                code, out = await cli(config, "sessions", "export", "u1")
                assert "cancelled by the user" in out, "the cancel is in the trajectory"

                # (4) three scripts at 25, 15 and 3 %/s; when a is done (4 s) b is past 50%, c is not
                await phone.send_text("u1", "запусти одновременно три скрипта, когда какой-то завершится первым, "
                                            "посмотри прогресс остальных и отмени тот, что не превысил 50%")
                await _shown_until(incoming, _final("Три скрипта идут"))
                first = await _shown_until(incoming, _final("Скрипт a готов"))
                said = [m.text for m in first if isinstance(m, p.Display) and m.final][-1]
                assert re.fullmatch(r"Скрипт a готов; b на \d+% — продолжает; c на \d+% — отменён\.", said), said
                await _shown_until(incoming, _final("Итоговый отчёт: готовы a, b; отменён c."))
            statuses = [r["messages"][-1]["content"] for r in model.requests
                        if "[Tool result from tasks_status]" in r["messages"][-1]["content"]]
            assert len(statuses) == 2 and all("still running in the background (for " in s for s in statuses), statuses
            await _mcp_up(config, "report")
            GATE[0] = str(tmp_path / "sales.gate")
            async with PhoneClient(_endpoint(config), client_id="anna", tokens=tokens) as phone, \
                    phone.events("u2") as incoming:  # (2) remarks while a task runs: batched into its next step
                started = len(model.requests)
                await phone.send_text("u2", "сделай анализ продаж")
                await _shown_until(incoming, lambda m: isinstance(m, p.StatusLine) and m.text.startswith("report_analyze"))
                await phone.send_text("u2", "не забудь ответить на японском")  # acked: queued in the session
                await phone.send_text("u2", "оформи в виде веб-страницы")
                Path(GATE[0]).write_text("go")
                shown = await _shown_until(incoming, lambda m: isinstance(m, p.TurnDone) and len(m.event_ids) == 3)
            finals = [m.text for m in shown if isinstance(m, p.Display) and m.final]
            assert finals == ['<!DOCTYPE html><html lang="ja"><body><h1>売上分析</h1><p>分析完了: 100%</p></body></html>'], shown
            page = next(r for r in model.requests[started:] if "японском" in str(r) and "веб-страниц" in str(r))
            assert "2 unprocessed events" in page["messages"][-1]["content"] or \
                page["messages"][-1]["content"].count("Unprocessed event") == 2, page["messages"][-1]["content"]
            cancels = [r["messages"][-1]["content"] for r in model.requests
                       if "[Tool result from tasks_cancel]" in r["messages"][-1]["content"]]
            assert len(cancels) == 1 and "(jobs_analyze) cancelled; other tasks keep running" in cancels[0], cancels
        finally:
            await _stop(runtime)


def _endpoint(config: Path) -> str:
    return re.search(r'endpoint = "(tcp://[^"]+)"', config.read_text()).group(1)
