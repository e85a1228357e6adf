"""Issue 52, item 5: a bridge another team can write. The phone's side of the protocol has a JSON
Schema generated from protocol/ (`run.py protocol schema`, kept in docs/protocol-schema.json) and
golden frames (docs/protocol-frames/: the bytes of every phone message and the same as JSON), which
stay what the code produces, and which the real codec decodes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec

import protocol as p
from protocol.bridge import PHONE_RECEIVES, PHONE_SENDS, BridgeEnvelope, bridge_schema
from tools.golden_frames import FRAMES_DIR, examples

REPO = Path(__file__).resolve().parent.parent


def test_the_bridge_envelope_is_the_envelope():
    ours, theirs = msgspec.structs.fields(BridgeEnvelope), msgspec.structs.fields(p.Envelope)
    assert [(f.name, f.default) for f in ours if f.name not in ("id", "ts")] == \
        [(f.name, f.default) for f in theirs if f.name not in ("id", "ts")]
    assert [f.name for f in ours] == [f.name for f in theirs]


def test_every_golden_frame_is_current_and_decodes_with_the_runtimes_codec():
    codec = p.Codec()
    named = {name: env for name, env in examples()}
    assert {type(env.body) for env in named.values()} == set(PHONE_SENDS) | set(PHONE_RECEIVES), "one frame per message"
    files = sorted(path.stem for path in FRAMES_DIR.glob("*.msgpack"))
    assert files == sorted(named), "docs/protocol-frames is stale: python -m tools.golden_frames"
    for name, env in named.items():
        wire = (FRAMES_DIR / f"{name}.msgpack").read_bytes()
        assert wire == codec.encode(env), f"{name}.msgpack is stale: python -m tools.golden_frames"
        decoded = codec.decode(wire)
        assert decoded == env == msgspec.json.decode((FRAMES_DIR / f"{name}.json").read_bytes(), type=p.Envelope)
        assert msgspec.msgpack.decode(wire, type=BridgeEnvelope).body == env.body, "the schema's type decodes it too"


def test_run_py_protocol_schema_prints_the_committed_schema():
    done = subprocess.run([sys.executable, "run.py", "protocol", "schema"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == bridge_schema() == json.loads((REPO / "docs" / "protocol-schema.json").read_text()), \
        "docs/protocol-schema.json is stale: python run.py protocol schema > docs/protocol-schema.json"
    defs = printed["$defs"]
    assert sorted(defs["GlassesState"]["properties"]["state"]["enum"]) == ["off", "on"]
    assert {"type", "event_id", "ts", "text"} <= set(defs["UserText"]["properties"])
    assert sorted(defs["TurnDone"]["properties"]["outcome"]["enum"]) == ["cancelled", "done", "interrupted"]
