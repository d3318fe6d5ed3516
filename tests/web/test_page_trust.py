"""The page without rough edges (issue 39, items 2 and 3), in chromium against ``orc serve``, each at 1280 px and at
390 px with no console error: a citation opens in its panel without moving the page; refused files are listed with
a short reason each; uploads show their progress per file; answers can be copied and asked again; suggestions read
as a person asks; the request card is styled and fits a phone; the page speaks plainly; file rows carry size, time,
"Unchanged" and Download; a summary's points open the passages they come from; with auto-parse off every status
says the files wait. The real-model items (Stop, Regenerate, the model's own suggestions, a failed summary of all
files and its retry) run against a local OpenAI-compatible endpoint in ``test_page_real_model.py``."""

from __future__ import annotations

import itertools
import re

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.documents.pdf_factory import make_pdf
from tests.web.conftest import LEASE_PAGES, SIZES, lease_pdf, text_file, watched_page
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow

# A lease long enough that its quoted sentence sits far down the text a citation opens.
FILLER = "\n\n".join(f"Clause {n}. The flat has a kitchen, a bathroom and a cellar." for n in range(1, 41))
LONG_LEASE = (
    f"Residential lease.\n\n{FILLER}\n\nThe monthly rent is 1,450 euros, payable on the first day of each month.\n\n"
    "Pets are allowed with the landlord's written consent.\n\nThe deposit is 2,900 euros.\n"
).encode()
JARGON = (
    "+1 new",
    "~0 changed",
    "−0 deleted",
    "rtifact",
    "digest",
    "parsing",
    "Supply",
    "::",
    "document_chat",
    "Tool ",
)


def ask(page: Page, question: str, count: int) -> None:
    page.fill("#question", question)
    page.keyboard.press("Enter")
    answered(page, count)


def in_view(page: Page, selector: str) -> bool:
    """Whether the element is wholly inside the window (not scrolled away, not cut by the page's edges)."""
    return bool(
        page.locator(selector).first.evaluate(
            """(el) => { const r = el.getBoundingClientRect();
                return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth; }"""
        )
    )


PAGE_OFFSET = "() => [window.scrollX, window.scrollY, document.scrollingElement.scrollTop, document.body.scrollTop]"


def test_a_citation_opens_in_its_panel_without_moving_the_page(sized: Page) -> None:
    page = sized
    ready(page)
    pdf = {"name": "lease.pdf", "mimeType": "application/pdf", "buffer": lease_pdf()}
    page.set_input_files("#file-input", [text_file("long-lease.txt", LONG_LEASE), pdf])
    chips_ready(page, 2)
    for count, question in enumerate(
        ["What is the monthly rent?", "How much notice is needed to end the lease?", "Are pets allowed?"], start=1
    ):
        ask(page, question, count)

    for answer in range(3):
        page.locator(".message.assistant").nth(answer).locator(".citation-chip").first.click()
        expect(page.locator("#viewer .excerpt mark")).to_be_visible()
        if page.locator("#viewer .pdf-page").count():
            expect(page.locator(".pdf-page")).to_have_attribute("data-rendered", "true", timeout=WAIT_MS)

        assert page.evaluate(PAGE_OFFSET) == [0, 0, 0, 0]
        for selector in ("#viewer-title", "#viewer-close"):
            assert in_view(page, selector), selector
        if page.viewport_size and page.viewport_size["width"] > 760:
            assert in_view(page, ".topbar") and in_view(page, "#composer")  # beside the panel, still there
        # The quoted sentence is shown inside the panel (its body scrolled to it, not the page).
        marked = "#viewer .textLayer .highlight" if page.locator("#viewer .pdf-page").count() else "#viewer mark"
        assert page.locator(marked).first.evaluate(
            """(el) => { const box = document.getElementById('viewer-body').getBoundingClientRect();
                const r = el.getBoundingClientRect(); return r.top >= box.top && r.bottom <= box.bottom; }"""
        )
        page.locator("#viewer-close").click()
        expect(page.locator("#viewer")).to_be_hidden()
        assert page.evaluate(PAGE_OFFSET) == [0, 0, 0, 0]


def test_refused_files_are_listed_each_with_a_short_reason(browser: Browser, server: str) -> None:
    heic = {"name": "photo.heic", "mimeType": "image/heic", "buffer": bytes(range(256)) * 8}
    archive = {"name": "notes.7z", "mimeType": "application/x-7z-compressed", "buffer": b"7z\xbc\xaf\x27\x1c" * 40}
    for size in SIZES.values():
        # The only request the server refuses is the batch whose every file it cannot read: the browser reports it.
        with watched_page(browser, server, size, expected=("status of 415",)) as page:
            ready(page)
            page.set_input_files("#file-input", [text_file("lease.txt", LONG_LEASE), heic, text_file("empty.txt", b"")])
            chips_ready(page, 1)
            refused = page.locator("#chips .chip[data-status=refused]")
            expect(refused).to_have_count(2)
            expect(refused.filter(has_text="photo.heic")).to_contain_text("Not added: orc can't read this kind of file")
            expect(refused.filter(has_text="empty.txt")).to_contain_text("Not added: the file is empty")
            assert ".docx" not in page.locator("#context-bar").inner_text()  # no wall of supported types

            # A batch of files none of which can be read: each is still listed, none silently dropped.
            page.set_input_files("#file-input", [heic, archive])
            expect(refused).to_have_count(2)
            expect(refused.filter(has_text="notes.7z")).to_contain_text("orc can't read this kind of file")
            expect(page.locator("#composer-error")).to_be_hidden()
            assert page.evaluate("() => document.documentElement.scrollWidth") <= page.viewport_size["width"]  # type: ignore[index]

            refused.filter(has_text="notes.7z").get_by_role("button", name="Dismiss notes.7z").click()
            expect(refused).to_have_count(1)
            expect(page.locator("#chips .chip[data-status=ready]")).to_have_count(1)


# Records each upload row's progress values as the page sets them (init scripts run before the page's own).
RECORD_PROGRESS = """
window.__progress = {};
new MutationObserver((records) => {
  for (const record of records) {
    const bars = record.type === "attributes" ? [record.target]
      : [...record.addedNodes].flatMap((n) => n.querySelectorAll ? [...n.querySelectorAll("progress")] : []);
    for (const bar of bars) {
      if (bar.tagName !== "PROGRESS") continue;
      (window.__progress[bar.dataset.name] ||= []).push([Number(bar.value), Number(bar.max)]);
    }
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["value"] });
"""


def test_each_file_of_an_upload_shows_its_own_progress(sized: Page) -> None:
    page = sized
    page.add_init_script(RECORD_PROGRESS)
    ready(page)
    # A 5 MB PDF (as users send) and a small note, in one upload.
    big = make_pdf(LEASE_PAGES, padding=5 * 1024 * 1024)
    files = [{"name": "big-lease.pdf", "mimeType": "application/pdf", "buffer": big}, text_file("note.txt", b"Hi.")]
    page.set_input_files("#file-input", files)
    chips_ready(page, 2)

    progress = page.evaluate("() => window.__progress")
    for name, size in (("big-lease.pdf", len(big)), ("note.txt", 3)):
        values = progress[name]
        assert values[0][0] == 0 and values[-1] == [size, size], (name, values)
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(values)), values  # never goes back
    row = page.locator("#chips .chip[data-filename='big-lease.pdf']")
    expect(row.locator(".chip-meta")).to_contain_text("MB")


def test_an_answer_can_be_copied_and_asked_again(browser: Browser, server: str) -> None:
    for size in SIZES.values():
        with watched_page(browser, server, size) as page:
            page.context.grant_permissions(["clipboard-read", "clipboard-write"])
            ready(page)
            page.set_input_files("#file-input", [text_file("lease.txt", LONG_LEASE)])
            chips_ready(page, 1)
            ask(page, "What is the monthly rent?", 1)
            answer = page.locator(".message.assistant").first

            answer.get_by_role("button", name="Copy").click()
            expect(answer.get_by_role("button", name="Copied")).to_be_visible()
            copied = page.evaluate("() => navigator.clipboard.readText()")
            assert "1,450 euros" in copied and "::" not in copied and "[" not in copied, copied

            answer.get_by_role("button", name="Regenerate").click()
            answered(page, 2)
            expect(page.locator(".message.user")).to_have_count(2)
            expect(page.locator(".message.user").nth(1)).to_contain_text("What is the monthly rent?")
            expect(page.locator(".message.assistant").nth(1).locator(".answer-body")).to_contain_text("1,450 euros")


def test_suggestions_are_phrased_as_a_person_asks_and_ask_when_clicked(sized: Page) -> None:
    page = sized
    ready(page)
    page.set_input_files("#file-input", [text_file("lease-agreement.md", LONG_LEASE)])
    chips_ready(page, 1)
    ask(page, "What is the monthly rent?", 1)

    chips = page.locator(".message.assistant").first.locator(".suggestions .suggestion")
    expect(chips.first).to_be_visible()
    texts = chips.all_inner_texts()
    assert "Are pets allowed?" in texts or "How much is the deposit?" in texts, texts
    for text in texts:
        # A file is named as a file ("What does lease-agreement.md say about …?"), never made a noun ("the
        # lease-agreement"), and no adjective or adverb is asked about as a topic.
        assert text.endswith("?") and not text.startswith("What about"), text
        assert not re.search(r"\bthe lease[- ]agreement\b|about (residential|\w+ly)\?", text), text
    chips.first.click()
    answered(page, 2)
    expect(page.locator(".message.user").nth(1).locator("p").first).to_have_text(texts[0])


def test_the_request_card_is_styled_fits_a_phone_and_speaks_plainly(sized: Page) -> None:
    page = sized
    ready(page)
    page.set_input_files("#file-input", [text_file("lease.txt", LONG_LEASE)])
    chips_ready(page, 1)
    ask(page, "What is the monthly rent?", 1)
    page.fill("#question", "What is the parking fee for the second car?")
    page.keyboard.press("Enter")
    card = page.locator(".context-request")
    expect(card).to_be_visible(timeout=WAIT_MS)

    # The browser's own "Choose File / No file chosen" is replaced by a button-like label.
    expect(card.get_by_text("Choose a file")).to_be_visible()
    native = card.locator("input[type=file]").first.bounding_box()
    assert native is not None and native["width"] <= 1 and native["height"] <= 1
    width = page.viewport_size["width"]  # type: ignore[index]
    box = card.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    assert card.evaluate("(el) => el.scrollWidth <= el.clientWidth")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    parking = b"The parking fee for the second car is 40 euros per month."
    card.locator("input[type=file]").first.set_input_files([text_file("parking.txt", parking)])
    expect(card.locator(".supply-chosen").first).to_have_text("parking.txt")
    expect(card.get_by_role("button", name="Pick from this chat")).to_be_visible()
    visible = page.locator("#main").inner_text()
    for word in JARGON:
        assert word not in visible, word

    card.get_by_role("button", name="Use this").first.click()
    answered(page, 2)
    expect(page.locator(".message.assistant").nth(1).locator(".answer-body")).to_contain_text("40 euros")


def test_file_rows_show_size_time_unchanged_and_download(sized: Page) -> None:
    page = sized
    ready(page)
    page.set_input_files("#file-input", [text_file("lease.txt", LONG_LEASE)])
    chips_ready(page, 1)
    row = page.locator("#chips .chip[data-filename='lease.txt']")
    expect(row.locator(".chip-meta")).to_contain_text("KB")
    expect(row.locator(".chip-meta time")).to_have_text("just now")
    expect(row.locator(".state")).to_have_text("Ready")
    expect(page.locator("#diff-banner")).to_contain_text("Added 1 file")

    page.set_input_files("#file-input", [text_file("lease.txt", LONG_LEASE)])  # the same file again
    expect(row.locator(".state")).to_have_text("Unchanged")
    expect(page.locator("#diff-banner")).to_contain_text("No changes")

    with page.expect_download() as download:
        row.get_by_role("button", name="Download lease.txt").click()
    assert download.value.suggested_filename == "lease.txt"
    assert download.value.path().read_bytes() == LONG_LEASE
    ask(page, "What is the monthly rent?", 1)
    expect(row.locator(".state")).to_have_text("Ready")  # news until the next question
    page.locator(".message.assistant .how summary").first.click()
    expect(page.locator(".message.assistant .how li").first).to_be_visible()
    visible = page.locator("#main").inner_text()
    for word in JARGON:
        assert word not in visible, word


def test_a_summarys_points_open_the_passages_they_come_from(sized: Page) -> None:
    page = sized
    ready(page)
    page.set_input_files("#file-input", [text_file("lease.txt", LONG_LEASE)])
    chips_ready(page, 1)
    page.locator("#chips .chip[data-filename='lease.txt']").get_by_role("button", name="Summary of lease.txt").click()
    points = page.locator("#viewer .digest-facts li")
    expect(points.first).to_be_visible()
    point = points.last
    claim = point.evaluate("(li) => li.firstChild.data").strip()
    assert claim

    point.locator(".fact-source").first.click()
    expect(page.locator("#viewer-title")).to_have_text("lease.txt")
    expect(page.locator("#viewer .excerpt mark")).to_contain_text(claim)  # the point's own sentence, marked
    assert page.evaluate(PAGE_OFFSET) == [0, 0, 0, 0]
    page.get_by_role("button", name="← Back to the summary").click()
    expect(page.locator("#viewer .digest-facts li").last).to_contain_text(claim)


def test_with_auto_parse_off_every_status_says_the_files_wait(sized: Page, server: str) -> None:
    page = sized
    ready(page)
    page.get_by_label("Summarize files automatically").uncheck()
    with page.expect_response(lambda response: response.url.endswith("/context/files")) as uploaded:
        page.set_input_files("#file-input", [text_file("lease.txt", LONG_LEASE)])
    chips_ready(page, 1)
    row = page.locator("#chips .chip[data-filename='lease.txt']")
    expect(row.locator(".state")).to_have_text("Summary waiting")
    expect(page.get_by_role("button", name="Summarize now")).to_be_visible()
    assert "Summarizing" not in page.locator("#context-bar").inner_text()

    mutation = uploaded.value.json()
    session = uploaded.value.url.split("/api/sessions/")[1].split("/")[0]
    manifest = httpx.get(f"{server}/api/sessions/{session}/context", timeout=30).json()
    assert [f["digest_status"] for f in mutation["files"]] == [f["digest_status"] for f in manifest["files"]]
    assert manifest["aggregate_digest_status"] == "stale" and not manifest["parsing"]
