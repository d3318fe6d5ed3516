"""Documents of the sizes users send, each carrying one fact a question can find: generated PDF, DOCX and XLSX files
made large the way real ones are (embedded images: incompressible bytes the text extractor never reads), and the
real documents under ``bench/``."""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import docx
import openpyxl

from tests.documents.pdf_factory import make_pdf

Kind = Literal["pdf", "docx", "xlsx"]
KINDS: tuple[Kind, ...] = ("pdf", "docx", "xlsx")
MB = 1_000_000
SIZES = (1 * MB, 5 * MB, 20 * MB)
"""1 to 20 MB, in the decimal megabytes people count in: 20 MB is under the default 20 MiB upload limit."""

MEDIA_TYPES: dict[Kind, str] = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
REAL_DOCUMENTS = Path(__file__).resolve().parents[2] / "bench" / "real_documents_blind" / "documents"


@dataclass(frozen=True)
class Document:
    """A file to upload, a question about it and a phrase its answer must contain."""

    filename: str
    path: Path
    media_type: str
    question: str
    expected: str

    @property
    def size(self) -> int:
        return self.path.stat().st_size


@dataclass(frozen=True)
class Fact:
    """What a generated document says, distinct per document so an answer cannot come from another one."""

    subject: str
    value: str

    @property
    def sentence(self) -> str:
        return f"The {self.subject} is {self.value}."

    @property
    def question(self) -> str:
        return f"What is the {self.subject}?"


def _pad_zip(data: bytes, member: str, total: int) -> bytes:
    """``data`` (a DOCX or XLSX) with a stored, incompressible ``member`` that makes the file ``total`` bytes."""
    # A zip entry costs its name twice plus two headers (about 80 bytes); the exact size is fixed below.
    padding = max(total - len(data) - 2 * len(member) - 100, 0)
    buffer = io.BytesIO(data)
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(member, os.urandom(padding))
    padded = buffer.getvalue()
    assert abs(len(padded) - total) < 1024, (len(padded), total)
    return padded


def make_docx(fact: Fact, total: int) -> bytes:
    """A handbook-like DOCX about ``total`` bytes long whose text states ``fact``."""
    document = docx.Document()
    document.add_heading("Operations handbook", level=1)
    document.add_paragraph("This handbook describes how the regional offices run their week.")
    document.add_paragraph(fact.sentence)
    document.add_paragraph("Questions about this handbook go to the operations team.")
    buffer = io.BytesIO()
    document.save(buffer)
    return _pad_zip(buffer.getvalue(), "word/media/image1.png", total)


def make_xlsx(fact: Fact, total: int) -> bytes:
    """A workbook about ``total`` bytes long whose one sheet states ``fact`` in a row."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Figures"
    sheet.append(["Item", "Value", "Note"])
    sheet.append(["Office count", "12", "Across three regions."])
    sheet.append([fact.subject, fact.value, fact.sentence])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return _pad_zip(buffer.getvalue(), "xl/media/image1.png", total)


def make_generated_pdf(fact: Fact, total: int) -> bytes:
    """A three-page report about ``total`` bytes long that states ``fact`` on its second page."""
    pages = [
        ["Quarterly operations report.", "Prepared for the regional offices."],
        ["Key figures.", fact.sentence],
        ["Outlook.", "The offices expect a steady quarter."],
    ]
    return make_pdf(pages, padding=max(total - len(make_pdf(pages)), 0))


_MAKERS = {"pdf": make_generated_pdf, "docx": make_docx, "xlsx": make_xlsx}
_FACTS = [
    ("launch code of project Heron", "amber falcon 7"),
    ("budget of the Kestrel office", "418,250 euros"),
    ("meeting room of the Osprey team", "room Lindenhof 3"),
    ("delivery date of the Plover order", "14 March 2027"),
    ("badge number of the night porter", "B-20931"),
    ("archive shelf of the Curlew contract", "shelf 44 north"),
    ("supplier of the Avocet turbines", "Nordwind Maschinen"),
    ("travel limit of the Dunlin team", "2,300 euros a quarter"),
    ("password hint of the Snipe kiosk", "the blue lighthouse"),
]


def generate(folder: Path) -> dict[tuple[Kind, int], Document]:
    """One document of every kind and size, written to ``folder``; each states a fact of its own."""
    documents = {}
    facts = iter(_FACTS)
    for kind in KINDS:
        for size in SIZES:
            subject, value = next(facts)
            fact = Fact(subject, value)
            filename = f"{kind}-{size // MB}mb.{kind}"
            path = folder / filename
            path.write_bytes(_MAKERS[kind](fact, size))
            documents[kind, size] = Document(filename, path, MEDIA_TYPES[kind], fact.question, value)
    return documents


REAL = [
    Document(
        "crc-doc.1.0.pdf",
        REAL_DOCUMENTS / "crc-doc.1.0.pdf",
        "application/pdf",
        "What is a cyclic redundancy check?",
        "",
    ),
    Document(
        "LittleCMS2.14-tutorial.pdf",
        REAL_DOCUMENTS / "LittleCMS2.14-tutorial.pdf",
        "application/pdf",
        "How do I create a transform?",
        "",
    ),
    Document("triggers.txt", REAL_DOCUMENTS / "triggers.txt", "text/plain", "What is a trigger?", ""),
]
"""Real documents people upload (manuals of 0.6 and 0.8 MB, a text file); their answers are not pinned."""
