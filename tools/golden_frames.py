"""`python -m tools.golden_frames`: writes docs/protocol-frames/, one example frame of every
message a phone bridge sends or receives, as the exact bytes on the wire (NAME.msgpack) and as
JSON for people (NAME.json). A bridge written in another language decodes each .msgpack and
compares with the .json, and encodes the .json and compares with the .msgpack.
tests/test_protocol_doc.py checks the files are what this prints today.
"""
from __future__ import annotations

import sys
from pathlib import Path

import msgspec

import protocol as p

FRAMES_DIR = Path(__file__).resolve().parent.parent / "docs" / "protocol-frames"
_TS, _SESSION, _TOKEN = 1764000000.5, "s1", "k2JHtQ0yPz9bWfVn4mXc8Q"


def _env(name: str, body: p.Msg, *, session: str = _SESSION, corr: str = "") -> tuple[str, p.Envelope]:
    return name, p.Envelope(body=body, id=f"{name.lower()}-1", sender="" if isinstance(body, p.bridge.PHONE_SENDS) else "glasses",
                            session=session, corr=corr, ts=_TS)


def examples() -> list[tuple[str, p.Envelope]]:
    """One frame per message kind (a few kinds twice, where a field changes the meaning)."""
    e = "e-0001"
    return [
        _env("Hello", p.Hello(client="pixel-bridge/1.0"), session=""),
        _env("SessionStart", p.SessionStart(event_id=e, ts=_TS, token=_TOKEN)),
        _env("SessionEnd", p.SessionEnd(event_id="e-0002", ts=_TS, token=_TOKEN)),
        _env("GlassesState", p.GlassesState(event_id="e-0003", ts=_TS, state="off", token=_TOKEN)),
        _env("UserText", p.UserText(event_id="e-0004", ts=_TS, text="который час?", token=_TOKEN)),
        _env("UserInterrupt", p.UserInterrupt(event_id="e-0005", ts=_TS, token=_TOKEN)),
        _env("ButtonPress", p.ButtonPress(event_id="e-0006", ts=_TS, button="tap", token=_TOKEN)),
        _env("PlaybackStatus", p.PlaybackStatus(event_id="e-0007", ts=_TS, task_id="play-1", state="started", token=_TOKEN)),
        _env("PhoneNotification", p.PhoneNotification(event_id="e-0008", ts=_TS, app="Telegram", sender="Anna",
                                                      text="see you at 6", token=_TOKEN)),
        _env("Ok", p.Ok(detail="porfiry glasses bridge"), session="", corr="hello-1"),
        _env("Ack", p.Ack(event_id=e, token=_TOKEN), corr="sessionstart-1"),
        _env("Busy", p.Busy(event_id="e-0004", detail="session s1 is busy; retry shortly"), corr="usertext-1"),
        _env("RateLimited", p.RateLimited(event_id="e-0004", detail="more than 50 events/s on this connection; resend in 0.20 s",
                                          retry_after_s=0.2), corr="usertext-1"),
        _env("ErrorReply", p.ErrorReply(code="decode:invalid", detail="Expected `str` matching one of ('on', 'off'), "
                                        "got `'dim'` - at `$.body.state`")),
        _env("Display", p.Display(turn_id="t-1", text="Сейчас 10:42.", final=True)),
        _env("DisplayPartial", p.Display(turn_id="t-1", text="Сейчас", final=False)),
        _env("TurnDone", p.TurnDone(turn_id="t-1", event_ids=["e-0004"], model_calls=2, final="Сейчас 10:42.")),
        _env("TurnDoneInterrupted", p.TurnDone(turn_id="t-2", event_ids=["e-0009"], outcome="interrupted", going_on=["3f2a9c"])),
        _env("PlaybackCommand", p.PlaybackCommand(task_id="play-1", action="play", media_id="m42", title="Матрица")),
        _env("PushNotification", p.PushNotification(note_id="n1", text="Жалоба от клиента: заказ 4411", urgency="high", ts=_TS)),
        _env("StatusLine", p.StatusLine(task_id="3f2a9c", text="jobs_analyze: 40%: analysis logs")),
    ]


def write(directory: Path = FRAMES_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    codec, written = p.Codec(), []
    for name, env in examples():
        for suffix, data in ((".msgpack", codec.encode(env)), (".json", msgspec.json.format(msgspec.json.encode(env)) + b"\n")):
            path = directory / f"{name}{suffix}"
            path.write_bytes(data)
            written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else FRAMES_DIR):
        print(path)
