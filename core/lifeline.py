"""A child process dies with the process that started it (issue 51): `kill -9` of `run.py serve`
must not leave its actor processes answering phones with no supervisor, no lease and no lock.

The lifeline is a pipe. The supervisor keeps its write end open and never writes; each actor
process inherits the read end (its descriptor number in PORFIRY_LIFELINE_FD) and a thread blocks
reading it. The kernel closes the write end whenever the supervisor dies, SIGKILL included, and the
read returns end-of-file at once: the child then kills the process groups it started (a monitor's
run, `track_group`), the group each of its children leads (an MCP server: the mcp library starts it
in a session of its own), and its own group (itself and what it started in it), with SIGKILL.

Why not only `prctl(PR_SET_PDEATHSIG)`: it fires when the *thread* that forked the child exits,
and trio forks from a worker thread of its cache (`trio.to_thread`), which ends after a few idle
seconds - it would kill healthy children. A pipe is tied to the process, and works on every POSIX.
"""
from __future__ import annotations

import os
import signal
import threading

ENV = "PORFIRY_LIFELINE_FD"

_groups: set[int] = set()
_lock = threading.Lock()
_watching = False
_own: Lifeline | None = None  # this process's lifeline for the guards it starts (made when first needed)


class Lifeline:
    """The supervisor's side: one pipe for all its children. `fd` goes into a child's
    `pass_fds` and `env()` into its environment."""

    def __init__(self) -> None:
        # both close-on-exec: only a child given `fd` holds it; the write end is kept, never written,
        # for as long as this process lives
        self.fd, self._write_fd = os.pipe()

    def env(self) -> dict[str, str]:
        return {ENV: str(self.fd)}


def guarded(argv: list[str]) -> tuple[list[str], dict[str, str], tuple[int, ...]]:
    """argv run under a guard on this process's own lifeline: (the command line, its environment,
    its pass_fds). Started as a process group of its own, the guard is a `sh` whose background
    subshell blocks reading the lifeline and, at its end-of-file (this process died, whatever it
    is - an actor process, `serve --inproc` - and however), kills the whole group; the shell
    itself execs argv, so its pid, exit status and signals are argv's. A few milliseconds, where
    a Python guard costs an interpreter start per run. (The subshell reopens the pipe by path, as
    `sh` names only descriptors 0-9; were this process to die in the millisecond before that
    open, the open would wait for a writer that never comes: that one run would be left.)"""
    global _own
    if _own is None:
        _own = Lifeline()
    watch = f"(read _ </dev/fd/{_own.fd}; kill -KILL 0) </dev/null >/dev/null 2>&1 & exec \"$@\""
    return ["sh", "-c", watch, "porfiry-guard", *argv], dict(os.environ), (_own.fd,)


def track_group(pgid: int) -> None:
    """A process group this process started (a monitor's run): killed with it if the parent dies."""
    with _lock:
        _groups.add(pgid)


def untrack_group(pgid: int) -> None:
    with _lock:
        _groups.discard(pgid)


def kill_group(pgid: int) -> None:
    """SIGKILL to a whole process group; one already gone is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def watch_parent(environ: dict[str, str] | None = None) -> bool:
    """In a child: die with the parent whose lifeline is in PORFIRY_LIFELINE_FD. False when started
    without one (by hand): nothing is watched."""
    global _watching
    value = (os.environ if environ is None else environ).get(ENV, "")
    if not value.isdigit() or _watching:
        return False
    fd = int(value)
    try:
        os.set_inheritable(fd, False)  # not handed on to what this process starts
    except OSError:
        return False
    _watching = True
    threading.Thread(target=_wait_and_die, args=(fd,), name="lifeline", daemon=True).start()
    return True


def _wait_and_die(fd: int) -> None:
    while True:
        try:
            if os.read(fd, 1) == b"":
                break
        except InterruptedError:
            continue
        except OSError:
            break
    with _lock:
        groups = set(_groups)
    for pgid in groups:
        kill_group(pgid)
    for pid in _children():  # one that leads a group of its own (an MCP server) takes it along
        kill_group(pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if os.getpgrp() == os.getpid():  # a group of its own: what it started in it dies too
        kill_group(os.getpid())
    os.kill(os.getpid(), signal.SIGKILL)


def _children() -> set[int]:
    """This process's children, read from /proc (Linux; elsewhere none: the tracked groups and our
    own group are killed all the same)."""
    me, found = os.getpid(), set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    if int(stat.read().rsplit(b") ", 1)[1].split()[1]) == me:
                        found.add(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found
