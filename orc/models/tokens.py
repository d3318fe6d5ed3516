"""Counting tokens for prompt budgets: the model's own tokenizer where orc can know it, an estimate otherwise.

The answer prompt carries recent history and sources under token budgets (``ORC_HISTORY_TOKENS``,
``ORC_SOURCES_TOKENS``), so a long conversation costs the same per turn as a short one. For OpenAI and Azure
OpenAI models the budget is measured with tiktoken — but tiktoken downloads its encodings on first use, and orc
must neither reach the network on a turn nor in tests. So tiktoken is used when ``TIKTOKEN_CACHE_DIR`` is set
(a deployment pre-fetches the encoding there once, e.g. while building its image); everywhere else, and for
models whose tokenizer is unknown, a deterministic estimate of four characters per token is used. Budgets are
sized with headroom for the estimate's error.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""The estimate's ratio: about right for English prose with OpenAI's encodings."""

_ENCODINGS = {"gpt-4o": "o200k_base", "gpt-4.1": "o200k_base", "gpt-5": "o200k_base", "o1": "o200k_base"}
_DEFAULT_ENCODING = "cl100k_base"


class TokenCounter(Protocol):
    """Counts the tokens a text costs in a prompt. Must be cheap and must never do I/O."""

    @property
    def name(self) -> str:
        """What counts (``estimate`` or a tiktoken encoding's name), for logs and metadata."""
        ...

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        ...

    def truncate(self, text: str, tokens: int) -> str:
        """The longest prefix of ``text`` within ``tokens``, ending with ``…`` when cut."""
        ...


@dataclass(frozen=True, slots=True)
class EstimatedTokens:
    """Four characters per token, rounded up; deterministic and free."""

    name: str = "estimate"

    def count(self, text: str) -> int:
        """Estimated tokens of ``text``."""
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def truncate(self, text: str, tokens: int) -> str:
        """Cut ``text`` to about ``tokens`` tokens, on a word boundary when one is near."""
        limit = max(tokens, 1) * CHARS_PER_TOKEN
        if len(text) <= limit:
            return text
        cut = text[: limit - 1]
        space = cut.rfind(" ")
        if space > limit // 2:
            cut = cut[:space]
        return cut.rstrip() + "…"


class TiktokenTokens:
    """A tiktoken encoding (OpenAI's own tokenizer)."""

    def __init__(self, encoding: object) -> None:
        # Typed loosely so that importing this module never imports tiktoken.
        self._encoding = encoding
        self.name: str = str(getattr(encoding, "name", "tiktoken"))

    def count(self, text: str) -> int:
        """Exact tokens of ``text``."""
        return len(self._encoding.encode_ordinary(text))  # type: ignore[attr-defined]

    def truncate(self, text: str, tokens: int) -> str:
        """The first ``tokens - 1`` tokens of ``text`` and ``…`` when it is longer."""
        ids = self._encoding.encode_ordinary(text)  # type: ignore[attr-defined]
        if len(ids) <= tokens:
            return text
        head: str = self._encoding.decode(ids[: max(tokens - 1, 1)])  # type: ignore[attr-defined]
        return head.rstrip() + "…"


def token_counter_for(model_label: str, environ: Mapping[str, str] | None = None) -> TokenCounter:
    """The counter for the model labelled ``model_label`` (``gpt-4o``, ``azure deployment``, ``… (offline)``).

    tiktoken only when ``TIKTOKEN_CACHE_DIR`` is set (see the module docstring) and the model is not offline; a
    tiktoken that cannot load its encoding logs a warning once and the estimate is used.
    """
    env = os.environ if environ is None else environ
    if "(offline)" in model_label or not env.get("TIKTOKEN_CACHE_DIR"):
        return EstimatedTokens()
    encoding_name = next(
        (name for prefix, name in _ENCODINGS.items() if model_label.lower().startswith(prefix)), _DEFAULT_ENCODING
    )
    try:
        import tiktoken

        return TiktokenTokens(tiktoken.get_encoding(encoding_name))
    except Exception as exc:
        logger.warning("tiktoken encoding %s is unavailable (%s); estimating tokens", encoding_name, type(exc).__name__)
        return EstimatedTokens()
