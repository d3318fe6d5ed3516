"""The published input contracts (``docs/contracts``) are exactly as strict as the server: a JSON supply body the
schema accepts is never refused for its shape, and one the server refuses for its shape is refused by the schema.
Only what depends on the request itself (its slots, what the caller can see) is the server's alone.

Before: the supply-body schema accepted seven bodies the server refused (no payload, no reference, two references,
an over-long or blank text, a malformed document id or SourceRef), and a JSON supply could set ``name``, the
provenance only a supplied file may carry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema
import pytest

from orc.http.contract_schemas import DEFAULT_FOLDER
from tests.http.conftest import open_client, upload
from tests.http.test_context_handoff import LEASE, paused, supply_path

REQUEST_DEPENDENT = {"supply_not_found", "document_not_found", "span_not_found", "unknown_slot"}
"""Refusals no schema can know of: they depend on the request's slots and on what the caller can see."""


def text(value: str) -> dict[str, Any]:
    return {"payloads": [{"slot": "evidence", "text": value}]}


def document(value: str) -> dict[str, Any]:
    return {"payloads": [{"slot": "evidence", "document_id": value}]}


def ref(value: str) -> dict[str, Any]:
    return {"payloads": [{"slot": "evidence", "source_ref": value}]}


BODIES: dict[str, Any] = {
    # shapes the schema used to accept and the server refused
    "no payload": {"payloads": []},
    "no reference": {"payloads": [{"slot": "evidence"}]},
    "only nulls": {"payloads": [{"slot": "evidence", "text": None, "document_id": None, "source_ref": None}]},
    "two references": {"payloads": [{"slot": "evidence", "text": "Parking is 80 euros.", "source_ref": "a::S1"}]},
    "three references": {"payloads": [{"slot": "evidence", "text": "x", "document_id": "d1", "source_ref": "a::S1"}]},
    "text one over": text("x" * 20_001),
    "blank text": text("  \n\t "),
    "empty text": text(""),
    "text of unicode spaces": text("\u3000\u2028\x1c\x85"),
    "empty slot": {"payloads": [{"slot": "", "text": "Parking is 80 euros."}]},
    "document id with a path": document("../lease"),
    "empty document id": document(""),
    "document id ending in a dot": document("doc."),
    "document id of a device": document("CON.txt"),
    "document id of 129 characters": document("d" * 129),
    "document id with a line break": document("doc-1\n"),
    "ref without its separator": ref("lease.txt S1"),
    "ref without a span": ref("lease.txt::"),
    "ref without a document": ref("::S1"),
    "empty ref": ref(""),
    "a name in a JSON supply": {"payloads": [{"slot": "evidence", "text": "Parking is 80 euros.", "name": "a.pdf"}]},
    # shapes both accept (the request may still refuse what it cannot find)
    "a text": text("Parking is 80 euros a month."),
    "a text of exactly the limit": text("Parking is 80 euros. " + "x" * (20_000 - 21)),
    "a text with a byte-order mark": text("\ufeff"),
    "a text with nulls beside it": {
        "payloads": [{"slot": "evidence", "text": "Parking is 80.", "document_id": None, "source_ref": None}]
    },
    "a document id": document("doc-nope"),
    "a document id of 128 characters": document("d" * 128),
    "a document id that only starts like a device": document("console.txt"),
    "a ref": ref("other.pdf::S1"),
    "a ref split at its last separator": ref("a:::S1"),
    "a ref whose span ends in a colon": ref("a::S1:"),
}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with open_client() as http:
        yield http


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((DEFAULT_FOLDER / "supply-body.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


async def test_the_supply_body_schema_accepts_exactly_the_shapes_the_server_accepts(
    client: httpx.AsyncClient, validator: jsonschema.Draft202012Validator
) -> None:
    await upload(client, "c1", ("lease.txt", LEASE))
    verdicts = {}
    request_id = (await paused(client))["request_id"]
    for name, body in BODIES.items():
        response = await client.post(supply_path(request_id), json=body)
        if response.status_code < 400:
            request_id = (await paused(client))["request_id"]  # that one resolved: the next body needs another
        shape_refused = response.status_code >= 400 and response.json().get("code") not in REQUEST_DEPENDENT
        schema_refused = bool(list(validator.iter_errors(body)))
        verdicts[name] = (schema_refused, shape_refused, response.status_code, response.json().get("code"))

    disagreements = {name: verdict for name, verdict in verdicts.items() if verdict[0] != verdict[1]}
    assert disagreements == {}
    assert sum(verdict[0] for verdict in verdicts.values()) == 21


async def test_refusals_keep_their_codes(client: httpx.AsyncClient) -> None:
    await upload(client, "c1", ("lease.txt", LEASE))
    request_id = (await paused(client))["request_id"]
    expected = {
        "no payload": (400, "no_payloads"),
        "text one over": (413, "payload_too_large"),
        "blank text": (400, "empty_supply"),
        "document id with a path": (400, "invalid_name"),
        "ref without a span": (400, "invalid_source_ref"),
        "a name in a JSON supply": (400, "invalid_supply"),
    }

    answers = {name: await client.post(supply_path(request_id), json=BODIES[name]) for name in expected}

    assert {name: (r.status_code, r.json()["code"]) for name, r in answers.items()} == expected


async def test_a_supplied_file_still_keeps_its_name(client: httpx.AsyncClient) -> None:
    await upload(client, "c1", ("lease.txt", LEASE))
    request_id = (await paused(client))["request_id"]
    files = [("files", ("parking.txt", b"Parking costs 80 euros a month.", "text/plain"))]

    answer = await client.post(supply_path(request_id), data={"slot": "evidence"}, files=files)
    stored = (await client.get(f"/api/sessions/c1/context-requests/{request_id}")).json()

    assert answer.status_code == 200, answer.text
    assert [(supply["kind"], supply["name"]) for supply in stored["supplies"]] == [("file", "parking.txt")]
