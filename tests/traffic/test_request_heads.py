"""Request heads are measured as heads through a real socket: uploads whose body arrives with the head (as browsers
and most clients write them) are read under both HTTP parsers, however the client cuts the body, and only a head
over the limit gets 431."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from orc.http.connection_limits import MAX_HEADER_BYTES
from tests.documents.pdf_factory import make_pdf
from tests.serving import orc_serve
from tests.traffic.wire import WRITE_MODES, WriteMode, multipart, send

SIZES = {"64KiB": 64 * 1024, "1MiB": 1024 * 1024, "20MiB": 20 * 1024 * 1024}
UPLOAD_LIMIT = 24 * 1024 * 1024
"""Above the largest body here (the default limit is 20 MiB of file, and a 20 MiB body carries a little less)."""


@pytest.fixture(scope="module", params=["httptools", "h11"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """``orc serve`` with one HTTP parser, in a process of its own."""
    home = tmp_path_factory.mktemp(f"heads-{request.param}") / "home"
    env = {"ORC_MAX_UPLOAD_BYTES": str(UPLOAD_LIMIT)}
    with orc_serve(home, "--http", request.param, env=env) as (url, _):
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        yield parts.hostname, parts.port


@pytest.fixture(scope="module")
def pdfs() -> dict[str, bytes]:
    """A PDF of each size, a page of text and the rest incompressible, as a scan or embedded images make it."""
    text = [["The quarterly report says revenue grew by twelve percent."]]
    return {name: make_pdf(text, padding=size - len(make_pdf(text))) for name, size in SIZES.items()}


@pytest.mark.parametrize("mode", WRITE_MODES)
@pytest.mark.parametrize("size", list(SIZES))
def test_an_upload_whose_body_arrives_with_its_head_is_read_whole(
    served: tuple[str, int], pdfs: dict[str, bytes], size: str, mode: WriteMode
) -> None:
    body, content_type = multipart("files", f"report-{size}-{mode}.pdf", pdfs[size], "application/pdf")
    answer = send(served, "POST", f"/api/sessions/heads-{size}-{mode}/context/files", body, content_type, mode)

    assert answer.status == 201, answer.head + answer.body[:500]
    (change,) = json.loads(answer.body)["files"]
    assert change["filename"] == f"report-{size}-{mode}.pdf"
    host, port = served
    stored = httpx.get(f"http://{host}:{port}/api/sessions/heads-{size}-{mode}/context/files/{change['file_id']}")
    assert stored.json()["size_bytes"] == len(pdfs[size])


def test_a_head_over_the_limit_is_still_refused_with_431(served: tuple[str, int]) -> None:
    headers = {"X-Big": "a" * (MAX_HEADER_BYTES + 1024)}
    answer = send(served, "POST", "/api/sessions/heads/context/files", b"x", "text/plain", "one-write", headers=headers)

    assert answer.status == 431
    assert json.loads(answer.body)["code"] == "headers_too_large"


def test_a_head_over_the_limit_sent_with_its_body_in_one_write_is_refused_with_431(served: tuple[str, int]) -> None:
    body, content_type = multipart("files", "note.txt", b"hello" * 1000, "text/plain")
    answer = send(
        served,
        "POST",
        "/api/sessions/heads/context/files",
        body,
        content_type,
        "one-write",
        headers={"X-Big": "a" * (MAX_HEADER_BYTES + 1)},
    )

    assert answer.status == 431


def test_blank_lines_before_a_request_line_do_not_hide_an_oversized_head(served: tuple[str, int]) -> None:
    with socket.create_connection(served, timeout=60) as sock:
        head = b"\r\n\r\nGET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES + 1024)
        # The server may answer and close before the rest arrives.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head + b"\r\nConnection: close\r\n\r\n")
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk

    assert not answer.startswith(b"HTTP/1.1 200")
