"""A deterministic embedding model for tests and benchmarks: hashed bag of words (and, optionally, of
character trigrams), no network and no weights.

Texts that share words get similar vectors, so "which span is nearest" is testable, and the same text always
gets the same vector in every process. :func:`hashed_vector` is also what the loopback OpenAI-compatible
``/v1/embeddings`` endpoint of orc's wire tests answers with.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Sequence

from orc.models.embeddings import EmbeddingPurpose

__all__ = ["HashedEmbeddingModel", "hashed_vector"]

_WORD = re.compile(r"[^\W_]+")
DEFAULT_DIMENSIONS = 256


def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, 1.0 if value >> 63 else -1.0


def hashed_vector(text: str, dimensions: int = DEFAULT_DIMENSIONS, *, trigrams: bool = False) -> list[float]:
    """The unit vector of ``text``'s lower-cased words (and character trigrams of each word when ``trigrams``),
    each hashed to a signed bucket; a text without words gets the zero vector."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        bucket, sign = _bucket(word, dimensions)
        vector[bucket] += sign
        if trigrams and len(word) > 3:
            padded = f"<{word}>"
            for start in range(len(padded) - 2):
                bucket, sign = _bucket(padded[start : start + 3], dimensions)
                vector[bucket] += sign * 0.5
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector] if norm else vector


class HashedEmbeddingModel:
    """An in-process :class:`~orc.models.embeddings.EmbeddingModel` over :func:`hashed_vector` that counts its
    requests (and their purposes), with an optional failure switch."""

    def __init__(
        self,
        dimensions: int = DEFAULT_DIMENSIONS,
        *,
        batch_size: int = 64,
        trigrams: bool = False,
        name: str = "hashed",
    ) -> None:
        self.dimensions = dimensions
        self._batch_size = batch_size
        self._trigrams = trigrams
        self._name = name
        self._lock = threading.Lock()
        self.requests: list[tuple[EmbeddingPurpose, int]] = []
        self.failing = False
        """While true, every request raises ``ConnectionError`` (as a provider outage would)."""

    @property
    def identity(self) -> str:
        """``hashed:<name>/<dimensions>@local``."""
        return f"hashed:{self._name}/{self.dimensions}@local"

    @property
    def batch_size(self) -> int:
        """Texts per request."""
        return self._batch_size

    async def embed(self, texts: Sequence[str], purpose: EmbeddingPurpose) -> list[list[float]]:
        """One counted request."""
        if len(texts) > self._batch_size:
            raise ValueError(f"at most {self._batch_size} texts per request")
        with self._lock:
            self.requests.append((purpose, len(texts)))
        if self.failing:
            raise ConnectionError("the embedding model is unavailable")
        return [hashed_vector(text, self.dimensions, trigrams=self._trigrams) for text in texts]
