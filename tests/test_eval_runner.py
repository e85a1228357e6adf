"""`run.py eval`'s judge through the real session loop, on a scripted model: a scenario passes
by outcome (what was played, what the glasses show) and fails with a reason a tuner can act on,
an answer that only repeats the request or is a canned refusal included."""
from __future__ import annotations

import msgspec

from core.config import load_config
from evals.runner import format_report, run_eval
from evals.scenarios import Scenario, Turn
from llm.scripted import DEFAULT_RULES, Rule, ScriptedBackend

PLAY = Scenario(id="play-ru", lang="ru", turns=[Turn(say="включи фильм Титаник", calls=["media_play|titanic"],
                                                     mentions=["Титаник"])])


def _judge_config():
    """These tests check the judge against scripted models: no reflex (core.reflex) takes a turn."""
    config = load_config(None, env={})
    return msgspec.structs.replace(config, session=msgspec.structs.replace(config.session, reflexes=False))



async def _run(rules):
    return await run_eval(_judge_config(), [PLAY], backend=ScriptedBackend(rules), profile="scripted",
                          mode="progressive", progress=lambda line: None)


async def test_a_play_by_the_films_name_passes_by_what_it_played():
    report = await _run([Rule(r"", "Включаю «Титаник».", role="tool", tool="media_play"),
                         Rule(r"Титаник", "TOOL_CALL: media_play|Титаник", role="user")])
    assert report.passed == 1, report.per_scenario[0].why
    assert report.per_scenario[0].calls == ["media_play|Титаник (played titanic-1997)"], "S8 ran it, media was off"


async def test_a_search_that_never_plays_fails_saying_so():
    report = await _run([Rule(r"", "«Титаник» (1997).", role="tool", tool="media_search"),
                         Rule(r"Титаник", "TOOL_CALL: media_search|Титаник", role="user")])
    assert report.passed == 0
    assert "no call media_play|titanic" in report.per_scenario[0].why


def test_an_answer_that_only_repeats_the_request_fails():
    from evals.scenarios import PlayedTurn, judge_turn

    echo = PlayedTurn(calls=[], displays=["Включи фильм Титаник!"], final="Включи фильм Титаник!", steps=1, gave_up=False)
    assert any("only repeats the request" in why for why in judge_turn(Turn(say="включи фильм Титаник"), echo))


async def test_a_model_that_echoes_the_request_twice_shows_that_it_did_not_understand_and_fails():
    report = await _run([Rule(r"", "Включи фильм Титаник!", role="user")])  # asked again (core/echo.py): again
    assert report.passed == 0
    assert "Не понял просьбу" in report.per_scenario[0].why  # the echo never reached the glasses


def test_a_canned_refusal_on_the_glasses_fails_even_after_a_call_that_worked():
    from evals.scenarios import PlayedTurn, judge_turn

    refusal = PlayedTurn(calls=[("media_play", "titanic-1997")], displays=[], steps=2, gave_up=False,
                         final="I'm sorry, but I can't assist with that.")
    assert any("canned refusal" in why for why in judge_turn(PLAY.turns[0], refusal))


async def test_a_model_that_refuses_twice_fails_and_its_refusal_never_reaches_the_glasses():
    refusal = "I'm sorry, but I can't assist with that."  # asked again (core/echo.py), whatever the notice: again
    report = await _run([Rule(r"", refusal, role="tool", tool="media_play"), Rule(r"refus", refusal, role="user"),
                         Rule(r"Титаник", "TOOL_CALL: media_play|titanic-1997", role="user")])
    assert report.per_scenario[0].calls == ["media_play|titanic-1997"]  # an id no result showed: refused, not run
    assert report.passed == 0 and "Не понял просьбу" in report.per_scenario[0].why


CRASH = [Scenario(id=f"restart-{at}", lang="en", turns=[Turn(say="search inception", restart_at=at,
                                                             calls=["media_search|inception"] if at == "tool" else [],
                                                             mentions=["Inception"])])
         for at in ("tool", "answer")]


async def test_a_runtime_crash_mid_turn_is_judged_on_what_the_model_does_after_the_restart():
    """The default rules continue a cut turn (the call again after "cut off by a runtime
    restart", an answer after the restart notice): both pass; a model that does not repeat the
    lost call fails, though it made that call before the crash."""
    config = _judge_config()
    report = await run_eval(config, CRASH, backend=ScriptedBackend(), profile="scripted", mode="progressive",
                            progress=lambda line: None)
    assert report.passed == 2, [r.why for r in report.per_scenario]
    searches = [call for call in report.per_scenario[0].calls if call.startswith("media_search")]
    assert len(searches) == 2, report.per_scenario[0].calls  # cut, then again (S8 ran it: a restart turned media off)
    forgetful = [Rule(r"cut off by a runtime restart", "Sorry, that was lost.", role="tool"), *DEFAULT_RULES]
    report = await run_eval(config, CRASH[:1], backend=ScriptedBackend(forgetful), profile="scripted",
                            mode="progressive", progress=lambda line: None)
    assert report.passed == 0 and "no call media_search|inception" in report.per_scenario[0].why


async def test_a_restart_point_the_turn_never_reaches_fails_the_scenario():
    never = [Scenario(id="no-tool", lang="en", turns=[Turn(say="what is a haiku", restart_at="tool")])]
    report = await run_eval(_judge_config(), never, backend=ScriptedBackend(), profile="scripted",
                            mode="progressive", progress=lambda line: None)
    assert report.passed == 0 and "never reached its restart point" in report.per_scenario[0].why


async def test_a_toolset_executor_lost_mid_call_is_judged_after_the_call_is_made_again():
    """`restart_at = "toolsets"`: the executor dies with the turn's first toolset call; a search
    (read-only) is made again by the session, as SessionActor.invoke does, so the model never
    sees it fail; a turn with no toolset call never reaches the point and fails."""
    lost = [Scenario(id="lost-search", lang="en", turns=[Turn(say="search inception", restart_at="toolsets",
                                                              calls=["media_search|inception"], mentions=["Inception"])]),
            Scenario(id="lost-nothing", lang="en", turns=[Turn(say="what is a haiku", restart_at="toolsets")])]
    report = await run_eval(_judge_config(), lost, backend=ScriptedBackend(), profile="scripted",
                            mode="progressive", progress=lambda line: None)
    search, nothing = report.per_scenario
    assert search.passed, search.why
    assert [c for c in search.calls if c.startswith("media_search")] == ["media_search|inception"]
    assert not nothing.passed and "never reached its restart point (toolsets)" in nothing.why


async def test_a_call_answered_as_lost_is_judged_on_what_the_model_does_after_it():
    """`restart_at = "toolsets-lost"`: the call is answered as lost even for a search (as a tool
    the runtime may not repeat is); a model that makes it again passes, one that gives up fails."""
    from llm.scripted import _repeat_last_call

    lost = [Scenario(id="failed-search", lang="en", turns=[Turn(say="search inception", restart_at="toolsets-lost",
                                                                calls=["media_search|inception"], mentions=["Inception"])])]
    config = _judge_config()
    retrying = [Rule(r"lost this call", _repeat_last_call, role="tool"), *DEFAULT_RULES]
    report = await run_eval(config, lost, backend=ScriptedBackend(retrying), profile="scripted", mode="progressive",
                            progress=lambda line: None)
    assert report.passed == 1, report.per_scenario[0].why
    assert [c for c in report.per_scenario[0].calls if c.startswith("media_search")] == ["media_search|inception"] * 2
    assert report.invalid_calls == 0, "the call the scenario lost is not an invalid call of the model's"
    giving_up = [Rule(r"lost this call", "Sorry, that did not work.", role="tool"), *DEFAULT_RULES]
    report = await run_eval(config, lost, backend=ScriptedBackend(giving_up), profile="scripted", mode="progressive",
                            progress=lambda line: None)
    assert report.passed == 0 and "no call media_search|inception" in report.per_scenario[0].why


# ---- issue 33: the world clock MCP toolset, side effects and claims, turn_ms --------------------
from evals.runner import turn_effects, with_worldclock  # noqa: E402
from evals.scenarios import SETS, load_scenarios  # noqa: E402


async def test_the_eval_runs_the_world_clock_mcp_server_as_a_toolset():
    clock = Scenario(id="ny", lang="en", turns=[Turn(say="What time is it in New York?",
                                                     calls=["worldclock_time_now|york"], mentions=["11:00"])])
    rules = [Rule(r"", "In New York: {first_line}", role="tool", tool="worldclock_time_now"),
             Rule(r"New York", "TOOL_CALL: worldclock_time_now|New York", role="user")]
    report = await run_eval(with_worldclock(_judge_config()), [clock], backend=ScriptedBackend(rules),
                            profile="scripted", mode="progressive", progress=lambda line: None)
    assert report.passed == 1, report.per_scenario[0].why
    assert report.turn_ms.p50 > 0 and len(report.per_scenario[0].turn_ms) == 1


async def test_the_eval_loads_the_sentences_its_config_does_an_mcp_servers_custom_ones_too():
    # the eval's sessions had the built-in sentences alone: the world clock's own ("make Tokyo my
    # home city") worked in a runtime and not in the eval played over the same config
    home = Scenario(id="home", lang="en", turns=[Turn(say="make tokyo the home city on my world clock",
                                                      calls=["worldclock_set_home|tokyo"], mentions=["Tokyo"])])
    rules = [Rule(r"", "Done: Tokyo is home now.", role="tool", tool="worldclock_set_home"),
             Rule(r"", "I can't do that.", role="user")]
    config = load_config(None, env={})  # the fast path on: the sentences are its
    report = await run_eval(with_worldclock(config), [home], backend=ScriptedBackend(rules),
                            profile="scripted", mode="progressive", progress=lambda line: None)
    assert report.passed == 1, report.per_scenario[0].why


async def test_a_home_city_said_as_him_then_is_the_place_asked_about():
    # h74: "ну и сделай его тогда домашним городом" set the home city to "его тогда"
    home = Scenario(id="home", lang="ru", turns=[
        Turn(say="скока щас в Стамбуле?", calls=[], mentions=["18:00"]),
        Turn(say="о, как у нас. ну и сделай его тогда домашним городом, я там уже чаще торчу, чем дома",
             calls=["worldclock_set_home|стамбул"], mentions=["Стамбул", "Istanbul"])])
    report = await _played_with_the_fast_path(home, "Не понял.")
    assert report.passed == 1, report.per_scenario[0].why


async def test_two_places_asked_at_once_are_both_answered_and_shown_when_asked():
    # h75: "What time is it in London and in Chicago?" went to the model; "Pop them both up on the glasses"
    # then showed the words "them both"
    both = Scenario(id="both", lang="en", turns=[
        Turn(say="What time is it in London and in Chicago?", calls=[], mentions=["15:00"]),
        Turn(say="Eh? Can't hear you over this café racket. Pop them both up on the glasses.",
             calls=["show_text|15:00"], mentions=["10:00"])])
    report = await _played_with_the_fast_path(both, "I can't.")
    assert report.passed == 1, report.per_scenario[0].why


async def test_a_change_of_an_mcp_tool_is_refused_when_the_words_only_order_nothing():
    # h79's trap: "Don't set anything for tomorrow. Full rest day: …" — the model set the home city to New York
    # (the server's tool named "set", and "don't set" counted as words asking for a change)
    rest = Scenario(id="rest", lang="en", turns=[Turn(
        say="Don't set anything for tomorrow. Full rest day: no alarms, no reminders, I'm sleeping until my body says otherwise.",
        calls=[], mentions=[], forbid=["worldclock_set_home"])])
    rules = [Rule(r"Don't set anything", "TOOL_CALL: worldclock_set_home|New York", role="user"), Rule(r"", "Rest well!")]
    report = await run_eval(with_worldclock(load_config(None, env={})), [rest], backend=ScriptedBackend(rules),
                            profile="scripted", mode="progressive", progress=lambda line: None)
    assert report.per_scenario[0].unrequested_side_effects == []  # tried (the eval counts a refused call as called), refused


async def _played_with_the_fast_path(scenario: Scenario, reply: str):
    """`scenario` played with the default config (the fast path on) and the world clock, the model's every reply `reply`."""
    return await run_eval(with_worldclock(load_config(None, env={})), [scenario], backend=ScriptedBackend([Rule(r"", reply)]),
                          profile="scripted", mode="progressive", progress=lambda line: None)


def test_a_changing_call_the_turn_did_not_ask_for_counts_and_a_refused_one_does_not():
    import protocol as p
    from core.budget import default_catalog
    from core.toolsets import ToolsetRegistry

    from core.trajectory import Trajectory

    registry = ToolsetRegistry(default_catalog())

    def turn(kind: str, text: str) -> Trajectory:
        trajectory = Trajectory()
        trajectory.record_assistant("TOOL_CALL: timers_set|in 5 minutes; позвонить", call_id="c1", tool="timers_set")
        trajectory.record_result("c1", p.CallOutcome(kind=kind, text=text))
        return trajectory

    ran = turn("ok", "Timer 1 set for 18:05: позвонить")
    refused = turn("refused", "not executed (not_requested): …")
    failed = turn("error", "Timer not set: cannot read the time")
    assert turn_effects(registry, ran, 0, [], "Готово").unrequested == ["timers_set|in 5 minutes; позвонить"]
    assert turn_effects(registry, ran, 0, ["timers_set|5"], "Готово").unrequested == []
    assert turn_effects(registry, refused, 0, [], "Пожалуйста!").unrequested == []
    assert turn_effects(registry, refused, 0, [], "Таймер установлен на 5 минут.").claimed_not_done
    assert turn_effects(registry, failed, 0, [], "Таймер установлен на 5 минут.").claimed_not_done
    assert not turn_effects(registry, ran, 0, ["timers_set"], "Таймер установлен на 5 минут.").claimed_not_done


def test_the_three_sets_hold_at_least_150_scenarios_with_distinct_ids():
    sets = {name: load_scenarios(path) for name, path in SETS.items()}
    assert sum(len(s) for s in sets.values()) >= 150
    ids = [s.id for scenarios in sets.values() for s in scenarios]
    assert len(ids) == len(set(ids))
    says = {name: {t.say.casefold() for s in scenarios for t in s.turns if t.say} for name, scenarios in sets.items()}
    assert not says["test"] & says["dev"], "the held-out set repeats a dev phrasing"
    assert all(not any(t.calls for t in s.turns[-1:]) for s in sets["traps"]), "a trap's last turn expects no call"


async def test_a_play_carried_out_by_a_reflex_is_judged_by_what_it_played_with_no_model_step():
    report = await run_eval(load_config(None, env={}), [PLAY], backend=ScriptedBackend([]), profile="scripted",
                            mode="progressive")
    result = report.per_scenario[0]
    assert result.passed, result.why
    assert result.steps == 0 and any(c.startswith("media_play|titanic") for c in result.calls)


async def test_a_lookup_a_reflex_made_and_lost_is_asked_again_once_by_the_reflex():
    """The executor loses a reflex's search (`restart_at = "toolsets-lost"`): the session asks
    the lookup again itself, and a model that would give up is never asked."""
    lost = [Scenario(id="reflex-lost-search", lang="en", turns=[Turn(
        say="find Inception", restart_at="toolsets-lost", calls=["media_search|inception"], mentions=["Inception"])])]
    giving_up = [Rule(r"", "I'm sorry, but I can't assist with that.", role="tool"), *DEFAULT_RULES]
    report = await run_eval(load_config(None, env={}), lost, backend=ScriptedBackend(giving_up), profile="scripted",
                            mode="progressive", progress=lambda line: None)
    result = report.per_scenario[0]
    assert result.passed and result.steps == 0, result.why
    assert [c for c in result.calls if c.startswith("media_search")] == ["media_search|inception"] * 2


async def test_a_restart_at_the_answer_of_a_turn_a_reflex_answered_is_judged_as_the_turn_went():
    """No model answer to crash in (core.reflex): judged on what was done, not failed as unreached."""
    crash = [Scenario(id="reflex-answer", lang="en", turns=[Turn(
        say="find Inception", restart_at="answer", calls=["media_search|inception"], mentions=["Inception"])])]
    report = await run_eval(load_config(None, env={}), crash, backend=ScriptedBackend(), profile="scripted",
                            mode="progressive", progress=lambda line: None)
    assert report.passed == 1 and report.per_scenario[0].steps == 0, report.per_scenario[0].why


async def test_a_watch_asked_for_in_the_eval_is_set_and_said_back():
    """The eval's sessions have a world (core.world.MemoryWorld): before, every channels_watch
    there answered "channels are not available in this runtime", so no watch scenario could pass."""
    watch = Scenario(id="watch-ru", lang="ru", turns=[Turn(say="дай знать, когда мама напишет в телеге",
                                                           calls=["channels_watch|telegram"], mentions=["мама"])])
    report = await run_eval(load_config(None, env={}), [watch], backend=ScriptedBackend(), profile="scripted",
                            mode="progressive", progress=lambda line: None)
    assert report.passed == 1, report.per_scenario[0].why


# ---- issue 54: the first feedback on the glasses, measured per turn ------------------------------
async def test_a_turn_whose_model_is_slow_to_start_first_shows_thinking_and_the_eval_records_when():
    slow = ScriptedBackend([Rule(r"Титаник", "TOOL_CALL: media_play|Титаник", role="user"),
                            Rule(r"", "Включаю «Титаник».", role="tool", tool="media_play")],
                           first_token_delay_s=1.0)
    config = _judge_config()
    config = msgspec.structs.replace(config, session=msgspec.structs.replace(config.session, first_feedback_ms=20))
    report = await run_eval(config, [PLAY], backend=slow, profile="scripted", mode="progressive",
                            progress=lambda line: None)
    result = report.per_scenario[0]
    assert result.passed, result.why
    assert len(result.first_feedback_ms) == 1 and report.first_feedback_ms.p95 == result.first_feedback_ms[0]
    # the first display came before the model's first word: the answer's time includes that second
    assert result.first_feedback_ms[0] < result.turn_ms[0] - 900
    assert "first feedback" in format_report(report)

