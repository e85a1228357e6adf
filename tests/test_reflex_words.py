"""The reflexes read their words from core/words/<language>/*.toml (core.lexicon): every word a
list holds is one the pattern built from it knows, in every language, so a word a translator adds
is read without a change to core/reflex.py or core/frame.py."""
import pytest

from core import frame, lexicon, reflex

# (topic, list, the pattern that reads it, a sentence around each word, how the pattern is asked)
CASES = [
    ("requests", "opening_verbs", reflex.VERB_START, "{} something", "match"),
    ("requests", "condition_words", reflex._CONDITION, "ok {} it rains", "search"),
    ("follow_ups", "asking_words", reflex._ASKING_WORD, "{} one", "match"),
    ("frame", "every_timer_words", frame._EVERY_TIMER, "cancel {} now", "search"),
]


@pytest.mark.parametrize(("topic", "key", "pattern", "sentence", "how"), CASES, ids=[c[1] for c in CASES])
def test_every_word_of_a_list_is_read_by_its_pattern(topic, key, pattern, sentence, how):
    for language in lexicon.LANGUAGES:
        said = lexicon.words_of(language, topic, key)
        assert said, f"core/words/{language}/{topic}.toml has no {key}"
        for word in said:
            assert getattr(pattern, how)(sentence.format(word)), f"{word!r} of {language}/{topic}.toml:{key}"


def test_numbers_said_in_words_are_read_in_both_languages():
    assert reflex.in_figures("поставь таймер на двадцать пять минут") == "поставь таймер на 25 минут"
    assert reflex.in_figures("a twenty-five minute timer") == "a 25 minute timer"
    assert reflex.in_figures("через пару минут, in a couple of minutes") == "через 2 минут, in 2 minutes"
    assert set(reflex.TENS) == set(lexicon.table("requests", "tens"))


def test_a_word_added_to_a_language_file_is_read_with_no_change_to_the_code(tmp_path):
    """A translator's new words ("врубай" opens a request, "allofthem" says every timer) are read
    from the files (here a copy) by core.reflex and core.frame; a word no file has is not."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    words = tmp_path / "words"
    shutil.copytree(Path(lexicon.__file__).with_name("words"), words)
    ru = words / "ru" / "requests.toml"
    ru.write_text(ru.read_text(encoding="utf-8").replace("opening_verbs = [", "opening_verbs = ['врубай', ", 1),
                  encoding="utf-8")
    fr = words / "en" / "frame.toml"
    fr.write_text(fr.read_text(encoding="utf-8").replace("every_timer_words = [", "every_timer_words = ['allofthem', ", 1),
                  encoding="utf-8")
    program = (f"from core import lexicon; lexicon._DIR = __import__('pathlib').Path({str(words)!r})\n"
               "from core import frame, reflex\n"
               "print(bool(reflex.VERB_START.match('врубай сталкер')), bool(frame._EVERY_TIMER.search('cancel allofthem')),"
               " bool(reflex.VERB_START.match('вруби сталкер')))")
    root = Path(lexicon.__file__).parent.parent
    out = subprocess.run([sys.executable, "-c", program], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False"]
