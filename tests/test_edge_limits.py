"""The phone edge's bookkeeping (core/edge_limits.py) and the ownership table, tested directly
with a clock the test moves."""
from core.edge_limits import Connections, GarbageLog, Outboxes, TokenBucket
from storage.ownership import OwnershipStore, proves


def test_token_bucket_allows_a_burst_then_the_rate(manual_clock):
    clock = manual_clock
    bucket = TokenBucket(rate=10, burst=20, clock=clock)
    assert sum(bucket.take() for _ in range(30)) == 20
    assert 0.09 <= bucket.retry_after() <= 0.1
    clock.now += 0.5
    assert sum(bucket.take() for _ in range(30)) == 5


def test_connections_cap_sessions_and_forget_idle_ones(manual_clock):
    clock = manual_clock
    conns = Connections(events_per_s=10, max_sessions=2, clock=clock, idle_s=60)
    assert conns.admit_session(b"a", "s1") and conns.admit_session(b"a", "s2") and conns.admit_session(b"a", "s1")
    assert not conns.admit_session(b"a", "s3")
    assert conns.admit_session(b"b", "s3"), "another connection has its own count"
    conns.forget_session("s1")
    assert conns.admit_session(b"a", "s3")
    clock.now += 61
    conns.get(b"c")
    assert len(conns) == 1, "idle connections were swept"


def test_outboxes_are_per_peer_bounded_and_expire(manual_clock):
    clock = manual_clock
    boxes = Outboxes(limit=3, hold_s=30, clock=clock)
    assert all(boxes.put(b"mute", n) for n in range(3))
    assert boxes.put(b"other", "x")
    assert not boxes.put(b"mute", 3) and not boxes.has(b"mute"), "past the limit the peer's queue is dropped"
    assert boxes.head(b"other") == "x"
    boxes.pop(b"other")
    assert not boxes.has(b"other")
    boxes.put(b"late", "old")
    clock.now += 31
    assert boxes.head(b"late") is None and boxes.expired == 1


def test_garbage_log_reports_once_per_interval_with_a_count(manual_clock):
    clock = manual_clock
    log = GarbageLog(interval_s=10, clock=clock)
    assert log.note(b"p") == 1
    assert [log.note(b"p") for _ in range(99)] == [0] * 99
    clock.now += 10
    assert log.note(b"p") == 100
    assert log.note(b"q") == 1


def test_ownership_survives_a_reopen(tmp_path):
    path = tmp_path / "porfiry.sqlite3"
    store = OwnershipStore(path)
    store.claim("s1", "token", "secret", "e1", b"alice/1")
    store.set_route("s1", b"alice/2")
    store.claim("s2", "key", "KEY", "e2", b"bob/1")
    store.delete(["s2"])  # forget() only leaves memory: see test_a_forgotten_idle_session_stays_owned
    store.close()
    again = OwnershipStore(path)
    owner = again.get("s1")
    assert (owner.kind, owner.claim_event, owner.route) == ("token", "e1", b"alice/2") and proves(owner, "token", "secret")
    assert again.get("s2") is None and len(again) == 1
