"""What extraction hands to everything after it: the media types orc reads, and a file's text page by page.

A leaf, so that the parsers (:mod:`orc.documents.parsing`) and the index that cuts and searches the text
(:mod:`orc.search`) share these without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
TEXT = "text/plain"
MARKDOWN = "text/markdown"
HTML = "text/html"
CSV = "text/csv"
JSON = "application/json"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

TABLE_CHARS = 2400
"""A table up to this many characters is kept in one span with its header (:mod:`orc.search.spans`)."""


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    """The text of one file: one element per page for paged formats (PDF), a single element otherwise.

    ``extractors`` names, page by page, what produced the text (``pypdf`` or ``pypdfium2`` for a PDF's page, the
    parser of any other format); empty for a document built without one (tests, older stored text). Headings of
    Markdown, DOCX (Heading styles), HTML (``h1``–``h6``) and slide titles are Markdown heading lines (``## Title``)
    in the text, so one reader (:mod:`orc.search.sections`) finds the section titles of every format.
    """

    pages: list[str]
    media_type: str
    extractors: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """All pages joined by blank lines."""
        return "\n\n".join(self.pages)
