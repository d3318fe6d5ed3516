"""Prompt sheets: the answer prompt's sections in the order and wording a sheet file gives, checked when loaded."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from orc.errors import PromptFileError
from orc.models import prompting, sheets
from orc.models.prompting import override_prompts
from orc.models.sheets import MESSAGE_SECTIONS, check_prompts, load_sheet, sheet_name

CONTENTS: dict[sheets.SectionName, str] = {
    "digest": "<digest>the lease and the handbook</digest>",
    "file_digests": '<file_digests>\n<file_digest document="lease.txt">Summary: a lease</file_digest>\n</file_digests>',
    "contexts": "<context>Focus context: folder legal</context>",
    "tool_answers": '<tool_answer tool="documents.list">lease.txt</tool_answer>',
    "sources": '<sources>\n<source ref="lease.txt::S1">Rent is 900 euros.</source>\n</sources>',
    "supplied": '<supplied_context>\n<supplied slot="parking">Parking costs 80 euros.</supplied>\n</supplied_context>',
}


@pytest.mark.parametrize("mode", ["document", "planned", "resumed"])
def test_every_mode_has_a_sheet_pinned_in_the_manifest_that_places_sources_and_the_question(mode: str) -> None:
    sheet = load_sheet(sheet_name(mode))  # type: ignore[arg-type]

    assert sheet.version == prompting.prompt_version(f"{sheet.name}.sheet")
    assert sheet.section("sources") is not None and sheet.section("question") is not None
    assert [section.name for section in sheet.sections if section.name in MESSAGE_SECTIONS][-1] == "question"


def test_sections_render_in_the_sheets_order_with_their_headings_and_wording() -> None:
    sheet = load_sheet("answer.resumed")

    rendered = sheet.render_system(CONTENTS)

    assert rendered.startswith(sheet.instructions.render().strip())
    positions = [rendered.index(f"## {section.heading}") for section in sheet.system_sections]
    assert positions == sorted(positions)
    supplied = sheet.section("supplied")
    assert supplied is not None and supplied.wording in rendered
    # The resumed sheet leads with what the user supplied; the document sheet lists it after the contexts.
    assert rendered.index("Parking costs") < rendered.index("Rent is 900")
    document = load_sheet("answer.document").render_system(CONTENTS)
    assert document.index("Focus context") < document.index("Parking costs")


def test_a_section_without_content_this_turn_is_left_out_with_its_heading() -> None:
    sheet = load_sheet("answer.document")

    rendered = sheet.render_system({"sources": CONTENTS["sources"], "supplied": "  "})

    digest, supplied = sheet.section("digest"), sheet.section("supplied")
    assert digest is not None and supplied is not None
    assert f"## {digest.heading}" not in rendered and f"## {supplied.heading}" not in rendered
    assert "Rent is 900" in rendered


@pytest.fixture
def sheet_folder(tmp_path: Path) -> Path:
    """A copy of prompts/ to write broken sheets into, read as an ORC_PROMPTS_DIR override is."""
    for entry in resources.files("orc.prompts").iterdir():
        if entry.name.endswith((".txt", ".json", ".toml")):
            (tmp_path / entry.name).write_text(entry.read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda text: text.replace('name = "digest"', 'name = "secrets"'), "unknown section"),
        (lambda text: text.replace('name = "digest"', 'name = "sources"'), "twice"),
        (lambda text: text.replace('version = "2"', 'version = "3"'), "manifest pins"),
        (lambda text: text.replace('[[sections]]\nname = "question"\n', ""), "'question'"),
        (
            lambda text: (
                text.replace('name = "history"', 'name = "HOLD"')
                .replace('name = "question"', 'name = "history"')
                .replace('name = "HOLD"', 'name = "question"')
            ),
            "in that order",
        ),
        (
            lambda text: text.replace('instructions = "answer.instructions"', 'instructions = "document_chat.system"'),
            "no variables",
        ),
        (lambda text: text.replace('heading = "Session digest"', 'headline = "Session digest"'), "unknown keys"),
    ],
)
def test_a_broken_sheet_is_refused_when_it_is_loaded(sheet_folder: Path, change, problem: str) -> None:  # type: ignore[no-untyped-def]
    path = sheet_folder / "answer.document.sheet.toml"
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    files = {entry.name: entry.read_text(encoding="utf-8") for entry in sheet_folder.iterdir()}

    with pytest.raises(PromptFileError, match=problem) as refused:
        check_prompts(override_prompts(files, str(sheet_folder)))
    assert f"{sheet_folder}/answer.document.sheet.toml" in str(refused.value)
