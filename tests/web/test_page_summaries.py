"""A file too long to summarize, on the page (chromium against ``orc serve``, at 1280 px and at 390 px): its row
says plainly that it has no summary and why, in a neutral note rather than a red failure, and offers no retry that
could never succeed; the file still answers questions."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import text_file
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow

# More than the 400,000 characters a summary reads; the answer to the question sits in its last section.
MANUAL = (
    "\n\n".join(f"Section {n}. The daemon rereads its configuration on a hangup signal." for n in range(6000))
    + "\n\nThe daemon writes its process id to /run/orcd.pid when it starts.\n"
).encode()


def test_a_file_too_long_to_summarize_gets_a_neutral_note_and_no_retry(sized: Page) -> None:
    page = sized
    ready(page)
    notes = text_file("notes.txt", b"The daemon logs to syslog.")
    page.set_input_files("#file-input", [text_file("manual.txt", MANUAL), notes])
    chips_ready(page, 2)
    row = page.locator("#chips .chip[data-filename='manual.txt']")
    expect(row).to_have_attribute("data-digest", "error", timeout=WAIT_MS)

    expect(row.locator(".state")).to_have_text("No summary")
    expect(row.locator(".chip-reason")).to_contain_text("too long to summarize")
    expect(row.locator(".chip-retry")).to_have_count(0)
    expect(page.get_by_text("Summary failed")).to_have_count(0)
    # Neutral, not the red of a failure: the chip and its note take the muted colour of other notes.
    state, reason = (
        row.locator(sel).evaluate("(el) => getComputedStyle(el).color") for sel in (".state", ".chip-reason")
    )
    bad = page.evaluate(
        """() => { const probe = document.body.appendChild(document.createElement('span'));
            probe.style.color = 'var(--bad)'; const colour = getComputedStyle(probe).color; probe.remove();
            return colour; }"""
    )
    assert state == reason != bad, (state, reason, bad)
    # The note fits the row (a phone too): nothing runs past the window's edge.
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    # The summary of all files is made from the file that has one; it is offered, not failed.
    expect(page.locator("#all-summary-status")).to_have_attribute("data-status", "ready", timeout=WAIT_MS)
    expect(page.locator("#all-summary")).to_be_visible()

    page.fill("#question", "Where does the daemon write its process id?")
    page.keyboard.press("Enter")
    answered(page, 1)
    expect(page.locator(".message.assistant .answer-body").first).to_contain_text("/run/orcd.pid")


def test_with_no_file_summarized_there_is_no_summary_of_all_files_to_open(sized: Page) -> None:
    page = sized
    ready(page)
    page.set_input_files("#file-input", [text_file("manual.txt", MANUAL)])
    chips_ready(page, 1)
    row = page.locator("#chips .chip[data-filename='manual.txt']")
    expect(row.locator(".state")).to_have_text("No summary", timeout=WAIT_MS)
    expect(page.locator("#all-summary-status")).to_have_attribute("data-status", "ready", timeout=WAIT_MS)

    expect(page.locator("#all-summary")).to_be_hidden()
