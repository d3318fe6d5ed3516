"""Store wrappers that let a test or benchmark observe every storage call (count it, time it, fail it).

Each wrapped call runs inside ``observe("<collection>.<operation>")`` (``"blobs.<operation>"`` for the blob
store), a context manager supplied by the caller: it may record the call, time it, or raise to inject a fault
before the call reaches the inner store. Getting a collection and closing a store are not calls. :func:`unique_name`
names a fresh collection or container.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from orc.storage.ports import BlobStore, CollectionProvider, DocumentCollection
from orc.storage.traced import CallWrapper, Method


def unique_name(prefix: str = "t") -> str:
    """A fresh collection or container name (lower-case, valid for every backend)."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


Observer = Callable[[str], AbstractContextManager[object]]
"""Called with the call's name; the call runs inside the context manager it returns."""


class _Observed(CallWrapper):
    """Every call of ``inner`` but ``aclose`` inside ``observe("<prefix>.<method>")``."""

    def __init__(self, inner: object, observe: Observer, prefix: str) -> None:
        super().__init__(inner, prefix)
        self._observe = observe

    async def call(self, operation: str, method: Method, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with self._observe(operation):
            return await method(*args, **kwargs)


class ObservedCollection(_Observed):
    """A :class:`DocumentCollection` whose every call runs inside ``observe`` as ``<name>.<operation>``."""

    def __init__(self, inner: DocumentCollection, observe: Observer, name: str) -> None:
        super().__init__(inner, observe, name)


class ObservedProvider:
    """A :class:`CollectionProvider` handing out observed collections (getting one is not a call)."""

    def __init__(self, inner: CollectionProvider, observe: Observer) -> None:
        self._inner = inner
        self._observe = observe

    async def collection(self, name: str) -> DocumentCollection:
        """The inner provider's collection, observed."""
        return ObservedCollection(await self._inner.collection(name), self._observe, name)

    async def aclose(self) -> None:
        """Close the inner provider."""
        await self._inner.aclose()


class ObservedBlobStore(_Observed):
    """A :class:`BlobStore` whose every call runs inside ``observe`` as ``blobs.<operation>``."""

    def __init__(self, inner: BlobStore, observe: Observer) -> None:
        super().__init__(inner, observe, "blobs")
