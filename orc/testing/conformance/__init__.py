"""The conformance suites, shipped so a third-party backend can prove it keeps orc's storage and search contracts.

- :class:`CollectionConformance` — :class:`~orc.storage.ports.DocumentCollection` and
  :class:`~orc.storage.ports.CollectionProvider` (subclass it, provide a ``provider`` fixture);
- :class:`BlobConformance` — :class:`~orc.storage.ports.BlobStore` (subclass it, provide a ``blobs`` fixture);
- :class:`SearchConformance` — :class:`~orc.search.port.SearchEngine` (subclass it, provide an ``engine`` fixture).

Each module's docstring shows a complete example. The suites are pytest classes, so this package needs pytest and
pytest-asyncio and is imported only by test code: ``import orc`` and ``import orc.testing`` never load it.
"""

from orc.testing.conformance.blobs import BlobConformance
from orc.testing.conformance.collections import CollectionConformance
from orc.testing.conformance.search import SearchConformance

__all__ = ["BlobConformance", "CollectionConformance", "SearchConformance"]
