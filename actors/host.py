"""Run actors in this OS process: `python -m actors.host NAME[,NAME...]` (started by the
supervisor): one actor, or a process group of `topology.groups` sharing one zmq context, so the
group's actors reach each other in-process (actors/local.py), without a hop through ZeroMQ.

The resolved config arrives as JSON in PORFIRY_CONFIG_JSON so a child sees exactly what its
supervisor saw, environment overrides included. The process dies with its supervisor
(core/lifeline.py): a `kill -9` of `run.py serve` leaves nothing of it running.
"""
from __future__ import annotations

import gc
import os
import signal
import sys

import anyio

from core import lifeline, tracing
from core.config import from_json
from core.loading import load_config
from core.logs import setup_logging
from core.permanent import EXIT_PERMANENT, permanent_cause


async def _main(names: list[str]) -> None:
    from actors.topology import actor_class

    data = os.environ.get("PORFIRY_CONFIG_JSON")
    config = from_json(data) if data else load_config()
    tracing.configure(config.tracing, "+".join(names))
    actors = [actor_class(name)(config) for name in names]
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
    collector's way, a full collection scans only what came later: a full pass over the start-up
    heap stalls an actor far longer than a message takes."""
    gc.collect()
    gc.freeze()


def main() -> None:
    from actors.topology import ACTORS

    names = sys.argv[1].split(",") if len(sys.argv) == 2 else []
    if not names or any(name not in ACTORS for name in names):
        sys.exit(f"usage: python -m actors.host ACTOR[,ACTOR...]; actors: {', '.join(ACTORS)}")
    lifeline.watch_parent()  # dies with the supervisor, even one killed by SIGKILL
    setup_logging()
    try:
        anyio.run(_main, names, backend="trio")
    except Exception as exc:  # noqa: BLE001 - only a permanent failure is told in one line
        cause = permanent_cause(exc)
        if cause is None:
            raise
        print(f"porfiry: {'+'.join(names)}: {cause}", file=sys.stderr, flush=True)
        sys.exit(EXIT_PERMANENT)  # the supervisor does not restart it


if __name__ == "__main__":
    main()
