"""PDF extraction on real files: pypdf against pypdfium2 page by page, and what the product path does.

``python -m bench.extraction [PDF or folder …]`` (default: every PDF under ``/usr/share/doc``). For each file it
reports the pages, the time per page of pypdf alone and of pypdfium2 alone, how many pages each reads as
degenerate (:func:`orc.documents.parsing.pdf_text.defect_score` at or over the threshold), and what
:func:`orc.documents.parsing.pdf_text.read_pdf` — pypdf first, PDFium for the degenerate pages — takes per page and how
many pages it reads with PDFium. One warm-up read per file is not counted; the figure is the best of three runs.
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.common import format_table
from orc.documents.parsing.pdf_text import DEGENERATE_SCORE, defect_score, read_pdf, read_pdf_pypdfium2

DEFAULT_ROOTS = (Path("/usr/share/doc"),)
RUNS = 3


def _pypdf(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages]


def _best_ms(run: Callable[[], object]) -> float:
    run()
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def measure(path: Path) -> dict[str, object]:
    """One row of the table for ``path``."""
    data = path.read_bytes()
    first = _pypdf(data)
    second = read_pdf_pypdfium2(data) or []
    _, extractors = read_pdf(data, path.name)
    pages = len(first)
    return {
        "file": path.name,
        "pages": pages,
        "pypdf_ms_page": round(_best_ms(lambda: _pypdf(data)) / pages, 2),
        "pypdfium2_ms_page": round(_best_ms(lambda: read_pdf_pypdfium2(data)) / pages, 2),
        "product_ms_page": round(_best_ms(lambda: read_pdf(data, path.name)) / pages, 2),
        "pypdf_degenerate": sum(1 for text in first if defect_score(text) >= DEGENERATE_SCORE),
        "pypdfium2_degenerate": sum(1 for text in second if defect_score(text) >= DEGENERATE_SCORE),
        "read_with_pypdfium2": sum(1 for name in extractors if name == "pypdfium2"),
    }


def pdfs(arguments: Sequence[str]) -> list[Path]:
    """The PDFs named, or found under the folders named (or under the default roots)."""
    found: list[Path] = []
    for root in [Path(argument) for argument in arguments] or list(DEFAULT_ROOTS):
        found.extend(sorted(root.rglob("*.pdf")) if root.is_dir() else [root])
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table (and the totals) for the PDFs given on the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.extraction", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="PDF files or folders (default: /usr/share/doc)")
    rows = [measure(path) for path in pdfs(parser.parse_args(argv).paths)]
    if not rows:
        print("no PDF found")
        return
    pages = sum(int(str(row["pages"])) for row in rows)
    total = {
        "file": "all",
        "pages": pages,
        **{
            key: round(sum(float(str(row[key])) * int(str(row["pages"])) for row in rows) / pages, 2)
            for key in ("pypdf_ms_page", "pypdfium2_ms_page", "product_ms_page")
        },
        **{
            key: sum(int(str(row[key])) for row in rows)
            for key in ("pypdf_degenerate", "pypdfium2_degenerate", "read_with_pypdfium2")
        },
    }
    print(format_table([*rows, total], list(total)))


if __name__ == "__main__":
    main()
