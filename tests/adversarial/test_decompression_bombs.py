"""Decompression bombs and oversized texts fail the one document, with a reason, without taking the process's
memory: a small DOCX that unzips to hundreds of megabytes, one that stays under the bomb ratio but over the
decompressed-size bound, and an HTML file with more text than a document may yield."""

from __future__ import annotations

import io
import random
import resource
import zipfile

import docx
import httpx
import pytest

from orc.documents.parsing.extraction import extract
from orc.documents.parsing.limits import ExtractionLimits
from orc.errors import ExtractionError
from orc.settings import Settings
from tests.http.conftest import open_client, settled, upload

MB = 1024 * 1024


def docx_with_a_hidden_part(size: int, chunk: bytes = b"\x00" * MB) -> bytes:
    """A valid DOCX plus a part that inflates to ``size`` bytes (written in chunks: never held whole)."""
    document = docx.Document()
    document.add_paragraph("The monthly rent is 1,450 euros.")
    buffer = io.BytesIO()
    document.save(buffer)
    with (
        zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/media/filler.xml", "w", force_zip64=True) as part,
    ):
        written = 0
        while written < size:
            part.write(chunk[: min(len(chunk), size - written)])
            written += len(chunk)
    return buffer.getvalue()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_small_docx_that_unzips_to_300_mb_is_refused_before_it_is_parsed() -> None:
    bomb = docx_with_a_hidden_part(300 * MB)
    before = peak_rss_mb()

    with pytest.raises(ExtractionError) as refused:
        extract(bomb, "bomb.docx")

    assert len(bomb) < 2 * MB
    assert refused.value.code == "decompression_limit" and "decompression bomb" in refused.value.message
    assert peak_rss_mb() - before < 50  # nothing was inflated


def test_a_docx_over_the_decompressed_size_bound_is_refused_even_when_it_compresses_plainly() -> None:
    # Random-looking bytes barely compress, so no ratio gives them away: the declared total does.
    noise = random.Random(7).randbytes(MB)
    plain = docx_with_a_hidden_part(12 * MB, chunk=noise)

    with pytest.raises(ExtractionError) as refused:
        extract(plain, "big.docx", limits=ExtractionLimits(max_decompressed_bytes=10 * MB))

    assert refused.value.code == "decompression_limit" and "over the 10 MB limit" in refused.value.message
    assert extract(plain, "big.docx", limits=ExtractionLimits(max_decompressed_bytes=20 * MB)).text


def test_a_document_with_more_text_than_allowed_fails_with_the_reason() -> None:
    page = ("<p>" + "word " * 400 + "</p>").encode() * 10

    with pytest.raises(ExtractionError) as refused:
        extract(page, "long.html", limits=ExtractionLimits(max_extracted_chars=5_000))

    assert refused.value.code == "text_limit" and "5,000 characters" in refused.value.message


async def test_an_uploaded_bomb_fails_that_document_only_and_the_others_answer() -> None:
    async with open_client(Settings()) as client:
        response = await upload(
            client,
            "c1",
            ("bomb.docx", docx_with_a_hidden_part(300 * MB)),
            ("lease.txt", b"The monthly rent is 1,450 euros."),
        )
        manifest = await settled(client, "c1")
        answer = await client.post(
            "/api/orc",
            json={"question": "What is the monthly rent?", "conversation_id": "c1", "blob_names": ["lease.txt"]},
        )

    assert response.status_code == 201
    files = {file["filename"]: file for file in manifest["files"]}
    assert files["bomb.docx"]["status"] == "failed"
    assert "decompression bomb" in files["bomb.docx"]["status_reason"]
    assert files["lease.txt"]["status"] == "ready"
    assert isinstance(answer, httpx.Response) and "1,450" in answer.json()["answer"]
