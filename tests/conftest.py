"""Fixtures every suite shares: a ZeroMQ context, a short ipc:// directory, a clock the test
moves, and the configs of tests/harness.py (in one process, or a process per actor)."""
import shutil
import tempfile
from pathlib import Path

import pytest
import zmq

from core.clock import ManualClock


@pytest.fixture
def zmq_ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


@pytest.fixture
def ipc_dir():
    path = tempfile.mkdtemp(prefix="pf")  # short: unix socket paths are limited to ~100 characters
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def manual_clock(request):
    """Starts at the test module's `CLOCK_START` where what it asserts depends on the hour."""
    return ManualClock(getattr(request.module, "CLOCK_START", 1_000_000.0))


@pytest.fixture
def inproc_config(tmp_path):
    from harness import make_config

    return make_config(tmp_path)


@pytest.fixture
def ipc_config(inproc_config, ipc_dir):
    """The same with an actor's inbox on ipc:// in `ipc_dir`, for actors run on their own."""
    from harness import override

    return override(inproc_config, topology={"mode": "ipc", "ipc_dir": ipc_dir})


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL for the whole test session (cluster/pgserver.py), torn down at the end."""
    from cluster.pgserver import PgServer, find_bin
    from harness import free_port  # below the ephemeral range, this worker's own share

    if not find_bin("initdb") or not find_bin("pg_ctl"):
        pytest.skip("PostgreSQL's initdb/pg_ctl are not installed (`make test` installs Debian's postgresql)")
    root = tempfile.mkdtemp(prefix="pg")  # short: the server's unix socket lives here
    server = PgServer(Path(root), free_port())
    try:
        server.start(durable=False)
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server):
    """A database of its own for one test: a fresh schema, first on the connection's search_path."""
    import uuid

    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return make_conninfo(pg_server.url(), options=f"-c search_path={schema}")

