"""Uploads over loopback as clients send them (issue 36): ``count`` PDFs of 64 KiB to 20 MiB, sizes spread evenly on
a log scale, sent one after the other to ``orc serve`` by ``httpx``, ``urllib``, ``curl`` and the chat page in
Chromium, in turn. The server runs with ``ORC_MAX_UPLOAD_BYTES`` below 20 MiB, so the largest files are over it.

Target: every upload within ``ORC_MAX_UPLOAD_BYTES`` accepted (201), every one over it refused with 413 and the code
``payload_too_large`` — never a reset, a 431, a 5xx or a timeout. Each accepted file is removed again, so ORC_HOME
stays small. The page's uploads are read from the browser's own network response; a file over the limit the page
refuses itself, before sending a byte (it reads the limit from ``/api/ui-config``), and the bench reads that refusal.

    python -m bench.uploads [--count 1000] [--limit-mib 16] [--http httptools|h11] [--page-every 10]

Writes ``bench/results/uploads.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.documents.pdf_factory import make_pdf
from tests.serving import orc_serve
from tests.traffic.clients import CurlClient, HttpxClient, Reply, UrllibClient
from tests.traffic.documents import Document

RESULTS = Path(__file__).resolve().parent / "results" / "uploads.json"
SMALLEST = 64 * 1024
LARGEST = 20 * 1024 * 1024
CHROMIUM = "/usr/bin/chromium"


@dataclass
class Outcome:
    client: str
    size: int
    over_limit: bool
    status: int | None
    code: str | None
    error: str | None
    seconds: float

    @property
    def as_expected(self) -> bool:
        if self.over_limit and self.client == "page":
            # The page knows the limit (/api/ui-config) and refuses the file itself, saying why, without sending it.
            return self.status is None and self.code == "payload_too_large" and self.error is None
        if self.over_limit:
            return self.status == 413 and self.code == "payload_too_large"
        return self.status == 201


def sizes(count: int, seed: int = 36) -> list[int]:
    """``count`` sizes from 64 KiB to 20 MiB, even on a log scale, in a shuffled (seeded) order."""
    ratio = math.log(LARGEST / SMALLEST)
    spread = [round(SMALLEST * math.exp(ratio * i / max(count - 1, 1))) for i in range(count)]
    random.Random(seed).shuffle(spread)
    return spread


def pdf_of(size: int, index: int) -> bytes:
    pages = [[f"Upload {index}: a report of {size} bytes.", "The figures are in the appendix."]]
    return make_pdf(pages, padding=max(size - len(make_pdf(pages)), 0))


def _code(reply_body: bytes) -> str | None:
    try:
        value = json.loads(reply_body)
    except ValueError:
        return None
    return value.get("code") if isinstance(value, dict) else None


class PageUploader:
    """The chat page in Chromium: each upload goes through its file input, into the page's current conversation."""

    def __init__(self, base_url: str) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        self._page = self._browser.new_page(base_url=base_url)
        self._page.goto("/")
        self._page.wait_for_selector("body[data-ready=true]", timeout=120_000)

    def upload(self, path: Path) -> tuple[int, bytes, str]:
        """The upload's status and body, and the URL it was posted to; then a fresh page (a new conversation)."""

        def is_upload(response: Any) -> bool:
            return response.request.method == "POST" and response.url.endswith("/context/files")

        with self._page.expect_response(is_upload, timeout=300_000) as waited:
            self._page.set_input_files("#file-input", str(path))
        response = waited.value
        answer = response.status, response.body(), response.url
        self._fresh()
        return answer

    def refusal(self, path: Path) -> str:
        """The reason the page gives, without sending anything, for a file over the limit it knows."""
        sent: list[str] = []

        def posted(request: Any) -> None:
            if request.method == "POST":
                sent.append(request.url)

        self._page.on("request", posted)
        try:
            self._page.set_input_files("#file-input", str(path))
            row = self._page.wait_for_selector(f'li.status-refused[data-filename="{path.name}"]', timeout=60_000)
            assert row is not None
            reason = row.inner_text()
        finally:
            self._page.remove_listener("request", posted)
        if sent:
            raise RuntimeError(f"the page sent {sent} for a file it refused")
        self._fresh()
        return reason

    def _fresh(self) -> None:
        self._page.goto("/")
        self._page.wait_for_selector("body[data-ready=true]", timeout=120_000)

    def close(self) -> None:
        self._browser.close()
        self._playwright.stop()


def run(count: int, limit: int, http: str, page_every: int, folder: Path) -> list[Outcome]:
    outcomes: list[Outcome] = []
    home = folder / "home"
    env = {"ORC_MAX_UPLOAD_BYTES": str(limit)}
    with orc_serve(home, "--http", http, env=env) as (base_url, _):
        clients = {"httpx": HttpxClient(), "urllib": UrllibClient(), "curl": CurlClient(folder)}
        cleaner = httpx.Client(timeout=300)
        page = PageUploader(base_url) if page_every else None
        try:
            for index, size in enumerate(sizes(count)):
                name = "page" if page and index % page_every == 0 else ("httpx", "urllib", "curl")[index % 3]
                path = folder / f"upload-{index}.pdf"
                path.write_bytes(pdf_of(size, index))
                session = f"bench-{index}"
                started = time.perf_counter()
                status: int | None = None
                body = b""
                error = None
                url = f"{base_url}/api/sessions/{session}/context/files"
                try:
                    if name == "page" and size > limit:
                        assert page is not None
                        reason = page.refusal(path)
                        body = json.dumps({"code": "payload_too_large" if "limit" in reason else reason}).encode()
                    elif name == "page":
                        assert page is not None
                        status, body, url = page.upload(path)
                    else:
                        document = Document(path.name, path, "application/pdf", "", "")
                        reply: Reply = clients[name].upload(url, [document])
                        status, body = reply.status, reply.body
                except Exception as exc:  # a reset, a timeout: recorded as what the client saw
                    error = f"{type(exc).__name__}: {str(exc)[:200]}"
                seconds = time.perf_counter() - started
                outcome = Outcome(
                    name, size, size > limit, status, _code(body) if status != 201 else None, error, seconds
                )
                outcomes.append(outcome)
                path.unlink()
                if status == 201:
                    cleaner.delete(url.removesuffix("/context/files"))
                if not outcome.as_expected:
                    print(f"unexpected: {asdict(outcome)}", flush=True)
                if (index + 1) % 50 == 0:
                    print(f"{index + 1}/{count} uploads", flush=True)
        finally:
            if page:
                page.close()
            for client in clients.values():
                client.close()
            cleaner.close()
    return outcomes


def summary(outcomes: list[Outcome], limit: int) -> dict[str, Any]:
    within = [o for o in outcomes if not o.over_limit]
    over = [o for o in outcomes if o.over_limit]
    by_client = {}
    for name in sorted({o.client for o in outcomes}):
        mine = [o for o in outcomes if o.client == name]
        accepted = [o for o in mine if o.status == 201]
        megabytes = sum(o.size for o in accepted) / 1e6
        by_client[name] = {
            "uploads": len(mine),
            "within_limit": sum(not o.over_limit for o in mine),
            "over_limit": sum(o.over_limit for o in mine),
            "unexpected": sum(not o.as_expected for o in mine),
            "accepted_MB_per_s": round(megabytes / max(sum(o.seconds for o in accepted), 1e-9), 1),
            "median_s": round(statistics.median(o.seconds for o in mine), 3),
        }
    return {
        "uploads": len(outcomes),
        "limit_bytes": limit,
        "within_limit": len(within),
        "within_limit_refused": sum(o.status != 201 for o in within),
        "over_limit": len(over),
        "over_limit_413_with_code": sum(o.as_expected for o in over),
        "outcomes_unexpected": Counter(
            f"{o.client} {'over' if o.over_limit else 'within'} {o.status} {o.code} {o.error}"
            for o in outcomes
            if not o.as_expected
        ),
        "by_client": by_client,
        "load_average": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--limit-mib", type=float, default=16.0, help="ORC_MAX_UPLOAD_BYTES in MiB (default 16)")
    parser.add_argument("--http", choices=["httptools", "h11"], default="httptools")
    parser.add_argument("--page-every", type=int, default=10, help="every n-th upload goes through the page (0: none)")
    args = parser.parse_args(argv)
    limit = int(args.limit_mib * 1024 * 1024)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="orc-bench-uploads-") as folder:
        outcomes = run(args.count, limit, args.http, args.page_every, Path(folder))
    result = summary(outcomes, limit)
    result["wall_seconds"] = round(time.time() - started, 1)
    result["http"] = args.http
    print(json.dumps(result, indent=2))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({**result, "outcomes": [asdict(o) for o in outcomes]}, indent=1))
    ok = result["within_limit_refused"] == 0 and result["over_limit_413_with_code"] == result["over_limit"]
    print("PASS" if ok else "FAIL", "uploads: 0 refused within the limit; each over it 413 payload_too_large")


if __name__ == "__main__":
    main()
