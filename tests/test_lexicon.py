"""The runtime's own words are data (core/words/<language>/<topic>.toml): every language has every
topic and list, and a list the code asks for that no file has is a clear error."""
from pathlib import Path

import pytest

from core import lexicon

# the runtime's words (None: core/words) and each toolset's own (toolsets/<name>/words)
ROOTS = [None, *sorted((Path(__file__).resolve().parent.parent / "toolsets").glob("*/words"))]


@pytest.mark.parametrize("root", ROOTS, ids=str)
def test_every_language_has_every_topic_and_list_of_the_same_kind(root):
    topics = {language: lexicon.topics(language, root) for language in lexicon.LANGUAGES}
    first, *others = lexicon.LANGUAGES
    assert topics[first], f"{root}: no word file"
    for language in others:
        assert topics[language] == topics[first], f"{root}: {language} lacks or adds a topic"
    for name in topics[first]:
        shapes = {language: {key: type(value).__name__ for key, value in lexicon.topic(language, name, root).items()}
                  for language in lexicon.LANGUAGES}
        for language in others:
            assert shapes[language] == shapes[first], f"{root}: {language}/{name}.toml differs in its lists"


@pytest.mark.parametrize("root", ROOTS, ids=str)
def test_lists_are_joined_across_languages_once_each(root):
    for name in lexicon.topics("en", root):
        for key, value in lexicon.topic("en", name, root).items():
            if isinstance(value, list):
                joined = lexicon.words(name, key, root)
                assert len(joined) == len(set(joined))
                assert set(value) <= set(joined)


def test_a_list_no_language_has_is_a_clear_error():
    with pytest.raises(lexicon.LexiconError, match="no_such_list"):
        lexicon.words("guards", "no_such_list")


def test_a_list_every_language_leaves_empty_matches_nothing_and_words_match_as_written(tmp_path, monkeypatch):
    import re

    for language, said in (("ru", '"да ладно"'), ("en", '"a.k.a"')):
        (tmp_path / language).mkdir()
        (tmp_path / language / "t.toml").write_text(f"none = []\nsaid = [{said}]\nsaid_patterns = ['x+']\n", encoding="utf-8")
    monkeypatch.setattr(lexicon, "_DIR", tmp_path)
    for cached in (lexicon.topic, lexicon.words):
        cached.cache_clear()
    try:
        assert re.search(lexicon.alternation("t", "none"), "anything at all") is None
        assert re.fullmatch(lexicon.alternation("t", "said"), "a.k.a") and not re.fullmatch(lexicon.alternation("t", "said"), "abkca")
        assert re.fullmatch(lexicon.alternation("t", "said_patterns"), "xxx")
    finally:
        for cached in (lexicon.topic, lexicon.words):
            cached.cache_clear()


def test_a_list_one_language_lacks_or_a_file_that_is_not_toml_is_a_clear_error(tmp_path, monkeypatch):
    for language, body in (("ru", "said = []\nbroken = ["), ("en", "said = []\nonly_here = []\n")):
        (tmp_path / language).mkdir()
        (tmp_path / language / "t.toml").write_text(body.replace("broken = [", ""), encoding="utf-8")
        (tmp_path / language / "bad.toml").write_text("x = [", encoding="utf-8")
    monkeypatch.setattr(lexicon, "_DIR", tmp_path)
    for cached in (lexicon.topic, lexicon.words):
        cached.cache_clear()
    try:
        with pytest.raises(lexicon.LexiconError, match="ru/t.toml lacks 'only_here'"):
            lexicon.words("t", "only_here")
        with pytest.raises(lexicon.LexiconError, match="bad.toml: cannot read it"):
            lexicon.words("bad", "x")
    finally:
        for cached in (lexicon.topic, lexicon.words):
            cached.cache_clear()


@pytest.mark.parametrize("root", ROOTS, ids=str)
def test_no_list_is_empty_in_every_language(root):
    """A reader that sets a list in its grammar by hand would match everywhere with an empty one (an
    empty alternation); a list no language fills has no reason to be in the files."""
    for name in lexicon.topics("en", root):
        for key, value in lexicon.topic("en", name, root).items():
            if isinstance(value, (list, dict)):  # a single word ("at") is read per language
                joined = lexicon.words(name, key, root) if isinstance(value, list) else lexicon.table(name, key, root)
                assert joined, f"{root or 'core/words'}/*/{name}.toml: {key} is empty in every language"


def test_the_hundreds_after_a_count_of_thousands_are_the_numbers_rest():
    # h74: "seventy eight thousand five hundred" was read as 78000 and 500, and a frame's 78000 passed as said
    from core.timewords import numbers_said

    assert lexicon.hundreds_in_figures("seventy eight thousand five hundred pounds") == "78500 pounds"
    assert lexicon.hundreds_in_figures("семьдесят восемь тысяч пятьсот фунтов") == "78500 фунтов"
    assert lexicon.hundreds_in_figures("тридцать восемь тысяч футов") == "38000 футов"
    assert lexicon.hundreds_in_figures("две тысячи двадцать шестого года") == "две тысячи двадцать шестого года"
    assert numbers_said("ticket says seventy eight thousand five hundred".split()) == {0, 78500}
