"""The page with a real model, in chromium against ``orc serve`` talking to a local OpenAI-compatible endpoint, at
1280 px and 390 px: Stop ends the answer and the server's turn (its model stream is closed, nothing is stored),
Regenerate asks again through the same turn, the model's own follow-up questions become the suggestions, and a
summary of all files that failed says why and can be tried again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from playwright.sync_api import Browser, Page, expect

from orc.models.digesting import digest_reply
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve
from tests.serving import orc_serve
from tests.web.conftest import SIZES, watched_page
from tests.web.test_browser import WAIT_MS, answered, chips_ready, ready

pytestmark = pytest.mark.slow

# One short passage, so its one span is lease.txt::S1 and a scripted answer can cite it.
LEASE = (
    b"The monthly rent is 1,450 euros, payable on the first day of each month. Pets are allowed with the "
    b"landlord's written consent."
)
ANSWER = (
    "The monthly rent is 1,450 euros, payable on the first day of each month [lease.txt::S1].\n"
    "<follow_ups>\n- When is the rent due?\n- Can I keep a cat?\n</follow_ups>"
)


class Model:
    """The endpoint's behaviour: digests as the offline model makes them (the summary of all files failing while
    ``failing`` is set), conversation titles, and the answers queued by the test."""

    def __init__(self, endpoint: OpenAIEndpoint) -> None:
        self.endpoint = endpoint
        self.failing = threading.Event()
        endpoint.responder = self.respond

    def respond(self, body: dict[str, Any]) -> Reply | None:
        messages: list[BaseMessage] = [
            HumanMessage(m["content"]) if m["role"] == "user" else SystemMessage(str(m["content"]))
            for m in body["messages"]
            if isinstance(m.get("content"), str)
        ]
        digest = digest_reply(messages)
        if digest is not None:
            aggregate = any(str(m.content).startswith("TASK: AGGREGATE_DIGEST") for m in messages)
            return Reply(text="not a digest") if aggregate and self.failing.is_set() else Reply(text=digest)
        if "Name this conversation" in str(messages[0].content):
            return Reply(text="Monthly rent")
        return None  # an answer: the queue's


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


@pytest.fixture(scope="module")
def model_server(endpoint: RunningEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {
        "ORC_MODEL": "openai:test-model",
        "ORC_MODEL_BASE_URL": endpoint.base_url,
        "ORC_MODEL_API_KEY": "local-test-key",
        "ORC_MODEL_MAX_RETRIES": "0",
    }
    with orc_serve(tmp_path_factory.mktemp("web-model") / "home", env=env) as (base_url, _):
        yield base_url


@pytest.fixture(params=list(SIZES))
def model(request: pytest.FixtureRequest, endpoint: RunningEndpoint) -> Iterator[Model]:
    endpoint.endpoint.reset()
    yield Model(endpoint.endpoint)
    endpoint.endpoint.reset()


@pytest.fixture
def sized(request: pytest.FixtureRequest, model: Model, browser: Browser, model_server: str) -> Iterator[Page]:
    size = SIZES[request.node.callspec.params["model"]]
    with watched_page(browser, model_server, size) as opened:
        yield opened


def current_conversation(page: Page) -> str:
    return str(page.locator("#conversations li.current").get_attribute("data-id"))


def test_stop_ends_the_server_turn_and_regenerate_asks_again_with_the_models_own_suggestions(
    sized: Page, model: Model, model_server: str
) -> None:
    page = sized
    ready(page)
    page.set_input_files("#file-input", [{"name": "lease.txt", "mimeType": "text/plain", "buffer": LEASE}])
    chips_ready(page, 1)
    expect(page.locator("#all-summary")).to_be_visible()  # the digests are made: the queue holds answers only
    model.endpoint.reset(Reply(text="The monthly rent is", fault="stall"), Reply(text=ANSWER))
    model.endpoint.responder = model.respond

    page.fill("#question", "What is the monthly rent?")
    page.keyboard.press("Enter")
    answer = page.locator(".message.assistant").first
    expect(answer.locator(".answer-body")).to_contain_text("The monthly rent")
    answer.get_by_role("button", name="Stop").click()

    assert model.endpoint.stream_closed.wait(WAIT_MS / 1000), "the server kept reading the model's stream"
    expect(answer).to_contain_text("Stopped. This answer was not saved.")
    expect(answer.get_by_role("button", name="Stop")).to_have_count(0)
    expect(page.locator("#send")).to_be_enabled()

    answer.get_by_role("button", name="Regenerate").click()
    answered(page, 1)
    again = page.locator(".message.assistant[data-final=true]")
    expect(again.locator(".answer-body")).to_contain_text("1,450 euros")
    expect(again.locator(".answer-body")).not_to_contain_text("follow_ups")
    expect(again.locator(".suggestion")).to_have_text(["When is the rent due?", "Can I keep a cat?"])
    # Both asks went through POST /api/orc; only the answered one was stored.
    expect(page.locator("#conversations li.current")).to_have_count(1)
    stored = httpx.get(f"{model_server}/api/sessions/{current_conversation(page)}", timeout=30).json()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    assert "1,450 euros" in stored["messages"][1]["content"] and "follow_ups" not in stored["messages"][1]["content"]


def test_a_failed_summary_of_all_files_says_why_and_can_be_tried_again(sized: Page, model: Model) -> None:
    page = sized
    model.failing.set()
    ready(page)
    page.set_input_files("#file-input", [{"name": "lease.txt", "mimeType": "text/plain", "buffer": LEASE}])
    chips_ready(page, 1)
    status = page.locator("#all-summary-status")
    expect(status).to_contain_text("The summary of all files failed:", timeout=WAIT_MS)
    assert len(status.inner_text()) > len("The summary of all files failed: . Try again")  # with its reason
    expect(page.locator("#all-summary")).to_be_hidden()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= page.viewport_size["width"]  # type: ignore[index]

    model.failing.clear()
    status.get_by_role("button", name="Try again").click()
    expect(page.locator("#all-summary")).to_be_visible(timeout=WAIT_MS)
    expect(status).not_to_contain_text("failed")
    page.locator("#all-summary").click()
    expect(page.locator("#viewer .digest-summary")).to_contain_text("1,450 euros")
