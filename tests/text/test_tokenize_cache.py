"""The tokenizer remembers what it made of each word as the text spells it: a word seen again gives the same
terms, whatever it was the first time (a function word, a contraction, a stem), and the memory stays bounded."""

from __future__ import annotations

import pytest

from orc.text import tokenize
from orc.text import tokens as tokens_module


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("The Configuration of the configurations", ["configur", "configur"]),
        ("Don't you know it’s THEIR file? They’re right", ["know", "right"]),
        ("O’Neil's rock'n'roll", ["o'neil", "s", "rock'n", "roll"]),
        ("ﬁle conﬁguration ＡＢＣ", ["configur", "abc"]),
    ],
)
def test_a_text_gives_the_same_terms_the_first_time_and_every_time_after(text: str, terms: list[str]) -> None:
    first = tokenize(text)
    assert first == terms
    assert tokenize(text) == first
    assert tokenize(text.upper().lower()) == tokenize(text.lower())


def test_function_words_are_kept_when_asked_even_after_they_were_dropped() -> None:
    assert tokenize("the manuals") == ["manual"]
    assert tokenize("the manuals", keep_stopwords=True) == ["the", "manual"]


def test_the_remembered_words_are_forgotten_rather_than_grow_past_their_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens_module, "_CONTENT_WORDS_LIMIT", 8)
    words = [f"part{number}x" for number in range(40)]
    assert tokenize(" ".join(words)) == [tokens_module.stem(word) for word in words]
    assert len(tokens_module._CONTENT_WORDS) <= 8
