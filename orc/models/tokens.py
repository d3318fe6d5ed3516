"""Counting tokens for prompt budgets: the model's own tokenizer where orc can know it, an estimate otherwise.

The answer prompt carries recent history and sources under token budgets (``ORC_HISTORY_TOKENS``,
``ORC_SOURCES_TOKENS``), so a long conversation costs the same per turn as a short one. For OpenAI and Azure
OpenAI models (and other served models, which get OpenAI's general encoding) the budget is measured with tiktoken
and the encoding shipped in the package (``orc/models/encodings``): tiktoken would download it on first use, and
orc never reaches the network for it — on Azure its host is not even reachable. The offline model, which has no
tokenizer, gets a deterministic estimate of four characters per token. Budgets are sized with headroom for the
estimate's error.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import logging
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import Protocol

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
"""The estimate's ratio: about right for English prose with OpenAI's encodings."""

_ENCODINGS = {"gpt-4o": "o200k_base", "gpt-4.1": "o200k_base", "gpt-5": "o200k_base", "o1": "o200k_base"}
_DEFAULT_ENCODING = "cl100k_base"

_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_FIM_PREFIX, _FIM_MIDDLE, _FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"


@dataclass(frozen=True, slots=True)
class _Bundled:
    """How tiktoken defines an encoding (``tiktoken_ext/openai_public.py``), its ranks read from the package."""

    sha256: str
    """Of the uncompressed ranks file: the hash tiktoken checks its download against."""
    pat_str: str
    special_tokens: dict[str, int]


BUNDLED: dict[str, _Bundled] = {
    "cl100k_base": _Bundled(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": _Bundled(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}
"""The encodings shipped in ``orc/models/encodings`` (``<name>.tiktoken.gz``)."""


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


def token_counter_for(model_label: str, *, tiktoken: bool = True) -> TokenCounter:
    """The counter for the model labelled ``model_label`` (``gpt-4o``, ``azure deployment``, ``… (offline)``).

    A model counted with ``tiktoken`` (its capabilities say: every served model) gets the encoding of its family
    (``o200k_base`` for the gpt-4o, gpt-4.1, gpt-5 and o1 families, else ``cl100k_base``), read from the package;
    the offline model and test doubles get the estimate. An encoding that cannot be loaded logs a warning and the
    estimate is used. Loading reads and checks a few megabytes: call it off the event loop (it is done once per
    process and encoding).
    """
    if not tiktoken or "(offline)" in model_label:
        return EstimatedTokens()
    encoding_name = next(
        (name for prefix, name in _ENCODINGS.items() if model_label.lower().startswith(prefix)), _DEFAULT_ENCODING
    )
    try:
        return TiktokenTokens(bundled_encoding(encoding_name))
    except Exception as exc:
        logger.warning("tiktoken encoding %s is unavailable (%s); estimating tokens", encoding_name, type(exc).__name__)
        return EstimatedTokens()


@lru_cache(maxsize=len(BUNDLED))
def bundled_encoding(name: str) -> object:
    """The tiktoken ``Encoding`` ``name`` built from the ranks file shipped in the package, as tiktoken builds it
    from its download; the file is refused when its SHA-256 is not the one tiktoken expects."""
    import tiktoken  # imported here: `orc --help` and the offline model never need it

    definition = BUNDLED[name]
    data = gzip.decompress((files("orc.models") / "encodings" / f"{name}.tiktoken.gz").read_bytes())
    if hashlib.sha256(data).hexdigest() != definition.sha256:
        raise ValueError(f"the shipped {name} encoding is not the one tiktoken defines")
    # The format tiktoken's load_tiktoken_bpe reads: one "<base64 token> <rank>" per line.
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}
    return tiktoken.Encoding(
        name, pat_str=definition.pat_str, mergeable_ranks=ranks, special_tokens=dict(definition.special_tokens)
    )
