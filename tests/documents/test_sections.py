"""Headings become the section titles of the spans under them (Markdown, DOCX, HTML, PDF); a span is found by its
section's words, shows its section, and a heading is never quoted as an answer; table rows stay whole."""

from __future__ import annotations

import io

import docx

from mcp_server.tools.rendering import render_search
from orc.contracts import SourceSpan
from orc.documents.intake.uploads import Upload
from orc.documents.parsing.extraction import extract
from orc.documents.records import ContextRef
from orc.extracted import PDF, ExtractedDocument
from orc.graph.citations import extract_citations
from orc.models.answering import answer_question, parse_sources
from orc.models.prompting import format_sources
from orc.search.spans import MAX_CHARS, make_spans
from orc.search.text_store import process_extracted
from tests.documents.library_support import ACME, library_of, open_runtime
from tests.documents.pdf_factory import make_pdf
from tests.search.ranking import ranked, target

FILLER = "The text of this part goes on for a while with nothing in particular to say. " * 12


def docx_bytes(build: object) -> bytes:
    document = docx.Document()
    build(document)  # type: ignore[operator]
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_markdown_headings_become_the_section_path_of_the_spans_under_them() -> None:
    text = (
        "# Espresso machine\n\n## Cleaning\n\nRinse the group head every day.\n\n"
        "```\n# a comment in a code block\n```\n\n## Warranty\n\nTwo years from purchase."
    )
    spans = make_spans(extract(text.encode(), "manual.md"))

    assert [(span.section, span.text.split("\n")[0]) for span in spans] == [
        ("Espresso machine › Cleaning", "# Espresso machine"),
        ("Espresso machine › Warranty", "## Warranty"),
    ]
    assert "# a comment in a code block" in spans[0].text


def test_docx_heading_styles_and_html_headings_are_section_titles() -> None:
    def build(document: docx.document.Document) -> None:
        document.add_heading("Rental agreement", level=1)
        document.add_paragraph("This agreement is made between the parties.")
        document.add_heading("Deposit", level=2)
        document.add_paragraph("The deposit is 900 euros.")

    from_docx = make_spans(extract(docx_bytes(build), "lease.docx"))
    html = b"<html><body><h1>Rental agreement</h1><p>Made between the parties.</p><h2>Deposit</h2><p>900 euros.</p>"
    from_html = make_spans(extract(html, "lease.html"))

    assert [span.section for span in from_docx] == ["Rental agreement", "Rental agreement › Deposit"]
    assert [span.section for span in from_html] == ["Rental agreement", "Rental agreement › Deposit"]
    assert from_docx[1].text == "## Deposit\n\nThe deposit is 900 euros."


def test_numbered_pdf_headings_are_section_titles_that_go_on_over_the_page_break() -> None:
    pages = [
        ["1 Introduction", "The magic database was created to name file types by their content."],
        ["It is read by every desktop environment on the system.", "2.5 The Magic Files", "Each rule has a level."],
    ]
    spans = make_spans(extract(make_pdf(pages), "spec.pdf"))

    assert [(span.page, span.section) for span in spans] == [
        (1, "1 Introduction"),
        (2, "1 Introduction"),
        (2, "1 Introduction › 2.5 The Magic Files"),
    ]


def test_code_listing_lines_and_wrapped_prose_are_not_pdf_headings() -> None:
    page = [
        "1 Crc CrcByte ( Byte value ) {",
        "2 return MulByXpowD [ value ] ;",
        "The rule is read by the parser when",
        "The Parser Starts",
        "and it stops at the end of the file.",
    ]
    spans = make_spans(ExtractedDocument(["\n".join(page)], PDF))

    assert [span.section for span in spans] == [None]


async def test_a_span_deep_in_a_section_is_found_by_the_words_of_its_title() -> None:
    text = f"# Espresso machine\n\n## Descaling\n\n{FILLER}\n\n{FILLER}\n\n{FILLER}"
    document = process_extracted(extract(text.encode(), "manual.md"))
    later = [index for index, span in enumerate(document.spans) if "Descaling" not in span.text]
    assert later  # the section is longer than a span: later spans do not hold the heading's words

    hits = await ranked("descaling", [target(document, "manual.md")])

    assert later[0] in {hit.span.ordinal for hit in hits}
    assert document.spans[later[0]].section == "Espresso machine › Descaling"


def test_the_offline_answerer_never_quotes_a_heading_and_the_citation_carries_the_section() -> None:
    # An FAQ heading is a whole question sentence: without its section it is the best "answer" to itself.
    question = "Does the warranty cover water damage to the coffee machine?"
    text = f"# Coffee machine\n\n## {question}\n\nNo, damage caused by liquids is excluded from it."
    (span,) = make_spans(extract(text.encode(), "faq.md"))
    source = SourceSpan(ref="faq.md::S1", document="faq.md", span_id="S1", text=span.text, section=span.section)

    answer = answer_question(question, parse_sources(format_sources([source])))
    citations = extract_citations(answer, [source])

    assert answer == "No, damage caused by liquids is excluded from it. [faq.md::S1]"
    assert [citation.section for citation in citations] == [f"Coffee machine › {question}"]


def test_table_rows_are_never_split_and_the_header_travels_with_the_rows() -> None:
    def build(rows: int) -> object:
        def fill(document: docx.document.Document) -> None:
            document.add_paragraph("Prices of the spare parts, valid from January.")
            table = document.add_table(rows=rows + 1, cols=3)
            for column, name in enumerate(("Part", "Code", "Price and availability")):
                table.cell(0, column).text = name
            for row in range(1, rows + 1):
                table.cell(row, 0).text = f"Spare part number {row}"
                table.cell(row, 1).text = f"SP-{row:04d}"
                table.cell(row, 2).text = f"{row * 3} euros, shipped within {row % 5 + 1} working days"

        return fill

    small = make_spans(extract(docx_bytes(build(18)), "small.docx"))
    big = make_spans(extract(docx_bytes(build(80)), "big.docx"))

    small_table = [span for span in small if "SP-0001" in span.text]
    assert len(small_table) == 1 and "Part | Code | Price and availability" in small_table[0].text
    assert "SP-0018" in small_table[0].text and len(small_table[0].text) > MAX_CHARS
    rows = [f"Part: Spare part number {row} | Code: SP-{row:04d} | Price and availability: " for row in range(1, 81)]
    assert len({span.span_id for span in big if "Part: Spare part" in span.text}) > 1  # the table is cut…
    for row in rows:
        holders = [span for span in big if row in span.text]
        assert len(holders) == 1, row  # …between rows, each naming its columns
        line = next(line for line in holders[0].text.split("\n") if line.startswith(row))
        assert line.endswith("working days")


async def test_documents_search_shows_the_section_of_each_hit() -> None:

    text = "# Espresso machine\n\n## Descaling\n\nRun the descaling program once a month with fresh water."
    async with open_runtime() as runtime:
        library = library_of(runtime)
        await runtime.foundation.context_documents.add(
            ACME, ContextRef("organization", "acme"), [Upload("manual.md", text.encode())]
        )
        scope = await runtime.foundation.scopes.resolve(ACME, context_type="organization", context_id="acme")
        found = await library.search(ACME, scope, "how often descaling")

    assert found.results[0].section == "Espresso machine › Descaling"
    assert "section: Espresso machine › Descaling" in render_search(found)


def test_a_long_html_table_names_its_columns_in_every_row_and_a_short_one_keeps_its_header_line() -> None:
    def page(rows: int) -> bytes:
        body = "".join(
            f"<tr><td>Plan {row}</td><td>{row * 7} days of support by e-mail</td></tr>" for row in range(rows)
        )
        return f"<table><caption>Plans</caption><tr><th>Plan</th><th>Support</th></tr>{body}</table>".encode()

    short = extract(page(3), "plans.html").pages[0]
    long = extract(page(80), "plans.html").pages[0]

    assert (
        short
        == "Plans\nPlan | Support\nPlan 0 | 0 days of support by e-mail\nPlan 1 | 7 days of support by e-mail\n"
        + ("Plan 2 | 14 days of support by e-mail")
    )
    assert "\nPlan: Plan 79 | Support: 553 days of support by e-mail" in long
    assert all(span.text.count("Plan: ") >= 1 for span in make_spans(extract(page(80), "plans.html"))[1:])
