"""What a journal batch costs on the event loop against handed to a worker thread (issue 54):
`python -m bench.journal_handoff [--batches N]` runs N transactions of three inserts each way on a
scratch SQLite journal and prints the CPU per batch (time.process_time: all threads)."""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio

from storage.journal import connect


def _batch(conn) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for _ in range(3):
        conn.execute("INSERT INTO entries(session, ts, role, content) VALUES (?, ?, ?, ?)",
                     ("s", time.time(), "user", "hello world " * 5))
    conn.execute("COMMIT")


async def _measure(conn, batches: int) -> None:
    for mode in ("thread", "loop", "thread", "loop"):
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(batches):
            if mode == "thread":
                await anyio.to_thread.run_sync(_batch, conn)
            else:
                _batch(conn)
                await anyio.lowlevel.checkpoint()
        print(f"{mode:6}  CPU per batch {1e6 * (time.process_time() - cpu) / batches:5.0f} µs, "
              f"wall {1e6 * (time.perf_counter() - wall) / batches:5.0f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="porfiry-handoff-") as scratch:
        conn = connect(Path(scratch) / "journal.sqlite3")
        anyio.run(_measure, conn, args.batches, backend="trio")
        conn.close()


if __name__ == "__main__":
    main()
