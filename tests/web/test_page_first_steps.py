"""What a new user met on the page with documents of their own (review 7), in chromium against ``orc serve``, at
1280 px and at 390 px with no console error: API documentation quoted as it is written (``path <string>``, not
``path &lt;string&gt;``), in the answer's sources, its places to look and the opened passage; a conversation that
only has files opens again without an error; a reload comes back to the open conversation; exporting a chat with
nothing in it says so in plain words."""

from __future__ import annotations

import contextlib
import re
import uuid
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.serving import orc_serve, wait_until_processed
from tests.web.conftest import SIZES, watched_page
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow

API_DOC = (
    b"The exists function takes a path <string> and a callback <Function>.\n\n"
    b"The callback receives a <boolean> that says whether the path exists.\n"
)


def attach(page: Page, name: str, data: bytes) -> None:
    page.set_input_files("#file-input", [{"name": name, "mimeType": "text/plain", "buffer": data}])
    chips_ready(page, 1)


def ask(page: Page, question: str, count: int) -> None:
    page.fill("#question", question)
    page.keyboard.press("Enter")
    answered(page, count)


def in_the_drawer(page: Page) -> None:
    """Show the conversations: a phone keeps them in a drawer."""
    if page.locator("#sidebar").is_hidden():
        page.click("#toggle-sidebar")


def open_from_the_list(page: Page, title: str) -> None:
    in_the_drawer(page)
    page.locator(".conversation-open", has_text=title).click()


def test_api_documentation_is_quoted_as_it_is_written(sized: Page) -> None:
    page = sized
    ready(page)
    attach(page, "fs-api.txt", API_DOC)

    ask(page, "What does the exists function take?", 1)
    ask(page, "Who maintains the exists function?", 2)  # the file does not say: a decline, with places to look

    written = "a path <string> and a callback <Function>"
    first, second = page.locator(".message.assistant").nth(0), page.locator(".message.assistant").nth(1)
    expect(first.locator(".answer-body")).to_contain_text(written)
    assert written in (first.locator(".citation-chip").first.get_attribute("title") or "")
    expect(second.locator(".places")).to_contain_text(written)
    first.locator(".citation-chip").first.click()
    expect(page.locator("#viewer mark.quote")).to_contain_text(written)
    assert "&lt;" not in page.locator("#main").inner_text() + page.locator("#viewer").inner_text()


def test_a_conversation_with_files_and_no_question_opens_again_without_an_error(sized: Page) -> None:
    page = sized
    name = f"notes-{uuid.uuid4().hex[:8]}.txt"
    ready(page)
    attach(page, name, b"The office opens at eight.")
    in_the_drawer(page)
    page.click("#new-chat")
    expect(page.locator("#chips .chip")).to_have_count(0)

    open_from_the_list(page, name)

    expect(page.locator(f"#chips .chip[data-filename='{name}'][data-status=ready]")).to_have_count(1)
    expect(page.locator("#chat-title")).to_have_text(name)
    expect(page.locator("#composer-error")).to_be_hidden()


def test_a_reload_comes_back_to_the_open_conversation(sized: Page) -> None:
    page = sized
    name = f"hours-{uuid.uuid4().hex[:8]}.txt"
    ready(page)
    attach(page, name, b"The office opens at eight and closes at six.")
    ask(page, "When does the office open?", 1)

    page.reload()

    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator(".message.assistant[data-final=true]")).to_have_count(1)
    expect(page.locator(f"#chips .chip[data-filename='{name}']")).to_have_count(1)
    in_the_drawer(page)
    page.click("#new-chat")
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator(".message")).to_have_count(0)
    expect(page.locator("#chat-title")).to_have_text("New chat")


def test_a_link_to_a_conversation_that_is_gone_opens_a_new_chat(browser: Browser, server: str) -> None:
    with watched_page(browser, server, SIZES["1280px"], expected=("404",)) as page:
        page.goto("/#c=deleted-long-ago")
        expect(page.locator("body")).to_have_attribute("data-ready", "true")
        expect(page.locator("#chat-title")).to_have_text("New chat")
        expect(page.locator("#composer-error")).to_be_hidden()


def test_exporting_a_chat_with_nothing_in_it_says_so(browser: Browser, server: str) -> None:
    with watched_page(browser, server, SIZES["1280px"], expected=("404",)) as page:
        ready(page)
        page.click("#export-menu summary")
        page.click("#export-menu button[data-format=markdown]")

        expect(page.locator("#composer-error")).to_have_text("Nothing to export yet: ask a question first.")


def test_the_first_run_panel_names_every_kind_of_file_the_readme_says_orc_reads(page: Page) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    kinds = re.search(r"your documents \(([^)]*)\)", readme)
    assert kinds is not None
    ready(page)

    panel = page.locator("#empty-state").inner_text()

    for kind in re.split(r", (?:and |or )?", kinds.group(1)):
        assert kind in panel, kind


def wholly_visible(page: Page, selector: str) -> bool:
    """Whether the element is inside the window and not scrolled out of its list."""
    # One script reads both boxes: the list re-renders as the files' statuses change, so a handle could go stale.
    return bool(
        page.evaluate(
            """(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
                const list = document.getElementById('chips').getBoundingClientRect();
                return r.top >= Math.max(0, list.top) && r.bottom <= Math.min(innerHeight, list.bottom); }""",
            selector,
        )
    )


@pytest.mark.parametrize("size", list(SIZES))
def test_a_file_not_added_among_many_is_seen_first_and_counted_in_the_banner(
    browser: Browser, server: str, size: str
) -> None:
    # The browser reports the refusal of an upload of only unreadable files (415) on its console.
    with watched_page(browser, server, SIZES[size], expected=("415",)) as page:
        a_file_not_added_among_many_is_seen_first_and_counted_in_the_banner(page)


def a_file_not_added_among_many_is_seen_first_and_counted_in_the_banner(page: Page) -> None:
    ready(page)
    notes = [
        {"name": f"note-{n}.txt", "mimeType": "text/plain", "buffer": f"Note {n}: the locker is {n}.".encode()}
        for n in range(6)
    ]
    photo = {"name": "holiday.heic", "mimeType": "image/heic", "buffer": b"\x00\x01" * 512}

    page.set_input_files("#file-input", [*notes, photo])

    chips_ready(page, 6)
    refused = "#chips .chip[data-status=refused]"
    expect(page.locator(refused)).to_contain_text("Not added: orc can't read this kind of file")
    assert page.locator("#chips .chip").first.get_attribute("data-filename") == "holiday.heic"
    assert wholly_visible(page, refused)
    expect(page.locator("#diff-banner")).to_contain_text("Added 6 files; 1 file not added.")

    page.set_input_files("#file-input", [photo])  # only a file orc cannot read: nothing changed

    expect(page.locator(refused)).to_have_count(1)
    expect(page.locator("#diff-banner")).to_be_hidden()


def test_an_error_the_server_explains_with_angle_brackets_reads_as_written(browser: Browser, server: str) -> None:
    with watched_page(browser, server, SIZES["1280px"], expected=("404",)) as page:
        ready(page)

        said = page.evaluate(
            """async () => { const { api } = await import('/web/js/api.js');
                try { await api.source('any-chat', '<b>notes</b>.txt::S1'); }
                catch (error) { return error.message; } }"""
        )

    assert said == "no document '<b>notes</b>.txt' is available in this conversation"


AT_THE_END = """() => { const list = document.getElementById('messages');
    return document.querySelectorAll('#chips .chip[data-status=ready]').length === 5
        && document.querySelectorAll('.message.assistant[data-final=true]').length === 4
        && list.scrollHeight - list.scrollTop - list.clientHeight < 2; }"""


@pytest.fixture(scope="module")
def long_conversation(server: str) -> str:
    """A conversation with five files and four answers: longer than the window, its files in rows above it."""
    conversation = f"long-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=server, timeout=120) as client:
        files = [("files", (f"rules-{n}.txt", f"Rule {n}: the door locks at {n + 6} pm.".encode())) for n in range(5)]
        assert client.post(f"/api/sessions/{conversation}/context/files", files=files).status_code == 201
        wait_until_processed(server, conversation)
        for n in range(4):
            turn = {"question": f"When does the door lock under rule {n}?", "conversation_id": conversation}
            assert client.post("/api/orc", json=turn).status_code == 200
    return conversation


def test_a_conversation_opens_at_its_last_answer_once_its_files_are_shown(sized: Page, long_conversation: str) -> None:
    page = sized
    page.goto(f"/#c={long_conversation}")

    page.wait_for_function(AT_THE_END, timeout=WAIT_MS)

    last = page.locator(".message.assistant").last.locator(".feedback")
    expect(last).to_be_in_viewport()


DROP = """([where, name, text]) => {
    const files = new DataTransfer();
    files.items.add(new File([text], name, { type: 'text/plain' }));
    const drop = new DragEvent('drop', { dataTransfer: files, bubbles: true, cancelable: true });
    document.querySelector(where).dispatchEvent(drop);
    return drop.defaultPrevented; }"""


def test_a_file_dropped_on_the_conversation_is_attached_and_the_browser_does_not_open_it(sized: Page) -> None:
    page = sized
    ready(page)

    # Not prevented, the browser would open the file in place of the page.
    assert page.evaluate(DROP, ["#messages", "gate.txt", "The gate opens at nine."]) is True

    chips_ready(page, 1)
    expect(page.locator("#chips .chip[data-filename='gate.txt']")).to_have_count(1)
    assert page.evaluate(DROP, ["#drop-zone", "door.txt", "The door opens at ten."]) is True
    chips_ready(page, 2)


def test_a_title_with_angle_brackets_reads_and_renames_as_written(sized: Page) -> None:
    page = sized
    name = f"tags-{uuid.uuid4().hex[:8]}.txt"
    ready(page)
    attach(page, name, b"The <head> element holds the page's metadata.")
    ask(page, "What does the <head> element hold?", 1)
    in_the_drawer(page)
    item = page.locator("#conversations li.current")
    expect(item.locator(".conversation-title")).to_contain_text("<head>")

    item.locator(".conversation-rename").click()

    expect(page.locator(".rename-input")).to_have_value(re.compile(r"<head>"))


UNREACHABLE = "The server could not be reached: check your connection and that orc is still running, then try again."


@pytest.mark.parametrize("size", list(SIZES))
def test_a_server_that_stopped_is_said_in_words_and_the_files_it_missed_are_listed(
    browser: Browser, tmp_path: Path, size: str
) -> None:
    with contextlib.ExitStack() as serving:
        base_url, _ = serving.enter_context(orc_serve(tmp_path / "home"))
        refused = ("ERR_CONNECTION_REFUSED",)  # the browser's own report of each request that found no server
        with watched_page(browser, base_url, SIZES[size], expected=refused) as page:
            ready(page)
            serving.close()  # orc serve stops; the page stays open

            page.fill("#question", "When does the office open?")
            page.keyboard.press("Enter")
            expect(page.locator(".message.assistant .error")).to_have_text(UNREACHABLE)
            page.set_input_files("#file-input", [{"name": "hours.txt", "mimeType": "text/plain", "buffer": b"At 8."}])
            row = page.locator("#chips .chip[data-status=refused][data-filename='hours.txt']")
            expect(row).to_contain_text("Not added: the server could not be reached")
            assert "Failed to fetch" not in page.locator("#main").inner_text()


FITS = """() => { const select = document.getElementById('focus'), style = getComputedStyle(select);
    const pen = document.createElement('canvas').getContext('2d');
    pen.font = `${style.fontSize} ${style.fontFamily}`;
    const arrow = 24;  // the drop-down arrow and the padding around the text
    return pen.measureText(select.options[select.selectedIndex].text).width + arrow <= select.clientWidth; }"""


def test_what_also_search_is_set_to_reads_whole_on_a_phone(sized: Page) -> None:
    page = sized
    ready(page)

    assert page.evaluate(FITS)
    expect(page.locator("#focus option:checked")).to_have_text("nothing else")
