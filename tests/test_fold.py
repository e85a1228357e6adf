"""The fold (core/fold.py): what reaches the model always fits its context, whole turns only."""
from core.fold import FOLD_LINE, ModelContext, fold_history
from protocol import ChatMessage


def turn(k: int, with_call: bool = False, words: int = 40) -> list[ChatMessage]:
    said = [ChatMessage(role="user", content=f"[User said] question {k} " + "words " * words)]
    if with_call:
        said += [ChatMessage(role="assistant", content="TOOL_CALL: media_search|x"),
                 ChatMessage(role="tool", name="media_search", content="result " * 30)]
    return said + [ChatMessage(role="assistant", content=f"answer {k} " + "text " * words)]


def total(messages, model):
    return sum(model.cost(m) for m in messages)


def test_nothing_is_folded_while_it_fits_or_when_the_context_is_unknown():
    history = turn(1) + turn(2)
    fold = fold_history(history, cut=0, current_start=2, other_tokens=100, max_tokens=50, model=ModelContext(4096))
    assert fold.messages == history and fold.cut == 0
    fold = fold_history(history * 200, cut=0, current_start=2, other_tokens=100, max_tokens=50, model=ModelContext(0))
    assert fold.cut == 0


def test_the_oldest_whole_turns_give_way_to_one_line_and_the_rest_fits():
    model = ModelContext(2048)
    history = [m for k in range(60) for m in turn(k, with_call=k % 3 == 0)]
    current = len(history) - 2
    fold = fold_history(history, cut=0, current_start=current, other_tokens=300, max_tokens=256, model=model)
    assert fold.messages[0].content == FOLD_LINE.format(n=fold.folded_turns)
    assert fold.messages[1].role == "user", "a cut never separates a call from its result"
    assert total(fold.messages, model) + 300 + 256 <= 2048
    assert fold.messages[-2:] == history[-2:], "the current turn is never folded"
    assert history[fold.cut:] == fold.messages[1:]


def test_the_fold_point_moves_in_large_steps_so_the_prefix_stays_the_same_between_folds():
    model = ModelContext(2048)
    history: list[ChatMessage] = []
    cut, cuts = 0, []
    for k in range(80):
        current = len(history)
        history += turn(k, words=8)  # about 50 tokens a turn: a quarter of the context is 10 turns
        fold = fold_history(history, cut=cut, current_start=current, other_tokens=300, max_tokens=256, model=model)
        cut = fold.cut
        cuts.append(cut)
    moves = [b for a, b in zip(cuts, cuts[1:]) if b != a]
    assert len(moves) >= 2
    assert all(b - a >= 16 for a, b in zip([0, *moves], moves)), f"small steps: {moves}"
    assert len(moves) <= len(cuts) // 8, f"the fold point moved {len(moves)} times in {len(cuts)} turns"


def test_calibration_from_the_models_own_count():
    model = ModelContext(4096)
    model.observe(prompt_tokens=500, chars=2000)
    assert abs(model.tokens_per_char - 0.275) < 1e-9


def test_a_step_of_a_long_conversation_folds_from_running_totals_as_from_the_whole_history():
    """The session passes the trajectory's running content lengths and the last fold's turns, so
    a step makes no pass over the whole history; the fold is the same as one computed afresh."""
    from core.trajectory import Recorded, Trajectory

    model = ModelContext(2048)
    trajectory = Trajectory()
    cut, turns, folds = 0, 0, 0
    for k in range(120):
        current = len(trajectory)
        for message in turn(k, with_call=False, words=8 + k % 7):
            if message.role == "user":
                trajectory.record_events(message.content)
            else:
                trajectory.record_assistant(message.content)
        history = trajectory.messages()
        kept = fold_history(history, cut=cut, current_start=current, other_tokens=300, max_tokens=256, model=model,
                            chars=trajectory.chars(), folded_turns=turns)
        afresh = fold_history(history, cut=cut, current_start=current, other_tokens=300, max_tokens=256, model=model)
        assert (kept.messages, kept.cut, kept.folded_turns) == (afresh.messages, afresh.cut, afresh.folded_turns)
        assert kept.folded_turns == sum(1 for m in history[:kept.cut] if m.role == "user")
        folds += kept.cut != cut
        cut, turns = kept.cut, kept.folded_turns
    assert folds >= 3
    restored = Trajectory.restore([Recorded(role=m.role, content=m.content) for m in trajectory.messages()])
    assert restored.chars() == trajectory.chars()
    assert trajectory.chars()[-1] == sum(len(m.content) for m in trajectory.messages())


def test_a_run_of_messages_costs_at_least_what_its_messages_cost_one_by_one():
    model = ModelContext(4096)
    model.observe(prompt_tokens=700, chars=2000)
    messages = turn(1, with_call=True) + turn(2)
    chars = sum(len(m.content) for m in messages)
    assert total(messages, model) <= model.cost_of(chars, len(messages)) < total(messages, model) + len(messages)
