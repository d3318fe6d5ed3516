"""What the README and docs/ state about the product is checked against the product, so it cannot drift: the JSON
answer of `POST /api/orc` against a real answer, every route and MCP tool documented, and the counts, versions and
budgets the pages quote."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from orc.http import create_app
from orc.resources import COSMOS_CONTAINERS
from orc.settings import Settings
from orc.tool_contract import SESSION_ATTACH_PATH, TOOL_NAMES, published_tool_name
from tests.support import lifespan
from tests.test_readme import README, code_blocks

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HTTP_API = (DOCS / "http-api.md").read_text(encoding="utf-8")
MCP = (DOCS / "mcp.md").read_text(encoding="utf-8")
DEPLOYING = (DOCS / "deploying-to-azure.md").read_text(encoding="utf-8")
VARYING = {"usage", "elapsed_ms", "created_at"}
"""Numbers that differ from run to run: shown in the example, not compared."""
NUMBER_WORDS = {"ten": 10, "eleven": 11, "twelve": 12}


def matches(shown: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``shown`` (the documented example) says something ``actual`` does not. A string shortened with "…"
    matches when its pieces appear in order; a dict's keys must all exist (the citations' exactly); lists are
    compared item by item as far as the example goes."""
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return [f"{where}: not an object"]
        problems = [f"{where}.{key}: not in the answer" for key in shown if key not in actual]
        if where.endswith("citations[0]") and set(shown) != set(actual):
            problems.append(f"{where}: the answer's keys are {sorted(actual)}")
        for key, value in shown.items():
            if key in actual and key not in VARYING:
                problems += matches(value, actual[key], f"{where}.{key}")
        return problems
    if isinstance(shown, list):
        if not isinstance(actual, list) or len(actual) < len(shown):
            return [f"{where}: the answer has fewer items"]
        return [problem for i, item in enumerate(shown) for problem in matches(item, actual[i], f"{where}[{i}]")]
    if isinstance(shown, str) and "…" in shown and isinstance(actual, str):
        position = 0
        for piece in shown.split("…"):
            found = actual.find(piece, position)
            if found < 0:
                return [f"{where}: {piece!r} is not in {actual!r}"]
            position = found + len(piece)
        return []
    return [] if shown == actual else [f"{where}: shown {shown!r}, answered {actual!r}"]


def documented_answer() -> tuple[dict[str, Any], dict[str, Any]]:
    """The request of the HTTP page's curl example and the JSON answer it shows."""
    section = HTTP_API[HTTP_API.index("The JSON answer of `POST /api/orc`") :]
    (request_line,) = re.findall(r"-d '(\{.*?\})'", code_blocks("sh", section)[0])
    return json.loads(request_line), json.loads(code_blocks("json", section)[0])


async def test_the_documented_json_answer_is_what_orc_answers() -> None:
    request, shown = documented_answer()
    sample = ROOT / "orc" / "samples" / request["blob_names"][0]

    async with lifespan(create_app(Settings())) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            uploaded = await client.post(
                f"/api/sessions/{request['conversation_id']}/context/files",
                files=[("files", (sample.name, sample.read_bytes(), "text/markdown"))],
            )
            answer = (await client.post("/api/orc", json=request)).json()

    assert uploaded.status_code == 201
    assert set(shown) == set(answer), "the example shows exactly the answer's top-level fields"
    assert matches(shown, answer) == []
    assert shown["metadata"]["model_calls"] == 1


def as_documented(path: str) -> str:
    """An OpenAPI path as the route table writes it: ``{id}`` for the session's and the context's id."""
    return re.sub(r"\{(?:session_id|context_id)\}", "{id}", path).replace("{context_type}", "{type}")


async def test_every_route_of_the_api_is_in_the_http_page() -> None:
    async with lifespan(create_app(Settings())) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            paths = (await client.get("/api/openapi.json")).json()["paths"]
    routes = [f"{method.upper()} {as_documented(path)}" for path, operations in paths.items() for method in operations]

    assert len(routes) >= 30
    assert [route for route in routes if f"`{route}" not in HTTP_API] == []


@pytest.mark.parametrize("name", sorted(TOOL_NAMES | {SESSION_ATTACH_PATH}))
def test_every_mcp_tool_is_in_the_readme_by_its_stdio_name_and_in_the_mcp_page(name: str) -> None:
    assert f"`{published_tool_name(name, 'underscore')}`" in README
    assert f"`{name}`" in MCP


def test_the_container_counts_the_guide_quotes_are_the_codes() -> None:
    quoted = re.findall(r"\b(\d+|ten|eleven|twelve) containers\b", DEPLOYING)

    assert quoted
    assert {int(NUMBER_WORDS.get(count, count)) for count in quoted} == {len(COSMOS_CONTAINERS)}


def test_the_digest_prompt_version_quoted_is_the_manifests() -> None:
    manifest = json.loads((ROOT / "prompts" / "manifest.json").read_text(encoding="utf-8"))
    (quoted,) = re.findall(r"from `prompts/manifest.json` \(`(v[\d.]+)`", HTTP_API)

    assert quoted == manifest["context_preprocess_aggregate.system"]["version"]


def test_the_pages_own_javascript_stays_under_the_budget_the_docs_state() -> None:
    own = sum(path.stat().st_size for path in (ROOT / "orc" / "web" / "js").glob("*.js"))

    assert "its own JavaScript stays under 100 KB" in (DOCS / "web-page.md").read_text(encoding="utf-8")
    assert own <= 100_000
