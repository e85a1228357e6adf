"""Fixtures every suite shares: a ZeroMQ context, a short ipc:// directory, a clock the test
moves, and the configs of tests/harness.py (in one process, or a process per actor)."""
import shutil
import tempfile

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
