"""The text of a PDF's pages: pypdf first, PDFium (pypdfium2) for each page pypdf reads badly.

pypdf infers the spaces between words from the font's space width and the gaps between glyphs; on some real
PDFs (LaTeX/xdvipdfmx output whose fonts declare a wide space) it finds none and returns every line as one run
of letters ("TheProjectwascreatedin1993…"). PDFium places words by their glyph boxes and reads those pages
correctly. pypdf stays the first extractor: it is pure Python, so a hostile file cannot crash the process, and it
is what every stored document was read with. A page whose pypdf text looks degenerate (:func:`defect_score`) is
read again with PDFium, and the text with fewer defects wins; each page records which extractor produced it.

PDFium is not thread-safe, not even across documents: every call into it holds :data:`_PDFIUM_LOCK` and closes
what it opened before letting go (a finalizer running later in another thread would call PDFium unlocked).
"""

from __future__ import annotations

import io
import logging
import re
import threading
from collections.abc import Sequence
from typing import Literal

from orc.errors import ExtractionError

__all__ = ["DEGENERATE_SCORE", "PdfExtractor", "defect_score", "read_pdf", "read_pdf_pypdfium2"]

PdfExtractor = Literal["pypdf", "pypdfium2"]

DEGENERATE_SCORE = 0.3
"""A page whose :func:`defect_score` reaches this is read again with PDFium."""
MIN_LETTERS = 80
"""Pages with fewer Latin letters than this (a title page, a figure) are too short to judge."""
LONG_WORD = 25
"""Letters in a row from which a Latin "word" is words run together (real words this long are very rare)."""

_PDFIUM_LOCK = threading.Lock()
_LATIN_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ɏ]+")
_VOWELS = frozenset("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿœ")
# PDFium marks a hyphen it found at a line break with U+0002 (pypdf keeps the hyphen); other control characters
# are glyphs without a Unicode mapping (math delimiters), which no reader wants in the text.
_PDFIUM_CHARACTERS = str.maketrans(
    {"\x02": "-", "\ufffe": "-"} | {chr(code): None for code in range(32) if chr(code) not in "\t\n\r\f\x02"}
)
logger = logging.getLogger(__name__)


def defect_score(text: str) -> float:
    """How degenerate a page's text looks, from 0 (reads as prose) to 1; 0 for a page too short to judge.

    Three signs, the worst one counts:

    - words run together: the share of Latin letters standing in "words" of :data:`LONG_WORD` letters or more;
    - letters spaced apart ("i n t b l o c k s"): the share of one-letter words beyond the few a language has;
    - glyph soup (a font without a usable encoding): control, private-use and replacement characters, or letter
      runs with far too few vowels to be words of a Latin-script language.

    Scripts written without spaces (Chinese, Japanese, Thai) are not Latin letters, so they never count as
    run together.
    """
    words = _LATIN_WORD.findall(text)
    letters = sum(len(word) for word in words)
    visible = sum(1 for char in text if not char.isspace())
    if visible < MIN_LETTERS:
        return 0.0
    if letters < MIN_LETTERS:
        return _soup_share(text, visible)  # hardly any Latin letters: another script, or only glyph soup
    run_together = sum(len(word) for word in words if len(word) >= LONG_WORD) / letters
    single = sum(1 for word in words if len(word) == 1) / len(words)
    spaced = max(0.0, (single - 0.15) / 0.85)
    vowels = sum(1 for char in "".join(words).lower() if char in _VOWELS) / letters
    # Latin-script languages keep 30-45 % vowels (y included); random letters have about 23 %.
    unpronounceable = max(0.0, (0.28 - vowels) / 0.28) * 2
    return round(min(1.0, max(run_together, spaced, unpronounceable, _soup_share(text, visible))), 3)


def _soup_share(text: str, visible: int) -> float:
    """Share of visible characters that no text has: controls, private use, replacement characters."""
    odd = sum(
        1
        for char in text
        if (ord(char) < 32 and char not in "\t\n\r\f") or 0xE000 <= ord(char) <= 0xF8FF or char == "\ufffd"
    )
    return min(1.0, odd / visible * 3)


def read_pdf(data: bytes, filename: str) -> tuple[list[str], list[PdfExtractor]]:
    """The text of every page of ``data`` and the extractor that produced each; :class:`ExtractionError` when the
    file is password protected or neither extractor can read it."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            # Many PDFs carry only an owner password and open with the empty user password; others cannot.
            raise ExtractionError(f"{filename!r} is password protected; upload an unprotected copy")
        pypdf_pages = [_pypdf_page(page) for page in reader.pages]
    except ExtractionError:
        raise
    except FileNotDecryptedError as exc:
        raise ExtractionError(f"{filename!r} is password protected; upload an unprotected copy") from exc
    except MemoryError:
        raise  # a bomb: the extraction pool fails the document; a second parser must not take it on
    except Exception as exc:
        # A damaged file pypdf cannot open may still open with PDFium, which repairs cross-reference tables.
        pages = _pdfium_pages(data, None)
        if pages is None or any(page is None for page in pages):
            raise _unreadable(filename) from exc
        return [page or "" for page in pages], ["pypdfium2"] * len(pages)

    texts = [text or "" for text in pypdf_pages]
    extractors: list[PdfExtractor] = ["pypdf"] * len(texts)
    again = [index for index, text in enumerate(pypdf_pages) if text is None or defect_score(text) >= DEGENERATE_SCORE]
    if not again:
        return texts, extractors
    second = _pdfium_pages(data, again, expected_pages=len(texts))
    for index in again:
        candidate = second[index] if second is not None else None
        if candidate is None:
            if pypdf_pages[index] is None:
                raise _unreadable(filename)
            continue
        if pypdf_pages[index] is None or _better(candidate, texts[index]):
            texts[index] = candidate
            extractors[index] = "pypdfium2"
    return texts, extractors


def _better(candidate: str, first: str) -> bool:
    """Whether PDFium's text is clearly better than pypdf's: it reads as prose, or has at most half the defects.
    Between two poor readings (a letter-spaced code listing both garble) the first extractor's stays."""
    score = defect_score(candidate)
    return score < DEGENERATE_SCORE or score <= defect_score(first) / 2


def read_pdf_pypdfium2(data: bytes) -> list[str] | None:
    """Every page's text as PDFium reads it (None when it cannot open the file); for measuring both extractors."""
    pages = _pdfium_pages(data, None)
    return None if pages is None else [page or "" for page in pages]


def _pypdf_page(page: object) -> str | None:
    """One page's text, or None when pypdf fails on this page (the other pages may still be fine)."""
    try:
        return page.extract_text() or ""  # type: ignore[attr-defined]
    except MemoryError:
        raise
    except Exception:
        logger.debug("pypdf could not read a page", exc_info=True)
        return None


def _pdfium_pages(
    data: bytes, indexes: Sequence[int] | None, *, expected_pages: int | None = None
) -> list[str | None] | None:
    """PDFium's text of the pages at ``indexes`` (all when None), None for a page it cannot read; None when it
    cannot open the file or counts a different number of pages (its pages would not line up with pypdf's)."""
    import pypdfium2

    with _PDFIUM_LOCK:
        try:
            document = pypdfium2.PdfDocument(data)
        except Exception:
            logger.debug("PDFium could not open a PDF", exc_info=True)
            return None
        try:
            count = len(document)
            if expected_pages is not None and count != expected_pages:
                return None
            result: list[str | None] = [None] * count
            for index in range(count) if indexes is None else indexes:
                result[index] = _pdfium_page(document, index)
            return result
        finally:
            document.close()


def _pdfium_page(document: object, index: int) -> str | None:
    try:
        page = document[index]  # type: ignore[index]
    except Exception:
        return None
    try:
        textpage = page.get_textpage()
        try:
            text: str = textpage.get_text_range()
        finally:
            textpage.close()
    except Exception:
        logger.debug("PDFium could not read a page", exc_info=True)
        return None
    finally:
        page.close()
    return text.translate(_PDFIUM_CHARACTERS)


def _unreadable(filename: str) -> ExtractionError:
    # A parser of untrusted bytes can fail in any way on a damaged file; every failure means the same thing to the
    # caller, and the parser's message (offsets, object ids) would not help them.
    return ExtractionError(f"{filename!r} is not a readable PDF (damaged or truncated)")
