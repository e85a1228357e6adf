"""Restarts that forget nothing, in the real deployment shape: `run.py serve` with a process per
actor, an OpenAI-compatible model over HTTP that records every request, `run.py say` as the
phone. SIGKILL the session actor's process, then stop and start the whole runtime: the next
request still carries the earlier turns, and toolsets are reset (S6) while a call to one is
substituted (S8)."""
import os
import signal
import sys
from pathlib import Path

import anyio

from tests.scripted_openai_server import Reply, ScriptedOpenAIServer
from tests.test_process_mode import _write_config
from harness import until

REPO = Path(__file__).resolve().parent.parent


def conversation(request) -> list[dict]:
    """The messages as the endpoint gets them: the last is a user turn (the user's words, or a
    tool result with the notice that closes it: consecutive user turns are merged)."""
    return list(request["messages"])


_SLOW_ASKS: list[str] = []


def respond(request) -> Reply:
    messages = conversation(request)
    last = messages[-1]["content"]
    if "has NOT been executed" in last:
        return Reply(chunks=["TOOL_CALL: media_search|lara croft"])
    if "Tomb Raider" in last or "Lara Croft" in last and "[User said]" not in last.splitlines()[-1]:
        return Reply(chunks=["Here is what I found: Lara Croft"])
    if "search lara croft" in last:
        return Reply(chunks=["TOOL_CALL: media_search|lara croft"])
    if "slow question" in last:
        # the first ask dies with the session process; asked again after the restart, it answers
        _SLOW_ASKS.append(last)
        return Reply(chunks=["never shown"], first_chunk_delay_s=30) if len(_SLOW_ASKS) == 1 else Reply(chunks=["Сорок два."])
    return Reply(chunks=["Приятно ", "познакомиться."])


def remote(base_url: str) -> str:
    """The [llm] lines of the model behind `base_url`."""
    return f"""profile = "remote"

[llm.profiles.remote]
kind = "openai"
base_url = "{base_url}"
model = "scripted-model"
retries = 0"""


async def cli(config: Path, *args: str) -> tuple[int, str]:
    done = await anyio.run_process([sys.executable, "run.py", "--config", str(config), *args], cwd=REPO, check=False)
    return done.returncode, done.stdout.decode() + done.stderr.decode()


async def status(config: Path) -> dict[str, list[str]]:
    _, out = await cli(config, "status")
    return {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.strip() and len(line.split()) > 3}


async def serve(config: Path, log: Path):
    process = await anyio.open_process([sys.executable, "run.py", "--config", str(config), "serve"], cwd=REPO,
                                       stdout=open(log, "ab"), stderr=open(log, "ab"))

    async def ready():
        rows = await status(config)
        return len(rows) == 6 and all(row[1] == "yes" for row in rows.values()) and rows
    return process, await until(ready, timeout=60, every_s=0.3)


def system_prompt(request) -> str:
    """The whole prompt: the static part first, the state part before the current turn."""
    return "\n\n".join(m["content"] for m in request["messages"] if m["role"] == "system")


def said(request) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")


async def test_a_sigkilled_session_process_and_a_restarted_runtime_forget_nothing(tmp_path, ipc_dir):
    async with ScriptedOpenAIServer(respond=respond) as server:
        # S8's substitution itself is under test: a call to an inactive toolset is not run at once
        config = _write_config(tmp_path, ipc_dir, llm=remote(server.base_url),
                               extra="[session]\nexecute_substituted_calls = false\nreflexes = false")
        process, rows = await serve(config, tmp_path / "serve.log")
        try:
            code, out = await cli(config, "say", "--session", "d1", "--timeout", "20", "Меня зовут Аглая")
            assert code == 0, out
            code, out = await cli(config, "say", "--session", "d1", "--timeout", "20", "search lara croft")
            assert code == 0 and "Here is what I found" in out, out
            assert "media" in system_prompt(server.requests[-1]).split("Active toolsets:")[-1], "media is active now"

            os.kill(int(rows["session"][2]), signal.SIGKILL)
            await until(lambda: _restarted(config, "session", rows["session"][2]), timeout=60, every_s=0.3)
            before = len(server.requests)
            code, out = await cli(config, "say", "--session", "d1", "--timeout", "20", "search lara croft")
            assert code == 0 and "Here is what I found" in out, out
            after_kill = server.requests[before:]
            assert "Меня зовут Аглая" in said(after_kill[0]), "the earlier turns survive the SIGKILL"
            assert "Active toolsets:" not in system_prompt(after_kill[0]) or "media" not in system_prompt(after_kill[0]).split("Active toolsets:")[-1], \
                "toolsets are not persisted (S6)"
            assert "has NOT been executed" in conversation(after_kill[1])[-1]["content"], "the call is substituted (S8)"

            # A turn cut by the SIGKILL: the phone was acked, so the turn is continued after the restart.
            rows = await status(config)
            before = len(server.requests)
            outcome: list[tuple[int, str]] = []
            async with anyio.create_task_group() as tg:
                async def ask_slowly():
                    outcome.append(await cli(config, "say", "--session", "d1", "--timeout", "40", "slow question"))
                tg.start_soon(ask_slowly)
                await until(lambda: _asked(server, before, "slow question"), timeout=60, every_s=0.3)
                os.kill(int(rows["session"][2]), signal.SIGKILL)
            code, out = outcome[0]
            assert code == 0 and out.strip().splitlines()[-1].endswith("Сорок два."), out
            # no call was cut: the lost step is asked again as it was (core.resume), no notice
            assert conversation(server.requests[-1])[-1]["content"].endswith("[User said] slow question")
            assert _SLOW_ASKS[0] == _SLOW_ASKS[1]
        finally:
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                await process.wait()

        process, rows = await serve(config, tmp_path / "serve.log")
        try:
            before = len(server.requests)
            code, out = await cli(config, "say", "--session", "d1", "--timeout", "20", "как меня зовут?")
            assert code == 0, out
            carried = said(server.requests[before])
            assert "Меня зовут Аглая" in carried and carried.count("search lara croft") == 2 and "slow question" in carried, \
                "the whole history survives a stop and start of the runtime"
        finally:
            process.send_signal(signal.SIGKILL)  # the whole runtime dies at once: nothing to flush
            with anyio.fail_after(30):
                await process.wait()
            for row in rows.values():
                try:
                    os.kill(int(row[2]), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass


async def _asked(server, before: int, words: str) -> bool:
    return any(words in said(request) for request in server.requests[before:])


async def _restarted(config: Path, name: str, old_pid: str):
    row = (await status(config)).get(name)
    return row and row[1] == "yes" and row[2] != old_pid
