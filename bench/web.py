"""``python -m bench.web``: the chat page's figures in chromium (Playwright), against the app served on loopback.

Targets (issue 15): the page is ready (first paint with the conversation list) ≤ **300 ms**; the first answer
token is on the page ≤ **50 ms** after the server emitted it; the page's own JavaScript ≤ **100 KB**.

* **Page ready**: a fresh navigation to ``/`` with ``--conversations`` stored conversations; the time from
  navigation start to the page's ``orc:ready`` mark (set once the list is rendered) and to the next frame
  painted after it (``requestAnimationFrame`` twice), plus chromium's first-contentful-paint. The first
  navigation of a browser context is "cold" (nothing cached); the others reuse the HTTP cache as a returning
  user does.
* **First token**: the server wraps the app in an ASGI layer that records the wall-clock time at which the first
  body chunk of ``POST /api/orc`` holding a ``token`` event is handed to the server; the page records the
  wall-clock time (``performance.timeOrigin + performance.now()``) of the first DOM change of the streaming
  answer. Both clocks are the same machine's. The difference is network, parsing and rendering.
* **JavaScript size**: bytes of ``orc/web/js`` (the page's own modules), gzipped too, and of the vendored
  modules loaded up front (marked, DOMPurify) and lazily (pdf.js, only when a PDF citation is opened).

The server runs in a thread of this process (uvicorn, the offline model, a temporary ORC_HOME); chromium is
Debian's ``/usr/bin/chromium``. Results go to ``bench/results/web.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bench.common import machine_info, percentile
from orc.http import create_app
from orc.http.page import WEB_ROOT
from orc.settings import Settings
from tests.emulators import free_port

READY_TARGET_MS = 300.0
TOKEN_TARGET_MS = 50.0
JS_TARGET_BYTES = 100 * 1024
OUTPUT = Path(__file__).resolve().parent / "results" / "web.json"
CHROMIUM = "/usr/bin/chromium"

FIRST_TOKEN_ON_PAGE = """
window.__firstTokenAt = null;
new MutationObserver((records) => {
  if (window.__firstTokenAt !== null) return;  // the bench clears it before each question
  for (const record of records) {
    const node = record.target.nodeType === 1 ? record.target : record.target.parentElement;
    if (node && node.closest && node.closest('.answer-body.streaming') && node.textContent.trim()) {
      window.__firstTokenAt = performance.timeOrigin + performance.now();
      return;
    }
  }
}).observe(document, { subtree: true, characterData: true, childList: true });
"""
READY_AND_PAINTED = """
() => new Promise((resolve) => {
  const report = () => requestAnimationFrame(() => requestAnimationFrame(() => {
    const ready = performance.getEntriesByName('orc:ready')[0];
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    resolve({ ready: ready.startTime, painted: performance.now(), fcp: paint ? paint.startTime : null });
  }));
  if (performance.getEntriesByName('orc:ready').length) report();
  else new PerformanceObserver((list, observer) => {
    if (list.getEntriesByName('orc:ready').length) { observer.disconnect(); report(); }
  }).observe({ type: 'mark', buffered: true });
})
"""


class TokenClock:
    """Wraps the app: remembers when the first token of each turn stream was handed to the server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.first_token_at: list[float] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != "/api/orc":
            await self.app(scope, receive, send)
            return
        seen = False

        async def timed(message: Message) -> None:
            nonlocal seen
            if not seen and message["type"] == "http.response.body" and b'"type":"token"' in message.get("body", b""):
                seen = True
                self.first_token_at.append(time.time() * 1000)
            await send(message)

        await self.app(scope, receive, timed)


@contextlib.contextmanager
def served(home: Path) -> Iterator[tuple[str, TokenClock]]:
    """The app on a free loopback port in a thread of this process."""
    os.environ["ORC_HOME"] = str(home)
    os.environ["ORC_MODEL"] = "offline"
    clock = TokenClock(create_app(Settings()))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(clock, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.05)  # poll interval, not a wait for readiness
    try:
        yield base_url, clock
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def seed(base_url: str, conversations: int) -> None:
    """Stored conversations for the list, one small file and one turn each."""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for number in range(conversations):
            session = f"seed-{number}"
            files = [("files", ("notes.txt", f"Meeting {number} starts at nine.".encode(), "text/plain"))]
            client.post(f"/api/sessions/{session}/context/files", files=files).raise_for_status()
            turn = {"question": f"When does meeting {number} start?", "conversation_id": session}
            client.post("/api/orc", json={**turn, "blob_names": ["notes.txt"]}).raise_for_status()


def js_sizes() -> dict[str, int]:
    """Bytes of the page's own modules (raw and gzipped) and of the vendored ones."""
    own = sorted((WEB_ROOT / "js").glob("*.js"))
    own_bytes = b"".join(path.read_bytes() for path in own)
    vendor = WEB_ROOT / "vendor"
    return {
        "own_js_bytes": len(own_bytes),
        "own_js_gzip_bytes": len(gzip.compress(own_bytes)),
        "vendored_up_front_bytes": (vendor / "marked/marked.esm.js").stat().st_size
        + (vendor / "dompurify/purify.es.mjs").stat().st_size,
        "pdfjs_lazy_bytes": (vendor / "pdfjs/pdf.min.mjs").stat().st_size
        + (vendor / "pdfjs/pdf.worker.min.mjs").stat().st_size,
    }


def stats(samples: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50": round(statistics.median(samples), 1),
        "p90": round(percentile(samples, 90), 1),
        "max": round(max(samples), 1),
    }


def run(navigations: int, turns: int, conversations: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="orc-bench-web-") as folder, served(Path(folder) / "home") as (url, clock):
        seed(url, conversations)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            ready: list[float] = []
            painted: list[float] = []
            fcp: list[float] = []
            context = browser.new_context(base_url=url)
            page = context.new_page()
            cold: dict[str, float] = {}
            for number in range(navigations):
                page.goto("/")
                timing = page.evaluate(READY_AND_PAINTED)
                if number == 0:
                    cold = timing
                    continue
                ready.append(timing["ready"])
                painted.append(timing["painted"])
                if timing["fcp"] is not None:
                    fcp.append(timing["fcp"])
                assert page.locator("#conversations li").count() == conversations
            context.close()

            delays: list[float] = []
            context = browser.new_context(base_url=url)
            context.add_init_script(FIRST_TOKEN_ON_PAGE)
            page = context.new_page()
            page.goto("/")
            page.locator("body[data-ready=true]").wait_for()
            page.set_input_files(
                "#file-input",
                [{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"The office opens at nine."}],
            )
            page.locator("#chips .chip[data-status=ready]").wait_for(timeout=30_000)
            # The turns stay in the chat that holds the file: a new chat has no files, and the page's question would
            # pause for context there instead of answering.
            for number in range(turns):
                page.evaluate("() => { window.__firstTokenAt = null; }")
                before = len(clock.first_token_at)
                page.fill("#question", "When does the office open?")
                page.click("#send")
                page.locator(".message.assistant[data-final=true]").nth(number).wait_for(timeout=30_000)
                on_page = page.evaluate("() => window.__firstTokenAt")
                if on_page is not None and len(clock.first_token_at) > before:
                    delays.append(on_page - clock.first_token_at[before])
            context.close()
            browser.close()
    sizes = js_sizes()
    result = {
        "page_ready_ms": stats(ready),
        "page_ready_painted_ms": stats(painted),
        "first_contentful_paint_ms": stats(fcp) if fcp else None,
        "cold_first_navigation_ms": cold,
        "first_token_delay_ms": stats(delays),
        "js": sizes,
        "conversations_listed": conversations,
        "checks": {
            "page_ready_p50_le_300ms": stats(painted)["p50"] <= READY_TARGET_MS,
            "first_token_p50_le_50ms": stats(delays)["p50"] <= TOKEN_TARGET_MS,
            "own_js_le_100kb": sizes["own_js_bytes"] <= JS_TARGET_BYTES,
        },
        "machine": machine_info(),
    }
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.web", description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--navigations", type=int, default=21, help="page loads (the first, cold, is reported apart)")
    parser.add_argument("--turns", type=int, default=10, help="questions asked for the first-token delay")
    parser.add_argument("--conversations", type=int, default=20, help="stored conversations the list shows")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    result = run(args.navigations, args.turns, args.conversations)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    printable = {key: value for key, value in result.items() if key != "machine"}
    print(json.dumps(printable, indent=2))
    for name, passed in result["checks"].items():
        print(f"{'PASS' if passed else 'FAIL'} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
