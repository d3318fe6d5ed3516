"""The routes a citation opens: a cited span located in its page or text, and the document's bytes, seen only by
the principal whose conversation it is."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote

import httpx
import pytest
from starlette.types import ASGIApp

from orc.http import create_app
from orc.settings import ApiKeyPrincipal, Settings
from tests.http.conftest import settled, upload
from tests.support import lifespan
from tests.web.conftest import handbook_docx, lease_pdf

KEYS = {
    "key-alice": ApiKeyPrincipal(organization="contoso", user="alice"),
    "key-mallory": ApiKeyPrincipal(organization="fabrikam", user="mallory"),
    "key-bob": ApiKeyPrincipal(organization="contoso", user="bob"),
}
BASE = "http://127.0.0.1:8000"


@pytest.fixture
async def app() -> AsyncIterator[ASGIApp]:
    async with lifespan(create_app(Settings(auth="api-key", api_keys=KEYS))) as manager:
        yield manager.app


def client(app: ASGIApp, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, headers={"X-API-Key": key})


async def ask(http: httpx.AsyncClient, session: str, question: str, *names: str) -> dict[str, object]:
    response = await http.post("/api/orc", json={"question": question, "conversation_id": session, "blob_names": names})
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


async def test_a_pdf_citation_is_located_on_its_page_with_the_quote_highlighted(app: ASGIApp) -> None:
    async with client(app, "key-alice") as alice:
        await upload(alice, "lease", ("lease.pdf", lease_pdf()))
        await settled(alice, "lease")
        answer = await ask(alice, "lease", "What is the monthly rent?", "lease.pdf")
        citation = answer["citations"][0]  # type: ignore[index]

        view = (await alice.get("/api/sessions/lease/sources", params={"ref": citation["ref"]})).json()

    assert view["filename"] == "lease.pdf" and view["media_type"] == "application/pdf"
    assert view["page"] == 2 and view["page_count"] == 3
    highlighted = view["text"][view["highlight_start"] : view["highlight_end"]]
    assert "1,450 euros" in highlighted and highlighted == view["quote"]
    assert view["content_url"] == f"/api/sessions/lease/documents/{view['document_id']}/content"


async def test_an_unpaged_citation_is_shown_in_the_text_around_it(app: ASGIApp) -> None:
    async with client(app, "key-alice") as alice:
        await upload(alice, "hr", ("handbook.docx", handbook_docx()))
        await settled(alice, "hr")
        answer = await ask(alice, "hr", "How many vacation days do new employees get?", "handbook.docx")
        ref = answer["citations"][0]["ref"]  # type: ignore[index]

        view = (await alice.get("/api/sessions/hr/sources", params={"ref": ref})).json()

    assert view["page"] is None
    assert "25 vacation days" in view["text"][view["highlight_start"] : view["highlight_end"]]


async def test_the_content_route_serves_the_uploaded_bytes_inline_for_pdfs_and_as_attachments_otherwise(
    app: ASGIApp,
) -> None:
    # Made once: a document's bytes carry the second they were written, so two makings may differ.
    pdf_bytes, docx_bytes = lease_pdf(), handbook_docx()
    async with client(app, "key-alice") as alice:
        await upload(alice, "both", ("lease.pdf", pdf_bytes), ("handbook.docx", docx_bytes))
        manifest = await settled(alice, "both")
        ids = {file["filename"]: file["file_id"] for file in manifest["files"]}
        pdf = await alice.get(f"/api/sessions/both/documents/{ids['lease.pdf']}/content")
        word = await alice.get(f"/api/sessions/both/documents/{ids['handbook.docx']}/content")
        saved = await alice.get(f"/api/sessions/both/documents/{ids['lease.pdf']}/content?download=true")

    assert pdf.status_code == 200 and pdf.content == pdf_bytes
    assert pdf.headers["content-disposition"].startswith("inline")
    assert word.content == docx_bytes and word.headers["content-disposition"].startswith("attachment")
    assert saved.headers["content-disposition"].startswith("attachment")
    # Nothing uploaded may run as a page of this origin.
    assert "sandbox" in pdf.headers["content-security-policy"]
    assert pdf.headers["x-content-type-options"] == "nosniff"


async def test_another_principal_finds_neither_the_source_nor_the_bytes(app: ASGIApp) -> None:
    async with client(app, "key-alice") as alice:
        await upload(alice, "secret", ("lease.pdf", lease_pdf()))
        manifest = await settled(alice, "secret")
        file_id = manifest["files"][0]["file_id"]
    for key in ("key-mallory", "key-bob"):  # another organization, and a colleague in the same one
        async with client(app, key) as other:
            source = await other.get("/api/sessions/secret/sources", params={"ref": "lease.pdf::S2"})
            content = await other.get(f"/api/sessions/secret/documents/{file_id}/content")
        assert source.status_code == 404 and source.json()["code"] == "document_not_found"
        assert content.status_code == 404 and content.json()["code"] == "document_not_found"


async def test_unknown_spans_and_malformed_refs_are_refused(app: ASGIApp) -> None:
    async with client(app, "key-alice") as alice:
        await upload(alice, "lease", ("lease.pdf", lease_pdf()))
        await settled(alice, "lease")
        unknown = await alice.get("/api/sessions/lease/sources", params={"ref": "lease.pdf::S999"})
        malformed = await alice.get("/api/sessions/lease/sources", params={"ref": "lease.pdf"})
        traversal = await alice.get(f"/api/sessions/lease/documents/{quote('..', safe='')}/content")

    assert unknown.status_code == 404 and unknown.json()["code"] == "span_not_found"
    assert malformed.status_code == 400 and malformed.json()["code"] == "invalid_ref"
    # Said without <placeholders>, which the output door escapes ("&lt;document&gt;") for every client.
    assert "&lt;" not in malformed.json()["detail"] and "(lease.pdf::S3)" in malformed.json()["detail"]
    assert traversal.status_code in (404, 422)
