"""`orc doctor`'s search check: the embedded index, or Azure AI Search's index, its schema and a write probe, through
the SDK and a transport that answers like the service (tests/search/azure_service.py)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from orc.doctor import search_checks
from orc.resources import SEARCH_INDEX
from orc.search.azure import AzureSearchEngine
from orc.settings import Settings
from tests.search.azure_service import ENDPOINT, Recorded, SearchService

KEY = "doctor-admin-key-never-shown"


def azure(tmp_path: Path, **fields: Any) -> Settings:
    return Settings(home=tmp_path, search="azure", search_endpoint=ENDPOINT, search_key=KEY, **fields)


async def checks_on(service: SearchService, settings: Settings) -> list[Any]:
    async with AsyncExitStack() as stack:
        return await search_checks(settings, stack, transport=service, retry_total=0)


async def created(service: SearchService, dimensions: int = 1536) -> None:
    engine = AzureSearchEngine.from_endpoint(ENDPOINT, SEARCH_INDEX, key=KEY, transport=service)
    await engine.prepare(create=True, dimensions=dimensions)
    await engine.aclose()


async def test_a_ready_index_passes_and_the_probe_leaves_nothing_behind(tmp_path: Path) -> None:
    service = SearchService()
    await created(service)

    (check,) = await checks_on(service, azure(tmp_path, search_semantic=True))

    assert check.outcome == "ok" and "index 'orc-spans'" in check.detail and "semantic ranker on" in check.detail
    assert service.items == {}
    assert any(request.path.endswith("search.index") for request in service.requests)


async def test_a_missing_index_fails_with_how_to_create_it_and_is_not_created(tmp_path: Path) -> None:
    service = SearchService()

    (check,) = await checks_on(service, azure(tmp_path))

    assert (check.subject, check.outcome) == ("search index 'orc-spans'", "fail")
    assert "azd provision" in check.fix and service.index is None


async def test_refused_credentials_name_the_role_and_no_secret(tmp_path: Path) -> None:
    service = SearchService()
    await created(service)

    def forbidden(request: Recorded) -> tuple[int, Any, dict[str, str]] | None:
        return 403, {"error": {"code": "", "message": f"denied for {KEY} at {ENDPOINT}"}}, {}

    service.fault = forbidden
    (check,) = await checks_on(service, azure(tmp_path))

    assert check.outcome == "fail" and "Search Index Data Contributor" in check.fix
    assert KEY not in check.detail and "orc-test" not in check.detail


async def test_the_embedded_index_passes_and_on_azure_says_each_instance_keeps_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (local,) = await checks_on(SearchService(), Settings(home=tmp_path))
    monkeypatch.setenv("WEBSITE_SITE_NAME", "func-orc")  # what App Service sets
    (on_azure,) = await checks_on(SearchService(), Settings(home=tmp_path))

    assert local.outcome == on_azure.outcome == "ok"
    assert "each instance keeps its own copy" in on_azure.detail and "ORC_SEARCH=azure" in on_azure.detail
