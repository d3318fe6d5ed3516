"""What a team lead met on the page with an organization's documents (review 9), in chromium against ``orc serve``,
at 1280 px and at 390 px with no console error: an answer that also searched a context names it as the picker
does ("the use case “NDA reviews”", not "the usecase nda-…"), on a reopened conversation too; a chat that only has
files is in the conversation list as soon as they are added; the drawer of a context request speaks of summaries,
not digests; and text the user supplied is never suggested back as a document ("What does supplied say …")."""

from __future__ import annotations

import uuid

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import text_file
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow

POLICY = b"Contracts above 10,000 euros need two signatures from the legal team."
TRIGGERS = (
    b"Triggers.\n\nA dpkg trigger is a facility that allows events caused by one package to be recorded. "
    b"Trigger names contain only printing 7-bit ascii characters. "
    b"Only dpkg may create the triggers directory, while it holds the status lock.\n"
)


def in_the_drawer(page: Page) -> None:
    """Show the conversations: a phone keeps them in a drawer."""
    if page.locator("#sidebar").is_hidden():
        page.click("#toggle-sidebar")


def test_an_answer_names_the_context_it_also_searched_as_the_picker_does(sized: Page, server: str) -> None:
    folder, usecase = f"legal-{uuid.uuid4().hex[:8]}", f"nda-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=server, timeout=30) as api:
        assert api.put(f"/api/contexts/folder/{folder}", json={"name": "Legal team"}).status_code in (200, 201)
        created = api.put(f"/api/contexts/usecase/{usecase}", json={"name": "NDA reviews", "parent_id": folder})
        assert created.status_code in (200, 201)
        documents = [("files", ("policy.txt", POLICY, "text/plain"))]
        assert api.post(f"/api/contexts/usecase/{usecase}/documents", files=documents).status_code == 202
    ready(sized)
    option = sized.locator(f"#focus option[value='usecase:{usecase}']")
    expect(option).to_contain_text("NDA reviews (use case)")
    sized.select_option("#focus", f"usecase:{usecase}")
    sized.fill("#question", "How many signatures do contracts above 10,000 euros need?")
    sized.click("#send")
    answered(sized, 1)

    said = "Also searched the use case “NDA reviews”."
    expect(sized.locator(".context-statement")).to_have_text(said)
    # Reopened, the answers are drawn before the context tree arrives: the statement is renamed when it does.
    sized.reload()
    expect(sized.locator(".message.assistant[data-final=true]")).to_have_count(1, timeout=WAIT_MS)
    expect(sized.locator(".context-statement")).to_have_text(said)


def test_a_chat_with_files_and_no_question_is_listed_as_soon_as_they_are_added(sized: Page) -> None:
    name = f"release-notes-{uuid.uuid4().hex[:6]}.txt"
    ready(sized)
    sized.set_input_files("#file-input", [{"name": name, "mimeType": "text/plain", "buffer": POLICY}])
    chips_ready(sized, 1)

    expect(sized.locator("#chat-title")).to_have_text(name)
    in_the_drawer(sized)
    current = sized.locator("#conversations .conversation.current")
    expect(current.locator(".conversation-title")).to_have_text(name)


def test_a_context_request_speaks_of_summaries_and_never_suggests_the_users_own_text_back(sized: Page) -> None:
    ready(sized)
    sized.set_input_files("#file-input", [{"name": "triggers.txt", "mimeType": "text/plain", "buffer": TRIGGERS}])
    chips_ready(sized, 1)
    expect(sized.locator("#all-summary")).to_be_visible(timeout=WAIT_MS)  # the summary's points can be picked
    sized.fill("#question", "How much is the monthly rent?")
    sized.click("#send")
    card = sized.locator(".context-request")
    expect(card).to_be_visible(timeout=WAIT_MS)

    card.get_by_role("button", name="Pick from this chat").click()
    drawer = sized.locator("dialog.artifacts-drawer")
    expect(drawer.locator(".artifact-fact").first).to_be_visible()
    expect(drawer.locator(".artifact-fact").first).to_contain_text("from triggers.txt")
    expect(drawer).not_to_contain_text("digest")
    drawer.locator(".artifacts-close").click()

    card.locator("textarea").fill("The dpkg support contract costs 120 euros per year.")
    card.get_by_role("button", name="Use this").click()
    answered(sized, 1)
    suggestions = sized.locator(".message.assistant .suggestions")
    expect(suggestions.locator("button").first).to_be_visible()
    expect(suggestions).not_to_contain_text("supplied")


# An answer with a table as a real model writes one (the page renders GitHub tables), drawn by the page's own module.
RENDER_TABLE = """
async () => {
  const { AnswerView } = await import("/web/js/chat.js");
  const view = new AnswerView({ onCitation: () => {} });
  document.getElementById("messages").append(view.element);
  const head = "| " + Array.from({ length: 8 }, (_, i) => `column ${i}`).join(" | ") + " |";
  const rule = "|" + " --- |".repeat(8);
  const row = "| " + Array.from({ length: 8 }, (_, i) => `fs.watchFileOption${i}`).join(" | ") + " |";
  view.finish(`Options:\\n\\n${head}\\n${rule}\\n${row}\\n`, null);
  const table = view.body.querySelector("table");
  const cell = getComputedStyle(table.querySelector("td"));
  return {
    page: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    scrolls: table.scrollWidth > table.clientWidth,
    padding: parseFloat(cell.paddingLeft),
    border: cell.borderTopStyle,
  };
}
"""


def test_a_table_in_an_answer_has_ruled_cells_and_scrolls_inside_the_answer_on_a_phone(sized: Page) -> None:
    ready(sized)

    shown = sized.evaluate(RENDER_TABLE)

    assert shown["page"] <= shown["viewport"], shown  # the page itself never scrolls sideways
    assert shown["padding"] >= 4 and shown["border"] == "solid", shown
    if shown["viewport"] < 500:
        assert shown["scrolls"], shown  # eight columns do not fit a phone: the table scrolls, not the page


API_DOC = b"The exists function takes a path <string> and a callback <Function>.\n"


def asked_about_the_api_doc(page: Page) -> None:
    """The page with ``fs-api.txt`` attached and a first question about it answered."""
    ready(page)
    page.set_input_files("#file-input", [text_file("fs-api.txt", API_DOC)])
    chips_ready(page, 1)
    page.fill("#question", "What does the exists function take?")
    page.click("#send")
    answered(page, 1)


def test_a_copied_answer_is_pasted_as_the_document_wrote_it(sized: Page) -> None:
    sized.context.grant_permissions(["clipboard-read", "clipboard-write"])
    asked_about_the_api_doc(sized)

    answer = sized.locator(".message.assistant").first
    answer.get_by_role("button", name="Copy").click()
    expect(answer.get_by_role("button", name="Copied")).to_be_visible()
    copied = sized.evaluate("() => navigator.clipboard.readText()")

    assert "a path <string> and a callback <Function>" in copied, copied  # not "path &lt;string&gt;"


ASK_A_SUGGESTION = """
async () => {
  const { AnswerView } = await import("/web/js/chat.js");
  const view = new AnswerView({ onCitation: () => {} });
  document.getElementById("messages").append(view.element);
  view.finish("The exists function takes a path.", null);
  const asked = [];
  view.suggest(["What does fs-api.txt say about the path &lt;string&gt;?"], (text) => asked.push(text));
  const chip = view.element.querySelector(".suggestion");
  chip.click();
  return { shown: chip.textContent, asked };
}
"""


def test_a_suggestion_is_asked_in_the_words_it_shows(sized: Page) -> None:
    ready(sized)

    clicked = sized.evaluate(ASK_A_SUGGESTION)

    question = "What does fs-api.txt say about the path <string>?"
    assert clicked == {"shown": question, "asked": [question]}


def test_the_export_menu_opens_on_the_screen(sized: Page) -> None:
    ready(sized)
    sized.locator("#export-menu summary").click()

    width = sized.viewport_size["width"] if sized.viewport_size else 0
    for option in sized.locator("#export-menu .export-options button").all():
        box = option.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (option.inner_text(), box)


# A connection that winds down slowly after the turn's last event (a proxy, a busy machine): the answer stream's
# bytes arrive as sent, and its end three seconds later.
SLOW_STREAM_END = """
const fetchFirst = window.fetch;
window.fetch = async (input, init) => {
  const response = await fetchFirst(input, init);
  const url = typeof input === "string" ? input : input.url;
  if (!url.endsWith("/api/orc") || !response.body) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (!done) { controller.enqueue(value); return; }
      await new Promise((resolve) => setTimeout(resolve, 3000));
      controller.close();
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
};
"""


def test_a_question_sent_as_the_answer_appears_is_asked_not_dropped(sized: Page) -> None:
    sized.add_init_script(SLOW_STREAM_END)
    asked_about_the_api_doc(sized)

    sized.fill("#question", "What does the callback receive?")
    sized.keyboard.press("Enter")

    expect(sized.locator(".message.user")).to_have_count(2)
    answered(sized, 2)
    expect(sized.locator("#question")).to_have_value("")
