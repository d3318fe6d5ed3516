"""The BlobStore contract (orc.testing.conformance), run against memory, a local folder and Azure Blob Storage.

The backends come from this folder's parametrized ``blobs`` fixture (Azure Blob Storage on Azurite).
"""

from __future__ import annotations

from orc.testing.conformance import BlobConformance


class TestBlobConformance(BlobConformance):
    """Every blob backend orc ships keeps the contract."""
