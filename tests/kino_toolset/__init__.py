"""A films toolset that is not the built-in media one: other tool names, a catalog of three, run in
the session. It declares what its tools are to the runtime (protocol.ToolSpec.serves), so the fast
path plays a title with it exactly as with the media toolset: `toolsets.extra =
["kino_toolset:TOOLSET"]` with the media toolset left out. Its record takes the media toolset's
title steps and phrasing (toolsets.media.local, .phrasing), which call whatever tools serve the
title requests, and its folder words the answers (intents.yaml)."""
from __future__ import annotations

from collections.abc import Mapping

from core.toolsets import SessionContext, SessionToolset
from protocol import ArgSpec, CallOutcome, ToolSpec, ToolsetSpec
from protocol.results import Playing, TitleInfo, TitleRef, TitlesShown
from toolsets.media.local import STEPS
from toolsets.media.phrasing import PHRASING

FILMS = (TitleRef(id="k-solaris", names=["Солярис", "Solaris"], year=1972),
         TitleRef(id="k-stalker", names=["Сталкер", "Stalker"], year=1979),
         TitleRef(id="k-mirror", names=["Зеркало", "Mirror"], year=1975))

SPEC = ToolsetSpec(name="kino", summary="Tarkovsky's films: find, details, play", tools=[
    ToolSpec(name="kino_find", summary="find a film by its title", args=[ArgSpec(name="query"), ArgSpec(name="page", required=False)],
             read_only=True, serves="title_search"),
    ToolSpec(name="kino_about", summary="a film's details by id", args=[ArgSpec(name="id")], read_only=True,
             seen_args=["id"], serves="title_info"),
    ToolSpec(name="kino_start", summary="play a film by id", args=[ArgSpec(name="id"), ArgSpec(name="action", required=False)],
             idempotent=True, action="play", action_arg="action", arg_actions={"play": "play", "*": "playback"},
             seen_args=["id"], serves="title_play"),
])


def _run(context: SessionContext, tool: str, args: Mapping[str, str]) -> CallOutcome:
    if tool == "kino_find":
        query = args["query"].casefold()  # a name's first letters, so "Сталкера" finds «Сталкер»
        found = [f for f in FILMS if any(name.casefold()[:5] in query for name in f.names)]
        text = "\n".join(f"{f.id}: {f.names[0]} ({f.year})" for f in found) or "nothing found"
        return CallOutcome(kind="ok", text=text, data=TitlesShown(query=args["query"], titles=found, total=len(found)))
    film = next((f for f in FILMS if f.id == args["id"]), None)
    if film is None:
        return CallOutcome(kind="error", text=f"no film {args['id']}")
    if tool == "kino_about":
        return CallOutcome(kind="ok", text=f"{film.names[0]}, {film.year}, Andrei Tarkovsky",
                           data=TitleInfo(title=film, director="Andrei Tarkovsky"))
    action = args.get("action") or "play"
    return CallOutcome(kind="ok", text=f"{action}: {film.names[0]}",
                       data=Playing(media_id=film.id, action=action, state="started", title=film.names[0]))


TOOLSET = SessionToolset(spec=SPEC, handler=_run, steps=STEPS, phrasing=PHRASING)
