"""Context requests on the page, in chromium against ``orc serve``: the artifacts drawer (search, attach in one
click), the request's timeline on its card, and the ended request shown where it happened when the conversation
is opened again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.serving import orc_serve
from tests.web.conftest import attachments, screenshot_folder
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow


def test_the_drawer_attaches_an_artifact_in_one_click_and_the_request_stays_in_the_history(
    page: Page, tmp_path: Path
) -> None:
    ready(page)
    page.set_input_files("#file-input", attachments())
    chips_ready(page, 2)
    page.fill("#question", "What is the monthly rent?")
    page.click("#send")
    answered(page, 1)

    page.fill("#question", "What is the parking fee for the second car?")
    page.click("#send")
    card = page.locator(".context-request")
    expect(card).to_be_visible(timeout=WAIT_MS)
    expect(card.locator(".request-timeline .request-asked")).to_contain_text("Asked at")
    card.get_by_role("button", name="Pick from this chat").click()
    drawer = page.locator("dialog.artifacts-drawer")
    expect(drawer).to_be_visible()
    expect(drawer.locator(".artifact-document")).to_have_count(2)
    drawer.locator(".artifacts-search").fill("monthly rent")
    expect(drawer.locator(".artifact-document")).to_have_count(0)  # neither file's name holds the words
    expect(drawer.locator(".artifact-answer")).to_have_count(1)
    expect(drawer.locator(".artifact-answer .artifact-title")).to_have_text("What is the monthly rent?")
    page.screenshot(path=screenshot_folder(tmp_path) / "web-artifacts-drawer.png")
    drawer.locator(".artifact-answer .artifact-attach").click()

    answered(page, 2)
    second = page.locator(".message.assistant").nth(1)
    expect(drawer).to_be_hidden()
    expect(second.locator(".context-request")).to_have_count(0)

    page.locator("#conversations .conversation-open").first.click()
    history = page.locator(".request-history")
    expect(history).to_have_count(1)
    expect(history.locator("summary")).to_contain_text("Answered with what you gave")
    expect(history.locator(".request-supply")).to_contain_text("1,450")  # the earlier answer, attached
    # Where it happened: right after the question it paused, before that question's answer.
    questions = page.locator(".message.user")
    expect(questions.nth(1)).to_contain_text("parking fee")
    assert questions.nth(1).evaluate("el => el.nextElementSibling.classList.contains('request-history')")


def test_a_reopened_conversation_shows_its_waiting_question_once_with_its_card(page: Page) -> None:
    ready(page)
    page.set_input_files("#file-input", attachments())
    chips_ready(page, 2)
    page.fill("#question", "What is the parking fee for a motorbike?")
    page.click("#send")
    expect(page.locator(".context-request")).to_be_visible(timeout=WAIT_MS)

    current = page.locator("#conversations .conversation.current .conversation-open")
    expect(current).to_have_count(1, timeout=WAIT_MS)
    current.click()  # open it again from the list, as after a reload

    card = page.locator(".context-request")
    expect(card).to_have_count(1, timeout=WAIT_MS)
    expect(page.locator(".message.user")).to_have_count(1)
    expect(page.locator(".message.user")).to_contain_text("motorbike")


@pytest.fixture(scope="module")
def short_deadline_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose paused turns wait 8 s, remind after 4 s and are swept every second (an eighth of the
    timeout), instead of a test that waits minutes."""
    env = {
        "ORC_CONTEXT_REQUEST_TIMEOUT": "8",
        "ORC_CONTEXT_REQUEST_REMINDER": "0.5",
    }
    with orc_serve(tmp_path_factory.mktemp("web-deadline") / "home", env=env) as (base_url, _):
        yield base_url


def test_a_first_question_without_documents_asks_and_its_card_shows_arrival_reminder_and_expiry(
    browser: Browser, short_deadline_server: str
) -> None:
    context = browser.new_context(base_url=short_deadline_server)
    page = context.new_page()
    try:
        ready(page)
        page.fill("#question", "What is the notice period of my lease?")
        page.click("#send")
        card = page.locator(".context-request")
        expect(card).to_be_visible(timeout=WAIT_MS)
        expect(card.locator("legend")).to_contain_text("no documents to answer from")
        timeline = card.locator(".request-timeline")
        expect(timeline.locator(".request-asked")).to_contain_text("Asked at")
        expect(timeline.locator(".request-reminder")).to_contain_text("still waiting for context", timeout=WAIT_MS)
        expect(timeline.locator(".request-expired")).to_contain_text("goes on without it", timeout=WAIT_MS)
    finally:
        context.close()
