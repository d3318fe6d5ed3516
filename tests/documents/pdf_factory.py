"""A tiny PDF writer for tests: valid multi-page PDFs with Helvetica text that pypdf can read back.

No PDF library in the project writes text, so the file is assembled by hand: catalog, page tree, one
font, one content stream per page and a byte-exact cross-reference table.
"""

from __future__ import annotations

from collections.abc import Sequence


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content_stream(lines: Sequence[str]) -> bytes:
    operations = ["BT", "/F1 11 Tf", "14 TL", "72 760 Td"]
    for line in lines:
        operations.append(f"({_escape(line)}) Tj T*")
    operations.append("ET")
    return "\n".join(operations).encode("latin-1")


def make_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """A PDF whose page ``i`` shows the lines ``pages[i]`` (Latin-1 text, one line per entry)."""
    page_count = len(pages)
    font_number = 3
    first_page = 4
    # Objects: 1 catalog, 2 page tree, 3 font, then (page, content) pairs.
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        font_number: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    kids = []
    for index, lines in enumerate(pages):
        page_number = first_page + 2 * index
        content_number = page_number + 1
        kids.append(f"{page_number} 0 R")
        objects[page_number] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 {font_number} 0 R >> >> /Contents {content_number} 0 R >>"
        ).encode()
        stream = _content_stream(lines)
        objects[content_number] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {page_count} >>".encode()

    output = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(output)
        output += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref_offset = len(output)
    size = max(objects) + 1
    output += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        output += b"%010d 00000 n \n" % offsets[number]
    output += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref_offset)
    return bytes(output)
