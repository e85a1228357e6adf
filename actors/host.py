"""Run one actor in this OS process: `python -m actors.host NAME` (started by the supervisor).

The resolved config arrives as JSON in PORFIRY_CONFIG_JSON so a child sees exactly what its
supervisor saw, environment overrides included.
"""
from __future__ import annotations

import os
import signal
import sys

import anyio

from core.config import from_json, load_config
from core.logs import setup_logging


async def _main(name: str) -> None:
    from actors.supervisor import actor_class

    data = os.environ.get("PORFIRY_CONFIG_JSON")
    config = from_json(data) if data else load_config()
    actor = actor_class(name)(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.run)
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for _ in signals:
                tg.cancel_scope.cancel()
                break


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python -m actors.host ACTOR")
    setup_logging()
    anyio.run(_main, sys.argv[1], backend="trio")


if __name__ == "__main__":
    main()
