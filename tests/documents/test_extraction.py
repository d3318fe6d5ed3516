"""Text extraction of every supported format, and the refusals."""

from __future__ import annotations

import io
import json

import docx
import pytest
from pypdf import PdfWriter

from orc.documents.parsing.extraction import detect_media_type, extract
from orc.errors import ExtractionError, InvalidInput, UnsupportedMediaType
from orc.extracted import CSV, DOCX, HTML, JSON, MARKDOWN, PDF, TEXT
from tests.documents.pdf_factory import make_pdf


def test_a_pdf_yields_one_text_per_page() -> None:
    data = make_pdf([["Rent is due on the first day.", "Late fees apply (5%)."], ["Page two: the deposit."]])

    document = extract(data, "lease.pdf")

    assert document.media_type == PDF
    assert len(document.pages) == 2
    assert "Rent is due on the first day." in document.pages[0]
    assert "Late fees apply (5%)." in document.pages[0]
    assert document.pages[1] == "Page two: the deposit."


def test_a_pdf_is_recognised_by_its_bytes_whatever_its_name() -> None:
    data = make_pdf([["Hello from a PDF."]])

    assert detect_media_type(data, "notes.txt") == PDF
    assert extract(data, "upload.bin").pages == ["Hello from a PDF."]


def test_a_corrupt_pdf_is_an_extraction_error_without_parser_details() -> None:
    data = make_pdf([["Some text."]])[:60]

    with pytest.raises(ExtractionError) as raised:
        extract(data, "broken.pdf")

    assert raised.value.message == "'broken.pdf' is not a readable PDF (damaged or truncated)"
    assert isinstance(raised.value, InvalidInput)


def test_a_password_protected_pdf_is_refused_with_what_to_do() -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.encrypt(user_password="secret", algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)

    with pytest.raises(ExtractionError, match="password protected; upload an unprotected copy"):
        extract(buffer.getvalue(), "locked.pdf")


def test_a_pdf_without_a_text_layer_is_reported_as_empty() -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)

    with pytest.raises(ExtractionError, match="no extractable text") as raised:
        extract(buffer.getvalue(), "scan.pdf")

    assert raised.value.code == "empty_document"


def test_a_docx_yields_its_paragraphs_and_table_cells_in_order() -> None:
    document = docx.Document()
    document.add_heading("Service agreement", level=1)
    document.add_paragraph("The supplier delivers every Monday.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Item"
    table.cell(0, 1).text = "Price"
    table.cell(1, 0).text = "Widget"
    table.cell(1, 1).text = "12 EUR"
    document.add_paragraph("Payment within 30 days.")
    buffer = io.BytesIO()
    document.save(buffer)

    extracted = extract(buffer.getvalue(), "agreement.docx")

    assert extracted.media_type == DOCX
    assert extracted.pages == [
        "# Service agreement\n\nThe supplier delivers every Monday.\n\nItem | Price\nWidget | 12 EUR\n\n"
        "Payment within 30 days."
    ]


def test_a_damaged_docx_is_an_extraction_error() -> None:
    with pytest.raises(ExtractionError, match="not a readable DOCX"):
        extract(b"PK\x03\x04 not really a zip", "broken.docx")


def test_a_zip_that_is_not_an_office_document_is_unsupported() -> None:
    buffer = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("content.xml", "<office:document/>")

    with pytest.raises(UnsupportedMediaType) as raised:
        extract(buffer.getvalue(), "letter.odt")

    assert raised.value.status == 415


def test_plain_text_is_decoded_from_utf8_with_a_bom() -> None:
    data = "\ufeffCafé menu\r\n\r\n\r\n\r\nCoffee: 2 €  \r\n".encode()

    document = extract(data, "menu.txt")

    assert document.media_type == TEXT
    assert document.pages == ["Café menu\n\nCoffee: 2 €"]


def test_plain_text_in_latin1_still_reads() -> None:
    document = extract("Müller & Söhne".encode("latin-1"), "legacy.txt")

    assert document.pages == ["Müller & Söhne"]


def test_utf16_text_with_a_bom_is_decoded() -> None:
    document = extract("Grüße aus Köln".encode("utf-16"), "greeting.txt")

    assert document.pages == ["Grüße aus Köln"]


def test_a_text_file_with_binary_content_is_refused() -> None:
    with pytest.raises(ExtractionError, match="not a text file"):
        extract(b"abc\x00\x01\x02", "data.txt")


def test_markdown_keeps_its_text() -> None:
    document = extract(b"# Title\n\nSome *emphasis* here.\n", "README.md")

    assert document.media_type == MARKDOWN
    assert document.pages == ["# Title\n\nSome *emphasis* here."]


def test_html_drops_scripts_and_styles_and_keeps_blocks_apart() -> None:
    data = b"""<!doctype html><html><head><title>Policy</title><style>p {color: red}</style>
    <script>alert('x')</script></head><body><h1>Refund policy</h1><p>Refunds take <b>14 days</b>.</p>
    <ul><li>Keep the receipt</li><li>Use the original box</li></ul>
    <table><tr><th>Plan</th><th>Days</th></tr><tr><td>Basic</td><td>14</td></tr></table>
    <p>Line one<br>Line two</p></body></html>"""

    document = extract(data, "policy.html")

    assert document.media_type == HTML
    text = document.pages[0]
    assert "alert" not in text
    assert "color" not in text
    assert text.startswith("Policy\n\n# Refund policy\n\nRefunds take 14 days.")
    assert "Keep the receipt\nUse the original box" in text
    assert "Plan | Days\nBasic | 14" in text
    assert "Line one\nLine two" in text


def test_csv_rows_become_readable_lines() -> None:
    data = b"name,role,city\nAda,engineer,London\nGrace,admiral,\n"

    document = extract(data, "people.csv")

    assert document.media_type == CSV
    assert document.pages == [
        "Columns: name, role, city\nRow 1: name: Ada; role: engineer; city: London\nRow 2: name: Grace; role: admiral"
    ]


def test_semicolon_separated_csv_is_sniffed() -> None:
    document = extract(b"product;price\nTea;3\nCake;5\n", "prices.csv")

    assert document.pages == ["Columns: product, price\nRow 1: product: Tea; price: 3\nRow 2: product: Cake; price: 5"]


def test_json_is_flattened_into_path_value_lines() -> None:
    data = json.dumps({"customer": {"name": "Ada", "vip": True}, "items": [{"sku": "A1", "qty": 2}]}).encode()

    document = extract(data, "order.json")

    assert document.media_type == JSON
    assert document.pages == ["customer.name: Ada\ncustomer.vip: true\nitems[0].sku: A1\nitems[0].qty: 2"]


def test_a_json_list_of_records_gets_one_paragraph_per_record() -> None:
    data = json.dumps([{"name": "Ada"}, {"name": "Grace"}]).encode()

    assert extract(data, "people.json").pages == ["[0].name: Ada\n\n[1].name: Grace"]


def test_invalid_json_says_where_it_breaks() -> None:
    with pytest.raises(ExtractionError, match=r"not valid JSON \(line 1, column 2\)"):
        extract(b"{oops", "bad.json")


def test_an_unsupported_extension_is_415() -> None:
    with pytest.raises(UnsupportedMediaType) as raised:
        extract(b"\x89PNG\r\n\x1a\n", "photo.png")

    assert raised.value.code == "unsupported_media_type"
    assert raised.value.status == 415


def test_the_declared_content_type_is_used_when_the_name_has_no_known_extension() -> None:
    assert detect_media_type(b"<p>hi</p>", "page.view", "text/html; charset=utf-8") == HTML


def test_a_name_without_extension_holding_text_is_plain_text() -> None:
    assert detect_media_type(b"just some notes", "NOTES") == TEXT


def test_a_name_without_extension_holding_binary_is_unsupported() -> None:
    with pytest.raises(UnsupportedMediaType):
        detect_media_type(b"\x00\x01\x02\x03", "blob")


@pytest.mark.parametrize("content", [b"", b"   \n\t\r\n  "])
def test_an_empty_or_blank_file_is_an_extraction_error(content: bytes) -> None:
    with pytest.raises(ExtractionError, match="contains no extractable text") as raised:
        extract(content, "empty.txt")

    assert raised.value.code == "empty_document"
