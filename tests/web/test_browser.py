"""The chat page end to end in chromium: upload, live chips, a streamed answer, citations that open the quoted span
on the right PDF page, a follow-up, deletion; then the same with the keyboard only, and on a 390 px phone."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.serving import orc_serve
from tests.web.conftest import COUNT_TOKEN_UPDATES, attachments, screenshot_folder

pytestmark = pytest.mark.slow
WAIT_MS = 60_000
# Every expectation may wait as long as processing a file can take on a loaded CI machine (it returns as soon
# as the page gets there; the 5 s default failed under a load average of 10 on 2 cores).
expect.set_options(timeout=WAIT_MS)


def ready(page: Page) -> None:
    page.goto("/")
    expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=WAIT_MS)


def chips_ready(page: Page, count: int) -> None:
    try:
        expect(page.locator("#chips .chip[data-status=ready]")).to_have_count(count, timeout=WAIT_MS)
    except AssertionError as exc:
        raise AssertionError(page.locator("#context-bar").inner_text()) from exc


def answered(page: Page, count: int) -> None:
    """Wait for the ``count``-th answer to be final (it is marked when its text is rendered)."""
    expect(page.locator(".message.assistant[data-final=true]")).to_have_count(count, timeout=WAIT_MS)


def test_a_conversation_from_upload_to_cited_answers_and_deletion(page: Page, tmp_path: Path) -> None:
    shots = screenshot_folder(tmp_path)
    page.add_init_script(COUNT_TOKEN_UPDATES)
    ready(page)
    expect(page.locator("#conversations-empty")).to_be_visible()

    page.set_input_files("#file-input", attachments())
    chips_ready(page, 2)
    expect(page.locator("#diff-banner")).to_contain_text("Added 2 files")
    expect(page.locator("#all-summary")).to_be_visible()
    page.screenshot(path=shots / "web-files.png")

    page.fill("#question", "What is the monthly rent?")
    page.click("#send")
    answered(page, 1)
    answer = page.locator(".message.assistant").first
    expect(answer.locator(".answer-body")).to_contain_text("1,450 euros")
    assert page.evaluate("() => window.__tokenUpdates") > 1  # the text grew token by token
    expect(answer.locator(".how li")).not_to_have_count(0)  # progress and tool steps were recorded
    answer.locator(".how summary").click()
    expect(answer.locator(".how li").first).to_be_visible()
    expect(page.locator("#conversations li")).to_have_count(1)

    chip = answer.locator(".citation-chip").first
    expect(chip).to_contain_text("lease.pdf, p. 2")
    chip.click()
    expect(page.locator("#viewer-where")).to_contain_text("Page 2 of 3")
    expect(page.locator(".pdf-page")).to_have_attribute("data-rendered", "true", timeout=WAIT_MS)
    expect(page.locator(".textLayer .highlight").first).to_be_visible()
    highlighted = " ".join(page.locator(".textLayer .highlight").all_text_contents())
    assert "1,450 euros" in highlighted, highlighted
    expect(page.locator(".excerpt mark")).to_contain_text("1,450 euros")
    page.screenshot(path=shots / "web-citation.png")

    page.fill("#question", "How much notice is needed to end the lease?")
    page.keyboard.press("Enter")
    answered(page, 2)
    second = page.locator(".message.assistant").nth(1)
    expect(second.locator(".answer-body")).to_contain_text("60 days")
    second.locator(".citation-chip").first.click()
    expect(page.locator("#viewer-where")).to_contain_text("Page 3 of 3")
    expect(page.locator(".pdf-page")).to_have_attribute("data-rendered", "true", timeout=WAIT_MS)
    assert "60 days" in " ".join(page.locator(".textLayer .highlight").all_text_contents())

    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("#conversations .conversation-delete").first.click()
    expect(page.locator("#conversations li")).to_have_count(0)
    expect(page.locator("#messages article")).to_have_count(0)
    expect(page.locator("#viewer")).to_be_hidden()


def test_a_docx_citation_opens_its_text_with_the_quote_marked(page: Page) -> None:
    ready(page)
    page.set_input_files("#file-input", attachments()[1:])
    chips_ready(page, 1)
    page.fill("#question", "How many vacation days do new employees get?")
    page.click("#send")
    answered(page, 1)
    page.locator(".citation-chip").first.click()
    expect(page.locator(".excerpt mark")).to_contain_text("25 vacation days")
    expect(page.locator(".pdf-page")).to_have_count(0)


def test_files_can_be_replaced_and_removed_from_their_chips(page: Page) -> None:
    ready(page)
    page.set_input_files("#file-input", attachments())
    chips_ready(page, 2)
    handbook = page.locator("#chips .chip[data-filename='handbook.docx']")
    with page.expect_file_chooser() as chooser:
        handbook.get_by_role("button", name="Replace handbook.docx").click()
    changed = {**attachments()[1], "buffer": attachments()[1]["buffer"] + b""}  # same bytes: unchanged
    chooser.value.set_files(changed)  # type: ignore[arg-type]
    chips_ready(page, 2)
    page.locator("#chips .chip[data-filename='lease.pdf']").get_by_role("button", name="Remove lease.pdf").click()
    expect(page.locator("#chips .chip")).to_have_count(1)
    expect(page.locator("#diff-banner")).to_contain_text("Removed 1 file")


def test_the_page_works_with_the_keyboard_only(page: Page) -> None:
    # Playwright turns on Chromium's file-chooser interception when the first listener is added; added here, it
    # is on long before the key press below, which then cannot open an un-intercepted chooser on a busy machine.
    page.on("filechooser", lambda _chooser: None)
    ready(page)
    page.keyboard.press("Tab")
    expect(page.locator(".skip")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#question")).to_be_focused()

    # Shift+Tab from the question box reaches the file input, which opens the file chooser.
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#file-input")).to_be_focused()
    with page.expect_file_chooser() as chooser:
        page.keyboard.press("Space")
    chooser.value.set_files(attachments()[:1])  # type: ignore[arg-type]
    chips_ready(page, 1)

    page.locator("#question").focus()
    page.keyboard.type("What is the monthly rent?")
    page.keyboard.press("Enter")
    answered(page, 1)
    answer = page.locator(".message.assistant").first
    answer.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(answer.locator(".how")).to_have_attribute("open", "")
    page.keyboard.press("Tab")
    chip = answer.locator(".citation-inline, .citation-chip").first
    expect(chip).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#viewer")).to_be_focused()
    expect(page.locator("#viewer-where")).to_contain_text("Page 2 of 3")
    page.keyboard.press("Escape")
    expect(page.locator("#viewer")).to_be_hidden()
    expect(chip).to_be_focused()


def test_the_page_is_usable_on_a_390_px_phone(browser: Browser, server: str, tmp_path: Path) -> None:
    context = browser.new_context(base_url=server, viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    try:
        ready(page)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        expect(page.locator("#sidebar")).to_be_hidden()
        page.set_input_files("#file-input", attachments()[:1])
        chips_ready(page, 1)
        page.fill("#question", "What is the monthly rent?")
        page.click("#send")
        answered(page, 1)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        page.screenshot(path=screenshot_folder(tmp_path) / "web-phone.png")
        page.click("#toggle-sidebar")
        expect(page.locator("#sidebar")).to_be_visible()
        current = page.locator("#conversations li.current .conversation-open")  # the server is shared: others too
        expect(current).to_contain_text("Monthly rent")  # titled from the first question
        current.click()
        expect(page.locator("#sidebar")).to_be_hidden()
        page.locator(".citation-chip").first.click()
        expect(page.locator("#viewer-where")).to_contain_text("Page 2 of 3")
        box = page.locator("#viewer").bounding_box()
        assert box is not None and box["width"] <= 390
    finally:
        context.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of this module's own: its first conversation starts from an empty conversation list."""
    with orc_serve(tmp_path_factory.mktemp("web-browser") / "home") as (base_url, _):
        yield base_url


@pytest.fixture(scope="module")
def api_key_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    keys = {"page-key": {"organization": "contoso", "user": "alice"}}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORC_AUTH", "api-key")
        patch.setenv("ORC_API_KEYS", json.dumps(keys))
        with orc_serve(tmp_path_factory.mktemp("web-key") / "home") as (base_url, _):
            yield base_url


def test_an_api_key_server_asks_for_the_key_and_keeps_it_out_of_urls(browser: Browser, api_key_server: str) -> None:
    context = browser.new_context(base_url=api_key_server)
    page = context.new_page()
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    try:
        page.goto("/")
        expect(page.locator("#sign-in")).to_be_visible()
        page.fill("#api-key", "wrong")
        page.keyboard.press("Enter")
        expect(page.locator("#sign-in-error")).to_contain_text("not accepted")
        page.fill("#api-key", "page-key")
        page.keyboard.press("Enter")
        expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=WAIT_MS)
        assert page.evaluate("() => sessionStorage.getItem('orc.apiKey')") == "page-key"
        page.reload()
        expect(page.locator("body")).to_have_attribute("data-ready", "true", timeout=WAIT_MS)
        expect(page.locator("#sign-in")).to_be_hidden()
        assert not any("page-key" in url for url in urls)
    finally:
        context.close()


def test_swagger_ui_renders_offline(page: Page) -> None:
    page.route("**/*", lambda route: route.abort() if "127.0.0.1" not in route.request.url else route.continue_())
    page.goto("/api/docs")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible(timeout=WAIT_MS)
    assert os.environ.get("NO_NETWORK_NEEDED", "yes")


def test_a_focus_context_picked_from_the_tree_is_used_and_stated(page: Page, server: str) -> None:
    with httpx.Client(base_url=server, timeout=30) as api:
        assert api.put("/api/contexts/folder/legal", json={"name": "Legal"}).status_code in (200, 201)
        documents = [("files", ("policy.txt", b"Contracts above 10,000 euros need two signatures.", "text/plain"))]
        assert api.post("/api/contexts/folder/legal/documents", files=documents).status_code == 202
    ready(page)
    option = page.locator("#focus option[value='folder:legal']")
    expect(option).to_have_count(1)
    page.select_option("#focus", "folder:legal")
    page.fill("#question", "How many signatures do contracts above 10,000 euros need?")
    page.click("#send")
    answered(page, 1)
    expect(page.locator(".context-statement")).to_have_text("Also searched the folder “Legal”.")


def test_markup_in_a_document_is_shown_as_text_never_run(page: Page) -> None:
    hostile = (
        b"Parking rules.\n\nVisitors park in lot B. <img src=x onerror=\"document.title='pwned'\"> "
        b"<script>document.title='pwned'</script> [click](javascript:document.title='pwned')\n"
    )
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    ready(page)
    page.set_input_files("#file-input", [{"name": "rules.txt", "mimeType": "text/plain", "buffer": hostile}])
    chips_ready(page, 1)
    page.fill("#question", "Where do visitors park?")
    page.click("#send")
    answered(page, 1)
    body = page.locator(".message.assistant .answer-body")
    expect(body).to_contain_text("lot B")
    expect(body).to_contain_text("<img src=x")  # shown as the text it is
    assert body.locator("img, script, a[href^='javascript']").count() == 0
    page.locator(".citation-chip").first.click()
    expect(page.locator(".excerpt mark")).to_contain_text("lot B")
    assert page.locator("#viewer img, #viewer script").count() == 0
    assert page.title() != "pwned" and not dialogs
