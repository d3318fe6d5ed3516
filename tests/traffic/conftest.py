"""The real-traffic suite's shared parts: the generated documents (made once per test process) and ``orc serve``
waited on through its own readiness signals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.serving import orc_serve
from tests.traffic.documents import Document, Kind, generate
from tests.web.conftest import browser, page, server  # noqa: F401  (the page's fixtures, for test_page_traffic)

SERVERS = {"httptools": ("--http", "httptools"), "h11": ("--http", "h11"), "workers-2": ("--workers", "2")}


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[Kind, int], Document]:
    """One PDF, DOCX and XLSX file of 1, 5 and 20 MB, written once for the whole run."""
    return generate(tmp_path_factory.mktemp("generated"))


@pytest.fixture(scope="module", params=list(SERVERS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``orc serve`` as people start it (the offline model, default limits), under each HTTP parser and with two
    worker processes; its base URL."""
    home = tmp_path_factory.mktemp(f"traffic-{request.param}") / "home"
    with orc_serve(home, *SERVERS[request.param]) as (url, _):
        yield url
