"""Text extraction from uploaded files: PDF, DOCX, PPTX, XLSX, plain text (source code included), Markdown, HTML,
CSV and JSON.

Extraction is CPU-bound and parses untrusted bytes: callers run :func:`extract` off the event loop
(``asyncio.to_thread``) and bound the input size before calling it.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import PurePosixPath
from typing import Any

from orc.documents.parsing.limits import DEFAULT_LIMITS, ExtractionLimits
from orc.documents.parsing.pdf_text import read_pdf
from orc.errors import ExtractionError, UnsupportedMediaType
from orc.extracted import CSV, DOCX, HTML, JSON, MARKDOWN, PDF, PPTX, TABLE_CHARS, TEXT, XLSX, ExtractedDocument
from orc.json_depth import MAX_JSON_DEPTH, too_deep

_EXTENSIONS = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".txt": TEXT,
    ".text": TEXT,
    ".log": TEXT,
    ".rst": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".htm": HTML,
    ".html": HTML,
    ".xhtml": HTML,
    ".csv": CSV,
    ".json": JSON,
    ".pptx": PPTX,
    ".xlsx": XLSX,
}
# Source code and configuration read as plain text: people ask about them as about any document.
_SOURCE_SUFFIXES = (
    ".py .pyi .js .mjs .cjs .jsx .ts .tsx .java .kt .kts .scala .go .rs .c .h .cpp .cc .cxx .hpp .hh .cs .fs .rb"
    " .php .pl .pm .lua .r .swift .m .sh .bash .zsh .ps1 .bat .sql .yaml .yml .toml .ini .cfg .conf .env .properties"
    " .xml .css .scss .less .vue .svelte .graphql .proto .tf .gradle .cmake .mk .dockerfile .tex .bib .srt .vtt"
).split()
_EXTENSIONS.update(dict.fromkeys(_SOURCE_SUFFIXES, TEXT))
_CONTENT_TYPES = {
    PDF: PDF,
    DOCX: DOCX,
    TEXT: TEXT,
    MARKDOWN: MARKDOWN,
    "text/x-markdown": MARKDOWN,
    HTML: HTML,
    "application/xhtml+xml": HTML,
    CSV: CSV,
    "application/csv": CSV,
    JSON: JSON,
    "text/json": JSON,
    PPTX: PPTX,
    XLSX: XLSX,
}


def detect_media_type(data: bytes, filename: str, content_type: str | None = None) -> str:
    """The media type orc will extract ``data`` as; raise :class:`UnsupportedMediaType` when there is none.

    Magic bytes win over the name (a PDF renamed ``.txt`` is still a PDF); then the extension; then the
    declared content type (often ``application/octet-stream``, so it is the weakest signal); a name without
    extension whose bytes decode as text is plain text.
    """
    if data.startswith(b"%PDF-"):
        return PDF
    if data.startswith(b"PK\x03\x04"):
        office = _office_type(data, filename)
        if office is not None:
            return office
        # ODT and plain archives are zip files too; none of them is extracted yet.
        raise UnsupportedMediaType(f"{filename!r} is an archive or office format orc cannot read yet")
    suffix = PurePosixPath(filename).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    declared = (content_type or "").split(";", 1)[0].strip().lower()
    if declared in _CONTENT_TYPES:
        return _CONTENT_TYPES[declared]
    # An unknown suffix is often not a type at all (``Apache-2.0``, ``README.old``, ``Makefile``): the content decides.
    if _looks_like_text(data):
        return TEXT
    supported = ", ".join(sorted(_EXTENSIONS))
    raise UnsupportedMediaType(f"{filename!r} is not a supported document type (supported: {supported})")


def extract(
    data: bytes, filename: str, content_type: str | None = None, limits: ExtractionLimits = DEFAULT_LIMITS
) -> ExtractedDocument:
    """Extract the text of ``data`` within ``limits``; raise :class:`UnsupportedMediaType` or
    :class:`ExtractionError` (``decompression_limit`` and ``text_limit`` for a document over them)."""
    media_type = detect_media_type(data, filename, content_type)
    if media_type in (DOCX, PPTX, XLSX):
        limits.check_archive(data, filename)
    names: Sequence[str]
    if media_type == PDF:
        raw, names = read_pdf(data, filename)
    else:
        raw = _EXTRACTORS[media_type](data, filename)
        names = [_EXTRACTOR_NAMES[media_type]] * len(raw)
    limits.check_text(sum(len(page) for page in raw), filename)
    pages = [_clean(page) for page in raw]
    if not any(page for page in pages):
        hint = " (a scanned PDF needs OCR first)" if media_type == PDF else ""
        raise ExtractionError(f"{filename!r} contains no extractable text{hint}", code="empty_document")
    return ExtractedDocument(pages=pages, media_type=media_type, extractors=tuple(names))


# -- formats -------------------------------------------------------------------------------------------


def _extract_docx(data: bytes, filename: str) -> list[str]:
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(_docx_blocks(document, headings=True))
    except Exception as exc:
        # Same reasoning as for PDFs: a damaged package fails deep inside python-docx or lxml.
        raise ExtractionError(f"{filename!r} is not a readable DOCX file (damaged or truncated)") from exc
    return ["\n\n".join(block for block in blocks if block.strip())]


def _docx_blocks(container: Any, *, headings: bool = False) -> Iterator[str]:
    """Paragraphs and tables in document order; a table row becomes one ``cell | cell`` line. With ``headings``
    (the body, not a table cell), a paragraph in a Title or Heading style becomes a Markdown heading line."""
    from docx.table import Table

    for item in container.iter_inner_content():
        if isinstance(item, Table):
            yield "\n".join(_table_lines(list(_docx_rows(item))))
            continue
        level = _docx_heading_level(item) if headings else None
        text = " ".join(item.text.split()) if level else item.text
        yield f"{'#' * level} {text}" if level and text else item.text


def _docx_heading_level(paragraph: Any) -> int | None:
    """1-6 for a paragraph in the Title or a Heading style (python-docx names built-in styles in English)."""
    try:
        name = (paragraph.style.name or "") if paragraph.style is not None else ""
    except (KeyError, ValueError, AttributeError):
        return None
    if name == "Title":
        return 1
    match = _HEADING_STYLE.fullmatch(name)
    return min(int(match.group(1)), 6) if match else None


_HEADING_STYLE = re.compile(r"Heading ([1-9])")


def _table_lines(rows: list[list[str]]) -> list[str]:
    """A table's rows as ``cell | cell`` lines. A table longer than :data:`TABLE_CHARS` is cut between spans, so
    each row after the first (the header) names its columns (``Part: Widget | Price: 12 EUR``): the header then
    travels with every row, whichever span holds it."""
    lines = [" | ".join(row) for row in rows]
    if sum(len(line) + 1 for line in lines) <= TABLE_CHARS or len(rows) < 2:
        return lines
    header = rows[0]
    labelled = [
        " | ".join(f"{name}: {cell}" if name and cell else cell for name, cell in zip(header, row, strict=True))
        if len(row) == len(header)
        else line
        for row, line in zip(rows[1:], lines[1:], strict=True)
    ]
    return [lines[0], *labelled]


def _docx_rows(table: Any) -> Iterator[list[str]]:
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # A merged cell is returned once per grid column it spans; keep it once.
            if cell._tc is previous:
                continue
            previous = cell._tc
            text = " ".join(" ".join(block.split()) for block in _docx_blocks(cell) if block.strip())
            cells.append(text)
        if any(cells):
            yield cells


def _extract_text(data: bytes, filename: str) -> list[str]:
    return [_decode(data, filename)]


def _extract_html(data: bytes, filename: str) -> list[str]:
    from bs4 import BeautifulSoup, NavigableString

    # Decoding first keeps a BOM or a <meta charset> from being guessed differently by each parser.
    soup = BeautifulSoup(_decode(data, filename), "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "svg", "iframe", "object"]):
        tag.decompose()
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    if soup.head is not None:
        soup.head.decompose()
    # Block elements become line breaks so paragraphs, list items and table rows stay apart in the text.
    for table in soup.find_all("table"):
        if table.parent is None or table.find_parent("table") is not None:
            continue  # a table inside a table is read as part of the outer one's cell
        rows = [
            [" ".join(cell.get_text(" ").split()) for cell in row.find_all(["td", "th"])]
            for row in table.find_all("tr")
        ]
        caption = " ".join(table.caption.get_text(" ").split()) if table.caption else ""
        lines = ([caption] if caption else []) + _table_lines([row for row in rows if any(row)])
        table.replace_with(NavigableString("\n\n" + "\n".join(lines) + "\n\n"))
    for tag in soup.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        # One line, as a Markdown heading: the section titles of every format are read the same way.
        heading = " ".join(tag.get_text(" ").split())
        tag.clear()
        if heading:
            tag.append(NavigableString(f"{'#' * int(tag.name[1])} {heading}"))
    for tag in soup.find_all(_HTML_PARAGRAPHS):
        tag.insert_before(NavigableString("\n\n"))
        tag.append(NavigableString("\n\n"))
    for tag in soup.find_all(_HTML_LINES):
        # A break after each item only: one before and one after would leave a blank line between items.
        tag.append(NavigableString("\n"))
    for tag in soup.find_all(["td", "th"]):
        tag.append(NavigableString(" | "))
    for tag in soup.find_all("br"):
        tag.replace_with(NavigableString("\n"))
    lines = [" ".join(line.split()).removesuffix(" |") for line in soup.get_text().split("\n")]
    body = "\n".join(lines)
    if title and not body.lstrip().startswith(title):
        body = f"{title}\n\n{body}"
    return [body]


_HTML_PARAGRAPHS = [
    "p", "div", "section", "article", "header", "footer", "main", "aside", "nav", "h1", "h2", "h3", "h4",
    "h5", "h6", "table", "ul", "ol", "dl", "pre", "blockquote", "figure", "figcaption", "hr", "form",
]  # fmt: skip
_HTML_LINES = ["li", "tr", "dt", "dd", "caption"]


def _extract_csv(data: bytes, filename: str) -> list[str]:
    text = _decode(data, filename)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = [row for row in csv.reader(io.StringIO(text), dialect) if any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise ExtractionError(f"{filename!r} is not a readable CSV file") from exc
    if not rows:
        return [""]
    header = [cell.strip() or f"column {index + 1}" for index, cell in enumerate(rows[0])]
    lines = [f"Columns: {', '.join(header)}"]
    for number, row in enumerate(rows[1:], start=1):
        fields = []
        for index, cell in enumerate(row):
            value = " ".join(cell.split())
            if value:
                name = header[index] if index < len(header) else f"column {index + 1}"
                fields.append(f"{name}: {value}")
        lines.append(f"Row {number}: " + "; ".join(fields))
    return ["\n".join(lines)]


def _extract_json(data: bytes, filename: str) -> list[str]:
    text = _decode(data, filename)
    if too_deep(text):
        # json.loads and _flatten recurse per level: a deeper file would exhaust the stack.
        raise ExtractionError(f"{filename!r} nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ExtractionError(f"{filename!r} is not valid JSON (line {exc.lineno}, column {exc.colno})") from exc
    if isinstance(value, list) and value and all(isinstance(item, dict | list) for item in value):
        # A list of records reads best as one paragraph per record.
        records = ["\n".join(_flatten(item, f"[{index}]")) for index, item in enumerate(value)]
        return ["\n\n".join(record for record in records if record)]
    return ["\n".join(_flatten(value, ""))]


def _flatten(value: Any, path: str) -> Iterator[str]:
    """``a.b[0].c: value`` lines, one per scalar."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _flatten(item, f"{path}[{index}]")
    else:
        rendered = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        rendered = " ".join(rendered.split())
        yield f"{path}: {rendered}" if path else rendered


def _extract_pptx(data: bytes, filename: str) -> list[str]:
    """One page per slide: its title first, then the text of its shapes (tables as ``cell | cell`` rows), then notes."""
    from pptx import Presentation

    try:
        presentation = Presentation(io.BytesIO(data))
        slides = [_pptx_slide(slide) for slide in presentation.slides]
    except Exception as exc:
        # Same reasoning as for PDFs: a damaged package fails deep inside python-pptx or lxml.
        raise ExtractionError(f"{filename!r} is not a readable PPTX file (damaged or truncated)") from exc
    return slides or [""]


def _pptx_slide(slide: Any) -> str:
    blocks: list[str] = []
    title = slide.shapes.title
    heading = " ".join(title.text_frame.text.split()) if title is not None and title.has_text_frame else ""
    if heading:
        # The slide's title is the section title of what the slide says (a Markdown heading, as for DOCX).
        blocks.append(f"# {heading}")
    for shape in slide.shapes:
        if heading and shape.shape_id == title.shape_id:
            continue
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [[" ".join(cell.text.split()) for cell in row.cells] for row in shape.table.rows]
            blocks.append("\n".join(_table_lines([row for row in rows if any(row)])))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            blocks.append("\n".join(paragraph.text for paragraph in shape.text_frame.paragraphs))
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = slide.notes_slide.notes_text_frame.text
        if notes.strip():
            blocks.append(f"Notes: {notes}")
    return "\n\n".join(block for block in blocks if block.strip())


def _extract_xlsx(data: bytes, filename: str) -> list[str]:
    """One page per sheet, read like a CSV: a ``Columns:`` line from the first row, then ``Row N: name: value``."""
    from openpyxl import load_workbook

    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            sheets = [(sheet.title, list(sheet.iter_rows(values_only=True))) for sheet in workbook.worksheets]
        finally:
            workbook.close()
    except Exception as exc:
        raise ExtractionError(f"{filename!r} is not a readable XLSX file (damaged or truncated)") from exc
    pages = []
    for title, rows in sheets:
        cells = [["" if value is None else " ".join(str(value).split()) for value in row] for row in rows]
        cells = [row for row in cells if any(row)]
        if not cells:
            continue
        header = [cell or f"column {index + 1}" for index, cell in enumerate(cells[0])]
        lines = [f"Sheet: {title}", f"Columns: {', '.join(header)}"]
        for number, row in enumerate(cells[1:], start=1):
            fields = [
                f"{header[index] if index < len(header) else f'column {index + 1}'}: {value}"
                for index, value in enumerate(row)
                if value
            ]
            lines.append(f"Row {number}: " + "; ".join(fields))
        pages.append("\n".join(lines))
    return pages or [""]


_EXTRACTORS: dict[str, Callable[[bytes, str], list[str]]] = {
    DOCX: _extract_docx,
    PPTX: _extract_pptx,
    XLSX: _extract_xlsx,
    TEXT: _extract_text,
    MARKDOWN: _extract_text,
    HTML: _extract_html,
    CSV: _extract_csv,
    JSON: _extract_json,
}
_EXTRACTOR_NAMES = {
    DOCX: "python-docx",
    PPTX: "python-pptx",
    XLSX: "openpyxl",
    TEXT: "text",
    MARKDOWN: "text",
    HTML: "beautifulsoup4",
    CSV: "csv",
    JSON: "json",
}


# -- helpers -------------------------------------------------------------------------------------------


def _office_type(data: bytes, filename: str) -> str | None:
    """DOCX, PPTX or XLSX by the part the package holds; a damaged package by its suffix (extraction then says it
    is damaged, which is more useful than "unsupported")."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        names = set()
    for part, media_type in _OFFICE_PARTS.items():
        if part in names:
            return media_type
    suffix = PurePosixPath(filename).suffix.lower()
    return _EXTENSIONS[suffix] if suffix in (".docx", ".pptx", ".xlsx") else None


_OFFICE_PARTS = {"word/document.xml": DOCX, "ppt/presentation.xml": PPTX, "xl/workbook.xml": XLSX}


def _decode(data: bytes, filename: str) -> str:
    """UTF-8 (with or without BOM), UTF-16 with a BOM, else Latin-1; NUL bytes mean the file is not text."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data:
        raise ExtractionError(f"{filename!r} is not a text file (it contains binary data)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Latin-1 maps every byte, so legacy Windows/ISO-8859 text still reads (mostly) right.
        return data.decode("latin-1")


def _looks_like_text(data: bytes) -> bool:
    """UTF-8 (or a text BOM) with hardly any control characters besides tab, newline, return and form feed."""
    sample = data[:4096]
    if sample.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the sample boundary is still text.
        if exc.start < len(sample) - 3:
            return False
    controls = sum(1 for byte in sample if byte < 32 and byte not in _TEXT_CONTROLS) + sample.count(0x7F)
    return controls <= len(sample) // 100


_TEXT_CONTROLS = frozenset(b"\t\n\r\f\x1b")


_TRAILING_SPACE = re.compile(r"[ \t\f\v]+\n")
_BLANK_RUN = re.compile(r"\n{3,}")


# Typographic ligatures (TeX PDFs set "conﬁguration" with U+FB01): nobody types them, so no search would match.
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})


def _clean(text: str) -> str:
    """Unify line endings, drop NULs and trailing spaces, spell ligatures out, keep at most one blank line in a
    row."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").translate(_LIGATURES)
    text = _TRAILING_SPACE.sub("\n", text + "\n")
    return _BLANK_RUN.sub("\n\n", text).strip()
