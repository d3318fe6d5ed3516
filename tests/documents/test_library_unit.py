"""The document library and scope resolution built from in-memory stores, without the runtime."""

from __future__ import annotations

import pytest

from orc.documents.catalog.availability import DocumentScope
from orc.documents.catalog.library import DocumentLibrary, NoSummary
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.errors import InvalidInput, NotFound
from orc.principal import Principal
from tests.documents.memory_documents import BrokenIndex, memory_documents

ACME = Principal(organization="acme", user="alice")
OTHER = Principal(organization="globex", user="bob")
SESSION = "conv-1"


async def test_a_session_document_is_listed_searched_and_read_through_the_library() -> None:
    async with memory_documents() as documents:
        library = documents.library()
        mutation = await documents.session_files.add(ACME, SESSION, [Upload("memo.txt", b"The parking code is 4711.")])
        scope = await documents.scopes().resolve(ACME, session_id=SESSION)

        listed = await library.list_documents(ACME, scope)
        found = await library.search(ACME, scope, "parking code")
        page = await library.content(ACME, scope, mutation.files[0].file_id)

    assert [doc.filename for doc in listed.documents] == ["memo.txt"]
    assert [hit.ref for hit in found.results] == ["memo.txt::S1"]
    assert page.text == "The parking code is 4711."


async def test_search_sends_a_document_whose_text_is_gone_back_to_processing_and_reports_it_pending() -> None:
    async with memory_documents() as documents:
        library = documents.library()
        mutation = await documents.session_files.add(ACME, SESSION, [Upload("memo.txt", b"The boat is at pier 7.")])
        file_id = mutation.files[0].file_id
        await documents.texts.delete(ACME.partition_key, file_id)
        await documents.retriever.remove(ACME.organization, file_id)  # and its index entry with it
        scope = await documents.scopes().resolve(ACME, session_id=SESSION)

        missing = await library.search(ACME, scope, "boat pier")
        (_, job), *_ = await documents.session_files.processing(ACME, SESSION)
        await job
        again = await library.search(ACME, scope, "boat pier")

    assert missing.results == [] and [doc.status for doc in missing.not_ready] == ["processing"]
    assert [hit.ref for hit in again.results] == ["memo.txt::S1"]


async def test_a_document_the_index_could_not_take_is_ready_and_indexed_by_the_next_search() -> None:
    index = BrokenIndex()
    async with memory_documents(index) as documents:
        library = documents.library()
        mutation = await documents.session_files.add(ACME, SESSION, [Upload("memo.txt", b"The boat is at pier 7.")])
        scope = await documents.scopes().resolve(ACME, session_id=SESSION)
        index.broken = False

        found = await library.search(ACME, scope, "boat pier")

    assert mutation.files[0].status == "ready"
    assert [hit.ref for hit in found.results] == ["memo.txt::S1"]


async def test_a_ready_document_whose_digest_was_never_asked_for_has_no_summary() -> None:
    async with memory_documents() as documents:
        library = documents.library()
        organization = ContextRef("organization", "acme")
        (added,) = await documents.context_documents.add(ACME, organization, [Upload("note.txt", b"Short note.")])
        scope = await documents.scopes().resolve(ACME, context_type="organization", context_id="acme")

        analyzed = await library.analyze(ACME, scope, added.record.document_id)
        with pytest.raises(NoSummary):
            await library.summary(ACME, scope, added.record.document_id)

    assert analyzed.status == "ready" and not analyzed.has_summary


async def test_a_library_needs_only_its_scopes_texts_retriever_and_reprocessor() -> None:
    async with memory_documents() as documents:
        library = DocumentLibrary(
            scopes=documents.scopes(),
            texts=documents.texts,
            retriever=documents.retriever,
            reprocessor=documents.reprocessor(),
        )

        listed = await library.list_documents(ACME, DocumentScope())

    assert listed.documents == [] and listed.total == 0


async def test_a_focus_outside_the_callers_organization_is_context_not_found() -> None:
    async with memory_documents() as documents:
        await documents.directory.put(ACME, ContextRef("folder", "legal"), "Legal", None)
        scopes = documents.scopes()

        mine = await scopes.resolve(ACME, context_type="folder", context_id="legal")
        with pytest.raises(NotFound) as raised:
            await scopes.resolve(OTHER, context_type="folder", context_id="legal")

    assert mine.focus == ContextRef("folder", "legal")
    assert raised.value.code == "context_not_found"


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"context_type": "folder"}, id="a focus type without its id"),
        pytest.param({"include_historical": True}, id="history without a session"),
    ],
)
async def test_incomplete_scope_arguments_are_invalid_input(arguments: dict[str, object]) -> None:
    async with memory_documents() as documents:
        with pytest.raises(InvalidInput):
            await documents.scopes().resolve(ACME, **arguments)  # type: ignore[arg-type]
