"""The media toolset (S5, S11): its terse spec, argument checks and the result texts the model reads.

Pure functions over a `MediaProvider`; `toolsets.media.executor` runs them in a worker thread and
does the phone round-trip for `media_play` (`play_command` builds the message, the `play_*_text`
functions word the answers). Arguments arrive bound and checked against the spec (by the
session, once); here only their values are checked.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from core.toolsets import ToolResult, invalid_args_text
from protocol import ArgSpec, PlaybackCommand, PlaybackStatus, ToolSpec, ToolsetSpec
from protocol.results import Playing, TitleInfo, TitleRef, TitlesShown
from toolsets.media.catalog import normalize
from toolsets.media.provider import MediaProvider, ProviderError, SearchPage, Title

PER_PAGE = 5
MAX_PAGE = 1000
MAX_QUERY_CHARS = 200
MAX_ID_CHARS = 100
PLAY_ACTIONS = ("play", "pause", "resume", "stop")
CLOSE_SHOWN = 3  # the close matches an unknown id's answer names

MEDIA_SEARCH = ToolSpec(
    name="media_search", summary="find films/series by title (ru/en)",
    args=[ArgSpec(name="query"), ArgSpec(name="page", required=False)], read_only=True,
    grounded_args=["query"],  # the title the user said, not the instructions' "<название>"
    progress={"ru": "ищу «{arg}»…", "en": "searching for “{arg}”…"}, serves="title_search",
)
MEDIA_INFO = ToolSpec(name="media_info", summary="details of a title by its id: director, year, runtime",
                      args=[ArgSpec(name="id")], read_only=True, seen_args=["id"],
                      progress={"ru": "смотрю подробности…", "en": "looking up the details…"}, serves="title_info")
# Not `long_running`: the executor itself answers within phone.playback_wait_s, with the phone's
# task id, and playback progress arrives as playback events (E7) - the session need not wrap it.
MEDIA_PLAY = ToolSpec(
    name="media_play", summary="play on the phone by id or exact title; to control what plays: add ; action=pause, resume or stop",
    args=[ArgSpec(name="id"), ArgSpec(name="action", required=False)], idempotent=True,  # play X, pause: twice is once
    action="play", action_arg="action", arg_actions={"play": "play", "*": "playback"}, seen_args=["id"],
    progress={"ru": "включаю…", "en": "starting playback…"}, serves="title_play",
)
MEDIA_TOOLSET = ToolsetSpec(
    # placeholders, not titles: an example's words are not facts to copy (the grammar forbids <>)
    example=("\"найди фильм <название>\" -> TOOL_CALL: media_search|<название> -> the titles, years and directors "
             "from the result\n"
             "\"включи фильм <название>\" -> TOOL_CALL: media_play|<название> -> what the result says\n"
             "\"включи его\" / \"play the second one\" / \"the 1975 one\" -> TOOL_CALL: media_play|<that title's "
             "id from the last result> -> what the result says"),
    name="media", summary="Films and series: search, details, playback.",
    tools=[MEDIA_SEARCH, MEDIA_INFO, MEDIA_PLAY],
)


class PlayRequest(NamedTuple):
    """A checked media_play call. `title` is the display name when the provider knows the id."""

    media_id: str
    action: str
    title: str = ""


def invalid(tool: ToolSpec, reason: str) -> ToolResult:
    return ToolResult(False, invalid_args_text(tool, reason))


# --- media_search ----------------------------------------------------------------------------
def run_search(provider: MediaProvider, args: dict[str, str]) -> ToolResult:
    """media_search|query; page? -> one line per title, then where this page sits in the total."""
    query = " ".join(args["query"].split())
    # "Сталкер (once: the media_* tools …)": a note the model copied after the title, never a title's end
    query = re.sub(r"\s*\([^()]*\)$", "", query) or query
    if len(query) > MAX_QUERY_CHARS:
        return invalid(MEDIA_SEARCH, f"query longer than {MAX_QUERY_CHARS} characters")
    page_text = args.get("page", "").strip() or "1"
    if not page_text.isdigit() or not 1 <= int(page_text) <= MAX_PAGE:
        return invalid(MEDIA_SEARCH, f"page must be a number 1..{MAX_PAGE}")
    try:
        result = provider.search(query, page=int(page_text), per_page=PER_PAGE)
    except ProviderError as exc:
        return ToolResult(False, f"media catalog unavailable: {exc}")
    return ToolResult(True, format_search(query, result), data=search_data(query, result))


def search_data(query: str, result: SearchPage) -> TitlesShown:
    """The page as fields, beside `format_search`'s text (the session's fast path reads these)."""
    return TitlesShown(query=query, titles=[title_ref(title) for title in result.items], total=result.total, by=result.by)


def title_ref(title: Title) -> TitleRef:
    names = [name for name in dict.fromkeys((title.title_ru, title.title_en)) if name]
    return TitleRef(id=title.id, names=names, year=title.year, kind="series" if title.kind == "series" else "film",
                    facts=title_facts(title))


_MATCHED_BY = {"director": "no title has these words; the films of the director named:",
               "genre": "no title has these words; titles of the genre they name, newest first:"}


def format_search(query: str, result: SearchPage) -> str:
    shown = _safe_arg(query)
    if result.total == 0:
        return (f"nothing found for \u201c{query}\u201d. Try a shorter part of the title, "
                "the original (English) title or another spelling.")
    if not result.items:
        return (f"page {result.page} is past the end: {result.total} results on {result.pages} "
                f"page(s); last page: TOOL_CALL: media_search|{shown}; page={result.pages}")
    lines = [_MATCHED_BY[result.by]] if result.by != "title" else []
    lines += [search_line(title) for title in result.items]
    span = f"{result.first_index}" if len(result.items) == 1 else f"{result.first_index}\u2013{result.last_index}"
    position = f"showing {span} of {result.total}"
    if result.page < result.pages:
        position += f"; next page: TOOL_CALL: media_search|{shown}; page={result.page + 1}"
    else:
        position += "; that is all"
    lines.append(position)
    return "\n".join(lines)


def search_line(title: Title) -> str:
    """'id — Title RU / Title EN (year, series, N episodes, director, runtime): one line'. The director and runtime
    answer the commonest follow-up without a media_info round (measured by run.py eval)."""
    return f"{title.id} \u2014 {display_name(title)} ({title_facts(title)}): {title.description}"


def title_facts(title: Title) -> str:
    """'year, series, N episodes, director, runtime': what a search line shows in brackets."""
    facts = [str(title.year), "series" if title.kind == "series" else ""]
    if title.kind == "series" and title.episodes:
        facts.append(f"{title.episodes} episodes")  # "how many episodes?" without a media_info round
    facts += [title.director, f"{title.runtime_min} min" if title.runtime_min else ""]
    return ", ".join(f for f in facts if f)


def display_name(title: Title) -> str:
    if title.title_en and title.title_en != title.title_ru:
        return f"{title.title_ru} / {title.title_en}"
    return title.title_ru or title.title_en


# --- media_info ------------------------------------------------------------------------------
def run_info(provider: MediaProvider, args: dict[str, str]) -> ToolResult:
    """media_info|id -> the title's facts, or a hint to search (with close matches)."""
    media_id = args["id"].strip()
    if len(media_id) > MAX_ID_CHARS:
        return invalid(MEDIA_INFO, f"id longer than {MAX_ID_CHARS} characters")
    try:
        title = provider.info(media_id)
        if title is None:
            return unknown_id(provider, media_id)
    except ProviderError as exc:
        return ToolResult(False, f"media catalog unavailable: {exc}")
    return ToolResult(True, format_info(title), data=info_data(title))


def info_data(title: Title) -> TitleInfo:
    """The title's details as fields, as `format_info` shows them: a runtime for a film, episodes for a series."""
    series = title.kind == "series"
    return TitleInfo(title=title_ref(title), director=title.director, genres=list(title.genres),
                     runtime_min=0 if series else title.runtime_min or 0, episodes=(title.episodes or 0) if series else 0,
                     description=title.description)


def format_info(title: Title) -> str:
    facts = [f"genres: {', '.join(title.genres) or 'unknown'}"]
    if title.kind == "series":
        facts.append(f"episodes: {title.episodes}" if title.episodes else "episodes: unknown")
        facts.append(f"director/creator: {title.director or 'unknown'}")
    else:
        facts.append(f"runtime: {title.runtime_min} min" if title.runtime_min else "runtime: unknown")
        facts.append(f"director: {title.director or 'unknown'}")
    original = f" (original: {title.title_en})" if title.title_en and title.title_en != title.title_ru else ""
    lines = [
        f"{title.title_ru}{original}, {title.year}, {title.kind}",
        "; ".join(facts),
    ]
    if title.description:
        lines.append(title.description)
    lines.append(f"play: TOOL_CALL: media_play|{title.id}")
    return "\n".join(lines)


def unknown_id(provider: MediaProvider, media_id: str, close: list[Title] | None = None) -> ToolResult:
    """An id the catalog does not have: a failed call whose text says so, and whose payload holds
    the close matches it names (ids a later call may use)."""
    close = _close_matches(provider, media_id) if close is None else close
    named = [title_ref(title) for title in close[:CLOSE_SHOWN]]
    return ToolResult(False, unknown_id_text(provider, media_id, close),
                      data=TitlesShown(query=_id_words(media_id), titles=named, total=len(named)) if named else None)


def unknown_id_text(provider: MediaProvider, media_id: str, close: list[Title] | None = None) -> str:
    """'no such id' plus a search hint and, when the id's words find something, close matches
    (`close`: the ones already searched for)."""
    words = _id_words(media_id)
    text = f"no title with id \u201c{media_id}\u201d; ids come from TOOL_CALL: media_search|{words or 'title'}"
    close = _close_matches(provider, media_id) if close is None else close
    if close:
        text += "\nclose matches: " + "; ".join(f"{t.id} ({display_name(t)}, {t.year})" for t in close[:CLOSE_SHOWN])
    return text


def _close_matches(provider: MediaProvider, media_id: str) -> list[Title]:
    """The titles the id's words find, best first; none when the catalog cannot search."""
    words = _id_words(media_id)
    if not words:
        return []
    try:
        return provider.search(words, page=1, per_page=5).items
    except (ProviderError, ValueError):
        return []


# --- media_play ------------------------------------------------------------------------------
def validate_play(args: dict[str, str], provider: MediaProvider | None = None) -> PlayRequest | ToolResult:
    """A PlayRequest when the call is sound, else a ToolResult(ok=False) to answer with.

    With a provider, the id must exist (an unknown id gets close matches instead of a phone command)."""
    media_id = args["id"].strip()
    if len(media_id) > MAX_ID_CHARS:
        return invalid(MEDIA_PLAY, f"id longer than {MAX_ID_CHARS} characters")
    action = (args.get("action", "").strip() or "play").lower()
    if action not in PLAY_ACTIONS:
        return invalid(MEDIA_PLAY, f"action must be one of {'|'.join(PLAY_ACTIONS)}")
    if provider is None:
        return PlayRequest(media_id, action)
    try:
        title = provider.info(media_id)
        if title is None:
            close = _close_matches(provider, media_id)
            title = title_named(close, media_id)
            if title is None:
                return unknown_id(provider, media_id, close)
    except ProviderError as exc:
        return ToolResult(False, f"media catalog unavailable: {exc}")
    return PlayRequest(title.id, action, title.title_ru or title.title_en)


def title_named(titles: list[Title], name: str) -> Title | None:
    """The one title of `titles` whose name (Russian or original) or id words are exactly `name`:
    "включи Титаник" plays without a search first, and so does a model's guessed slug
    (`interstellar`). A name several titles share, or a near miss, is not guessed: the caller
    lists close matches."""
    wanted = normalize(name)  # as the catalog compares: "Mимино" with a Latin M is «Мимино»
    named = [t for t in titles if wanted and wanted in {normalize(t.title_ru), normalize(t.title_en), normalize(_id_words(t.id))}]
    return named[0] if len(named) == 1 else None


def play_command(request: PlayRequest, task_id: str) -> PlaybackCommand:
    """The phone command for a checked request."""
    return PlaybackCommand(task_id=task_id, action=request.action, media_id=request.media_id, title=request.title)


_STATE_WORDS = {
    "started": "is playing", "playing": "is playing", "paused": "is paused", "resumed": "is playing again",
    "stopped": "is stopped",
}


def play_started_text(request: PlayRequest, task_id: str) -> str:
    """The immediate answer while the phone has not confirmed yet (E7: a task id, result later).
    The title comes first: after "play «…» sent to the phone" the local model answered "I'm sorry,
    but I can't assist with that." or "The second one is playing." (run.py eval)."""
    return (f"{_quoted(request)}: {request.action} sent to the phone (task {task_id}); "
            "its confirmation arrives as a later event")


def play_started(request: PlayRequest, task_id: str) -> ToolResult:
    """The command is with the phone, which confirms later (E7): the text and its fields."""
    return ToolResult(True, play_started_text(request, task_id), task_id,
                      Playing(media_id=request.media_id, action=request.action, state="sent", title=request.title,
                              task_id=task_id))


def play_status(request: PlayRequest, status: PlaybackStatus) -> ToolResult:
    """The phone answered at once: ok unless it failed."""
    return ToolResult(status.state != "failed", play_status_text(request, status),
                      data=Playing(media_id=request.media_id, action=request.action, state=status.state,
                                   title=request.title, task_id=status.task_id))


def play_status_text(request: PlayRequest, status: PlaybackStatus) -> str:
    """How the phone's PlaybackStatus reads for the model."""
    name = _quoted(request)
    if status.state == "failed":
        return f"{request.action} {name} failed on the phone: {status.detail or 'no reason given'}"
    phrase = _STATE_WORDS.get(status.state, f"is {status.state}")
    detail = f" ({status.detail})" if status.detail else ""
    return f"{name} {phrase} on the phone{detail}"


def play_timeout_text(request: PlayRequest, waited_s: float) -> str:
    return f"the phone did not confirm {request.action} {_quoted(request)} within {waited_s:g} s; it may be offline"


def _quoted(request: PlayRequest) -> str:
    return f"\u00ab{request.title}\u00bb ({request.media_id})" if request.title else request.media_id


def _safe_arg(text: str) -> str:
    """A value that survives being pasted back into 'TOOL_CALL: name|value; key=value'."""
    return " ".join(text.replace("|", " ").replace(";", " ").replace("\n", " ").split())


def _id_words(media_id: str) -> str:
    """'tomb-raider-2002' -> 'tomb raider' (the slug's words without a trailing year)."""
    words = [w for w in _safe_arg(media_id.replace("-", " ").replace("_", " ")).split()]
    if len(words) > 1 and words[-1].isdigit() and len(words[-1]) == 4:
        words = words[:-1]
    return " ".join(words)
