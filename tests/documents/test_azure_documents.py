"""Contexts, the pipeline, stored text and search on the production backends (Cosmos DB + Blob emulators).

The search index is a per-process cache; the text it is rebuilt from lives in the storage ports, so a second
instance on the same stores answers the same search.
"""

from __future__ import annotations

import pytest

from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import Principal
from orc.settings import Settings
from tests.documents.pdf_factory import make_pdf

pytestmark = pytest.mark.emulator

ALICE = Principal(organization="acme", user="alice")


async def test_documents_are_processed_listed_and_searched_on_cosmos_and_blob_storage(
    azure_settings: Settings,
) -> None:
    legal = ContextRef("folder", "legal")
    pdf = make_pdf([["Page one is an introduction."], ["Page two: the deposit is 900 euros."]])
    async with build_runtime(azure_settings) as first:
        library = first.documents.library
        assert library is not None
        await first.foundation.directory.put(ALICE, legal, "Legal", None)
        uploaded = await first.foundation.context_documents.add(
            ALICE, legal, [Upload("lease.pdf", pdf), Upload("broken.pdf", b"%PDF-1.4 broken")]
        )
        await first.foundation.session_files.add(ALICE, "az-conv", [Upload("memo.txt", b"The boat is at pier 7.")])
        scope = await first.foundation.scopes.resolve(
            ALICE, session_id="az-conv", context_type="folder", context_id="legal"
        )
        listed = await library.list_documents(ALICE, scope)
        found = await library.search(ALICE, scope, "deposit euros")

    statuses = {doc.record.filename: doc.record.status for doc in uploaded}
    assert statuses == {"lease.pdf": "ready", "broken.pdf": "failed"}
    assert [(d.filename, d.origin) for d in listed.documents] == [
        ("memo.txt", "session"),
        ("lease.pdf", "focus"),
        ("broken.pdf", "focus"),
    ]
    assert (found.results[0].ref, found.results[0].page) == ("lease.pdf::S2", 2)

    async with build_runtime(azure_settings) as second:  # another instance: an empty index cache
        library = second.documents.library
        assert library is not None
        scope = await second.foundation.scopes.resolve(
            ALICE, session_id="az-conv", context_type="folder", context_id="legal"
        )
        again = await library.search(ALICE, scope, "boat pier")
        lease_id = next(d.document_id for d in listed.documents if d.filename == "lease.pdf")
        page = await library.content(ALICE, scope, lease_id, offset=0, limit=50)
        await second.foundation.context_documents.remove(ALICE, legal, lease_id)
        after = await library.list_documents(ALICE, scope)

    assert again.results[0].ref == "memo.txt::S1"
    assert page.text.startswith("Page one") and page.total > 50
    assert [d.filename for d in after.documents] == ["memo.txt", "broken.pdf"]
