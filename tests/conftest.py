"""Fixtures every suite shares: a ZeroMQ context, a short ipc:// directory, a clock the test
moves, and the in-process config of tests/harness.py."""
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
def manual_clock():
    return ManualClock(1_000_000.0)


@pytest.fixture
def inproc_config(tmp_path):
    from harness import make_config

    return make_config(tmp_path)
