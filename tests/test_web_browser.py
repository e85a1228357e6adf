"""The web console in a real browser: headless Chromium (Debian's package) driven by Playwright,
against a real runtime (`run.py serve`, the scripted model, one process) and `run.py web`, each
a subprocess on free ports. A screenshot of the console in use is kept in build/test-artifacts/."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from harness import free_port

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = REPO / "build" / "test-artifacts"

playwright_sync = pytest.importorskip("playwright.sync_api")  # installed by `make test` (the test extra)
# one console (a module fixture: a runtime, the web process and Chromium) serves these tests in
# order, each seeing what the ones before did; beside `make test`'s parallel workers on a 2-core
# machine its page fell behind what the tests read: they run after them (`alone`, the Makefile)
pytestmark = pytest.mark.alone
if not os.path.exists(CHROMIUM):  # the Makefile installs it; say so plainly instead of a cryptic launch error
    raise RuntimeError(f"{CHROMIUM} is missing: run `make .venv/.installed` (apt-get install chromium) first")


def _wait_for_line(proc: subprocess.Popen, pattern: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    for line in proc.stdout:  # type: ignore[union-attr]
        if re.search(pattern, line):
            return line
        seen.append(line)
        if time.monotonic() > deadline:
            break
    said = "".join(seen[-5:]).strip()
    raise RuntimeError(f"no line matching {pattern!r} within {timeout} s (exit code {proc.poll()}): {said}")


def _start_web(base: list[str], cwd, env) -> tuple[subprocess.Popen, str]:
    """The console on a free port: a port found free may be taken (an outgoing connection's
    ephemeral port) before the console binds it; then another is tried (the CI saw it once)."""
    for attempt in range(3):
        web = subprocess.Popen(base + ["web", "--port", str(free_port()), "--session", "browser"], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            return web, _wait_for_line(web, r"^web console: http://", 30)
        except RuntimeError as exc:
            web.kill()
            web.wait()
            if "cannot listen" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("web")
    phone_port = free_port()
    config = tmp / "porfiry.toml"
    config.write_text(f"""
[topology]
mode = "ipc"
ipc_dir = "{tmp / 'ipc'}"
groups = [["skills", "toolsets", "media", "llm", "session", "glasses"]]
[phone]
endpoint = "tcp://127.0.0.1:{phone_port}"
[skills]
user_dir = "{tmp / 'user-skills'}"
[media]
db_path = "{tmp / 'media.sqlite3'}"
[storage]
path = "{tmp / 'porfiry.sqlite3'}"
[session]
# the console's tests: a scripted model answers the turn, not core.frame's question
frame = false
[llm]
profile = "scripted"
[llm.profiles.scripted]
kind = "scripted"
model = "scripted"
first_token_delay_s = 0.05
token_delay_s = 0.04
""")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PORFIRY_CONFIG", None)
    base = [sys.executable, str(REPO / "run.py"), "--config", str(config)]
    serve = subprocess.Popen(base + ["serve"], cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    web = None
    try:
        _wait_for_line(serve, r"all actors started", 60)
        web, line = _start_web(base, tmp, env)
        url = line.split("web console: ", 1)[1].split()[0]
        with playwright_sync.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 900})
            page.set_default_timeout(15_000)
            page.goto(url)
            page.wait_for_selector("#link.up")
            # every state the HUD passes through, for assertions about streaming and clearing
            page.evaluate("""() => {
                window.hudLog = [];
                const hud = document.querySelector('#hud-text');
                new MutationObserver(() => window.hudLog.push([hud.dataset.state, hud.textContent]))
                    .observe(hud, {childList: true, characterData: true, subtree: true, attributes: true});
            }""")
            yield page, url
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "web-console.png"), full_page=True)
            browser.close()
    finally:
        for proc in (web, serve):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _say(page, text: str) -> None:
    page.fill("#say-input", text)
    page.click("#say-send")


def _settled(page) -> None:
    """The newest turn has ended and the HUD shows its final text (on a loaded machine the page
    may still be streaming what a test before this one started)."""
    page.wait_for_function("() => !document.querySelector('#timeline .turn .turn-head').textContent.includes('running')"
                           " && document.querySelector('#hud-text').dataset.state === 'final'")


def _metric(url: str, name: str) -> float:
    metrics = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    found = re.search(rf"^{re.escape(name)} (\S+)$", metrics, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_typed_question_streams_its_answer_onto_the_hud(console):
    page, _ = console
    page.evaluate("() => { window.hudLog = []; }")
    _say(page, "what is the capital of France")
    page.wait_for_function("() => document.querySelector('#hud-text').dataset.state === 'final'")
    assert page.text_content("#hud-text") == "Sure. Here is a short answer to: what is the capital of France"
    log = page.evaluate("() => window.hudLog")
    partials = [text for state, text in log if state == "partial" and text]
    assert partials and len(partials[0]) < len(page.text_content("#hud-text")), log  # it grew piece by piece


def test_stop_clears_the_hud(console):
    page, _ = console
    page.evaluate("() => { window.hudLog = []; }")
    _say(page, "tell me a long story")
    page.wait_for_function("() => document.querySelector('#hud-text').textContent.includes('Once upon a time')")
    page.click("#stop")
    page.wait_for_function("() => window.hudLog.some(([state, text]) => state === 'empty' && text === '')")
    page.wait_for_function("() => document.querySelector('#hud-text').dataset.state === 'final'")
    assert "Once upon a time" not in page.text_content("#hud-text")
    assert page.locator("#timeline .turn-head .interrupted").count() >= 1
    assert page.locator("#timeline .badge.cancel").count() >= 1  # the stop, with its strategy


def test_enable_toolset_shows_a_countdown_and_the_timeline_lists_the_model_calls(console):
    page, url = console
    _say(page, "any films about space?")  # the model's turn, step by step (no reflex takes it: core.reflex)
    countdown = page.locator("#toolsets li[data-toolset='media'] .countdown")
    countdown.wait_for()
    page.wait_for_function("() => /^(9|10):\\d\\d left$/.test(document.querySelector(\"#toolsets li[data-toolset='media'] .countdown\").textContent)")
    page.wait_for_function("() => document.querySelector('#hud-text').textContent.startsWith('Here is what I found')")
    newest = page.locator("#timeline .turn").first
    # read_skill (which turns media on, shown as an invisible enable) -> media_search -> the answer:
    # three model calls in one turn
    newest.locator(".model-call").nth(2).wait_for()
    assert newest.locator(".model-call").count() == 3
    tools = newest.locator(".tool-call .label").all_text_contents()
    assert any(t.startswith("read_skill|media") for t in tools), tools
    assert any(t.startswith("enable_toolset|media · invisible") for t in tools), tools
    assert any(t.startswith("media_search|") and "· ok" in t for t in tools), tools
    # the last request's prompt, with the active toolsets marked as a dynamic section
    assert page.locator("#prompt mark[data-label='active toolsets']").count() == 1
    _settled(page)
    deadline = time.monotonic() + 15  # the metrics count a turn once its end reached the console
    while _metric(url, "porfiry_turns_total") < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _metric(url, "porfiry_turns_total") >= 3
    assert _metric(url, 'porfiry_tool_calls_total{outcome="ok",tool="media_search"}') == 1.0


def test_a_button_press_reaches_the_session_as_an_event(console):
    page, _ = console
    page.click("#buttons [data-button='double_tap']")
    page.locator("#timeline .turn").first.locator(".row.event", has_text="button: double_tap").wait_for()
    _settled(page)
    assert "button: double_tap" in page.locator("#timeline .turn").first.text_content()


def test_the_picker_opens_another_session_and_a_page_opened_later_sees_the_recent_past(console):
    page, url = console
    _settled(page)
    shown = page.text_content("#hud-text")
    page.fill("#new-session", "second")
    page.press("#new-session", "Enter")
    page.wait_for_function("() => document.querySelector('#session-picker').value === 'second'")
    assert page.text_content("#hud-text") == ""
    _say(page, "hello from the second session")
    page.wait_for_function("() => document.querySelector('#hud-text').textContent.endsWith('hello from the second session')")
    page.select_option("#session-picker", "browser")
    # the console replays what it kept of that session: its HUD, its state and its timeline
    page.wait_for_function("(shown) => document.querySelector('#hud-text').textContent === shown", arg=shown)
    # the recent past arrives with the page's stream, not with the HUD: wait for it, then check
    page.wait_for_function("() => document.querySelectorAll('#timeline .turn').length >= 4")
    assert page.locator("#timeline .turn").count() >= 4
    page.locator("#toolsets li[data-toolset='media']").wait_for()


def test_admin_lists_profiles_from_the_config_and_the_sessions(console):
    page, _ = console
    page.click("#admin-panel summary")
    page.wait_for_function("() => document.querySelectorAll('#profile option').length >= 3")
    profiles = page.locator("#profile option").all_text_contents()
    assert "scripted" in profiles and page.input_value("#profile") == "scripted"
    assert "media" in page.text_content("#skills")
    assert "browser" in page.locator("#sessions tbody").text_content()
    page.fill("#skill-name", "media")
    page.fill("#skill-target", "someone-else")
    page.click("[data-skills='exclude']")
    page.wait_for_function("() => document.querySelector('#skills').textContent.includes('[excluded for: someone-else]')")
    # swap the model: the worker's active profile follows (qwen needs no server to be chosen)
    page.select_option("#profile", "qwen")
    page.click("#use-profile")
    page.wait_for_function("() => document.querySelector('#llm-status').textContent.startsWith('qwen · ')")
    page.select_option("#profile", "scripted")
    page.click("#use-profile")
    page.wait_for_function("() => document.querySelector('#llm-status').textContent.startsWith('scripted · ')")
