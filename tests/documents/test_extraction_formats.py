"""Slide decks, spreadsheets, source code and files whose suffix is not a type (``Apache-2.0``) are read as text."""

from __future__ import annotations

import io

import pytest

from orc.documents.parsing.extraction import detect_media_type, extract
from orc.errors import ExtractionError, UnsupportedMediaType
from orc.extracted import PPTX, TEXT, XLSX


def _pptx() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Quarterly results"
    slide.placeholders[1].text = "Revenue grew 12 percent in the third quarter."
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    for row, (name, value) in enumerate((("Region", "Sales"), ("North", "4.2M"))):
        table.cell(row, 0).text, table.cell(row, 1).text = name, value
    slide.notes_slide.notes_text_frame.text = "Mention the new hires."
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Outlook"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _xlsx() -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Prices"
    sheet.append(["Product", "Price"])
    sheet.append(["Aurora X2", 199])
    workbook.create_sheet("Empty")
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_a_slide_deck_reads_as_one_page_per_slide_with_tables_and_notes() -> None:
    document = extract(_pptx(), "results.pptx")

    assert document.media_type == PPTX
    assert len(document.pages) == 2
    assert document.pages[0].startswith("# Quarterly results\n\n")
    assert "Revenue grew 12 percent" in document.pages[0]
    assert "North | 4.2M" in document.pages[0]
    assert "Notes: Mention the new hires." in document.pages[0]
    assert document.pages[1] == "# Outlook"


def test_a_spreadsheet_reads_like_a_csv_one_page_per_non_empty_sheet() -> None:
    document = extract(_xlsx(), "prices.xlsx")

    assert document.media_type == XLSX
    assert document.pages == ["Sheet: Prices\nColumns: Product, Price\nRow 1: Product: Aurora X2; Price: 199"]


def test_office_files_are_recognised_by_content_whatever_their_name() -> None:
    assert detect_media_type(_pptx(), "deck.bin") == PPTX
    assert detect_media_type(_xlsx(), "upload") == XLSX


def test_a_damaged_spreadsheet_fails_as_damaged_not_as_unsupported() -> None:
    with pytest.raises(ExtractionError, match="not a readable XLSX"):
        extract(_xlsx()[:200], "prices.xlsx")


@pytest.mark.parametrize("name", ["app.py", "main.go", "lib.rs", "query.sql", "config.yaml", "pyproject.toml"])
def test_source_code_and_configuration_read_as_plain_text(name: str) -> None:
    document = extract(b"# the retry limit is 5\nretries = 5\n", name)

    assert document.media_type == TEXT
    assert "retry limit is 5" in document.text


@pytest.mark.parametrize("name", ["Apache-2.0", "README.old", "notes.v2", "Makefile"])
def test_an_unknown_suffix_with_text_content_is_plain_text(name: str) -> None:
    assert detect_media_type(b"Licensed under the Apache License, Version 2.0.\n", name) == TEXT


def test_an_unknown_suffix_with_binary_content_is_unsupported() -> None:
    with pytest.raises(UnsupportedMediaType):
        detect_media_type(bytes(range(256)) * 4, "firmware.bin")
    with pytest.raises(UnsupportedMediaType):
        detect_media_type(b"\x01\x02\x03\x04 mostly control \x05\x06\x07\x08\x0e\x0f", "blob.dat")
