"""Typed results (issue 50, item 3): each tool's result carries its payload (protocol.results) beside
the text the model reads; it crosses ZeroMQ, lands in the trajectory and the journal, and the fast
path reads its fields - "the second one" resolves through it, also after a restart."""
import sqlite3
import time

import anyio
import msgspec

import protocol as p
from actors.base import Actor, Endpoint
from actors.media_executor import MediaExecutor
from core.trajectory import Recorded, Trajectory
from harness import inproc_system
from llm.scripted import ScriptedBackend
from protocol.results import Playing, TimerRef, TimerSet, TimersListed, TitleInfo, TitleRef, TitlesShown
from storage import journal

TERMINATORS = TitlesShown(query="терминатор", total=7, titles=[
    TitleRef(id="terminator-1984", names=["Терминатор", "The Terminator"], year=1984,
             facts="1984, James Cameron, 107 min"),
    TitleRef(id="terminator-2-1991", names=["Терминатор 2", "Terminator 2"], year=1991)])
EVERY_KIND = [
    TERMINATORS,
    TitleInfo(title=TitleRef(id="sherlock-2010", names=["Шерлок", "Sherlock"], year=2010, kind="series"),
              episodes=13, director="Марк Гэтисс", genres=["детектив"], description="…"),
    Playing(media_id="terminator-1984", action="play", state="sent", title="Терминатор", task_id="ab12"),
    TimerSet(id="t1", due=1_800_000_000.0, text="чай", every_s=86400.0),
    TimersListed(timers=[TimerRef(id="t1", due=1_800_000_000.0, text="чай")]),
]


def finals(shown):
    return [m.text for m in shown if isinstance(m, p.Display) and m.final]


def plays(history):
    return [m["content"] for m in history if m["role"] == "assistant" and "media_play|" in m["content"]]


def _which_one(messages):
    return "Which one do you mean?"


# ---- the wire and the journal ------------------------------------------------------------------
def test_every_kind_of_payload_survives_the_wire_codec_unchanged():
    codec = p.Codec()
    for data in EVERY_KIND:
        sent = p.Envelope(body=p.ToolOutcome(call_id="c1", ok=True, text="what the model reads", data=data))
        assert codec.decode(codec.encode(sent)) == sent


def test_a_tool_outcome_without_a_payload_still_decodes_as_before():
    codec = p.Codec()
    sent = p.Envelope(body=p.ToolOutcome(call_id="c1", ok=False, text="tool error: x"))
    assert codec.decode(codec.encode(sent)).body.data is None


async def test_the_media_executor_sends_search_info_and_play_payloads_over_its_socket(ipc_config):
    class Glasses(Actor):
        name = "glasses"

        async def handle(self, msg):
            msg.reply(self, p.PlaybackStatus(event_id="e1", ts=time.time(), task_id=msg.body.command.task_id,
                                             state="started"))

    async with anyio.create_task_group() as tg:
        for actor in (MediaExecutor(ipc_config), Glasses(ipc_config)):
            await tg.start(actor.run)
        client = Endpoint(ipc_config, name="test")
        async with client.running():
            ask = lambda tool, **args: client.ask("media", p.ToolInvoke(call_id="c1", tool=tool, args=args),  # noqa: E731
                                                  session="s1", timeout=5)
            found, info, played = await ask("media_search", query="терминатор"), \
                await ask("media_info", id="terminator-1984"), await ask("media_play", id="terminator-1984")
        tg.cancel_scope.cancel()
    assert isinstance(found.data, TitlesShown) and found.data.titles[0].id == "terminator-1984"
    first_line = found.text.splitlines()[0]  # the text is what it was: the payload is beside it, not in it
    assert first_line.startswith(f"terminator-1984 — {' / '.join(found.data.titles[0].names)} ({found.data.titles[0].facts})")
    assert f"of {found.data.total}" in found.text
    assert isinstance(info.data, TitleInfo) and info.data.title.year == 1984 and info.data.runtime_min > 0
    assert "James Cameron" in info.data.director
    assert played.data == Playing(media_id="terminator-1984", action="play", state="started",
                                  title=played.data.title, task_id=played.data.task_id)


def test_a_results_payload_is_journaled_and_restored_with_it(tmp_path):
    entries: list[Recorded] = []
    trajectory = Trajectory(sink=entries.append)
    trajectory.record_assistant("TOOL_CALL: media_search|терминатор", "c1", "media_search")
    trajectory.record_result("c1", p.CallOutcome(kind="ok", text="terminator-1984 — …", data=TERMINATORS))
    conn = journal.connect(tmp_path / "j.sqlite3")
    conn.execute("INSERT INTO sessions (session, created, last_active) VALUES ('s1', 1, 1)")
    for entry in entries:
        journal.insert_entry(conn, "s1", 1.0, entry)
    stored = journal.load_session(conn, "s1")
    assert Trajectory.restore(stored.entries).data_at(1) == TERMINATORS


def test_a_journal_written_before_payloads_were_kept_still_loads_without_them(tmp_path):
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)  # the entries table as it was, with no data column
    old.executescript(journal.SCHEMA.replace(",\n    data BLOB", ""))
    old.execute("INSERT INTO sessions (session, created, last_active) VALUES ('s1', 1, 1)")
    old.execute("INSERT INTO entries (session, ts, role, content, call_id, tool) VALUES "
                "('s1', 1, 'assistant', 'TOOL_CALL: media_search|x', 'c1', 'media_search')")
    old.execute("INSERT INTO entries (session, ts, role, name, content, call_id, call_state, outcome) VALUES "
                "('s1', 1, 'tool', 'media_search', 'x-1 — X (1999): …', 'c1', 'done', 'ok')")
    old.commit()
    old.close()
    conn = journal.connect(path)
    restored = Trajectory.restore(journal.load_session(conn, "s1").entries)
    assert restored.kind_at(1) == "ok" and restored.data_at(1) is None
    journal.insert_entry(conn, "s1", 2.0, Recorded(role="tool", content="y", call_id="c2", data=TERMINATORS))
    assert journal.load_session(conn, "s1").entries[-1].data == TERMINATORS


def test_a_stored_payload_this_runtime_cannot_read_is_dropped_not_fatal(tmp_path):
    conn = journal.connect(tmp_path / "j.sqlite3")
    conn.execute("INSERT INTO sessions (session, created, last_active) VALUES ('s1', 1, 1)")
    journal.insert_entry(conn, "s1", 1.0, Recorded(role="tool", content="x", call_id="c1", data=TERMINATORS))
    conn.execute("UPDATE entries SET data = ?", (msgspec.msgpack.encode({"type": "weather", "sky": "grey"}),))
    [entry] = journal.load_session(conn, "s1").entries
    assert entry.content == "x" and entry.data is None


# ---- through the real session loop -------------------------------------------------------------
async def test_the_second_one_after_a_search_plays_the_second_title_the_search_showed(tmp_path):
    backend = ScriptedBackend(reply_fn=_which_one)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "find the terminator")
        await system.turn("s", "the second one please")
        history = await system.history("s")
    second = _search_ids(history)[1]
    assert plays(history) == [f"TOOL_CALL: media_play|{second}"]
    assert not backend.calls  # the fast path answered both turns


async def test_the_second_one_still_resolves_after_the_session_comes_back_from_its_journal(tmp_path):
    backend = ScriptedBackend(reply_fn=_which_one)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "find the terminator")
    async with inproc_system(tmp_path, backend=backend) as system:  # a restart: the session is read back
        shown = await system.turn("s", "the second one please")
        history = await system.history("s")
    second = _search_ids(history)[1]
    assert plays(history) == [f"TOOL_CALL: media_play|{second}"]
    assert "Which one do you mean?" not in finals(shown) and not backend.calls


async def test_a_search_journaled_without_its_payload_counts_as_nothing_shown(tmp_path):
    """The documented fallback: a result with no payload (a journal from before payloads were
    kept) shows no titles, so "the second one" is the model's, never a guess from its text."""
    backend = ScriptedBackend(reply_fn=_which_one)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "find the terminator")
    with sqlite3.connect(tmp_path / "porfiry.sqlite3") as conn:
        conn.execute("UPDATE entries SET data = NULL")
    async with inproc_system(tmp_path, backend=backend) as system:
        shown = await system.turn("s", "the second one please")
        history = await system.history("s")
    assert finals(shown)[-1] == "Which one do you mean?"
    assert plays(history) == []


async def test_cancel_it_cancels_the_timer_the_turn_before_set_by_its_id(tmp_path):
    backend = ScriptedBackend(reply_fn=_which_one)
    async with inproc_system(tmp_path, backend=backend) as system:
        await system.turn("s", "set a timer for 10 minutes to check the tea")
        await system.turn("s", "set a timer for 30 minutes for the pizza")
        await system.turn("s", "actually cancel it")
        left = finals(await system.turn("s", "what timers do I have?"))[-1]
    assert "tea" in left and "pizza" not in left
    assert not backend.calls


def _search_ids(history) -> list[str]:
    """The ids of the first search's titles, in the order its text listed them (for the test's
    own check only: the session itself reads the payload)."""
    search = next(m["content"] for m in history if m["role"] == "tool" and m["name"] == "media_search")
    return [line.split(" ")[0] for line in search.splitlines() if " — " in line]


def _caller(messages):
    """Makes the call the user spells out ("call media_info|x"), then answers with the result's first line."""
    last = [m for m in messages if m.role != "system"][-1]
    if last.role == "tool" or last.content.startswith("[System notice]"):
        return "Вот: " + last.content.splitlines()[0]
    return "TOOL_CALL: " + last.content.split("] ", 1)[-1][len("call "):]


async def test_an_id_is_seen_when_a_results_payload_showed_it_even_as_a_close_match(tmp_path):
    async with inproc_system(tmp_path, backend=ScriptedBackend(reply_fn=_caller)) as system:
        await system.turn("s", "call media_info|terminator-1984")  # no result showed it yet: made up
        await system.turn("s", "call media_info|Терминатр")  # no such id: the close matches are shown
        await system.turn("s", "call media_info|terminator-1984")
        results = [m["content"] for m in await system.history("s") if m["role"] == "tool"]
    assert results[0].startswith("not executed (unseen_id)")
    assert "close matches: terminator-1984" in results[1]
    assert "James Cameron" in results[2]


async def test_on_postgres_the_second_one_still_resolves_after_a_restart(tmp_path, pg_url):
    from tests.harness import make_config, override

    config = override(make_config(tmp_path), storage={"backend": "postgres", "url": pg_url})
    backend = ScriptedBackend(reply_fn=_which_one)
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        await system.turn("pg", "find the terminator")
    async with inproc_system(tmp_path, backend=backend, config=config) as system:
        await system.turn("pg", "the second one please")
        history = await system.history("pg")
    assert plays(history) == [f"TOOL_CALL: media_play|{_search_ids(history)[1]}"]
    assert not backend.calls
