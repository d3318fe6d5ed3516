"""Every citation names its document's catalog ``document_id`` (the id the content route and the document tools
take): an attached file's, first turn and cached follow-up alike, in the answer and in the stored history; a
context document found by ``documents.search``; a document supplied to a context request. Text supplied to a
request is no stored document: its citation has none."""

from __future__ import annotations

import httpx

from orc.composition import build_runtime
from orc.conversations import FocusContext
from orc.documents.records import ContextRef
from orc.settings import Settings
from orc.turns import TurnRequest
from tests.documents.library_support import ACME, SESSION, build_tree, memory_stores
from tests.http.conftest import upload

LEASE = (
    b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month.\n\n"
    b"The deposit is two months of rent and is returned within 30 days of the end of the lease."
)


def ask(question: str, **extra: object) -> dict[str, object]:
    return {"question": question, "conversation_id": "c1", "blob_names": ["lease.txt"], **extra}


async def test_an_attached_files_citations_name_its_document_id_which_opens_its_content(
    client: httpx.AsyncClient,
) -> None:
    uploaded = (await upload(client, "c1", ("lease.txt", LEASE))).json()
    (document_id,) = [file["file_id"] for file in uploaded["files"]]

    first = (await client.post("/api/orc", json=ask("What is the monthly rent?"))).json()
    follow_up = (await client.post("/api/orc", json=ask("How soon is the deposit returned?"))).json()
    stored = (await client.get("/api/sessions/c1")).json()["messages"]
    content = await client.get(f"/api/sessions/c1/documents/{first['citations'][0]['document_id']}/content")

    assert document_id.startswith("doc-")
    assert follow_up["metadata"]["cache"] == "hit"  # the follow-up reused the processed file: the id travels with it
    for answer in (first, follow_up, stored[1], stored[3]):
        assert answer["citations"] and {c["document_id"] for c in answer["citations"]} == {document_id}
    assert content.status_code == 200 and content.content == LEASE


async def test_a_context_documents_citation_found_by_search_names_its_document_id() -> None:
    async with build_runtime(Settings(), stores=memory_stores()) as runtime:
        await build_tree(runtime.foundation)
        listed = await runtime.foundation.context_documents.documents(ACME, ContextRef("usecase", "u12"))
        result = await runtime.orchestrator.ask(
            TurnRequest(
                question="What is the code word of u12?",
                conversation_id=SESSION,
                context=FocusContext(type="folder", id="f1"),
            ),
            ACME,
        )

    assert [citation.ref for citation in result.citations] == ["u12.txt::S1"]
    assert [citation.document_id for citation in result.citations] == [listed[0].document_id]
