"""The page as a new user meets it, in chromium against ``orc serve``: a first-run panel that says what to do, no
raw markers or internal words, one chip per quoted sentence, the quoted sentence (not the whole span) marked, a
file's summary and the diff banner from its chip, a header that follows the title, the page following new content,
keyboard shortcuts behind ``?``, icons that need no emoji font, and the dark theme."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.web.conftest import screenshot_folder
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow

LEASE = (
    b"Residential lease.\n\nThe tenant rents the flat at Rue Haute 12. The monthly rent is 1,450 euros. "
    b"Pets are allowed with the landlord's written consent.\n"
)
EMOJI_AND_SYMBOLS = ("☰", "✎", "✕", "👍", "👎")
JARGON = ("digest", "Revision", "No focus context", "::")


def lease_txt() -> dict[str, Any]:
    return {"name": "lease.txt", "mimeType": "text/plain", "buffer": LEASE}


def ask(page: Page, question: str, count: int) -> None:
    page.fill("#question", question)
    page.keyboard.press("Enter")
    answered(page, count)


# An answer rendered by the page's own module: two sentences quoting one span, a supplied passage, and a marker
# that names nothing cited (the server drops those; the page must never show one raw either).
RENDER_ANSWER = """
async () => {
  const { AnswerView } = await import("/web/js/chat.js");
  const opened = [];
  const view = new AnswerView({ onCitation: (citation) => opened.push(citation.quote) });
  document.getElementById("messages").append(view.element);
  const lease = { ref: "lease.txt::S1", document: "lease.txt", span_id: "S1", page: null };
  view.citation({ ...lease, quote: "The monthly rent is 1,450 euros." });
  view.citation({ ...lease, quote: "Pets are allowed with the landlord's written consent." });
  view.citation({ ref: "supplied::evidence-1", document: "supplied", span_id: "evidence-1", page: null,
                  quote: "Parking costs 40 euros." });
  view.token("The monthly rent is 1,450 euros. [lease.txt::S1] Pets are [lease");
  const streamed = view.body.textContent;
  view.finish("Pets are allowed with the landlord's written consent. [lease.txt::S1] The monthly rent is "
    + "1,450 euros. [lease.txt::S1] Parking costs 40 euros. [supplied::evidence-1] Bikes go in the cellar. "
    + "[house-rules.txt::S9]", null);
  for (const button of view.body.querySelectorAll(".citation-inline")) button.click();
  return {
    streamed,
    text: view.body.textContent,
    inline: [...view.body.querySelectorAll(".citation-inline")].map((b) => b.textContent),
    chips: [...view.chips.querySelectorAll(".citation-chip")].map((b) => b.textContent),
    opened,
  };
}
"""


def test_markers_become_numbered_links_and_each_quote_gets_its_own_chip(page: Page) -> None:
    ready(page)

    shown = page.evaluate(RENDER_ANSWER)

    assert "::" not in shown["streamed"] and "[lease" not in shown["streamed"]
    assert "::" not in shown["text"] and "[" not in shown["text"], shown["text"]
    assert shown["chips"] == ["1 lease.txt", "2 lease.txt", "3 Your supplied text"]
    # Each sentence links the chip of the quote it holds, in the order the answer says them.
    assert shown["inline"] == ["2", "1", "3"]
    assert shown["opened"] == [
        "Pets are allowed with the landlord's written consent.",
        "The monthly rent is 1,450 euros.",
        "Parking costs 40 euros.",
    ]


def test_a_first_visit_says_what_to_do_and_a_conversation_reads_without_internal_words(
    page: Page, tmp_path: Path
) -> None:
    shots = screenshot_folder(tmp_path)
    ready(page)
    empty = page.locator("#empty-state")
    expect(empty).to_be_visible()
    expect(empty).to_contain_text("Attach files")
    expect(page.locator("label.focus-picker")).to_contain_text("Also search")
    page.screenshot(path=shots / "web-empty.png")

    page.set_input_files("#file-input", [lease_txt()])
    chips_ready(page, 1)
    expect(page.locator("#diff-banner")).to_contain_text("Added 1 file")
    chip = page.locator("#chips .chip[data-filename='lease.txt']")
    summary = chip.get_by_role("button", name="Summary of lease.txt")
    expect(summary).to_be_visible()
    summary.click()
    expect(page.locator("#viewer .digest-summary")).not_to_be_empty()
    page.screenshot(path=shots / "web-digest.png")
    page.locator("#viewer-close").click()

    ask(page, "What is the monthly rent?", 1)
    expect(empty).to_be_hidden()
    expect(page.locator("#diff-banner")).to_be_hidden()  # news right after the upload, not a standing label
    expect(page.locator("#chat-title")).to_contain_text("Monthly rent")  # the server's title, without a reload
    answer = page.locator(".message.assistant").first
    expect(answer.locator(".context-statement")).to_be_hidden()
    visible_text = page.locator("#main").inner_text()
    for word in (*JARGON, *EMOJI_AND_SYMBOLS):
        assert word not in visible_text, word
    expect(answer.locator(".feedback button svg")).to_have_count(2)
    expect(page.locator("#toggle-sidebar svg, #conversations .conversation-delete svg").first).to_be_attached()

    answer.locator(".citation-chip").first.click()
    # The quoted sentence is marked, not the whole passage it sits in.
    expect(page.locator(".excerpt mark")).to_have_text("The monthly rent is 1,450 euros.")
    page.locator("#viewer-close").click()

    page.locator("#export-menu summary").click()
    with page.expect_download():
        page.locator("#export-menu button[data-format=markdown]").click()
    expect(page.locator("#export-menu .export-options")).to_be_hidden()


FEEDBACK_OF_LAST_ANSWER_IN_VIEW = """
() => {
  const list = document.getElementById("messages").getBoundingClientRect();
  const answers = document.querySelectorAll(".message.assistant .feedback");
  const last = answers[answers.length - 1].getBoundingClientRect();
  return last.top >= list.top && last.bottom <= list.bottom;
}
"""


def test_the_page_follows_new_answers_and_keyboard_shortcuts_are_listed_behind_a_question_mark(
    browser: Browser, server: str
) -> None:
    context = browser.new_context(base_url=server, viewport={"width": 1100, "height": 520})
    page = context.new_page()
    try:
        ready(page)
        page.set_input_files("#file-input", [lease_txt()])
        chips_ready(page, 1)
        for count, question in enumerate(
            ["What is the monthly rent?", "Are pets allowed?", "Where is the flat?"], start=1
        ):
            ask(page, question, count)
            at_end = page.evaluate(FEEDBACK_OF_LAST_ANSWER_IN_VIEW)
            assert at_end, f"answer {count} landed below the fold"

        page.locator("#chat-title").click()  # no field focused: single-key shortcuts apply
        page.keyboard.press("?")
        expect(page.locator("#shortcuts")).to_be_visible()
        expect(page.locator("#shortcuts")).to_contain_text("Open the last cited source")
        page.keyboard.press("Escape")
        expect(page.locator("#shortcuts")).to_be_hidden()
        expect(page.locator(".citation-chip").last).to_be_visible()
        page.locator("#chat-title").click()  # the focus back on the page, not on the closed dialog
        page.keyboard.press("c")
        expect(page.locator("#viewer")).to_be_visible()
        expect(page.locator(".excerpt mark")).to_contain_text("Rue Haute 12")
        page.locator("#viewer-close").click()
        page.keyboard.press("/")
        expect(page.locator("#question")).to_be_focused()
        page.locator("#chat-title").click()
        page.keyboard.press("n")
        expect(page.locator("#empty-state")).to_be_visible()
        expect(page.locator("#chat-title")).to_have_text("New chat")
    finally:
        context.close()


def test_the_dark_theme_follows_the_system(browser: Browser, server: str, tmp_path: Path) -> None:
    context = browser.new_context(base_url=server, viewport={"width": 1280, "height": 860}, color_scheme="dark")
    page = context.new_page()
    try:
        ready(page)
        background = page.evaluate("() => getComputedStyle(document.documentElement).backgroundColor")
        red, green, blue = (int(part) for part in background[background.index("(") + 1 : -1].split(",")[:3])
        assert red + green + blue < 150, background
        page.set_input_files("#file-input", [lease_txt()])
        chips_ready(page, 1)
        ask(page, "What is the monthly rent?", 1)
        page.locator(".citation-chip").first.click()
        expect(page.locator(".excerpt mark")).to_be_visible(timeout=WAIT_MS)
        page.screenshot(path=screenshot_folder(tmp_path) / "web-dark.png")
    finally:
        context.close()


def test_with_auto_parse_off_files_wait_for_summarize_now(page: Page) -> None:
    ready(page)
    page.get_by_label("Summarize files automatically").uncheck()

    page.set_input_files("#file-input", [lease_txt()])
    chips_ready(page, 1)
    chip = page.locator("#chips .chip[data-filename='lease.txt']")
    expect(chip).to_contain_text("Summary waiting")
    expect(chip.get_by_role("button", name="Summary of lease.txt")).to_have_count(0)

    page.get_by_role("button", name="Summarize now").click()
    expect(chip.get_by_role("button", name="Summary of lease.txt")).to_be_visible()
    expect(page.get_by_role("button", name="Summarize now")).to_be_hidden()
    expect(page.get_by_label("Summarize files automatically")).not_to_be_checked()
