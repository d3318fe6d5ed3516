"""PDF pages that pypdf reads with the words run together are read again with PDFium, page by page, and each
document records which extractor produced which page."""

from __future__ import annotations

import io
from pathlib import Path

import pypdf

from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.parsing.extraction import extract
from orc.documents.parsing.pdf_text import DEGENERATE_SCORE, defect_score
from orc.documents.records import ContextRef
from orc.principal import LOCAL_PRINCIPAL
from orc.search.text_store import TextStore, extractor_pages, process_extracted
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from tests.documents.library_support import extraction_pool
from tests.documents.pdf_factory import make_pdf

LINES = [
    "The Project was created in 1993 by a small group of volunteers who wanted",
    "a free compiler for everyone, and it has grown ever since that first release.",
    "Today it is maintained by people all over the world and used every day.",
]
GOOD_PAGE = ["The warranty lasts two years from the day of purchase, for every part of it.", *LINES[1:]]


def pypdf_pages(data: bytes) -> list[str]:
    return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def test_a_page_whose_pypdf_text_has_no_spaces_is_read_with_its_words_separated() -> None:
    data = make_pdf([GOOD_PAGE, LINES], words_run_together={1})
    assert "TheProjectwascreatedin1993" in pypdf_pages(data)[1]  # the case itself: pypdf finds no spaces

    document = extract(data, "history.pdf")

    assert "The Project was created in 1993 by a small group of volunteers" in document.pages[1]
    assert document.pages[0].startswith("The warranty lasts two years")
    assert document.extractors == ("pypdf", "pypdfium2")


def test_pages_pypdf_reads_well_stay_with_pypdf() -> None:
    document = extract(make_pdf([GOOD_PAGE, LINES]), "history.pdf")

    assert document.extractors == ("pypdf", "pypdf")


def test_run_together_words_and_glyph_soup_score_as_degenerate_and_prose_does_not() -> None:
    prose = " ".join(LINES * 3)
    run_together = "\n".join(line.replace(" ", "") for line in LINES * 3)
    letter_spaced = " ".join(" ".join(word) for word in prose.split())
    soup = "".join(chr(0xE000 + (index * 7) % 300) for index in range(400))
    chinese = "项目创建于一九九三年，由一小群志愿者发起，他们希望每个人都能使用免费的编译器。" * 5

    assert defect_score(prose) < 0.1
    assert defect_score(chinese) < 0.1  # a script written without spaces is not "run together"
    assert defect_score("Page 3") == 0  # too little text to judge
    for degenerate in (run_together, letter_spaced, soup):
        assert defect_score(degenerate) >= DEGENERATE_SCORE


def test_the_extractor_of_each_page_is_stored_with_the_text_and_compacted_for_the_record() -> None:
    extracted = extract(make_pdf([GOOD_PAGE, LINES, GOOD_PAGE, GOOD_PAGE], words_run_together={1}), "h.pdf")

    assert extractor_pages(extracted.extractors) == {"pypdf": "1,3-4", "pypdfium2": "2"}


async def test_a_stored_text_keeps_its_extractors_and_section_titles() -> None:
    extracted = extract(b"# Guide\n\n## Install\n\nRun the installer once.\n", "guide.md")
    text = process_extracted(extracted)
    store = TextStore(await MemoryCollectionProvider().collection("document_text"))

    await store.save("p", "d1", "c" * 64, text)
    loaded = await store.load("p", "d1", "c" * 64)

    assert loaded is not None
    assert loaded.extractors == ("text",)
    assert [span.section for span in loaded.spans] == [span.section for span in text.spans] == ["Guide › Install"]


async def test_an_uploaded_pdf_says_which_extractor_read_which_page_in_its_metadata(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", model="offline", storage="embedded", auth="none")
    async with build_runtime(settings) as services:
        folder = ContextRef("folder", "history")
        await services.foundation.directory.put(LOCAL_PRINCIPAL, folder, "History", None)
        library = services.foundation.context_documents
        data = make_pdf([GOOD_PAGE, LINES], words_run_together={1})
        (uploaded,) = await library.add(LOCAL_PRINCIPAL, folder, [Upload("h.pdf", data)], wait_seconds=60)
        listed = await services.documents.library.list_documents(
            LOCAL_PRINCIPAL,
            await services.foundation.scopes.resolve(LOCAL_PRINCIPAL, context_type="folder", context_id="history"),
        )

    assert uploaded.record.status == "ready"
    assert uploaded.record.extractors == {"pypdf": "1", "pypdfium2": "2"}
    assert listed.documents[0].extractors == {"pypdf": "1", "pypdfium2": "2"}


async def test_the_fallback_runs_in_an_extraction_worker_under_its_memory_limit() -> None:
    pool = extraction_pool(1, Settings(extraction_memory_mb=512))
    try:
        data = make_pdf([GOOD_PAGE, LINES], words_run_together={1})
        document = await pool.extract(data, "history.pdf", None)
    finally:
        await pool.aclose()

    assert not pool.in_threads
    assert document.extractors == ("pypdf", "pypdfium2")
    assert "created in 1993 by a small group" in document.pages[1]


def test_typographic_ligatures_are_spelled_out_so_searches_match_them() -> None:
    document = extract("The ﬁle conﬁguration is ﬂexible and eﬀective.".encode(), "notes.txt")

    assert document.pages == ["The file configuration is flexible and effective."]
