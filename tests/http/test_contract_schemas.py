"""docs/contracts holds the handoff's JSON Schemas exactly as the models generate them, and they describe what the
API really accepts and sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from orc.http.contract_schemas import CONTRACTS, DEFAULT_FOLDER, differences, main, write
from tests.http.conftest import upload
from tests.http.test_context_handoff import LEASE, NDJSON, events, paused, turn


def contract(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((DEFAULT_FOLDER / name).read_text(encoding="utf-8"))
    return schema


def test_the_published_schemas_are_exactly_what_the_models_generate() -> None:
    assert differences() == [], "docs/contracts is out of date: run `make contracts`"


def test_a_changed_missing_or_extra_file_is_reported(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / "slot.schema.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "supply-body.schema.json").unlink()
    (tmp_path / "old.schema.json").write_text("{}\n", encoding="utf-8")

    assert differences(tmp_path) == ["old.schema.json", "slot.schema.json", "supply-body.schema.json"]
    assert main(["--check", "--out", str(tmp_path)]) == 1
    assert main(["--out", str(tmp_path)]) == 0
    assert differences(tmp_path) == []


def test_every_contract_is_a_valid_draft_2020_12_schema() -> None:
    for name in CONTRACTS:
        jsonschema.Draft202012Validator.check_schema(contract(name))


def test_the_supply_body_schema_accepts_a_text_and_a_span_and_refuses_a_payload_with_two_references() -> None:
    validator = jsonschema.Draft202012Validator(contract("supply-body.schema.json"))
    good = {"payloads": [{"slot": "evidence-1", "text": "The rent is 900."}, {"slot": "d", "source_ref": "a::S1"}]}

    assert not list(validator.iter_errors(good))
    assert list(validator.iter_errors({"payloads": [{"slot": "s", "text": "t", "extra": 1}]}))


@pytest.mark.parametrize("outcome", ["supplied", "run_without", "expired"])
def test_the_resolved_event_schema_names_each_outcome(outcome: str) -> None:
    validator = jsonschema.Draft202012Validator(contract("context_resolved.event.schema.json"))

    assert not list(validator.iter_errors({"type": "context_resolved", "request_id": "r1", "outcome": outcome}))
    assert list(validator.iter_errors({"type": "context_resolved", "request_id": "r1", "outcome": "maybe"}))


async def test_a_real_pause_its_slots_and_its_ndjson_event_match_the_published_schemas(
    client: httpx.AsyncClient,
) -> None:
    await upload(client, "c1", ("lease.txt", LEASE))
    body = await paused(client)
    # A new question supersedes the first pause, and pauses again: this time on a stream.
    streamed = await client.post(
        "/api/orc", json=turn("What is the parking fee?", context_requests="allow"), headers=NDJSON
    )

    jsonschema.validate(body, contract("context-request.schema.json"))
    for slot in body["required"]:
        jsonschema.validate(slot, contract("slot.schema.json"))
    event = [e for e in events(streamed) if e["type"] == "context_required"][-1]
    jsonschema.validate(event, contract("context_required.event.schema.json"))
