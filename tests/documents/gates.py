"""A memory blob store whose writes and reads can be held at a gate, to observe states in between without sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from orc.storage.memory import MemoryBlobStore
from orc.storage.ports import BlobInfo


class Gate:
    """Closed: callers wait at it (and ``reached`` is set); open: they pass."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self.reached = asyncio.Event()

    def close(self) -> None:
        self._open.clear()
        self.reached.clear()

    def open(self) -> None:
        self._open.set()

    async def pass_through(self) -> None:
        self.reached.set()
        await self._open.wait()


class GatedBlobStore:
    """A :class:`MemoryBlobStore` with a gate on ``put`` and one on ``get``."""

    def __init__(self) -> None:
        self.inner = MemoryBlobStore()
        self.puts = Gate()
        self.gets = Gate()

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
        await self.puts.pass_through()
        return await self.inner.put(
            name, data, content_type=content_type, metadata=metadata, if_match=if_match, if_none_match=if_none_match
        )

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        await self.gets.pass_through()
        return await self.inner.get(name)

    async def head(self, name: str) -> BlobInfo | None:
        return await self.inner.head(name)

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        return await self.inner.list(prefix)

    async def delete(self, name: str) -> bool:
        return await self.inner.delete(name)

    async def aclose(self) -> None:
        await self.inner.aclose()
