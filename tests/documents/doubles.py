"""Test doubles for the document services: a blob store that counts reads, a citing model, a clock."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from orc.storage.memory import MemoryBlobStore
from orc.storage.ports import BlobInfo
from orc.testing import FunctionChatModel

_REF = re.compile(r'<source ref="([^"]+)"')


class CountingBlobStore:
    """A :class:`MemoryBlobStore` that counts ``get`` and ``head`` calls per blob name."""

    def __init__(self) -> None:
        self.inner = MemoryBlobStore()
        self.gets: Counter[str] = Counter()
        self.heads: Counter[str] = Counter()

    async def put(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str = "application/octet-stream",
        metadata: Mapping[str, str] | None = None,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> BlobInfo:
        return await self.inner.put(
            name,
            data,
            content_type=content_type,
            metadata=metadata,
            if_match=if_match,
            if_none_match=if_none_match,
        )

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        self.gets[name] += 1
        return await self.inner.get(name)

    async def head(self, name: str) -> BlobInfo | None:
        self.heads[name] += 1
        return await self.inner.head(name)

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        return await self.inner.list(prefix)

    async def delete(self, name: str) -> bool:
        return await self.inner.delete(name)

    async def aclose(self) -> None:
        await self.inner.aclose()


def cite_first_source(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
    """A model's reply: the first source's ref, as a grounded answer would cite it, or "could not find"."""
    refs = _REF.findall(messages[0].text)
    return f"The documents say so [{refs[0]}]." if refs else "I couldn't find that in the documents."


def citing_model() -> FunctionChatModel:
    """A recording test model (``orc.testing``) that answers with :func:`cite_first_source`."""
    return FunctionChatModel(cite_first_source, model_name="citing")


class FakeClock:
    """A monotonic clock that only moves when told to."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
