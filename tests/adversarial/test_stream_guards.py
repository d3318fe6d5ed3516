"""Every stream the app serves carries the same per-principal cap and idle timeout, through ``orc serve`` over
loopback: a context request's event stream and the streamed supply and run-without that resume a paused turn
included (one principal held 600 event streams open on one request, all alive at 70 s, when the stream guard
matched routes by hand)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.serving import orc_serve

KEYS = {"key-a": {"organization": "acme", "user": "a"}, "key-b": {"organization": "acme", "user": "b"}}
LEASE = (
    b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month.\n\n"
    b"The deposit is two months of rent and is returned within 30 days of the end of the lease."
)
CAP = 3
WAIT_SECONDS = 120.0
"""A bound for a stream that should end, not a wait: the read returns as soon as the server ends the stream."""


def serve(tmp_path: Path, **settings: str) -> contextlib.AbstractContextManager[tuple[str, int]]:
    env = {"ORC_AUTH": "api-key", "ORC_API_KEYS": json.dumps(KEYS), "ORC_RATE_LIMIT": "off", **settings}
    return orc_serve(tmp_path / "home", env=env)


def client(base_url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers={"X-API-Key": key}, timeout=WAIT_SECONDS)


def paused_request(http: httpx.Client) -> str:
    """A turn paused for context in conversation ``c1`` (the lease says nothing of parking); its request id."""
    uploaded = http.post("/api/sessions/c1/context/files", files=[("files", ("lease.txt", LEASE, "text/plain"))])
    assert uploaded.status_code == 201, uploaded.text
    ask = {
        "question": "What is the parking fee?",
        "conversation_id": "c1",
        "blob_names": ["lease.txt"],
        "context_requests": "allow",
    }
    answer = http.post("/api/orc", json=ask)
    assert answer.status_code == 200 and answer.json()["status"] == "context_required", answer.text
    request_id: str = answer.json()["request_id"]
    return request_id


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[str]:
    with serve(tmp_path, ORC_MAX_STREAMS_PER_PRINCIPAL=str(CAP)) as (base_url, _):
        yield base_url


def test_one_principal_cannot_hold_more_event_streams_or_streamed_resumptions_than_its_cap(capped: str) -> None:
    with client(capped, "key-a") as a, client(capped, "key-b") as b, contextlib.ExitStack() as held:
        request_id = paused_request(a)
        events = f"/api/sessions/c1/context-requests/{request_id}/events"
        opened = [held.enter_context(a.stream("GET", events)) for _ in range(CAP)]

        over = a.get(events)
        streamed_supply = a.post(
            f"/api/sessions/c1/context-requests/{request_id}/supply",
            json={"payloads": [{"slot": "evidence-1", "text": "Parking costs 80 euros a month."}]},
            headers={"Accept": "application/x-ndjson"},
        )
        streamed_without = a.post(
            f"/api/sessions/c1/context-requests/{request_id}/run-without", headers={"Accept": "text/event-stream"}
        )
        others = b.get(events)  # another principal's streams are its own (its request is not found: 404)

    assert [response.status_code for response in opened] == [200] * CAP
    for refused in (over, streamed_supply, streamed_without):
        assert refused.status_code == 429, refused.text
        assert refused.json()["code"] == "too_many_streams"
        assert "retry-after" in refused.headers
    assert others.status_code == 404


@pytest.fixture
def impatient(tmp_path: Path) -> Iterator[str]:
    with serve(tmp_path, ORC_STREAM_IDLE_SECONDS="1") as (base_url, _):
        yield base_url


def test_an_event_stream_that_sends_nothing_is_ended_by_the_idle_timeout(impatient: str) -> None:
    with client(impatient, "key-a") as a:
        request_id = paused_request(a)
        with a.stream("GET", f"/api/sessions/c1/context-requests/{request_id}/events") as stream:
            lines = [json.loads(line) for line in stream.iter_lines() if line.strip()]  # returns once it ends
        state = a.get(f"/api/sessions/c1/context-requests/{request_id}").json()

    assert stream.status_code == 200
    assert [event["status"] for event in lines] == ["pending"]  # its state, then nothing until the timeout
    assert state["status"] == "pending"  # the request itself still waits: only the idle stream was ended
