"""The :class:`~orc.search.port.SearchEngine` contract as a pytest suite an engine subclasses.

Every rule in the port's docstring is a test here; orc runs the suite against its in-memory engine and its embedded
engine (``tests/search/test_engine_conformance.py``). An engine subclasses :class:`SearchConformance` in a test
module and supplies an ``engine`` fixture that yields a fresh, empty engine and closes it afterwards; an engine
shared between processes also overrides ``peer``, a second instance over the same index (as another process opens
it)::

    import pytest_asyncio

    from orc.testing.conformance import SearchConformance
    from my_engine import MySearchEngine


    class TestMyEngine(SearchConformance):
        @pytest_asyncio.fixture
        async def engine(self, tmp_path):
            engine = MySearchEngine(tmp_path)
            yield engine
            await engine.aclose()

Needs pytest and pytest-asyncio; this module is imported only by test code.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Sequence

import pytest
import pytest_asyncio

from orc.search.port import (
    IndexedDocument,
    IndexedSpan,
    ScopeFields,
    SearchEngine,
    SearchFilter,
    SearchRequest,
    owner_key,
)

__all__ = ["SearchConformance"]

ORG = "acme"
OTHER_ORG = "globex"
LEGAL = owner_key("folder", "legal")
HR = owner_key("folder", "hr")


def span(ordinal: int, text: str, *, section: str | None = None, page: int | None = None) -> IndexedSpan:
    """A span whose tokens are its lower-cased words (the suite needs no stemmer)."""
    return IndexedSpan(
        ordinal=ordinal,
        span_id=f"S{ordinal + 1}",
        page=page,
        start=ordinal * 100,
        end=ordinal * 100 + len(text),
        text=text,
        section=section,
        terms=tuple(text.lower().replace(".", " ").split()),
        title_terms=tuple(section.lower().split()) if section else (),
    )


def document(
    document_id: str,
    texts: Sequence[str],
    *,
    organization: str = ORG,
    owner: str = LEGAL,
    version: str = "v1",
    vectors: Sequence[Sequence[float]] | None = None,
    model: str | None = None,
    sections: Sequence[str | None] | None = None,
) -> IndexedDocument:
    """A document of one span per text."""
    titles = list(sections) if sections is not None else [None] * len(texts)
    return IndexedDocument(
        organization=organization,
        document_id=document_id,
        version=version,
        scope=ScopeFields(organization=organization, owner=owner),
        spans=[
            span(ordinal, text, section=title) for ordinal, (text, title) in enumerate(zip(texts, titles, strict=True))
        ],
        vectors=vectors,
        vector_model=model if vectors is not None else None,
    )


def lexical(*terms: str, organization: str = ORG, limit: int = 10, **where: object) -> SearchRequest:
    """A lexical query of ``terms``, each of weight 1."""
    return SearchRequest(
        filter=SearchFilter(organization, **where),  # type: ignore[arg-type]
        limit=limit,
        terms=dict.fromkeys(terms, 1.0),
    )


def unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(value * value for value in values)) or 1.0
    return [value / norm for value in values]


class SearchConformance:
    """The search engine contract; subclass it and provide an ``engine`` fixture (see the module docstring)."""

    pytestmark = pytest.mark.asyncio

    @pytest_asyncio.fixture
    async def peer(self, engine: SearchEngine) -> AsyncIterator[SearchEngine]:
        """A second handle on the same index, as another process sees it (by default: the engine itself)."""
        yield engine

    # -- upsert, replace, delete -------------------------------------------------------------------------------

    async def test_an_indexed_span_is_found_by_its_words_with_its_locators(self, engine: SearchEngine) -> None:
        await engine.upsert(
            IndexedDocument(
                organization=ORG,
                document_id="lease",
                version="v1",
                scope=ScopeFields(organization=ORG, owner=LEGAL),
                spans=[span(0, "The tenant pays the rent monthly.", section="Payments", page=3)],
            )
        )

        (hit,) = await engine.search(lexical("rent"))

        assert (hit.document_id, hit.version) == ("lease", "v1")
        assert (hit.span.ordinal, hit.span.span_id, hit.span.page) == (0, "S1", 3)
        assert (hit.span.start, hit.span.end) == (0, len("The tenant pays the rent monthly."))
        assert hit.span.text == "The tenant pays the rent monthly."
        assert hit.span.section == "Payments"
        assert hit.score > 0

    async def test_an_upsert_replaces_every_span_of_the_document(self, engine: SearchEngine) -> None:
        await engine.upsert(document("lease", ["rent is 900 euros", "pets are allowed", "parking included"]))
        await engine.upsert(document("lease", ["rent is 1200 euros"], version="v2"))

        found = await engine.search(lexical("rent", "pets", "parking"))

        assert [(hit.version, hit.span.text) for hit in found] == [("v2", "rent is 1200 euros")]
        assert (await engine.entries(ORG, ["lease"]))["lease"].spans == 1

    async def test_the_same_upsert_twice_leaves_one_entry(self, engine: SearchEngine) -> None:
        await engine.upsert(document("lease", ["rent is 900 euros"]))
        await engine.upsert(document("lease", ["rent is 900 euros"]))

        assert len(await engine.search(lexical("rent"))) == 1

    async def test_a_deleted_document_is_found_no_more_and_deleting_it_again_is_no_error(
        self, engine: SearchEngine
    ) -> None:
        await engine.upsert(document("lease", ["rent is 900 euros"]))
        await engine.upsert(document("memo", ["rent reminder"]))

        await engine.delete(ORG, "lease")
        await engine.delete(ORG, "lease")
        await engine.delete(ORG, "never-indexed")

        assert [hit.document_id for hit in await engine.search(lexical("rent"))] == ["memo"]
        assert await engine.entries(ORG, ["lease", "memo"]) == {"memo": (await engine.entries(ORG, ["memo"]))["memo"]}
        assert await engine.spans(ORG, "lease", [0]) == []

    async def test_what_one_handle_writes_the_next_search_of_another_sees(
        self, engine: SearchEngine, peer: SearchEngine
    ) -> None:
        await peer.search(lexical("rent"))  # the other handle has read the index before the writes
        await engine.upsert(document("lease", ["rent is 900 euros"]))
        assert [hit.version for hit in await peer.search(lexical("rent"))] == ["v1"]

        await engine.upsert(document("lease", ["rent is 1200 euros"], version="v2"))
        assert [hit.version for hit in await peer.search(lexical("rent"))] == ["v2"]

        await engine.delete(ORG, "lease")
        assert await peer.search(lexical("rent")) == []

    async def test_concurrent_upserts_of_a_document_leave_one_whole_version(self, engine: SearchEngine) -> None:
        versions = [document("lease", [f"rent version {n}"] * (n + 1), version=f"v{n}") for n in range(5)]

        await asyncio.gather(*(engine.upsert(version) for version in versions))

        found = await engine.search(lexical("rent"))
        assert len({hit.version for hit in found}) == 1
        (entry,) = (await engine.entries(ORG, ["lease"])).values()
        assert entry.version == found[0].version and entry.spans == len(found)

    # -- filters -----------------------------------------------------------------------------------------------

    async def test_a_search_never_returns_another_organizations_spans(self, engine: SearchEngine) -> None:
        await engine.upsert(document("lease", ["rent is 900 euros"]))
        await engine.upsert(document("lease", ["rent is 500 euros"], organization=OTHER_ORG))

        mine = await engine.search(lexical("rent"))
        theirs = await engine.search(lexical("rent", organization=OTHER_ORG))

        assert [hit.span.text for hit in mine] == ["rent is 900 euros"]
        assert [hit.span.text for hit in theirs] == ["rent is 500 euros"]
        assert await engine.search(lexical("rent", organization="initech")) == []

    async def test_owners_and_documents_narrow_a_search_and_an_empty_set_matches_nothing(
        self, engine: SearchEngine
    ) -> None:
        await engine.upsert(document("lease", ["rent of the office"], owner=LEGAL))
        await engine.upsert(document("handbook", ["rent subsidy for staff"], owner=HR))
        await engine.upsert(document("contract", ["rent review clause"], owner=LEGAL))

        def ids(hits: Sequence[object]) -> set[str]:
            return {hit.document_id for hit in hits}  # type: ignore[attr-defined]

        assert ids(await engine.search(lexical("rent", owners=frozenset({LEGAL})))) == {"lease", "contract"}
        assert ids(await engine.search(lexical("rent", documents=frozenset({"handbook"})))) == {"handbook"}
        both = lexical("rent", owners=frozenset({LEGAL}), documents=frozenset({"lease", "handbook"}))
        assert ids(await engine.search(both)) == {"lease"}
        assert await engine.search(lexical("rent", owners=frozenset())) == []
        assert await engine.search(lexical("rent", documents=frozenset())) == []
        assert ids(await engine.search(lexical("rent"))) == {"lease", "handbook", "contract"}

    # -- lexical ranking ---------------------------------------------------------------------------------------

    async def test_a_span_matching_more_and_rarer_terms_ranks_first(self, engine: SearchEngine) -> None:
        await engine.upsert(
            document(
                "manual",
                [
                    "the pump runs daily",
                    "the pump needs descaling monthly",
                    "the filter runs daily",
                    "the valve runs daily",
                ],
            )
        )

        found = await engine.search(lexical("pump", "descaling"))

        assert [hit.span.ordinal for hit in found] == [1, 0]
        assert found[0].score > found[1].score

    async def test_a_term_weight_scales_its_share_of_the_score(self, engine: SearchEngine) -> None:
        await engine.upsert(document("manual", ["alpha alpha words here", "beta beta words here"]))

        even = await engine.search(SearchRequest(SearchFilter(ORG), 5, terms={"alpha": 1.0, "beta": 1.0}))
        favoured = await engine.search(SearchRequest(SearchFilter(ORG), 5, terms={"alpha": 0.2, "beta": 1.0}))

        assert math.isclose(even[0].score, even[1].score, rel_tol=1e-4)
        assert [hit.span.ordinal for hit in favoured] == [1, 0]

    async def test_a_section_title_is_a_field_of_its_own(self, engine: SearchEngine) -> None:
        await engine.upsert(
            document("manual", ["values are stored big endian", "values are stored"], sections=["Byte order", None])
        )

        titled = await engine.search(lexical("byte", "values"))
        untitled = await engine.search(
            SearchRequest(SearchFilter(ORG), 5, terms={"byte": 1.0, "values": 1.0}, title_weight=0.0)
        )

        assert titled[0].span.ordinal == 0 and titled[0].score > titled[1].score
        # Without its title the longer span loses to the shorter one (BM25's length normalization).
        assert [hit.span.ordinal for hit in untitled] == [1, 0]

    async def test_ties_are_broken_by_document_id_then_ordinal(self, engine: SearchEngine) -> None:
        await engine.upsert(document("b-doc", ["same words", "same words"]))
        await engine.upsert(document("a-doc", ["same words"]))

        found = await engine.search(lexical("same"))

        assert [(hit.document_id, hit.span.ordinal) for hit in found] == [("a-doc", 0), ("b-doc", 0), ("b-doc", 1)]

    async def test_no_terms_or_unknown_terms_find_nothing_and_limit_bounds_the_hits(self, engine: SearchEngine) -> None:
        await engine.upsert(document("manual", [f"rent clause {n}" for n in range(8)]))

        assert await engine.search(SearchRequest(SearchFilter(ORG), 5)) == []
        assert await engine.search(lexical("zebra")) == []
        assert len(await engine.search(lexical("rent", "zebra"))) == 8
        assert len(await engine.search(lexical("rent", limit=3))) == 3

    # -- vectors -----------------------------------------------------------------------------------------------

    async def test_a_vector_query_ranks_by_cosine_similarity_for_its_model_only(self, engine: SearchEngine) -> None:
        rows = [unit(1, 0, 0), unit(0, 1, 0), unit(1, 1, 0)]
        await engine.upsert(document("a", ["north", "east", "northeast"], vectors=rows, model="m1"))
        await engine.upsert(document("b", ["north again"], vectors=[unit(1, 0.1, 0)], model="m2"))

        def query(model: str) -> SearchRequest:
            return SearchRequest(SearchFilter(ORG), 3, vector=unit(1, 0.2, 0), vector_model=model, mode="vector")

        found = await engine.search(query("m1"))
        other = await engine.search(query("m2"))

        assert [(hit.document_id, hit.span.ordinal) for hit in found] == [("a", 0), ("a", 2), ("a", 1)]
        assert found[0].score > found[1].score > found[2].score
        assert [hit.document_id for hit in other] == ["b"]
        assert await engine.search(query("m3")) == []

    async def test_a_vector_query_keeps_to_its_filter(self, engine: SearchEngine) -> None:
        await engine.upsert(document("a", ["north"], vectors=[unit(1, 0)], model="m", owner=LEGAL))
        await engine.upsert(document("b", ["north"], vectors=[unit(1, 0)], model="m", owner=HR))
        await engine.upsert(document("c", ["north"], vectors=[unit(1, 0)], model="m", organization=OTHER_ORG))

        found = await engine.search(
            SearchRequest(
                SearchFilter(ORG, owners=frozenset({HR})), 5, vector=unit(1, 0), vector_model="m", mode="vector"
            )
        )

        assert [hit.document_id for hit in found] == ["b"]

    async def test_a_hybrid_query_fuses_both_rankings(self, engine: SearchEngine) -> None:
        rows = [unit(0, 1), unit(1, 0), unit(0.9, 0.1)]
        await engine.upsert(document("a", ["rent rent rent", "deposit", "rent deposit"], vectors=rows, model="m"))

        found = await engine.search(
            SearchRequest(SearchFilter(ORG), 3, terms={"rent": 1.0}, vector=unit(1, 0), vector_model="m", mode="hybrid")
        )

        # Reciprocal rank fusion (k=60): "rent rent rent" is 1st and 3rd, "rent deposit" 2nd and 2nd, "deposit" 1st
        # of the vector ranking only.
        assert [hit.span.ordinal for hit in found] == [0, 2, 1]

    async def test_a_hybrid_query_finds_the_spans_of_documents_without_vectors_by_their_terms(
        self, engine: SearchEngine
    ) -> None:
        await engine.upsert(document("with", ["north wind", "rent due"], vectors=[unit(1, 0), unit(0, 1)], model="m"))
        await engine.upsert(document("without", ["rent review"]))

        found = await engine.search(
            SearchRequest(
                SearchFilter(ORG),
                5,
                terms={"rent": 1.0},
                vector=unit(1, 0),
                vector_model="m",
                mode="hybrid",
                text="when is the rent due?",
            )
        )

        assert {(hit.document_id, hit.span.ordinal) for hit in found} == {("with", 0), ("with", 1), ("without", 0)}

    async def test_an_engine_says_whether_it_ranks_hybrid_queries_itself(self, engine: SearchEngine) -> None:
        # The retriever sends one hybrid request to an engine that does, and fuses two legs itself otherwise:
        # either way a hybrid request is answered (the tests above), so the answer only has to be a yes or a no.
        assert engine.native_hybrid in (True, False)

    # -- spans, entries, statistics, vocabulary ----------------------------------------------------------------

    async def test_spans_returns_the_asked_ordinals_in_order(self, engine: SearchEngine) -> None:
        await engine.upsert(document("manual", [f"paragraph {n}" for n in range(6)]))

        found = await engine.spans(ORG, "manual", [4, 2, 3, 99, -1])

        assert [hit.span.span_id for hit in found] == ["S3", "S4", "S5"]
        assert [hit.span.text for hit in found] == ["paragraph 2", "paragraph 3", "paragraph 4"]
        assert await engine.spans(ORG, "unknown", [0]) == []
        assert await engine.spans(OTHER_ORG, "manual", [0]) == []

    async def test_entries_say_which_version_is_indexed_with_which_vectors(self, engine: SearchEngine) -> None:
        await engine.upsert(document("a", ["one", "two"], version="v7", vectors=[unit(1, 0), unit(0, 1)], model="m"))
        await engine.upsert(document("b", ["three"], version="v2"))

        entries = await engine.entries(ORG, ["a", "b", "c"])

        assert set(entries) == {"a", "b"}
        assert (entries["a"].version, entries["a"].spans, entries["a"].vector_model) == ("v7", 2, "m")
        assert (entries["b"].version, entries["b"].spans, entries["b"].vector_model) == ("v2", 1, None)
        assert await engine.entries(OTHER_ORG, ["a"]) == {}

    async def test_statistics_count_the_organizations_spans_and_terms(self, engine: SearchEngine) -> None:
        await engine.upsert(document("a", ["rent rent due", "deposit due"]))
        await engine.upsert(document("b", ["rent review"]))
        await engine.upsert(document("c", ["rent elsewhere"], organization=OTHER_ORG))

        stats = await engine.statistics(ORG, ["rent", "due", "zebra"])

        assert stats.spans == 3
        assert math.isclose(stats.average_length, 7 / 3)
        assert stats.frequencies == {"rent": 2, "due": 2}
        assert (await engine.statistics("initech", ["rent"])).spans == 0

    async def test_vocabulary_lists_the_terms_that_start_with_a_prefix(self, engine: SearchEngine) -> None:
        await engine.upsert(document("a", ["licensee licensor license lichen lamp"]))
        await engine.upsert(document("b", ["licorice"], organization=OTHER_ORG))

        assert await engine.vocabulary(ORG, "lic", 10) == ["license", "licensee", "licensor", "lichen"]
        assert await engine.vocabulary(ORG, "licens", 2) == ["license", "licensee"]
        assert await engine.vocabulary(ORG, "zz", 10) == []
