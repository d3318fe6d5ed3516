"""Malformed input is a 4xx with a stable code, never a 500: lone surrogates in blob names, deeply nested JSON to
/api/mcp or inside an uploaded file, and a truncated JSON body from the model provider."""

from __future__ import annotations

import httpx

from orc.json_depth import json_depth, too_deep
from orc.settings import Settings
from tests.http.conftest import open_client, settled, upload
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, serve

DEEP = b"[" * 100_000 + b"]" * 100_000
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def test_nesting_is_measured_outside_strings() -> None:
    assert json_depth('{"a": "[[[[", "b": [[1], {"c": []}]}') == 4
    assert too_deep(DEEP) and not too_deep(b'{"jsonrpc": "2.0", "id": 1, "params": {"a": [[1]]}}')


async def test_a_lone_surrogate_in_blob_names_is_an_invalid_name() -> None:
    async with open_client() as client:
        response = await client.post(
            "/api/orc",
            content=b'{"question": "What is the rent?", "blob_names": ["\\ud800.txt"]}',
            headers={"content-type": "application/json"},
        )

    assert response.status_code == 400 and response.json()["code"] == "invalid_name"


async def test_deeply_nested_json_to_mcp_is_a_parse_error_not_a_500() -> None:
    async with open_client() as client:
        deep = await client.post("/api/mcp", content=DEEP, headers=MCP_HEADERS)
        listed = await client.post(
            "/api/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=MCP_HEADERS
        )

    assert deep.status_code == 400 and deep.json()["error"]["code"] == -32700
    assert listed.status_code == 200 and listed.json()["result"]["tools"]


async def test_an_uploaded_json_file_nested_too_deeply_fails_with_a_reason() -> None:
    async with open_client() as client:
        stored = await upload(client, "c1", ("deep.json", b'{"a":' * 50_000 + b"1" + b"}" * 50_000))
        manifest = await settled(client, "c1")

    assert stored.status_code == 201
    (file,) = manifest["files"]
    assert file["status"] == "failed"
    assert "nests deeper" in (file["status_reason"] or "")


async def test_a_truncated_json_body_from_the_model_provider_is_a_coded_502() -> None:
    for running in serve(OpenAIEndpoint()):
        running.endpoint.reset(Reply(fault="truncated"))
        settings = Settings(
            model="openai:test-model",
            model_base_url=running.base_url,
            model_api_key="sk-test-0000",
            model_max_retries=0,
        )
        async with open_client(settings) as client:
            response = await client.post("/api/orc", json={"question": "What is the rent?"})

    assert isinstance(response, httpx.Response)
    assert 400 <= response.status_code < 600 and response.status_code != 500, response.text
    assert response.json()["code"] in {"model_error", "model_unavailable"}


async def test_reading_a_context_request_by_an_id_that_cannot_be_one_is_invalid_name() -> None:
    async with open_client() as client:
        responses = [
            await client.get(f"/api/sessions/s1/context-requests/{request_id}")
            for request_id in ("a%00b", "a%0Ab", "x" * 300, "a%5Cb")
        ]
        unknown = await client.get("/api/sessions/s1/context-requests/req-unknown")

    assert [(r.status_code, r.json()["code"]) for r in responses] == [(400, "invalid_name")] * 4
    assert (unknown.status_code, unknown.json()["code"]) == (404, "context_request_not_found")
