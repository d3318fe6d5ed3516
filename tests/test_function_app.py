"""function_app.py in process, driven as the Functions HTTP-streams extension drives it: the worker's Starlette
request in, the function's streaming response out, read chunk by chunk."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from pydantic import PrivateAttr

from orc.http import create_app
from orc.http.functions_relay import RelayFunctionApp
from orc.settings import Settings
from orc.testing import ScriptedChatModel
from tests.functions_requests import lines, multipart, read, worker_request

ROOT = Path(__file__).resolve().parents[1]
LEASE = b"The monthly rent is 1,450 euros.\n\nNotice is 60 days."
JSON = {"content-type": "application/json"}
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def function_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """function_app.py loaded fresh with its own ORC_HOME, as the Functions host would import it."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ORC_HOME", str(tmp_path_factory.mktemp("functions-home")))
        spec = importlib.util.spec_from_file_location("function_app_under_test", ROOT / "function_app.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module


@pytest_asyncio.fixture(scope="module", loop_scope="module", autouse=True)
async def shut_down_after_the_module(function_module: ModuleType) -> AsyncIterator[None]:
    """End the app's lifespan on the loop that started it."""
    yield
    await function_module.app.relay.shutdown()


@pytest.fixture(scope="module")
def functions(function_module: ModuleType) -> list[Any]:
    """The app's functions (get_functions indexes them once per app, as the worker does)."""
    found: list[Any] = function_module.app.get_functions()
    return found


@pytest.fixture(scope="module")
def handler(functions: list[Any]) -> Any:
    """The user function the worker invokes with the extension's request."""
    return functions[0].get_user_function()


async def call(handler: Any, method: str, path: str, **kwargs: Any) -> Any:
    return await read(await handler(worker_request(method, f"http://localhost:7071{path}", **kwargs)))


def host_route(functions: list[Any]) -> re.Pattern[str]:
    """The paths the Functions host sends to the HTTP function: host.json's route prefix, then its route template
    (``{*name}`` is ASP.NET's catch-all: any rest of the path, empty included)."""
    prefix = json.loads((ROOT / "host.json").read_text())["extensions"]["http"]["routePrefix"].strip("/")
    trigger = json.loads(functions[0].get_function_json())["bindings"][0]
    template = "/".join(part for part in (prefix, trigger["route"]) if part)
    pattern = re.sub(r"\\\{\\\*\w+\\\}", ".*", re.escape(template))
    return re.compile(f"/{pattern}")


async def test_one_catch_all_function_takes_every_method_and_every_path(functions: list[Any]) -> None:
    http = [f for f in functions if json.loads(f.get_function_json())["bindings"][0]["type"] == "httpTrigger"]
    assert len(http) == 1 and http[0] is functions[0]
    trigger = json.loads(functions[0].get_function_json())["bindings"][0]
    assert trigger["type"] == "httpTrigger" and trigger["route"] == "{*path}"
    assert {"GET", "POST", "PUT", "DELETE", "PATCH"} <= set(trigger["methods"])


@pytest.mark.parametrize(
    ("path", "content_type", "marker"),
    [
        ("/", "text/html", b"<html"),
        ("/web/app.css", "text/css", b"{"),
        ("/api/health", "application/json", b'"status"'),
    ],
)
async def test_the_host_routes_the_page_its_assets_and_the_api_to_the_function(
    functions: list[Any], handler: Any, path: str, content_type: str, marker: bytes
) -> None:
    assert host_route(functions).fullmatch(path), f"the Functions host would not send {path} to orc"

    answer = await call(handler, "GET", path)

    assert answer.status == 200, answer.body
    assert answer.headers["content-type"].startswith(content_type)
    assert marker in answer.body


async def test_the_template_turns_off_the_hosts_own_home_page() -> None:
    # With no route prefix the host would otherwise answer / with its "Functions is running" page.
    bicep = (ROOT / "infra" / "main.bicep").read_text(encoding="utf-8")
    assert "{ name: 'AzureWebJobsDisableHomepage', value: 'true' }" in bicep


async def test_health_answers_through_the_functions_entry(handler: Any) -> None:
    answer = await call(handler, "GET", "/api/health")

    assert answer.status == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["storage"] == "embedded"


async def test_a_multipart_upload_and_a_document_turn_through_the_entry_cite_the_document(handler: Any) -> None:
    body, headers = multipart("lease.txt", LEASE)
    uploaded = await call(handler, "POST", "/api/sessions/fn-conv/context/files", body=body, headers=headers)
    assert uploaded.status == 201, uploaded.body

    turn = {"question": "What is the monthly rent?", "conversation_id": "fn-conv", "blob_names": ["lease.txt"]}
    answer = await call(handler, "POST", "/api/orc", body=json.dumps(turn).encode(), headers=JSON)

    assert answer.status == 200, answer.body
    assert "1,450" in answer.json()["answer"]
    assert answer.json()["citations"][0]["document"] == "lease.txt"


async def test_bad_input_is_the_same_problem_json_as_over_asgi(handler: Any) -> None:
    turn = {"question": "x", "conversation_id": "fn-conv", "blob_names": ["../etc/passwd"]}
    answer = await call(handler, "POST", "/api/orc", body=json.dumps(turn).encode(), headers=JSON)

    assert answer.status == 400
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "invalid_name"


async def test_an_unknown_route_is_a_404_problem(handler: Any) -> None:
    answer = await call(handler, "GET", "/api/no-such-route")

    assert answer.status == 404
    assert answer.headers["content-type"] == "application/problem+json"


async def test_a_body_over_the_limit_is_refused_as_it_streams_in_without_a_content_length(handler: Any) -> None:
    too_big = b"x" * (Settings().max_request_bytes + 1)
    answer = await call(handler, "POST", "/api/orc", body=too_big, headers=JSON)

    assert answer.status == 413
    assert answer.json()["code"] == "payload_too_large"


async def test_the_context_stream_keeps_its_status_and_headers(handler: Any) -> None:
    # A session of its own with a file: a session without files is followed until its first upload lands.
    body, headers = multipart("lease.txt", LEASE)
    uploaded = await call(handler, "POST", "/api/sessions/fn-stream/context/files", body=body, headers=headers)
    assert uploaded.status == 201, uploaded.body

    answer = await call(handler, "GET", "/api/sessions/fn-stream/context/stream")

    assert answer.status == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["cache-control"] == "no-cache"
    assert answer.headers["x-accel-buffering"] == "no"
    assert answer.body.decode().rstrip().split("\n\n")[-1].startswith("event: done")


async def test_mcp_answers_json_rpc_through_the_entry(handler: Any) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {**JSON, "accept": "application/json, text/event-stream", "host": "localhost:7071"}
    answer = await call(handler, "POST", "/api/mcp", body=json.dumps(initialize).encode(), headers=headers)

    assert answer.status == 200, answer.body
    assert answer.json()["result"]["serverInfo"]["name"]


class GatedModel(ScriptedChatModel):
    """Streams each scripted reply only once the test opens the gate, so a turn cannot end before it does."""

    _gate: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)

    def open(self) -> None:
        """Let the model answer."""
        self._gate.set()

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        await self._gate.wait()
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


async def test_the_first_ndjson_event_arrives_before_the_turn_ends(tmp_path: Path) -> None:
    model = GatedModel(["Hello from the gated model."])
    functions = RelayFunctionApp(create_app(Settings(home=tmp_path), model=model))
    handler = functions.get_functions()[0].get_user_function()
    turn = {"question": "Say hello.", "conversation_id": "gated"}
    headers = {**JSON, "accept": "application/x-ndjson"}
    try:
        request = worker_request("POST", "http://localhost/api/orc", body=json.dumps(turn).encode(), headers=headers)
        response = await handler(request)
        assert response.headers["content-type"].startswith("application/x-ndjson")
        events = lines(response.body_iterator)

        first = json.loads(await anext(events))
        assert first["type"] == "progress"
        assert not model._gate.is_set()  # the model has not answered: the turn is still running

        model.open()
        rest = [json.loads(line) async for line in events]
        assert rest[-1]["type"] == "final"
        assert "gated model" in rest[-1]["answer"]
    finally:
        await functions.relay.shutdown()
