"""The system under test: `run.py serve` in process mode, in a scratch directory, with the
scripted model - started, watched (pids, RSS) and stopped by the benchmark."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import anyio
import msgspec

import protocol as p
from core.config import Config, REPO_ROOT, to_json


def free_tcp_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def scratch_workdir() -> Iterator[Path]:
    """A temporary directory, removed afterwards."""
    workdir = Path(tempfile.mkdtemp(prefix="porfiry-bench-"))
    try:
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def scratch_config(config: Config, workdir: Path) -> Config:
    """The config with the user skills dir, the media database and the session journal moved into
    `workdir`, so a benchmark neither reads the user's skills nor writes into var/."""
    replace = msgspec.structs.replace
    return replace(config.with_section("media", db_path=str(workdir / "media.sqlite3")),
                   skills=replace(config.skills, user_dir=str(workdir / "user-skills")),
                   storage=replace(config.storage, path=str(workdir / "porfiry.sqlite3")))


def bench_config(base: Config, workdir: Path, *, latency_ms: float, chaos: bool = False) -> Config:
    """`base` with what a repeatable benchmark needs: a process per actor over ipc:// in the
    scratch directory, a free phone port, no CURVE, empty user skills, the scripted model with
    `latency_ms` before each reply's first token (word tokens follow without delay)."""
    replace = msgspec.structs.replace
    scripted = replace(base.llm.profiles["scripted"], first_token_delay_s=latency_ms / 1000, token_delay_s=0.0)
    scratch = scratch_config(base, workdir)
    return replace(
        scratch,
        topology=replace(base.topology, mode="ipc", ipc_dir=str(workdir / "ipc"), addresses={}),
        # per-connection limits lifted: one bench connection may carry many sessions at full speed
        phone=replace(base.phone, endpoint=f"tcp://127.0.0.1:{free_tcp_port()}", curve=False, events_per_s=1e9,
                      sessions_per_connection=1_000_000, pending_per_connection=1_000_000),
        skills=replace(scratch.skills, exclusions={}),
        # the substitution turn kind measures S8's two rounds (activate, then the call again); the
        # turn kinds measure the runtime around the model's steps, so no reflex (core.reflex)
        # answers one without the model (a peer framework is measured with its model calls too)
        session=replace(base.session, execute_substituted_calls=False, reflexes=False),
        llm=replace(base.llm, profile="scripted", profiles={**base.llm.profiles, "scripted": scripted}),
        # --chaos kills on purpose: the supervisor must keep restarting, not give up
        supervisor=replace(base.supervisor, intensity=1_000_000) if chaos else base.supervisor,
    )


def read_rss_kb(pid: int) -> tuple[int, int]:
    """(current, peak) resident set of a process in KiB, from /proc (Linux); (0, 0) if gone."""
    current = peak = 0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    current = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return current, peak


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def read_cpu_s(pid: int) -> float:
    """CPU time (user + system, all threads) a process has used, in seconds, from /proc (Linux);
    0.0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15 of stat)
    except (OSError, ValueError, IndexError):
        return 0.0


def read_machine_cpu_s() -> tuple[float, float]:
    """The whole machine's CPU time so far, all CPUs together, from /proc/stat (Linux): (busy, stolen)
    seconds. Busy is user + nice + system + irq + softirq; stolen is what the hypervisor gave other
    guests while this one had work (a shared VM's noise: a stalled vCPU stalls every process on it).
    (0.0, 0.0) where there is no /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(value) for value in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0, 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields + [0] * (8 - len(fields))
    return (user + nice + system + irq + softirq) / _TICKS, steal / _TICKS


class BenchRuntime:
    """Use as a context manager: the runtime runs while the block runs; its log stays in `log_path`."""

    def __init__(self, base: Config, *, latency_ms: float = 0.0, log_level: str = "WARNING", chaos: bool = False):
        self.workdir = Path(tempfile.mkdtemp(prefix="porfiry-bench-"))
        self.config = bench_config(base, self.workdir, latency_ms=latency_ms, chaos=chaos)
        self.log_path = self.workdir / "porfiry.log"
        self.log_level = log_level
        self.keep = True  # keep the scratch directory (config, log) unless the run went well
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> "BenchRuntime":
        config_path = self.workdir / "bench-config.json"
        config_path.write_bytes(to_json(self.config))
        command = [sys.executable, str(REPO_ROOT / "run.py"), "--config", str(config_path),
                   "serve", "--log-level", self.log_level]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PORFIRY_")}  # the file says it all
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT)
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
        if not self.keep and exc_info[0] is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def stop(self) -> None:
        """Stop the runtime (SIGTERM: its processes stop cleanly) and wait for it."""
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    @property
    def pid(self) -> int:
        return self._process.pid if self._process is not None else 0

    def exited(self) -> int | None:
        return None if self._process is None else self._process.poll()

    async def status(self, timeout: float = 2.0) -> p.SystemStatus:
        return await self.ask("supervisor", p.StatusRequest(), timeout)

    async def ask(self, target: str, body: p.Msg, timeout: float = 2.0) -> p.Msg:
        from actors.base import AskTimeout, Endpoint

        client = Endpoint(self.config, name="bench")
        async with client.running():
            try:
                return await client.ask(target, body, timeout=timeout)
            except AskTimeout as exc:
                timed_out = exc  # raised outside the task group, which would wrap it in an ExceptionGroup
        raise timed_out

    async def wait_ready(self, timeout: float = 60.0) -> p.SystemStatus:
        """Until every actor is alive; a runtime that exits or stays down raises RuntimeError."""
        from actors.base import AskTimeout

        deadline = time.monotonic() + timeout
        while True:
            if self.exited() is not None:
                raise RuntimeError(f"the runtime exited with code {self.exited()}; see {self.log_path}")
            try:
                status = await self.status()
                if all(row.alive for row in status.actors):
                    return status
            except AskTimeout:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the runtime did not start within {timeout:g} s; see {self.log_path}")
            await anyio.sleep(0.2)
