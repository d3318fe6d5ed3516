"""function_app.py in-process: real azure.functions.HttpRequest objects give the same answers as the ASGI app."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import azure.functions as func
import httpx
import pytest
import pytest_asyncio

ROOT = Path(__file__).resolve().parents[1]
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
    """Shut the app down on the loop that started it. Otherwise AsgiFunctionApp.__del__ does it with
    asyncio.run() whenever the object is collected, which fails inside a later test's running loop."""
    yield
    app = function_module.app
    if app.startup_task_done:
        await app.middleware.notify_shutdown()
        app.startup_task_done = False


@pytest.fixture(scope="module")
def handler(function_module: ModuleType) -> Any:
    """The one catch-all function AsgiFunctionApp registers (get_functions may only be called once per app)."""
    functions = function_module.app.get_functions()
    assert len(functions) == 1
    return functions[0].get_user_function()


def request(method: str, path: str, *, body: bytes = b"", headers: dict[str, str] | None = None) -> func.HttpRequest:
    return func.HttpRequest(method, f"http://localhost{path}", headers=headers or {}, body=body)


def multipart(name: str, data: bytes) -> tuple[bytes, dict[str, str]]:
    built = httpx.Request("POST", "http://localhost/", files=[("files", (name, data, "text/plain"))])
    return built.read(), {"content-type": built.headers["content-type"]}


async def test_the_function_app_registers_one_http_function_under_the_api_prefix(function_module: ModuleType) -> None:
    host = json.loads((ROOT / "host.json").read_text())
    assert host["extensions"]["http"]["routePrefix"] == "api"
    assert isinstance(function_module.app, func.AsgiFunctionApp)


async def test_health_answers_through_the_functions_entry(handler: Any) -> None:
    response = await handler(request("GET", "/api/health"), None)

    assert response.status_code == 200
    assert json.loads(response.get_body())["storage"] == "embedded"


async def test_a_document_turn_through_the_functions_entry_cites_the_document(handler: Any) -> None:
    body, headers = multipart("lease.txt", b"The monthly rent is 1,450 euros.\n\nNotice is 60 days.")
    uploaded = await handler(request("POST", "/api/sessions/fn-conv/context/files", body=body, headers=headers), None)
    assert uploaded.status_code == 201, uploaded.get_body()

    turn = {"question": "What is the monthly rent?", "conversation_id": "fn-conv", "blob_names": ["lease.txt"]}
    response = await handler(
        request("POST", "/api/orc", body=json.dumps(turn).encode(), headers={"content-type": "application/json"}), None
    )

    assert response.status_code == 200, response.get_body()
    answer = json.loads(response.get_body())
    assert "1,450" in answer["answer"]
    assert answer["citations"][0]["document"] == "lease.txt"
    assert answer["metadata"]["tool"] == "document_chat"


async def test_bad_input_is_the_same_problem_json_as_over_asgi(handler: Any) -> None:
    turn = {"question": "x", "conversation_id": "fn-conv", "blob_names": ["../etc/passwd"]}
    response = await handler(
        request("POST", "/api/orc", body=json.dumps(turn).encode(), headers={"content-type": "application/json"}), None
    )

    assert response.status_code == 400
    assert response.mimetype == "application/problem+json"
    assert json.loads(response.get_body())["code"] == "invalid_name"


async def test_streaming_requests_get_the_whole_ndjson_stream_buffered(handler: Any) -> None:
    turn = {"question": "What is the notice period?", "conversation_id": "fn-conv", "blob_names": ["lease.txt"]}
    headers = {"content-type": "application/json", "accept": "application/x-ndjson"}
    response = await handler(request("POST", "/api/orc", body=json.dumps(turn).encode(), headers=headers), None)

    events = [json.loads(line) for line in response.get_body().decode().splitlines() if line]
    assert events[-1]["type"] == "final"
    assert "60 days" in events[-1]["answer"]
