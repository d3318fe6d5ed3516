"""Spans: ids in document order, page locators, offsets that point at the text, sizes within bounds."""

from __future__ import annotations

from orc.extracted import PDF, TEXT, ExtractedDocument
from orc.search.spans import CHUNKING_VERSION, MAX_CHARS, MIN_CHARS, make_spans, pdf_paragraphs, source_ref


def _paragraph(topic: str, sentences: int) -> str:
    return " ".join(f"{topic} sentence number {index} explains one more detail." for index in range(sentences))


def test_span_ids_run_from_s1_in_document_order_across_pages() -> None:
    pages = [_paragraph("Alpha", 30), _paragraph("Beta", 30), _paragraph("Gamma", 5)]
    spans = make_spans(ExtractedDocument(pages=pages, media_type=PDF))

    assert [span.span_id for span in spans] == [f"S{index}" for index in range(1, len(spans) + 1)]
    assert [span.page for span in spans] == sorted(span.page or 0 for span in spans)
    assert {span.page for span in spans} == {1, 2, 3}


def test_offsets_point_at_the_span_text_in_its_page() -> None:
    pages = [f"Title\n\n{_paragraph('Alpha', 12)}\n\n{_paragraph('Beta', 40)}", "Short second page."]
    document = ExtractedDocument(pages=pages, media_type=PDF)

    for span in make_spans(document):
        assert span.page is not None
        assert pages[span.page - 1][span.start : span.end] == span.text


def test_unpaged_documents_have_no_page_locator() -> None:
    spans = make_spans(ExtractedDocument(pages=["One paragraph.\n\nAnother one."], media_type=TEXT))

    assert [(span.span_id, span.page, span.text) for span in spans] == [("S1", None, "One paragraph.\n\nAnother one.")]


def test_short_paragraphs_are_packed_and_long_ones_split_at_sentences() -> None:
    text = "\n\n".join([*(f"Heading {index}" for index in range(3)), _paragraph("Long", 60)])
    spans = make_spans(ExtractedDocument(pages=[text], media_type=TEXT))

    assert len(spans) > 1
    assert all(0 < len(span.text) <= MAX_CHARS for span in spans)
    assert all(len(span.text) >= MIN_CHARS for span in spans)
    assert spans[0].text.startswith("Heading 0\n\nHeading 1\n\nHeading 2\n\nLong sentence number 0")
    # Every split falls after a sentence: no span starts or ends mid-sentence.
    assert all(span.text.endswith(".") for span in spans)
    assert all(span.text.startswith(("Heading", "Long")) for span in spans)


def test_a_single_line_without_any_boundary_is_cut_within_the_maximum() -> None:
    text = "x" * (MAX_CHARS * 2 + 10)
    spans = make_spans(ExtractedDocument(pages=[text], media_type=TEXT))

    assert [len(span.text) for span in spans] == [MAX_CHARS, MAX_CHARS, 10]
    assert "".join(span.text for span in spans) == text


def test_lines_of_tabular_text_are_split_at_line_breaks() -> None:
    rows = "\n".join(f"Row {index}: name: Person {index}; city: Somewhere" for index in range(100))
    spans = make_spans(ExtractedDocument(pages=[rows], media_type=TEXT))

    assert len(spans) > 1
    assert all(span.text.startswith("Row ") and span.text.endswith("Somewhere") for span in spans)


def test_blank_pages_produce_no_spans_and_no_empty_spans_exist() -> None:
    spans = make_spans(ExtractedDocument(pages=["", "Only text.", ""], media_type=PDF))

    assert [(span.span_id, span.page, span.text) for span in spans] == [("S1", 2, "Only text.")]


def test_the_source_ref_joins_file_name_and_span_id() -> None:
    assert source_ref("contract.pdf", "S12") == "contract.pdf::S12"


def test_the_chunking_version_is_pinned() -> None:
    # Changing the chunking changes what every S<n> means: bump the version with it, and this test.
    assert CHUNKING_VERSION == "3"


def _wrapped(paragraph: str, width: int = 72) -> list[str]:
    """``paragraph`` as a PDF's layout wraps it: lines filled up to ``width``, no blank line after it."""
    lines: list[str] = []
    for word in paragraph.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def test_a_pdf_page_is_cut_where_its_paragraphs_end_not_where_its_lines_wrap() -> None:
    paragraphs = [_paragraph(topic, 9) for topic in ("Alpha", "Beta", "Gamma", "Delta")]
    page = "\n".join(line for paragraph in paragraphs for line in _wrapped(paragraph))
    assert "\n\n" not in page  # as pypdf reads a page: one line after the other

    spans = make_spans(ExtractedDocument(pages=[page], media_type=PDF))

    assert [" ".join(span.text.split()) for span in spans] == paragraphs


def test_a_pdf_list_item_and_an_indented_listing_start_paragraphs_of_their_own() -> None:
    lines = [
        *_wrapped(_paragraph("Intro", 8)),
        "• First item of the list, which is long enough to be wrapped over two lines of",
        "the page as printed.",
        "  int main(void) {",
        "      return 0;",
        "  }",
        *_wrapped(_paragraph("Outro", 8)),
    ]
    page = "\n".join(lines)

    starts = [page[start:end].split("\n")[0][:12] for start, end in pdf_paragraphs(page, 0, len(page))]

    assert starts == ["Intro senten", "• First item", "int main(voi", "Outro senten"]


def test_a_full_pdf_line_that_happens_to_end_a_sentence_does_not_end_its_paragraph() -> None:
    line = "This line is as long as every other line of the page and ends a sentence."
    page = "\n".join([line, line, "short last line."])

    assert pdf_paragraphs(page, 0, len(page)) == [(0, len(page))]
