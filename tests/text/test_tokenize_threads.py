"""Tokenizing is thread-safe: documents are extracted and indexed in worker threads, several at a time."""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from orc.text import tokenize

THREADS = 4
WORDS_PER_THREAD = 10_000
# Endings the English stemmer rewrites in several steps, so an interleaved call has state to trample.
_ENDINGS = ("ing", "ations", "ness", "fully", "ies", "ed", "ational", "izer", "ously", "ment", "s", "ly", "iveness")


def _words(seed: int, count: int) -> list[str]:
    """Made-up words no other test tokenizes, so every one is stemmed now rather than found in the cache."""
    chooser = random.Random(f"tokenize-threads-{seed}")
    return [
        "".join(chooser.choices(string.ascii_lowercase, k=chooser.randint(4, 9))) + chooser.choice(_ENDINGS)
        for _ in range(count)
    ]


def _tokenized_alone(words: Sequence[str]) -> dict[str, list[str]]:
    """What a fresh process, one thread, makes of each word: the right answer, with nothing cached before."""
    script = (
        "import json, sys\n"
        "from orc.text import tokenize\n"
        "words = json.load(sys.stdin)\n"
        "json.dump({word: tokenize(word, keep_stopwords=True) for word in words}, sys.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(list(words)), capture_output=True, text=True, check=True
    )
    result: dict[str, list[str]] = json.loads(done.stdout)
    return result


@contextmanager
def _threads_switching_as_often_as_possible() -> Iterator[None]:
    # The interpreter otherwise switches threads every 5 ms, rarely inside one word: a race would hide.
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _tokenize_each(words: list[str]) -> list[list[str] | str]:
    """Each word's tokens, or the name of the error tokenizing it raised (so one error does not hide the rest)."""
    results: list[list[str] | str] = []
    for word in words:
        try:
            results.append(tokenize(word, keep_stopwords=True))
        except Exception as error:
            results.append(type(error).__name__)
    return results


def test_words_tokenized_in_several_threads_at_once_get_the_stems_one_thread_gives_and_keep_them() -> None:
    batches = [_words(seed, WORDS_PER_THREAD) for seed in range(THREADS)]
    expected = _tokenized_alone([word for batch in batches for word in batch])

    with _threads_switching_as_often_as_possible(), ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(_tokenize_each, batches))

    outcomes = [
        (word, got)
        for batch, tokens in zip(batches, results, strict=True)
        for word, got in zip(batch, tokens, strict=True)
    ]
    # A stemmer shared between threads raised IndexError (a document then failed to process) ...
    errors = [(word, got) for word, got in outcomes if isinstance(got, str)]
    # ... and, worse, silently returned another word's stem.
    wrong = [
        (word, got, expected[word]) for word, got in outcomes if not isinstance(got, str) and got != expected[word]
    ]
    assert (len(errors), len(wrong), errors[:3], wrong[:3]) == (0, 0, [], [])
    # Nor did the process remember a wrong stem for later documents and queries.
    remembered = [word for batch in batches for word in batch if tokenize(word, keep_stopwords=True) != expected[word]]
    assert (len(remembered), remembered[:3]) == (0, [])
