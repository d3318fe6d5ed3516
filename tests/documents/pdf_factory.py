"""A tiny PDF writer for tests: valid multi-page PDFs with Helvetica text that pypdf can read back.

No PDF library in the project writes text, so the file is assembled by hand: catalog, page tree, fonts, one
content stream per page and a byte-exact cross-reference table.

A page can also be written the way some LaTeX/xdvipdfmx PDFs are: words placed by kerning (``[(The) -333
(Project)] TJ``) with a font whose declared space is wide, so pypdf finds no gap wide enough for a space and
returns the words of each line run together, while PDFium, which looks at the glyph boxes, separates them.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content_stream(lines: Sequence[str], *, kerned: bool = False) -> bytes:
    operations = ["BT", "/F2 11 Tf" if kerned else "/F1 11 Tf", "14 TL", "72 760 Td"]
    for line in lines:
        if kerned:
            words = " -333 ".join(f"({_escape(word)})" for word in line.split())
            operations.append(f"[{words}] TJ T*")
        else:
            operations.append(f"({_escape(line)}) Tj T*")
    operations.append("ET")
    return "\n".join(operations).encode("latin-1")


# Helvetica with a declared space of a full em: a -333 kern is then less than half a space for pypdf.
_WIDE_SPACE_FONT = (
    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding /FirstChar 32 /LastChar 126 "
    b"/Widths [1000" + b" 556" * 94 + b"] >>"
)


def make_pdf(pages: Sequence[Sequence[str]], *, words_run_together: Collection[int] = (), padding: int = 0) -> bytes:
    """A PDF whose page ``i`` shows the lines ``pages[i]`` (Latin-1 text, one line per entry); the pages whose
    0-based index is in ``words_run_together`` are written so that pypdf reads them without spaces. ``padding``
    bytes of incompressible data ride along in a stream no page shows, as embedded images make real PDFs large."""
    page_count = len(pages)
    font_number = 3
    first_page = 5
    # Objects: 1 catalog, 2 page tree, 3 and 4 fonts, then (page, content) pairs.
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        font_number: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        font_number + 1: _WIDE_SPACE_FONT,
    }
    kids = []
    for index, lines in enumerate(pages):
        page_number = first_page + 2 * index
        content_number = page_number + 1
        kids.append(f"{page_number} 0 R")
        objects[page_number] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font_number} 0 R "
            f"/F2 {font_number + 1} 0 R >> >> /Contents {content_number} 0 R >>"
        ).encode()
        stream = _content_stream(lines, kerned=index in words_run_together)
        objects[content_number] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {page_count} >>".encode()
    if padding:
        data = os.urandom(padding)
        objects[first_page + 2 * page_count] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)

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
