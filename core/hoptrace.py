"""`run.py bench --trace-hops`: a compact record of every envelope an actor process encodes and
decodes, for `bench/hops.py` to join across processes.

`actors/host.py` calls `install(directory, process_name)` when PORFIRY_HOP_TRACE_DIR is set,
before it builds the actors: `protocol.Codec` becomes `TracingCodec` (base.py builds each
actor's codec as `p.Codec(...)`), and host.py then names each actor's codec after its actor, so
the records of a process group say which actor sent or received. Every record is one msgpack
array appended to a bytearray (no object kept per record, nothing for the collector to scan):

    (t_ns, actor, "tx"|"rx", body type, envelope id, corr, session, bytes, ref, sender)

`t_ns` is `time.monotonic_ns()` (CLOCK_MONOTONIC: one clock for every process of the machine),
taken after an encode (the envelope is about to be sent) and before a decode (it has just been
received). `ref` is the event id of phone events, Acks and EventAccepted, the event ids of a
TurnDone (space-separated) and the event id inside a DeliverEvent: it ties a turn's records
together. The bridge's phone-side frames go through the same codec (phone events in, Acks,
Displays and TurnDones out), so they are recorded too.

Besides, as `aux` records `(what, t0, t1, t2, t3, a, b)`:
    ("journal", queued to the thread, thread started, thread done, back on the loop, operations, waited for)
        one per Journal batch (storage/journal.py: `_flush` and `_run_batch`);
    ("gc", start, 0, 0, end, generation, collected)
        one per garbage collection.

SIGUSR1 starts over (the load begins: the warm-up is forgotten), SIGUSR2 writes
DIRECTORY/NAME.hops (a msgpack map: process, pid, records, aux, dropped) and so does the end
of the process. At most PORFIRY_HOP_TRACE_MAX records (default 2,000,000) are kept; later ones
are counted as dropped.
"""
from __future__ import annotations

import gc
import os
import signal
import time
from typing import Any

import msgspec

import protocol as p
from protocol.codec import Codec

DEFAULT_MAX_RECORDS = 2_000_000
_ARRAY32 = b"\xdd"


def _ref_of(body: Any) -> str:
    kind = type(body)
    if kind is p.TurnDone:
        return " ".join(body.event_ids)
    if kind is p.DeliverEvent:
        return body.event.event_id
    return getattr(body, "event_id", "")


class Recorder:
    """The records of one process: appended as msgpack, written whole on `dump`."""

    def __init__(self, name: str, max_records: int = DEFAULT_MAX_RECORDS):
        self.name = name
        self.max_records = max_records
        self._encoder = msgspec.msgpack.Encoder()
        self.clear()

    def clear(self) -> None:
        self._records = bytearray()
        self._aux = bytearray()
        self.count = 0
        self.aux_count = 0
        self.dropped = 0

    def record(self, t_ns: int, actor: str, direction: str, env: p.Envelope, size: int) -> None:
        if self.count >= self.max_records:
            self.dropped += 1
            return
        body = env.body
        self._encoder.encode_into((t_ns, actor, direction, type(body).__name__, env.id, env.corr, env.session, size,
                                   _ref_of(body), env.sender), self._records, -1)
        self.count += 1

    def aux(self, what: str, t0: int, t1: int, t2: int, t3: int, a: int = 0, b: int = 0) -> None:
        if self.aux_count >= self.max_records:
            return
        self._encoder.encode_into((what, t0, t1, t2, t3, a, b), self._aux, -1)
        self.aux_count += 1

    def payload(self) -> bytes:
        def array(count: int, items: bytearray) -> msgspec.Raw:
            return msgspec.Raw(_ARRAY32 + count.to_bytes(4, "big") + bytes(items))

        return msgspec.msgpack.encode({
            "process": self.name, "pid": os.getpid(), "records": array(self.count, self._records),
            "aux": array(self.aux_count, self._aux), "dropped": self.dropped,
        })

    def dump(self, directory: str) -> str:
        """Write DIRECTORY/NAME.hops whole (or not at all) and return its path."""
        path = os.path.join(directory, f"{self.name}.hops")
        with open(path + ".part", "wb") as out:
            out.write(self.payload())
        os.replace(path + ".part", path)
        return path


class TracingCodec(Codec):
    """protocol.Codec that records each envelope it encodes or decodes in `recorder`, as `actor`."""

    recorder: Recorder | None = None  # set by `install` (or by a test)
    default_actor = "?"

    def __init__(self, max_bytes: int = p.DEFAULT_MAX_MESSAGE_BYTES, *, actor: str | None = None,
                 recorder: Recorder | None = None):
        super().__init__(max_bytes)
        self.actor = actor or self.default_actor
        if recorder is not None:
            self.recorder = recorder

    def encode(self, envelope: p.Envelope) -> bytes:
        data = super().encode(envelope)
        recorder = self.recorder
        if recorder is not None:
            recorder.record(time.monotonic_ns(), self.actor, "tx", envelope, len(data))
        return data

    def decode(self, data: bytes) -> p.Envelope:
        t_ns = time.monotonic_ns()
        envelope = super().decode(data)
        recorder = self.recorder
        if recorder is not None:
            recorder.record(t_ns, self.actor, "rx", envelope, len(data))
        return envelope


def tracing_codec_class(recorder: Recorder, actor: str) -> type[TracingCodec]:
    """A Codec class to put in place of `protocol.Codec`: each instance records as `actor`."""
    return type("TracingCodec", (TracingCodec,), {"recorder": recorder, "default_actor": actor})


def name_codec(endpoint: Any, actor: str) -> None:
    """Let an endpoint's codec (a TracingCodec) record as `actor` (one of a process group)."""
    if isinstance(getattr(endpoint, "codec", None), TracingCodec):
        endpoint.codec.actor = actor


def install(directory: str, name: str) -> Recorder:
    """In an actor process: trace its codecs, journal batches and collections; SIGUSR1 starts
    over, SIGUSR2 writes the file (after whatever handler was there before: --profile-turn's)."""
    recorder = Recorder(name, int(os.environ.get("PORFIRY_HOP_TRACE_MAX", DEFAULT_MAX_RECORDS)))
    p.Codec = tracing_codec_class(recorder, name)  # type: ignore[misc]
    _trace_journal(recorder)
    trace_gc(recorder)

    def chained(signum: int, own) -> None:
        before = signal.getsignal(signum)

        def handler(number, frame):
            if callable(before):
                before(number, frame)
            own()

        signal.signal(signum, handler)

    chained(signal.SIGUSR1, recorder.clear)
    chained(signal.SIGUSR2, lambda: recorder.dump(directory))
    return recorder


def _trace_journal(recorder: Recorder) -> None:
    """Each batch of the session journal: hand-off to the worker thread, the SQL, the way back."""
    from storage import journal

    cls = journal.Journal
    if getattr(cls, "_hop_traced", False):
        return
    flush, run_batch = cls._flush, cls._run_batch
    started: dict[int, tuple[int, int]] = {}  # id(batch) -> (thread start, thread end)

    async def traced_flush(self) -> None:
        batch = self._queue
        if not batch:
            return await flush(self)
        t0 = time.monotonic_ns()
        await flush(self)
        t1, t2 = started.pop(id(batch), (0, 0))
        recorder.aux("journal", t0, t1, t2, time.monotonic_ns(), len(batch), sum(w is not None for _, w in batch))

    def traced_run_batch(self, batch) -> None:
        t1 = time.monotonic_ns()
        try:
            run_batch(self, batch)
        finally:
            started[id(batch)] = (t1, time.monotonic_ns())

    cls._flush, cls._run_batch, cls._hop_traced = traced_flush, traced_run_batch, True


def trace_gc(recorder: Recorder):
    """Record each collection's pause; returns the callback (to take it out of gc.callbacks)."""
    began = [0]

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.monotonic_ns()
        else:
            recorder.aux("gc", began[0], 0, 0, time.monotonic_ns(), info.get("generation", -1), info.get("collected", 0))

    gc.callbacks.append(callback)
    return callback
