"""The tiktoken encodings orc ships (orc/models/encodings) are the ones tiktoken itself builds: given the shipped
files where it caches its downloads, tiktoken's own constructors accept them (it checks their SHA-256) and encode
every text to the same tokens as orc's encodings. Nothing is downloaded: no network is needed on Azure."""

from __future__ import annotations

import gzip
import hashlib
from importlib.resources import files
from pathlib import Path

import pytest
import tiktoken

from orc.models.tokens import BUNDLED, bundled_encoding

TEXTS = [
    "Either party may end the lease after the first six months by giving 60 days' written notice.",
    "Ünïcödé, 日本語のテキスト, emoji 🎉 and code: def f(x):\n    return x ** 2  # squared\r\n",
    "   leading spaces, trailing spaces   \n\n\nand <|endoftext|> written as plain text",
]


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_tiktoken_builds_the_same_encoding_from_the_shipped_file(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = gzip.decompress((files("orc.models") / "encodings" / f"{name}.tiktoken.gz").read_bytes())
    # tiktoken's cache: the file named by the SHA-1 of the address it would download it from.
    address = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    (tmp_path / hashlib.sha1(address.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    theirs = tiktoken.get_encoding(name)
    ours = bundled_encoding(name)

    assert isinstance(ours, tiktoken.Encoding)
    assert ours._pat_str == theirs._pat_str
    assert ours._special_tokens == theirs._special_tokens
    assert ours.n_vocab == theirs.n_vocab
    for text in TEXTS:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
