"""Storage wrappers that put one span around each storage call (applied by the composition root when tracing).

Spans name the operation and the collection, and carry sizes and outcomes only: never partition keys (they hold
organization and user ids), item ids, blob names or bodies. :class:`CallWrapper` is the one way orc wraps every
call of a store (the test doubles in :mod:`orc.testing.storage` observe calls with it too).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from orc.storage.ports import BlobStore, CollectionProvider, DocumentCollection
from orc.telemetry import AttributeValue, span

Attributes = dict[str, AttributeValue]
Method = Callable[..., Awaitable[Any]]

# What a span may say of a call beyond its name and collection: from its arguments, then from its result.
_FROM_ARGUMENTS: dict[str, Callable[[tuple[Any, ...], dict[str, Any]], Attributes]] = {
    "storage.replace": lambda args, kwargs: {"orc.storage.conditional": kwargs.get("if_match") is not None},
    "blob.put": lambda args, kwargs: {"orc.blob.bytes": len(args[1])},
}
_FROM_RESULT: dict[str, Callable[[Any], Attributes]] = {
    "storage.get": lambda item: {"orc.storage.found": item is not None},
    "storage.query": lambda items: {"orc.storage.items": len(items)},
    "blob.get": lambda found: {"orc.blob.bytes": len(found[0])},
}


class CallWrapper:
    """Every coroutine method of ``inner`` but ``aclose`` runs through :meth:`call` as ``<prefix>.<method>``; its
    other attributes are the inner store's own."""

    def __init__(self, inner: object, prefix: str) -> None:
        self._inner = inner
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name == "aclose" or not inspect.iscoroutinefunction(attribute):
            return attribute
        operation = f"{self._prefix}.{name}"

        @functools.wraps(attribute)
        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            return await self.call(operation, attribute, args, kwargs)

        setattr(self, name, wrapped)  # built once per method: later calls find it without __getattr__
        return wrapped

    async def call(self, operation: str, method: Method, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the inner store's ``method`` (``operation``) with ``args`` and ``kwargs``."""
        return await method(*args, **kwargs)


class TracedCollectionProvider:
    """A :class:`CollectionProvider` whose collections trace every call."""

    def __init__(self, inner: CollectionProvider) -> None:
        self.inner = inner

    async def collection(self, name: str) -> DocumentCollection:
        """The named collection, traced."""
        return _Traced(await self.inner.collection(name), "storage", {"db.collection.name": name})

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self.inner.aclose()


class _Traced(CallWrapper):
    """Each call in a ``<prefix>.<operation>`` leaf span with the sizes and outcomes the tables above read."""

    def __init__(self, inner: object, prefix: str, attributes: Attributes | None = None) -> None:
        super().__init__(inner, prefix)
        self._attributes = attributes or {}

    async def call(self, operation: str, method: Method, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        before = _FROM_ARGUMENTS.get(operation)
        attributes = {**self._attributes, **(before(args, kwargs) if before is not None else {})}
        with span(operation, attributes, leaf=True) as current:
            value = await method(*args, **kwargs)
            after = _FROM_RESULT.get(operation)
            if after is not None:
                current.set_attributes(after(value))
            return value


def traced_blobs(inner: BlobStore) -> BlobStore:
    """A :class:`BlobStore`, each call in a ``blob.<operation>`` span with the byte count."""
    return _Traced(inner, "blob")
