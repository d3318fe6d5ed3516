"""Make ``orc/text/related_terms.tsv.gz``, the related-terms table of query expansion, from Princeton WordNet 3.0.

usage: python tools/related_terms.py [WORDNET_DIR]   (default /usr/share/wordnet: ``apt-get install wordnet-base``)

No package on PyPI ships WordNet's data inside its wheel and is kept up to date (``wn`` and nltk download the
data at run time, which orc's hosts cannot do), so orc ships a small table made from Debian's ``wordnet-base``
instead: for each stemmed single word, the stems of the single words WordNet relates to it in its most frequent
senses — synonyms, derivationally related forms ("sue" → "litigate", "wide" → "width"), similar adjectives
("big" → "large") — and for an irregular form ("bigger", "sold") those of its base form. Stems are orc's
(:func:`orc.text.stem`), so the table joins the tokens every ranking uses. Deterministic: the same WordNet gives
the same bytes.
"""

from __future__ import annotations

import gzip
import sys
from collections import defaultdict
from pathlib import Path

from orc.text import STOPWORDS, stem

POS = ("noun", "verb", "adj", "adv")
SENSES = 2
"""Most frequent senses of a word whose relations are kept: rarer senses mostly add noise ("fee" → "tip")."""
MAX_RELATED = 12
TARGET = Path(__file__).resolve().parent.parent / "orc" / "text" / "related_terms.tsv.gz"
_SYMBOLS = {"+", "&", "\\", "<", "^"}
"""Derivationally related form, similar to, pertainym, participle, also see."""


def _single(word: str) -> bool:
    return word.isalpha() and word.isascii() and len(word) > 2


def _synsets(folder: Path, pos: str) -> dict[str, tuple[list[str], list[tuple[str, str, int, int]]]]:
    """offset → (words, pointers (symbol, target key, source number, target number))."""
    found = {}
    letter = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
    for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue
        fields = line.split(" | ")[0].split()
        offset, count = fields[0], int(fields[3], 16)
        words = [fields[4 + 2 * i].lower().split("(")[0] for i in range(count)]
        rest = fields[4 + 2 * count :]
        pointers = []
        for i in range(int(rest[0])):
            symbol, target, target_pos, numbers = rest[1 + 4 * i : 5 + 4 * i]
            key = f"{'a' if target_pos == 's' else target_pos}{target}"
            pointers.append((symbol, key, int(numbers[:2], 16), int(numbers[2:], 16)))
        found[f"{letter[pos]}{offset}"] = (words, pointers)
    return found


def build(folder: Path) -> dict[str, list[str]]:
    """stem → related stems, most frequent senses first."""
    synsets: dict[str, tuple[list[str], list[tuple[str, str, int, int]]]] = {}
    for pos in POS:
        synsets.update(_synsets(folder, pos))
    related: dict[str, list[str]] = defaultdict(list)
    letter = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
    lemmas: dict[str, list[str]] = defaultdict(list)
    for pos in POS:
        for line in (folder / f"index.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            fields = line.split()
            lemma = fields[0]
            if not _single(lemma) or lemma in STOPWORDS:
                continue
            offsets = fields[-int(fields[2]) :][:SENSES]
            for offset in offsets:
                key = f"{letter[pos]}{offset}"
                words, pointers = synsets[key]
                number = words.index(lemma) + 1 if lemma in words else 0
                names = list(words)
                for symbol, target, source_number, target_number in pointers:
                    if symbol not in _SYMBOLS or target not in synsets:
                        continue
                    target_words = synsets[target][0]
                    if source_number == 0:
                        if symbol == "&":
                            names += target_words
                    elif source_number == number and target_number:
                        names.append(target_words[target_number - 1])
                lemmas[lemma] += [name for name in names if _single(name) and name != lemma]
    for lemma, names in lemmas.items():
        own = stem(lemma)
        for name in names:
            other = stem(name)
            if other != own and other not in STOPWORDS and other not in related[own]:
                related[own].append(other)
    for pos in ("noun", "verb", "adj"):
        for line in (folder / f"{pos}.exc").read_text(encoding="latin-1").splitlines():
            form, *bases = line.split()
            if not _single(form):
                continue
            own = stem(form)
            for base in bases:
                for other in [stem(base), *related.get(stem(base), [])]:
                    if other != own and other not in related[own]:
                        related[own].append(other)
    return {word: names[:MAX_RELATED] for word, names in sorted(related.items()) if names}


def main() -> None:
    """Write the table."""
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet")
    table = build(folder)
    lines = "".join(f"{word}\t{' '.join(names)}\n" for word, names in table.items())
    with TARGET.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(lines.encode())
    print(f"{TARGET}: {len(table)} words, {TARGET.stat().st_size} bytes")


if __name__ == "__main__":
    main()
