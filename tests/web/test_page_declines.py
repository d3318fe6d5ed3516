"""A declined answer shows where to read (issue 39, item 1), in chromium against ``orc serve``, at 1280 px and at
390 px with no console error: the decline cites nothing, lists its places to look under it — each opens its
passage — and keeps them when the conversation is opened again."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from tests.web.conftest import SIZES, watched_page
from tests.web.test_browser import answered, chips_ready, ready

pytestmark = pytest.mark.slow

LEASE = (
    b"Residential lease.\n\nThe tenant rents the flat at Rue Haute 12 for two years.\n\n"
    b"The monthly rent is 1,450 euros, payable on the first day of each month.\n\n"
    b"Pets are allowed in the flat with the landlord's written consent.\n\nThe deposit is 2,900 euros.\n"
)
# The lease says nothing about who pays for electricity: the offline model declines.
UNANSWERABLE = "Who pays the electricity bill for the flat?"


def test_a_declined_answer_lists_its_places_to_look_and_each_opens_its_passage(browser: Browser, server: str) -> None:
    for size in SIZES.values():
        with watched_page(browser, server, size) as page:
            ready(page)
            page.set_input_files("#file-input", [{"name": "lease.txt", "mimeType": "text/plain", "buffer": LEASE}])
            chips_ready(page, 1)
            page.fill("#question", UNANSWERABLE)
            page.keyboard.press("Enter")
            answered(page, 1)

            answer = page.locator(".message.assistant").first
            expect(answer.locator(".answer-body")).to_contain_text("couldn't find an answer")
            expect(answer.locator(".citation-chip")).to_have_count(0)  # places are not citations
            expect(answer.locator(".places .places-title")).to_have_text("Places to look:")
            places = answer.locator(".places li")
            expect(places.first).to_be_visible()
            count = places.count()
            assert 1 <= count <= 3
            expect(places.first.locator(".place-open")).to_contain_text("lease.txt")
            excerpt = places.first.locator(".muted").inner_text().strip(" “”")
            assert excerpt and excerpt in LEASE.decode()  # the closest passage's own words
            assert page.evaluate("() => document.documentElement.scrollWidth") <= size["viewport"]["width"]

            places.first.locator(".place-open").click()
            expect(page.locator("#viewer")).to_be_visible()
            expect(page.locator("#viewer mark").first).to_be_visible()
            page.locator("#viewer-close").click()
            expect(page.locator("#viewer")).to_be_hidden()

            # Opened again, the stored decline still says where to read.
            if page.locator("#sidebar").is_hidden():
                page.click("#toggle-sidebar")  # a phone keeps the conversations in a drawer
            page.locator("#conversations li.current .conversation-open").click()
            expect(page.locator(".message.assistant")).to_have_count(1)
            expect(page.locator(".message.assistant").first.locator(".places li")).to_have_count(count)
