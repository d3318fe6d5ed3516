"""The DocumentCollection contract (orc.testing.conformance), run against memory, SQLite and Cosmos DB.

The backends come from this folder's parametrized ``provider`` fixture (Cosmos DB on its emulator).
"""

from __future__ import annotations

from orc.testing.conformance import CollectionConformance


class TestCollectionConformance(CollectionConformance):
    """Every collection backend orc ships keeps the contract."""
