#!/usr/bin/env python3
"""Porfiry's command line: serve the runtime, inspect it, talk to it.

    python run.py serve [--inproc]       start the six actors under the supervisor (foreground)
    python run.py up [--session ID]      serve and the web console in the background + a phone console (`make run`)
    python run.py web [--port 8780]      the web console and /metrics for a running system
    python run.py status                 each actor: alive, pid, restarts, inbox depth
    python run.py llm use gemma|qwen     swap the model at runtime; `llm status` shows it
    python run.py skills list|show|exclude|include|reload
    python run.py prompt --state 1|3     print a system prompt and its Gemma token count
    python run.py say --session ID TEXT  send one event, print what the glasses show
    python run.py phone --session ID     interactive phone console
    python run.py keys --dir DIR         CURVE key pairs for the phone endpoint
    python run.py bench [--sessions N]   load benchmark (process mode, scripted model); --prompts
    python run.py eval [--profile P]     score a real model on the eval scenarios (progressive vs flat)
    python run.py sessions list|show ID|export ID|delete ID   the session journal
    python run.py cluster up|status|down                      several nodes on PostgreSQL behind HAProxy
    python run.py eval-router [--profile P]  router accuracy (rules, model) on the labelled set
"""
from __future__ import annotations

import argparse
import sys

import anyio

from core.config import ConfigError
from core.loading import load_config
from core.logs import setup_logging


def _config(args: argparse.Namespace):
    from actors.topology import process_groups

    try:
        config = load_config(args.config)
        process_groups(config.topology)  # a wrong process group: say so now, not in a traceback
        return config
    except (ConfigError, ValueError) as exc:
        print(f"porfiry: {exc}", file=sys.stderr)
        sys.exit(2)  # a bad value: one line, before anything starts


# ---- serve / status ------------------------------------------------------------------------
async def _serve_until_signal(supervisor) -> None:
    """Run the supervisor until it stops, or until SIGINT/SIGTERM."""
    import signal

    async with anyio.create_task_group() as tg:
        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    print("porfiry: stopping", file=sys.stderr)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        await supervisor.run_until_stopped()
        tg.cancel_scope.cancel()


def cmd_serve(args: argparse.Namespace) -> int:
    import msgspec

    from actors.supervisor import Supervisor

    if args.node:
        import os

        os.environ["PORFIRY_NODE_NAME"] = args.node  # the actor processes read it too
    config = _config(args)
    if args.inproc:
        config = msgspec.structs.replace(config, topology=msgspec.structs.replace(config.topology, mode="inproc"))
    setup_logging(args.log_level)
    if args.log_level:
        import os

        os.environ["PORFIRY_LOG_LEVEL"] = args.log_level  # the actor processes read it too

    from core.instance_lock import AlreadyRunning, InstanceLock

    try:  # before any socket binds: a second runtime must not steal the first one's sockets
        instance_lock = InstanceLock(config.topology.ipc_dir).acquire()
    except (AlreadyRunning, OSError) as exc:
        print(f"porfiry: {exc}", file=sys.stderr)
        return 1
    from core import tracing
    from core.permanent import EXIT_PERMANENT, PermanentFailure
    from storage.sqlite_file import StorageError, preflight

    try:  # one runtime per database, and a corrupt one (or tracing without its packages) is one line, before any actor starts
        preflight(config.path(config.storage.path))
        tracing.configure(config.tracing, "runtime" if config.topology.mode == "inproc" else "supervisor")
    except (StorageError, PermanentFailure) as exc:
        instance_lock.release()
        print(f"porfiry: {exc}", file=sys.stderr)
        return EXIT_PERMANENT
    supervisor = Supervisor(config)
    try:
        anyio.run(_serve_until_signal, supervisor, backend="trio")
    except KeyboardInterrupt:
        pass
    finally:
        instance_lock.release()
    if supervisor.failure:
        print(f"porfiry: stopped: {supervisor.failure}", file=sys.stderr)
        return 2
    return 0


async def ask_runtime(config, target: str, body, timeout: float = 5.0):
    """One request to a running system's actor, from outside (a CLI client)."""
    from actors.base import AskTimeout, Endpoint

    client = Endpoint(config, name="cli")
    async with client.running():
        try:
            return await client.ask(target, body, timeout=timeout)
        except AskTimeout as exc:
            timed_out = exc  # raised outside the task group, which would wrap it in an ExceptionGroup
    raise timed_out


def _ask_or_exit(config, target: str, body, timeout: float = 5.0):
    from actors.base import AskTimeout, Endpoint
    from transport.keys import KeyFileError

    try:
        Endpoint(config, name="cli").bus_keys()  # tcp mode: the bus key, read before anything is sent
        return anyio.run(ask_runtime, config, target, body, timeout, backend="trio")
    except KeyFileError as exc:
        sys.exit(f"porfiry: cannot authenticate to the runtime's bus: {exc}")
    except AskTimeout:
        sys.exit(f"porfiry: no answer from {target} at {config.topology.mode} address; is `python run.py serve` running?")


def cmd_status(args: argparse.Namespace) -> int:
    import protocol as p

    config = _config(args)
    status = _ask_or_exit(config, "supervisor", p.StatusRequest())
    print(f"mode: {status.mode}")
    print(f"{'actor':10} {'alive':6} {'pid':>8} {'restarts':>8} {'inbox':>6}  last exit")
    for row in status.actors:
        print(f"{row.name:10} {'yes' if row.alive else 'NO':6} {row.pid:>8} {row.restarts:>8} {row.inbox_depth:>6}  {row.detail}")
    return 0 if all(row.alive for row in status.actors) else 1


def cmd_up(args: argparse.Namespace) -> int:
    """`make run`: the runtime in the background (logs to var/porfiry.log) and a phone console
    in the foreground; leaving the console stops the runtime."""
    import os
    import subprocess
    import time

    import protocol as p
    from actors.base import AskTimeout

    config = _config(args)
    web = None
    log_path = config.path("var/porfiry.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.touch(0o600)
    os.chmod(log_path, 0o600)  # one written by an older version may be 0644
    command = [sys.executable, os.path.abspath(__file__)] + (["--config", args.config] if args.config else []) + ["serve"]
    with open(log_path, "ab") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    print(f"porfiry: starting the runtime (profile {config.llm.profile}; log: {log_path})", flush=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                print(f"porfiry: the runtime exited with code {server.returncode}; see {log_path}", file=sys.stderr)
                return 1
            try:
                status = anyio.run(ask_runtime, config, "supervisor", p.StatusRequest(), 2.0, backend="trio")
                if all(row.alive for row in status.actors):
                    break
            except AskTimeout:
                pass
            if time.monotonic() > deadline:
                print("porfiry: the runtime did not start within 120 s", file=sys.stderr)
                return 1
            time.sleep(0.5)
        _await_warm_model(config, server)
        from web.cli import start_web

        web = start_web(args, config, log_path, os.path.abspath(__file__))
        from phone.cli import cmd_phone

        return cmd_phone(args, _config)
    finally:
        if web is not None:
            web.terminate()  # it stops at once on SIGTERM
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


def _await_warm_model(config, server) -> None:
    """`up`: wait (at most llm.warmup_wait_s) while the LLM worker loads the embedded model and
    reads the prompt sessions start with, on one progress line, so the first greeting does not
    pay for it (issue 54)."""
    import time

    import protocol as p
    from actors.base import AskTimeout

    deadline, shown = time.monotonic() + config.llm.warmup_wait_s, False
    while server.poll() is None:
        try:
            status = anyio.run(ask_runtime, config, "llm", p.LLMStatusRequest(), 5.0, backend="trio")
        except AskTimeout:
            status = None
        if status is not None and status.warm != "warming":
            if status.warm == "warm":
                print(f"\rporfiry: the model ({status.active}) is loaded and has read its prompt ({status.warm_s:.0f} s)", flush=True)
            elif status.warm == "failed":
                print(f"\rporfiry: the model ({status.active}) did not load: {status.warm_detail}", flush=True)
            return
        if time.monotonic() > deadline:
            print(f"\nporfiry: the model is still warming after {config.llm.warmup_wait_s:.0f} s (llm.warmup_wait_s); "
                  "the first answer waits for it", flush=True)
            return
        if status is not None:
            shown = True
            print(f"\rporfiry: warming the model ({status.active}): loading it and reading its prompt… {status.warm_s:.0f} s",
                  end="", flush=True)
        time.sleep(1.0)
    if shown:
        print(flush=True)


# ---- llm ----------------------------------------------------------------------------------
def cmd_llm(args: argparse.Namespace) -> int:
    import protocol as p

    config = _config(args)
    if args.llm_command == "use":
        reply = _ask_or_exit(config, "llm", p.UseProfile(profile=args.profile))
        if isinstance(reply, p.ErrorReply):
            print(f"porfiry: {reply.detail}", file=sys.stderr)
            return 1
        print(reply.detail)
        return 0
    status = _ask_or_exit(config, "llm", p.LLMStatusRequest(), timeout=15.0)
    print(f"active profile: {status.active}")
    print(f"profiles:       {', '.join(status.profiles)}")
    print(f"healthy:        {'yes' if status.healthy else 'NO'} ({status.detail})")
    print(f"in flight:      {status.in_flight}")
    return 0 if status.healthy else 1


# ---- skills -------------------------------------------------------------------------------
def cmd_skills(args: argparse.Namespace) -> int:
    import protocol as p

    config = _config(args)
    reply = _ask_or_exit(config, "skills", p.SkillsAdmin(op=args.op, name=args.name or "", target=args.target or ""))
    print(reply.text if isinstance(reply, p.SkillsAdminReply) else reply)
    return 0


# ---- toolsets -----------------------------------------------------------------------------
def cmd_toolsets(args: argparse.Namespace) -> int:
    import protocol as p
    from core.toolsets import toolsets_table

    config = _config(args)
    report = _ask_or_exit(config, "toolsets", p.ToolsetsRequest())
    print(toolsets_table(report.toolsets))
    return 0 if all(row.state in ("available", "disabled") for row in report.toolsets) else 1


# ---- prompt -------------------------------------------------------------------------------
def cmd_prompt(args: argparse.Namespace) -> int:
    from core.budget import prompt_for_state

    config = _config(args)
    text = prompt_for_state(config, args.state)
    print(text)
    print("-" * 60)
    try:
        from llm.gemma_model import count_tokens
    except ImportError as exc:  # pragma: no cover - the Makefile installs llama-cpp-python
        print(f"(no Gemma tokenizer: {exc})")
        return 1
    tokens = count_tokens(text)
    print(f"state {args.state}: {tokens} Gemma tokens, {len(text)} characters")
    if args.state == 3:
        print(f"activating media adds {tokens - count_tokens(prompt_for_state(config, 1))} tokens")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", help="TOML config file (default: $PORFIRY_CONFIG or ./porfiry.toml)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="start the runtime in the foreground")
    serve.add_argument("--inproc", action="store_true", help="all actors in this process over inproc://")
    serve.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING")
    serve.add_argument("--node", default=None, metavar="NAME",
                       help="one of several nodes on one PostgreSQL (node.name; docs/several-nodes.md)")
    serve.set_defaults(func=cmd_serve)

    up = sub.add_parser("up", help="start the runtime and the web console, open a phone console (what `make run` does)")
    from phone.cli import _add_connection_args

    _add_connection_args(up)
    from web.cli import add_web_args

    add_web_args(up)
    up.set_defaults(func=cmd_up)

    status = sub.add_parser("status", help="show each actor of the running system")
    status.set_defaults(func=cmd_status)

    llm = sub.add_parser("llm", help="model profile of the running system")
    llm_sub = llm.add_subparsers(dest="llm_command", required=True)
    use = llm_sub.add_parser("use", help="switch the active profile (requests in flight finish where they started)")
    use.add_argument("profile", help="gemma, qwen, scripted or a profile from the config")
    llm_sub.add_parser("status", help="active profile, backend health, requests in flight")
    llm.set_defaults(func=cmd_llm)

    skills = sub.add_parser("skills", help="list, show, exclude, include or reload skills")
    skills.add_argument("op", choices=["list", "show", "exclude", "include", "reload"])
    skills.add_argument("name", nargs="?", help="skill name (show, exclude, include)")
    skills.add_argument("target", nargs="?", help="session id or phone key (exclude, include)")
    skills.set_defaults(func=cmd_skills)

    toolsets = sub.add_parser("toolsets", help="every toolset of the running system: where it runs, state, tools, last error")
    toolsets.add_argument("op", choices=["list"])
    toolsets.set_defaults(func=cmd_toolsets)

    prompt = sub.add_parser("prompt", help="print a system prompt and its Gemma token count")
    prompt.add_argument("--state", type=int, choices=[1, 3], default=1, help="1: nothing active; 3: media active")
    prompt.set_defaults(func=cmd_prompt)

    for register in _extra_commands():
        register(sub, _config)
    return parser


def _extra_commands():
    """Commands that live beside their feature: the phone tools, the benchmarks."""
    from bench.cli import register as bench_commands
    from cluster.cli import register as cluster_commands
    from evals.cli import register as eval_commands
    from evals.discovery import register as discovery_eval_command
    from evals.router import register as router_eval_command
    from phone.cli import register as phone_commands
    from cli.sessions import register as sessions_commands
    from cli.protocol import register as protocol_commands
    from web.cli import register as web_commands

    return [phone_commands, bench_commands, eval_commands, router_eval_command, discovery_eval_command,
            sessions_commands, web_commands, cluster_commands, protocol_commands]


def main(argv: list[str] | None = None) -> int:
    import os

    os.umask(0o077)  # the database, its WAL, var/ and the logs: the runtime's user only (tokens, histories)
    args = build_parser().parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
