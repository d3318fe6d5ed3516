"""``orc.storage`` exports the ports and embedded adapters, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orc.storage
from orc.storage.ports import BlobStore, CollectionProvider, DocumentCollection


def test_importing_orc_storage_does_not_import_the_azure_sdks() -> None:
    code = "import sys, orc.storage; print(sorted({m.split('.')[0] for m in sys.modules} & {'azure', 'aiohttp'}))"

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "[]"


def test_every_exported_name_exists() -> None:
    assert all(hasattr(orc.storage, name) for name in orc.storage.__all__)


async def test_every_adapter_satisfies_its_port(tmp_path: Path) -> None:
    from orc.storage.azure_blob import AzureBlobStore
    from orc.storage.cosmos import CosmosCollectionProvider

    root = tmp_path
    cosmos = CosmosCollectionProvider("https://acct.documents.azure.com", key="a2V5", database="orc")
    azure_blob = AzureBlobStore.from_account_url("https://acct.blob.core.windows.net", "orc", "sv=sas")
    assert isinstance(cosmos, CollectionProvider)
    assert isinstance(azure_blob, BlobStore)
    await azure_blob.aclose()
    assert isinstance(orc.storage.MemoryCollectionProvider(), CollectionProvider)
    assert isinstance(orc.storage.SqliteCollectionProvider(root / "db.sqlite3"), CollectionProvider)
    assert isinstance(await orc.storage.MemoryCollectionProvider().collection("c"), DocumentCollection)
    assert isinstance(orc.storage.MemoryBlobStore(), BlobStore)
    assert isinstance(orc.storage.LocalBlobStore(root / "blobs"), BlobStore)
