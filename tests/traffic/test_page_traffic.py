"""The chat page in Chromium against ``orc serve``: a person attaches a PDF of the size people have (5 MB) and asks
about it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.traffic.documents import MB, Document, Kind

pytestmark = pytest.mark.slow
WAIT_MS = 240_000
"""A bound for a page that never gets there, not a wait: each expectation returns as soon as the page does."""


def test_a_5_mb_pdf_attached_in_the_page_is_processed_and_answers_a_question_with_its_citation(
    page: Page, generated: dict[tuple[Kind, int], Document]
) -> None:
    document = generated["pdf", 5 * MB]
    assert document.size >= 5 * MB
    page.goto("/")
    expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=WAIT_MS)

    page.set_input_files("#file-input", str(document.path))
    expect(page.locator("#chips .chip[data-status=ready]")).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator(f"#chips .chip[data-filename='{document.filename}']")).to_be_visible()
    page.fill("#question", document.question)
    page.click("#send")

    expect(page.locator(".message.assistant[data-final=true]")).to_have_count(1, timeout=WAIT_MS)
    answer = page.locator(".message.assistant").first
    expect(answer.locator(".answer-body")).to_contain_text(document.expected)
    expect(answer.locator(".citation-chip").first).to_contain_text(f"{document.filename}, p. 2")
