"""Run actors in this OS process: `python -m actors.host NAME[,NAME...]` (started by the
supervisor): one actor, or a process group of `topology.groups` sharing one zmq context, so the
group's actors reach each other in-process (actors/local.py), without a hop through ZeroMQ.

The resolved config arrives as JSON in PORFIRY_CONFIG_JSON so a child sees exactly what its
supervisor saw, environment overrides included.
"""
from __future__ import annotations

import gc
import os
import signal
import sys

import anyio

from core.config import from_json, load_config
from core.logs import setup_logging
from core.permanent import EXIT_PERMANENT, permanent_cause


async def _main(names: list[str]) -> None:
    from actors.topology import actor_class

    data = os.environ.get("PORFIRY_CONFIG_JSON")
    config = from_json(data) if data else load_config()
    actors = [actor_class(name)(config) for name in names]
    if os.environ.get("PORFIRY_HOP_TRACE_DIR"):
        from core.hoptrace import name_codec

        for actor in actors:  # a process group's records say which of its actors sent or received
            name_codec(actor, actor.name)
    async with anyio.create_task_group() as tg:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with anyio.create_task_group() as starting:
                for actor in actors:  # together: one may wait for another while it starts
                    starting.start_soon(tg.start, actor.run)
            freeze_startup_objects()
            async for _ in signals:
                tg.cancel_scope.cancel()
                break


def freeze_startup_objects() -> None:
    """What start-up made (modules, catalogs, indexes) lives as long as the process. Out of the
    collector's way, a full collection scans only what came later: measured under load, a full
    pass over the start-up heap stalled an actor 12-135 ms, the runtime's worst tail latency."""
    gc.collect()
    gc.freeze()


def main() -> None:
    from actors.topology import ACTORS

    names = sys.argv[1].split(",") if len(sys.argv) == 2 else []
    if not names or any(name not in ACTORS for name in names):
        sys.exit(f"usage: python -m actors.host ACTOR[,ACTOR...]; actors: {', '.join(ACTORS)}")
    setup_logging()
    profile_dir = os.environ.get("PORFIRY_PROFILE_DIR")
    if profile_dir:
        _profile_on_signals(profile_dir, "+".join(names))
    hop_dir = os.environ.get("PORFIRY_HOP_TRACE_DIR")
    if hop_dir:  # `run.py bench --trace-hops`: every envelope in and out, timed (core/hoptrace.py)
        from core.hoptrace import install

        recorder = install(hop_dir, "+".join(names))
    try:
        anyio.run(_main, names, backend="trio")
    except Exception as exc:  # noqa: BLE001 - only a permanent failure is told in one line
        cause = permanent_cause(exc)
        if cause is None:
            raise
        print(f"porfiry: {'+'.join(names)}: {cause}", file=sys.stderr, flush=True)
        sys.exit(EXIT_PERMANENT)  # the supervisor does not restart it
    finally:
        if hop_dir:
            try:
                recorder.dump(hop_dir)
            except OSError:  # the bench that asked is gone (its scratch directory with it)
                pass


def _profile_on_signals(directory: str, name: str) -> None:
    """`run.py bench --profile-turn`: SIGUSR1 starts cProfile in this process, SIGUSR2 stops it and
    writes the stats to DIRECTORY/NAME.prof (the main thread: the event loop and everything on it).
    It counts CPU time (the thread's), not wall time: waiting in epoll or being preempted by the
    process a send just woke is not cost."""
    import cProfile
    import time

    profiler = cProfile.Profile(time.thread_time)

    def start(*_):
        profiler.enable()

    def stop(*_):
        profiler.disable()
        path = os.path.join(directory, f"{name}.prof")
        profiler.dump_stats(path + ".part")
        os.replace(path + ".part", path)  # whole, or not there

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)


if __name__ == "__main__":
    main()
