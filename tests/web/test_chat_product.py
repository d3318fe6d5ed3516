"""The chat page's product around the answer, in chromium against ``orc serve``: a paused question's context
request card (supply in place, or answer without it), follow-up suggestion chips, thumbs up/down kept across
reloads, renaming and exporting a conversation."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import attachments, screenshot_folder
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow


def test_a_question_the_files_cannot_answer_asks_for_context_and_goes_on_in_place(page: Page, tmp_path: Path) -> None:
    ready(page)
    page.set_input_files("#file-input", attachments())
    chips_ready(page, 2)

    page.fill("#question", "What is the parking fee for the second car?")
    page.click("#send")
    card = page.locator(".context-request")
    expect(card).to_be_visible(timeout=WAIT_MS)
    expect(card.locator("legend")).to_contain_text("do not seem to answer")
    expect(card.locator(".suggestion-supply").first).to_be_visible()
    assert "::" not in card.inner_text()  # suggestions name documents, never raw SourceRefs
    page.screenshot(path=screenshot_folder(tmp_path) / "web-context-request.png")
    card.locator(".supply-text").fill("Parking for a second car costs 40 euros per month.")
    card.locator("button.supply").click()

    answered(page, 1)
    answer = page.locator(".message.assistant").first
    expect(answer.locator(".answer-body")).to_contain_text("40 euros")
    expect(answer.locator(".context-request")).to_have_count(0)
    expect(page.locator(".message.assistant")).to_have_count(1)  # the same answer continued

    page.fill("#question", "Which bicycle storage rules apply?")
    page.click("#send")
    second = page.locator(".message.assistant").nth(1)
    expect(second.locator(".context-request")).to_be_visible(timeout=WAIT_MS)
    second.get_by_role("button", name="Answer without it").click()
    answered(page, 2)
    expect(second.locator(".answer-body")).to_contain_text("Answered without the requested context")


def test_suggestions_feedback_rename_and_export(page: Page) -> None:
    ready(page)
    page.set_input_files("#file-input", attachments())
    chips_ready(page, 2)
    page.fill("#question", "What is the monthly rent?")
    page.click("#send")
    answered(page, 1)
    first = page.locator(".message.assistant").first

    chips = first.locator(".suggestions .suggestion")
    expect(chips.first).to_be_visible()
    suggestion = chips.first.inner_text()
    chips.first.click()
    expect(page.locator(".message.user").nth(1)).to_contain_text(suggestion)
    answered(page, 2)

    first.get_by_role("button", name="Helpful", exact=True).click()
    expect(first.get_by_role("button", name="Helpful", exact=True)).to_have_attribute("aria-pressed", "true")
    page.locator("#conversations .conversation-open").first.click()  # reopen: the rating was stored
    expect(
        page.locator(".message.assistant").first.get_by_role("button", name="Helpful", exact=True)
    ).to_have_attribute("aria-pressed", "true")

    page.locator("#conversations .conversation-rename").first.click()
    page.locator(".rename-input").fill("Lease questions")
    page.keyboard.press("Enter")
    expect(page.locator("#conversations .conversation-title").first).to_have_text("Lease questions")
    expect(page.locator("#chat-title")).to_have_text("Lease questions")

    page.locator("#export-menu summary").click()
    with page.expect_download() as download:
        page.locator("#export-menu button[data-format=markdown]").click()
    assert download.value.suggested_filename.endswith(".md")
    exported = download.value.path().read_text(encoding="utf-8")
    assert "Lease questions" in exported and "1,450" in exported
