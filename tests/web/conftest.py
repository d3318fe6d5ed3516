"""The chat page in a real browser: Debian's chromium driven by Playwright, against ``orc serve`` on loopback.

Playwright's own browser download cannot run here, so the tests launch ``/usr/bin/chromium`` (``make test``
installs it). Without it the browser tests skip on a developer machine and FAIL under ``CI=true``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docx
import pytest

from tests.documents.pdf_factory import make_pdf
from tests.http.conftest import client, client_factory  # noqa: F401  (the API fixtures, for the page's routes)
from tests.serving import orc_serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]


def _browser_missing() -> str | None:
    if sync_playwright is None:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not Path(CHROMIUM).exists():
        return "chromium is not installed (make chromium, or apt-get install -y chromium)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One chromium per module. Not per session: Playwright's sync API runs an event loop in this thread while it
    is open, and the async tests of later modules could not start theirs."""
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser tests cannot run in CI: {missing}")
        pytest.skip(missing)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``orc serve`` with the offline model in a temporary ORC_HOME, shared by the page's tests of this test process
    (each opens conversations of its own); its base URL. Starting it costs seconds of CPU, once per process instead
    of once per module. A module that needs a server to itself (other settings, an empty conversation list)
    defines its own."""
    home = tmp_path_factory.mktemp("web") / "home"
    with orc_serve(home) as (base_url, _):
        yield base_url


@pytest.fixture
def page(browser: Browser, server: str) -> Iterator[Page]:
    """A fresh browser context on the page (desktop size); console errors fail the test."""
    with watched_page(browser, server, DESKTOP) as opened:
        yield opened


DESKTOP: dict[str, Any] = {"viewport": {"width": 1280, "height": 800}}
PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
SIZES = {"1280px": DESKTOP, "390px": PHONE}


@contextlib.contextmanager
def watched_page(
    browser: Browser, base_url: str, size: dict[str, Any], *, expected: tuple[str, ...] = (), **options: Any
) -> Iterator[Page]:
    """A fresh browser context of ``size`` on ``base_url``; a console error or an uncaught exception fails the test
    (a line holding one of ``expected`` aside: the browser's own report of a refusal the test asks for)."""
    context = browser.new_context(base_url=base_url, **size, **options)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        context.close()
    unexpected = [error for error in errors if not any(allowed in error for allowed in expected)]
    assert not unexpected, unexpected


@pytest.fixture(params=list(SIZES))
def sized(request: pytest.FixtureRequest, browser: Browser, server: str) -> Iterator[Page]:
    """The page at 1280 px, then at 390 px (a phone); a module may define its own (another server, say)."""
    with watched_page(browser, server, SIZES[request.param]) as opened:
        yield opened


def text_file(name: str, data: bytes) -> dict[str, Any]:
    """A text file as Playwright's ``set_input_files`` takes it."""
    return {"name": name, "mimeType": "text/plain", "buffer": data}


LEASE_PAGES = [
    ["Residential lease agreement.", "The tenant rents the flat at Rue Haute 12."],
    [
        "Payment terms.",
        "The monthly rent is 1,450 euros, payable on the first business day of each month.",
    ],
    ["Termination.", "Either party may end the lease by giving at least 60 days written notice."],
]


def lease_pdf() -> bytes:
    """A three-page lease: the rent is on page 2, the notice period on page 3."""
    return make_pdf(LEASE_PAGES)


def handbook_docx() -> bytes:
    """An employee handbook as a DOCX."""
    document = docx.Document()
    document.add_heading("Employee handbook", level=1)
    document.add_paragraph("New employees get 25 vacation days per calendar year.")
    document.add_paragraph("Remote work is allowed two days a week with the manager's agreement.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs"


def screenshot_folder(tmp_path: Path) -> Path:
    """Where to save screenshots: ``docs/`` when ``WEB_SCREENSHOTS=docs`` (to refresh the README's), else a
    temporary folder, so a test run leaves the checkout untouched."""
    return SCREENSHOTS if os.environ.get("WEB_SCREENSHOTS") == "docs" else tmp_path


PDF_TYPE = "application/pdf"
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def attachments() -> list[dict[str, object]]:
    """The two files the browser tests upload, as Playwright file payloads."""
    return [
        {"name": "lease.pdf", "mimeType": PDF_TYPE, "buffer": lease_pdf()},
        {"name": "handbook.docx", "mimeType": DOCX_TYPE, "buffer": handbook_docx()},
    ]


# Counts the streaming answer's text updates, so a test can tell tokens arrived one by one (init scripts are
# injected by the browser, not by the page, so the page's CSP does not apply to them).
COUNT_TOKEN_UPDATES = """
window.__tokenUpdates = 0;
new MutationObserver((records) => {
  for (const record of records) {
    const body = record.target.parentElement?.closest?.('.answer-body.streaming');
    if (body) window.__tokenUpdates += 1;
  }
}).observe(document, { subtree: true, characterData: true, childList: true });
"""
