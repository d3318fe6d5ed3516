"""A deadline on every request body, read or not, under both HTTP parsers: a client that drips the body of a request
the server answered without reading it (401, 404, 405, a refusal) is cut off, and a client still writing an upload
the server refused reads the refusal instead of a connection reset.

Before: uvicorn read and dropped such a body for as long as it came, each byte putting off the keep-alive timeout
(8,191 unauthenticated connections dripping a byte every 4 s made ``/api/health`` answer 503 for 36 s), and a
refusal that closed the connection while the body still arrived reset it (912 of 3,154 uploads over the limit got
a reset instead of 429)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pytest
from starlette.types import Receive, Scope, Send

from orc.http.connection_limits import H11HeadLimitsProtocol, HttpToolsHeadLimitsProtocol
from tests.adversarial.uvicorn_server import serving
from tests.serving import orc_serve
from tests.traffic.wire import multipart

WAIT_SECONDS = 30.0
"""A bound for what should happen at once (or within the short linger set below), not a wait."""
PROTOCOLS = {"httptools": HttpToolsHeadLimitsProtocol, "h11": H11HeadLimitsProtocol}


async def answers_unread(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers every request without reading its body: 401, as a route that needs a key does; ``/refuse`` with 429
    and ``Connection: close``, as a refusal does."""
    if scope["type"] != "http":
        return
    refuse = scope["path"] == "/refuse"
    status, body = (429, b'{"code":"too_many_uploads"}') if refuse else (401, b'{"code":"unauthenticated"}')
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
    if refuse:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(params=sorted(PROTOCOLS))
def server(request: pytest.FixtureRequest) -> Iterator[int]:
    protocol = PROTOCOLS[request.param]
    assert protocol is not None

    class QuickLinger(protocol):  # type: ignore[misc, valid-type]
        linger_seconds = 0.5

    with serving(answers_unread, QuickLinger) as port:
        yield port


def read_head(sock: socket.socket) -> bytes:
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {received[:200]!r}"
        received += chunk
    return received


def test_a_client_dripping_a_body_the_server_answered_without_reading_is_cut_off(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server), timeout=WAIT_SECONDS) as dripping:
        dripping.sendall(b"POST /api/sessions/s/context/files HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nx")
        answer = read_head(dripping)
        dripping.settimeout(0.2)
        closed = False
        for _ in range(int(WAIT_SECONDS / 0.2)):  # one byte per round, as long as the server listens
            try:
                dripping.sendall(b"x")
                closed = dripping.recv(65536) == b""
            except TimeoutError:
                continue  # still open: drip on
            except (BrokenPipeError, ConnectionResetError):
                closed = True
            if closed:
                break

    assert answer.startswith(b"HTTP/1.1 401")
    assert closed, "the server kept reading a body it had answered without"


@pytest.mark.parametrize("size", [12 * 1024 * 1024, 20 * 1024 * 1024])
def test_a_client_still_writing_a_refused_upload_reads_the_refusal_not_a_reset(server: int, size: int) -> None:
    head = f"POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", server), timeout=WAIT_SECONDS) as client:
        client.sendall(head + b"x" * size)  # urllib and most clients write the whole body, then read
        answer = read_head(client)

    assert answer.startswith(b"HTTP/1.1 429")
    assert b"connection: close" in answer.lower()


def test_a_connection_whose_body_arrived_whole_is_kept_alive(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server), timeout=WAIT_SECONDS) as client:
        client.sendall(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
        first = read_head(client)
        client.sendall(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        answers = first
        while answers.count(b"HTTP/1.1 401") < 2:
            chunk = client.recv(65536)
            assert chunk, f"closed after {answers!r}"
            answers += chunk

    assert answers.startswith(b"HTTP/1.1 401")


# -- through orc serve ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def orc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    with orc_serve(tmp_path_factory.mktemp("unread") / "home") as (url, _):
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port)


def test_uploads_over_the_bodies_one_caller_may_send_at_once_get_429_and_never_a_reset(
    orc_server: tuple[str, int],
) -> None:
    """16 uploads held open, slowly, by one caller; its next uploads of 5 MB are refused with 429, each read by a
    client that writes its whole body first (the refusal comes once the 16 are counted: the loop waits for it)."""
    document = b"%PDF-1.4\n" + bytes(range(256)) * (5 * 4096)
    body, content_type = multipart("files", "report.pdf", document, "application/pdf")
    head = (
        f"POST /api/sessions/held/context/files HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    statuses: list[bytes] = []
    with contextlib.ExitStack() as stack:
        for _ in range(16):
            held = stack.enter_context(socket.create_connection(orc_server, timeout=WAIT_SECONDS))
            held.sendall(head + body[:1000])  # and nothing more while the others try
        for _ in range(40):
            with socket.create_connection(orc_server, timeout=WAIT_SECONDS) as client:
                client.sendall(head + body)  # the whole body, then the answer: a reset fails here
                status_line = read_head(client).split(b"\r\n", 1)[0]
            statuses.append(status_line)
            if b" 429 " in status_line:
                break

    assert statuses and b" 429 " in statuses[-1], statuses
    assert all(b" 201 " in line for line in statuses[:-1]), statuses


def test_a_multipart_supply_to_an_unknown_request_is_refused_before_a_byte_of_its_files_is_read(
    orc_server: tuple[str, int],
) -> None:
    """The head and the first kilobyte of a 20 MB supply: the refusal comes while the rest is still unsent (before,
    the files were parsed and extracted first — 60 s of the only worker — and then refused)."""
    document = b"%PDF-1.4\n" + bytes(range(256)) * (20 * 4096)
    body, content_type = multipart("files", "evidence.pdf", document, "application/pdf")
    head = (
        "POST /api/sessions/s1/context-requests/req-unknown/supply HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(orc_server, timeout=WAIT_SECONDS) as client:
        client.sendall(head + body[:1000])
        answer = read_head(client)
        while b"context_request_not_found" not in answer and (chunk := client.recv(65536)):
            answer += chunk

    assert answer.startswith(b"HTTP/1.1 404"), answer[:300]
    assert b"context_request_not_found" in answer
