"""The Azure AI Search engine's requests and its reading of the answers, through the real SDK pipeline and a
transport that answers like the service (tests/search/azure_service.py): there is no emulator, so what reaches the
wire is what these tests pin — the index schema, the filters that trim every query to one organization, the query
shapes (lexical, vector, hybrid, semantic), idempotent versioned upserts, retries and the error mapping."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest
import pytest_asyncio

from orc.composition import open_azure_search
from orc.errors import ConfigurationError, StorageError, StorageUnavailable
from orc.resources import SEARCH_INDEX
from orc.search.azure import AzureSearchEngine
from orc.search.azure.schema import SCOPE_FIELDS, lucene_query, odata_in, scope_filter, span_key
from orc.search.port import SearchFilter, SearchRequest
from orc.settings import Settings
from orc.testing.conformance.search import ORG, OTHER_ORG, document, lexical, unit
from tests.search.azure_service import ENDPOINT, Recorded, SearchService

KEY = "an-admin-key-that-must-never-be-logged"


def engine_on(service: SearchService, **options: Any) -> AzureSearchEngine:
    return AzureSearchEngine.from_endpoint(ENDPOINT, SEARCH_INDEX, key=KEY, transport=service, **options)


@pytest_asyncio.fixture
async def service() -> SearchService:
    return SearchService()


@pytest_asyncio.fixture
async def engine(service: SearchService) -> AsyncIterator[AzureSearchEngine]:
    made = engine_on(service, dimensions=2, retry_delay=0.0)
    assert await made.prepare(create=True) == []
    yield made
    await made.aclose()


def searches(service: SearchService) -> list[dict[str, Any]]:
    return [request.body for request in service.requests if request.path.endswith("/docs/search.post.search")]


def batches(service: SearchService) -> list[list[dict[str, Any]]]:
    return [request.body["value"] for request in service.requests if request.path.endswith("/docs/search.index")]


# -- the index -------------------------------------------------------------------------------------------------


async def test_a_created_index_has_filterable_scope_fields_a_vector_field_of_the_measured_size_and_semantic_ranking(
    service: SearchService,
) -> None:
    engine = engine_on(service)

    async def measure() -> int:
        return 384

    assert await engine.prepare(create=True, measure=measure) == []
    await engine.aclose()

    (put,) = [request for request in service.requests if request.method == "PUT"]
    assert put.path == f"/indexes('{SEARCH_INDEX}')"
    fields = {field["name"]: field for field in put.body["fields"]}
    assert all(fields[name]["filterable"] for name in SCOPE_FIELDS)
    assert fields["id"]["key"] is True
    assert (fields["vector"]["dimensions"], fields["vector"]["vectorSearchProfile"]) == (384, "orc-vectors")
    assert put.body["vectorSearch"]["algorithms"][0]["hnswParameters"]["metric"] == "cosine"
    assert (fields["terms"]["analyzer"], fields["title_terms"]["analyzer"]) == ("whitespace", "whitespace")
    (semantic,) = put.body["semantic"]["configurations"]
    assert semantic["prioritizedFields"]["titleField"] == {"fieldName": "section"}
    assert semantic["prioritizedFields"]["prioritizedContentFields"] == [{"fieldName": "text"}]
    assert put.body["suggesters"][0]["sourceFields"] == ["words"]
    assert engine.dimensions == 384


async def test_a_missing_index_is_named_and_not_created_where_resources_are_only_checked(
    service: SearchService,
) -> None:
    engine = engine_on(service)

    (missing,) = await engine.prepare(create=False)
    await engine.aclose()

    assert (missing.kind, missing.name) == ("search index", SEARCH_INDEX)
    assert "infra/main.bicep" in missing.describe()
    assert [request.method for request in service.requests] == ["GET"]


async def test_an_index_without_a_field_orc_writes_is_reported_and_its_vector_size_learned(
    service: SearchService,
) -> None:
    creator = engine_on(service, dimensions=768)
    await creator.prepare(create=True)
    await creator.aclose()
    assert service.index is not None
    service.index["fields"] = [field for field in service.index["fields"] if field["name"] != "words"]
    service.index["fields"][1]["filterable"] = False  # organization

    engine = engine_on(service)
    (problem,) = await engine.prepare(create=False)
    await engine.aclose()

    assert "has no field 'words'" in problem.problem and "'organization' is not filterable" in problem.problem
    assert engine.dimensions == 768


async def test_a_started_app_refuses_to_start_without_its_index_naming_it(service: SearchService) -> None:
    settings = Settings(search="azure", search_endpoint=ENDPOINT, search_key=KEY, resources="check")

    async with AsyncExitStack() as stack:
        with pytest.raises(ConfigurationError) as refused:
            await open_azure_search(settings, stack, None, create=False, client_options={"transport": service})

    assert f"search index {SEARCH_INDEX!r} is missing" in refused.value.message
    assert ENDPOINT not in refused.value.message and KEY not in refused.value.message


async def test_the_settings_choose_key_semantic_ranking_and_the_index(service: SearchService) -> None:
    settings = Settings(search="azure", search_endpoint=ENDPOINT, search_key=KEY, search_semantic=True)

    async with AsyncExitStack() as stack:
        engine = await open_azure_search(settings, stack, None, create=True, client_options={"transport": service})
        await engine.upsert(document("lease", ["rent is due monthly"]))
        await engine.search(SearchRequest(SearchFilter(ORG), 5, terms={"rent": 1.0}, text="when is rent due"))

    assert all(request.headers.get("api-key") == KEY for request in service.requests)
    assert searches(service)[-1]["queryType"] == "semantic"


def test_azure_search_needs_its_endpoint() -> None:
    with pytest.raises(ConfigurationError, match="ORC_SEARCH_ENDPOINT"):
        Settings(search="azure").check()


# -- filters ---------------------------------------------------------------------------------------------------


async def test_every_query_is_trimmed_to_the_callers_organization(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("lease", ["rent is 900 euros"], vectors=[unit(1, 0)], model="m"))
    await engine.upsert(document("lease", ["rent is 500 euros"], organization=OTHER_ORG))
    vector = SearchRequest(SearchFilter(ORG), 5, terms={"rent": 1.0}, vector=unit(1, 0), vector_model="m")

    found = [
        *await engine.search(lexical("rent")),
        *await engine.search(SearchRequest(SearchFilter(ORG), 5, vector=unit(1, 0), vector_model="m", mode="vector")),
        *await engine.search(dataclasses.replace(vector, mode="hybrid")),
        *await engine.spans(ORG, "lease", [0]),
    ]
    await engine.entries(ORG, ["lease"])
    await engine.statistics(ORG, ["rent"])
    await engine.vocabulary(ORG, "re", 10)

    assert {hit.span.text for hit in found} == {"rent is 900 euros"}
    reads = [*searches(service), *(r.body for r in service.requests if r.path.endswith("autocomplete"))]
    scoped = [body["filter"] for body in reads if "version ne" not in body.get("filter", "")]
    assert scoped and all(where.startswith(f"organization eq '{ORG}' and ") for where in scoped)


async def test_a_quote_in_a_scope_value_cannot_widen_the_filter(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("lease", ["rent is 900 euros"]))
    await engine.upsert(document("lease", ["rent is 500 euros"], organization=OTHER_ORG))
    attack = f"x' or organization eq '{ORG}"

    assert await engine.search(lexical("rent", organization=attack)) == []
    assert await engine.search(lexical("rent", owners=frozenset({"y' or organization ne 'z"}))) == []
    assert await engine.search(lexical("rent", documents=frozenset({"a|b", "c,d", "e;f", "g~h", "i^j", "k'"}))) == []
    assert await engine.entries(attack, ["lease"]) == {}
    assert searches(service)[-4]["filter"].startswith("organization eq 'x'' or organization eq ''acme' and ")


def test_a_list_filter_uses_a_delimiter_no_value_holds() -> None:
    assert odata_in("owner", ["folder:a", "folder:b"]) == "search.in(owner, 'folder:a|folder:b', '|')"
    assert odata_in("owner", ["a|b", "c"]) == "search.in(owner, 'a|b,c', ',')"
    assert odata_in("document_id", ["a|,;~^", "it's"]) == "(document_id eq 'a|,;~^' or document_id eq 'it''s')"
    assert odata_in("owner", []) == "false"
    assert (
        scope_filter(SearchFilter("o'rg", owners=frozenset())) == "organization eq 'o''rg' and false and ordinal ge 0"
    )


def test_query_terms_are_escaped_lucene_terms_boosted_by_their_weight() -> None:
    assert lucene_query({"rent": 1.0, "deposit": 0.25}, 0.5) == (
        "terms:rent^1 title_terms:rent^0.5 terms:deposit^0.25 title_terms:deposit^0.125"
    )
    assert lucene_query({"a:b": 1.0, "(x)": 1.0, "skip": 0.0}, 0.0) == "terms:a\\:b^1 terms:\\(x\\)^1"
    assert lucene_query({"rare": 0.00001, "tiny": 0.00012}, 0.35) == "terms:tiny^0.0001"


# -- queries ---------------------------------------------------------------------------------------------------


async def test_a_lexical_query_is_one_full_lucene_request_with_ties_broken_by_document_and_ordinal(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("b-doc", ["same words", "same words"]))
    await engine.upsert(document("a-doc", ["same words"]))

    found = await engine.search(lexical("same"))

    assert [(hit.document_id, hit.span.ordinal) for hit in found] == [("a-doc", 0), ("b-doc", 0), ("b-doc", 1)]
    body = searches(service)[-1]
    assert body["queryType"] == "full" and body["search"] == "terms:same^1 title_terms:same^1"
    assert body["orderby"] == "search.score() desc,document_id asc,ordinal asc"
    assert body["top"] == 10 and "vectorQueries" not in body


async def test_a_hybrid_query_is_the_services_own_text_and_vector_request(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    rows = [unit(0, 1), unit(1, 0), unit(0.9, 0.1)]
    await engine.upsert(document("a", ["rent rent rent", "deposit", "rent deposit"], vectors=rows, model="m"))

    found = await engine.search(
        SearchRequest(SearchFilter(ORG), 3, terms={"rent": 1.0}, vector=unit(1, 0), vector_model="m", mode="hybrid")
    )

    assert [hit.span.ordinal for hit in found] == [0, 2, 1]
    body = searches(service)[-1]
    (vector_query,) = body["vectorQueries"]
    assert (vector_query["kind"], vector_query["fields"], vector_query["k"]) == ("vector", "vector", 3)
    assert body["search"].startswith("terms:rent^1") and "orderby" not in body
    assert body["filter"].endswith("and (vector_model eq 'm' or vector_model eq null)")


async def test_a_hybrid_query_finds_documents_without_vectors_by_their_terms_and_not_another_models(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("with", ["rent due"], vectors=[unit(1, 0)], model="m"))
    await engine.upsert(document("without", ["rent review"]))
    await engine.upsert(document("other", ["rent rise"], vectors=[unit(1, 0)], model="m2"))

    found = await engine.search(
        SearchRequest(SearchFilter(ORG), 5, terms={"rent": 1.0}, vector=unit(1, 0), vector_model="m", mode="hybrid")
    )

    assert {hit.document_id for hit in found} == {"with", "without"}
    assert engine.native_hybrid


async def test_a_vector_query_scores_cosine_similarity_and_keeps_to_its_model(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("a", ["north", "east"], vectors=[unit(1, 0), unit(0, 1)], model="m1"))

    found = await engine.search(
        SearchRequest(SearchFilter(ORG), 2, vector=unit(1, 0.2), vector_model="m1", mode="vector")
    )
    other = await engine.search(
        SearchRequest(SearchFilter(ORG), 2, vector=unit(1, 0), vector_model="m2", mode="vector")
    )

    assert [hit.span.ordinal for hit in found] == [0, 1]
    assert found[0].score == pytest.approx(1 / (1 + 0.2**2) ** 0.5, rel=1e-6)
    assert other == []
    assert "search" not in searches(service)[-2]


async def test_the_semantic_ranker_reads_the_askers_words_and_its_score_ranks(service: SearchService) -> None:
    engine = engine_on(service, semantic=True)
    await engine.prepare(create=True)
    await engine.upsert(document("manual", ["the pump needs descaling", "pump descaling is monthly work"]))

    found = await engine.search(
        SearchRequest(SearchFilter(ORG), 80, terms={"pump": 1.0, "descal": 1.0}, text="how often is descaling work")
    )
    await engine.aclose()

    body = searches(service)[-1]
    assert (body["queryType"], body["semanticConfiguration"]) == ("semantic", "orc-spans")
    assert body["semanticQuery"] == "how often is descaling work" and body["top"] == 50
    assert body["search"] == "pump descal" and body["searchFields"] == "terms,title_terms"
    assert [hit.span.ordinal for hit in found] == [1, 0] and found[0].score == 3.0  # is, descaling, work


# -- writes ----------------------------------------------------------------------------------------------------


async def test_an_upsert_writes_spans_then_the_head_then_drops_other_versions_and_twice_is_once(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("lease", ["rent is 900 euros", "pets allowed"]))
    await engine.upsert(document("lease", ["rent is 900 euros", "pets allowed"]))
    once = dict(service.items)
    await engine.upsert(document("lease", ["rent is 1200 euros"], version="v2"))

    assert len(once) == 3  # two spans and the head
    assert set(service.items) == {span_key(ORG, "lease", "v2", 0), next(k for k in once if k.endswith("-head"))}
    spans, head, drop = batches(service)[-3:]
    assert all(item["@search.action"] == "mergeOrUpload" for item in [*spans, *head])
    assert [item["ordinal"] for item in spans] == [0] and head[0]["ordinal"] == -1 and head[0]["version"] == "v2"
    assert {item["@search.action"] for item in drop} == {"delete"} and len(drop) == 2
    assert (await engine.entries(ORG, ["lease"]))["lease"].version == "v2"


async def test_a_delete_removes_the_head_first_then_every_span(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("lease", ["one", "two"]))
    await engine.upsert(document("memo", ["three"]))

    await engine.delete(ORG, "lease")
    await engine.delete(ORG, "lease")

    head, spans, again = batches(service)[-3:]
    assert head == [{"@search.action": "delete", "id": head[0]["id"]}] and head[0]["id"].endswith("-head")
    assert len(spans) == 2 and again == head  # the second delete finds no span left
    assert {item["document_id"] for item in service.items.values()} == {"memo"}


async def test_items_the_service_refuses_one_by_one_are_sent_again_alone(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    refused: list[str] = []

    def busy_once(request: Recorded) -> tuple[int, Any, dict[str, str]] | None:
        if not request.path.endswith("/docs/search.index") or refused:
            return None
        first = request.body["value"][0]["id"]
        refused.append(first)
        results = [
            {
                "key": item["id"],
                "status": item["id"] != first,
                "errorMessage": None,
                "statusCode": 503 if item["id"] == first else 201,
            }
            for item in request.body["value"]
        ]
        for item in request.body["value"][1:]:
            service.items[item["id"]] = {k: v for k, v in item.items() if not k.startswith("@")}
        return 207, {"value": results}, {}

    service.fault = busy_once
    await engine.upsert(document("lease", ["one", "two", "three"]))

    first_batch, again = batches(service)[:2]
    assert len(first_batch) == 3 and [item["id"] for item in again] == refused
    assert len(await engine.spans(ORG, "lease", [0, 1, 2])) == 3


async def test_a_refusal_that_persists_is_storage_unavailable_and_a_bad_item_a_storage_error(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    def refuse(status: int) -> Any:
        def answer(request: Recorded) -> tuple[int, Any, dict[str, str]] | None:
            if not request.path.endswith("/docs/search.index"):
                return None
            return (
                207,
                {
                    "value": [
                        {"key": item["id"], "status": False, "errorMessage": "no", "statusCode": status}
                        for item in request.body["value"]
                    ]
                },
                {},
            )

        return answer

    service.fault = refuse(503)
    with pytest.raises(StorageUnavailable, match="kept refusing 1 item"):
        await engine.upsert(document("lease", ["one"]))
    service.fault = refuse(400)
    with pytest.raises(StorageError, match="refused 1 item"):
        await engine.upsert(document("lease", ["one"]))


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (503, StorageUnavailable, "storage_unavailable"),
        (429, StorageUnavailable, "storage_unavailable"),
        (403, ConfigurationError, "configuration_error"),
        (400, StorageError, "storage_error"),
    ],
)
async def test_service_errors_become_orc_errors_that_name_neither_endpoint_nor_key(
    service: SearchService, status: int, error: type[Exception], code: str
) -> None:
    engine = engine_on(service, dimensions=2, retry_total=1)
    await engine.prepare(create=True)
    service.fault = lambda request: (
        (status, {"error": {"code": "", "message": f"failed at {ENDPOINT} with {KEY}"}}, {"Retry-After": "2"})
        if request.path.endswith("search.post.search")
        else None
    )

    with pytest.raises(error) as raised:
        await engine.search(lexical("rent"))
    await engine.aclose()

    message = str(raised.value)
    assert raised.value.code == code  # type: ignore[attr-defined]
    assert "orc-test" not in message and KEY not in message and f"status {status}" in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    if status in (429, 503):
        assert raised.value.retry_after == 2.0  # type: ignore[attr-defined]


async def test_vectors_of_another_size_than_the_index_are_left_out_and_the_document_indexed_lexically(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("lease", ["rent"], vectors=[unit(1, 0, 0)], model="m"))

    (item,) = [item for item in service.items.values() if item["ordinal"] == 0]
    assert "vector" not in item and item["vector_model"] is None
    assert (await engine.entries(ORG, ["lease"]))["lease"].vector_model is None
    assert [hit.document_id for hit in await engine.search(lexical("rent"))] == ["lease"]


async def test_statistics_come_from_the_heads_and_one_count_per_term_and_are_cached_until_a_write(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("a", ["rent rent due", "deposit due"]))
    await engine.upsert(document("b", ["rent review"]))

    stats = await engine.statistics(ORG, ["rent", "due", "zebra"])
    again = await engine.statistics(ORG, ["rent", "due", "zebra"])
    reads = len(searches(service))
    await engine.upsert(document("c", ["rent"]))
    after = await engine.statistics(ORG, ["rent"])

    assert (stats.spans, stats.average_length, stats.frequencies) == (3, 7 / 3, {"rent": 2, "due": 2})
    assert again == stats
    assert (after.spans, after.frequencies) == (4, {"rent": 3})
    counts = [body for body in searches(service)[:reads] if body.get("count")]
    assert [json.loads(body["search"]) for body in counts] == ["rent", "due", "zebra"]
    assert all(body["top"] == 0 and body["searchFields"] == "terms" for body in counts)


async def test_vocabulary_comes_from_the_suggester_in_term_order(engine: AzureSearchEngine) -> None:
    await engine.upsert(document("a", ["licensee licensor license lichen lamp"]))
    await engine.upsert(document("b", ["licorice"], organization=OTHER_ORG))

    assert await engine.vocabulary(ORG, "lic", 10) == ["license", "licensee", "licensor", "lichen"]
    assert await engine.vocabulary(ORG, "licens", 2) == ["license", "licensee"]


async def test_concurrent_upserts_of_a_document_leave_one_whole_version(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    versions = [document("lease", [f"rent version {n}"] * (n + 1), version=f"v{n}") for n in range(5)]

    await asyncio.gather(*(engine.upsert(version) for version in versions))

    (entry,) = (await engine.entries(ORG, ["lease"])).values()
    spans = [item for item in service.items.values() if item["ordinal"] >= 0]
    assert {item["version"] for item in spans} == {entry.version} and len(spans) == entry.spans


async def test_a_replacement_and_a_delete_reach_every_span_of_a_long_document(
    engine: AzureSearchEngine, service: SearchService
) -> None:
    await engine.upsert(document("manual", [f"paragraph {n}" for n in range(1200)]))
    await engine.upsert(document("manual", ["one paragraph"], version="v2"))
    left_after_replace = len(service.items)
    await engine.delete(ORG, "manual")

    assert left_after_replace == 2  # the new span and the head
    assert service.items == {}
    pages = [body["filter"] for body in searches(service) if body.get("orderby") == "id asc"]
    # The first upsert's (nothing to drop), the replacement's two (1,000 spans, then the 200 after the last key of
    # the first), the delete's one.
    assert len(pages) == 4 and " and id gt '" in pages[2] and " and id gt " not in pages[3]
