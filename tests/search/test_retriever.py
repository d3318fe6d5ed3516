"""The one retriever: a lexical leg that survives paraphrase, versions it trusts, indexes it heals, vectors it fuses."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from orc.extracted import ExtractedDocument
from orc.search.fusion import HEAD_SLOTS
from orc.search.memory import MemorySearchEngine
from orc.search.port import SearchFilter, SearchRequest, index_version
from orc.search.retriever import Retriever, Target
from orc.search.text_store import TextStore, VectorLocation, process_extracted
from orc.search.vectors import SpanVectors, SpanVectorStore
from orc.storage.memory import MemoryCollection
from orc.testing.embeddings import HashedEmbeddingModel
from orc.text.lexical import split_context
from orc.text.related import related_terms
from orc.text.tokens import tokenize
from tests.search.ranking import ORGANIZATION, SCOPE, ranked, target, text_of

PASSAGES = (
    "Each application installs a single XML file into the packages directory. The file is parsed at login.",
    "If you institute patent litigation against any entity, then any patent licenses granted to you terminate.",
    "Icons are looked up by the media type. The icon theme decides the size.",
    "The cache is written atomically. Readers never see a half-written cache.",
)


def one_span_each(*passages: str) -> list[Target]:
    return [target(text_of(passage), f"p{number}.txt") for number, passage in enumerate(passages)]


async def test_a_word_the_documents_do_not_use_finds_the_passage_through_a_related_word() -> None:
    # "sue" is nowhere in the text; WordNet relates it to "litigate", which stems like "litigation".
    (found,) = await ranked("What happens if I sue someone?", one_span_each(*PASSAGES))

    assert found.target.name == "p1.txt" and found.score > 0


async def test_a_passage_found_only_through_its_section_title_is_found() -> None:
    titled = text_of(
        "# 2.9. The cache file\n\nNumbers are stored in big-endian order, always.", media_type="text/markdown"
    )
    other = text_of("# 2.3. The globs files\n\nValues are kept in order.", media_type="text/markdown")

    found = await ranked("byte order of the cache file", [target(titled, "a.md"), target(other, "b.md")])

    assert found[0].target.name == "a.md"
    assert found[0].span.section == "2.9. The cache file"


async def test_a_passage_whose_words_sit_in_one_sentence_beats_one_that_spreads_them() -> None:
    together = "Filler about other things. The default weight of a glob is fifty. More filler text here."
    spread = "Defaults apply by default. Unrelated words. A glob has a weight; weight matters."

    found = await ranked("default glob weight", one_span_each(spread, together))

    assert found[0].target.name == "p1.txt"


async def test_a_long_run_without_full_stops_does_not_count_as_one_sentence_holding_every_word() -> None:
    # A manual page's option list, a table of contents: no full stop, so one "sentence" holds every query word
    # somewhere, each far from the others; it must not beat the sentence that says it, though it matches more.
    lines = (
        "default settings of the tool reader writer parser printer loader",
        "glob patterns of files below the root folder tree branch leaf node",
        "weight of every entry in the table index archive record field",
    )
    listing = "\n".join(lines * 2)
    together = "The default weight of a glob is fifty. " + "Filler about other things, and more filler text here. " * 6

    found = await ranked("default glob weight", one_span_each(listing, together))

    assert found[0].target.name == "p1.txt"


async def test_the_words_of_a_context_suffix_weigh_less_than_the_questions_own() -> None:
    found = await ranked(
        "What about the termination fee? (context: notice period)",
        one_span_each("The notice period is sixty days.", "The termination fee is one month of rent."),
    )

    assert found[0].target.name == "p1.txt"
    assert split_context("What about it? (context: notice period)") == ("What about it?", ["notice", "period"])


async def test_a_query_of_function_words_finds_nothing() -> None:
    assert await ranked("what is it", one_span_each(*PASSAGES)) == []


async def test_a_misspelt_word_is_retrieved_again_with_the_documents_spelling() -> None:
    licence = text_of("The licensee may terminate this licence upon written notice to the licensor.")
    retriever = Retriever(MemorySearchEngine())

    found = await retriever.retrieve("How is the terminaton notified?", ORGANIZATION, [target(licence)], limit=3)

    assert found.rounds == 2
    assert [ranked.ref for ranked in found.spans] == ["doc.txt::S1"]


async def test_nothing_matching_returns_the_first_spans_of_each_document_in_turn_when_asked() -> None:
    first = text_of("Alpha one " * 60, "Alpha two " * 60)
    second = text_of("Beta one " * 60)
    retriever = Retriever(MemorySearchEngine())
    targets = [target(first, "a.txt"), target(second, "b.txt")]

    silent = await retriever.retrieve("zebra crossing", ORGANIZATION, targets, limit=3)
    shown = await retriever.retrieve("zebra crossing", ORGANIZATION, targets, limit=3, fill=True)

    assert silent.spans == []
    assert [found.ref for found in shown.spans] == ["a.txt::S1", "b.txt::S1", "a.txt::S2"]


async def test_a_retrieval_matching_fewer_spans_than_asked_is_filled_with_its_hits_neighbours_when_asked() -> None:
    passages = [f"Paragraph {n} of the handbook. " + "Nothing here about animals or roads. " * 15 for n in range(7)]
    passages[3] += "Pedestrians cross at the zebra crossing."
    retriever = Retriever(MemorySearchEngine())
    targets = [target(text_of(*passages), "handbook.txt")]

    alone = await retriever.retrieve("zebra", ORGANIZATION, targets, limit=5)
    filled = await retriever.retrieve("zebra", ORGANIZATION, targets, limit=5, fill=True)

    assert [found.ref for found in alone.spans] == ["handbook.txt::S4"]
    # The nearest first, after the hit and before it: the passage that holds an answer often neighbours the one
    # that names its subject.
    assert [found.ref for found in filled.spans] == [f"handbook.txt::S{n}" for n in (4, 5, 3, 6, 2)]
    assert filled.spans[0].score > 0 and all(found.score == 0 for found in filled.spans[1:])


async def test_a_lower_weight_moves_a_document_down_at_equal_relevance() -> None:
    text = text_of("The deposit is two months of rent.")
    historical = target(text, "old.txt", weight=0.85)
    focus = target(text, "new.txt")

    found = await ranked("deposit", [historical, focus])

    assert [hit.target.name for hit in found] == ["new.txt", "old.txt"]


def test_the_related_terms_ship_with_orc_and_hold_synonyms_and_derived_forms() -> None:
    assert "litig" in related_terms("sue")
    assert "larg" in related_terms("bigger")
    assert related_terms("zzzz") == ()


def test_tokens_read_ligatures_as_letters_and_drop_contractions_of_function_words() -> None:
    assert tokenize("conﬁguration") == tokenize("configuration")
    assert tokenize("it's what they're saying, don't") == tokenize("saying")
    assert tokenize("the licensor's marks") == tokenize("licensor marks")


# -- stored documents: versions and freshness ------------------------------------------------------------------

LEASE = ExtractedDocument(pages=["The monthly rent is 900 euros.\n\nPets are not allowed."], media_type="text/plain")
NEW_LEASE = ExtractedDocument(pages=["The monthly rent is 1200 euros."], media_type="text/plain")


def stored_target(text_version: ExtractedDocument, content_hash: str = "c" * 64) -> Target:
    text = process_extracted(text_version)
    return Target(
        document_id="lease",
        name="lease.txt",
        version=index_version(text.extracted_text_hash, text.chunking_version),
        scope=SCOPE,
        stored=VectorLocation("acme/contexts", "lease", content_hash),
    )


async def test_a_stored_document_the_engine_lacks_is_indexed_from_its_text_and_found() -> None:
    texts = TextStore(MemoryCollection("document_text"))
    await texts.save("acme/contexts", "lease", "c" * 64, process_extracted(LEASE))
    engine = MemorySearchEngine()
    retriever = Retriever(engine, texts)

    found = await retriever.retrieve("rent in euros", ORGANIZATION, [stored_target(LEASE)], limit=3)
    entries = await engine.entries(ORGANIZATION, ["lease"])

    assert [hit.ref for hit in found.spans] == ["lease.txt::S1"]
    assert entries["lease"].version == stored_target(LEASE).version


async def test_hits_of_a_version_the_caller_does_not_hold_are_never_returned() -> None:
    texts = TextStore(MemoryCollection("document_text"))
    engine = MemorySearchEngine()
    retriever = Retriever(engine, texts)
    old = process_extracted(LEASE)
    await retriever.index(old, document_id="lease", scope=SCOPE)
    # The catalog moved on to a version whose text cannot be read (yet): nothing stale is shown for it.
    found = await retriever.retrieve("rent", ORGANIZATION, [stored_target(NEW_LEASE, "d" * 64)], limit=3)

    assert found.spans == []
    assert [item.document_id for item in found.unreadable] == ["lease"]


async def test_documents_past_the_inline_budget_are_indexed_in_the_background_and_reported() -> None:
    texts = TextStore(MemoryCollection("document_text"))
    targets = []
    for number in range(3):
        text = process_extracted(
            ExtractedDocument(pages=[f"Clause {number}: the rent is due monthly."], media_type="text/plain")
        )
        await texts.save("acme/contexts", f"d{number}", "c" * 64, text)
        targets.append(
            Target(
                document_id=f"d{number}",
                name=f"d{number}.txt",
                version=index_version(text.extracted_text_hash, text.chunking_version),
                scope=SCOPE,
                stored=VectorLocation("acme/contexts", f"d{number}", "c" * 64),
            )
        )
    retriever = Retriever(MemorySearchEngine(), texts, inline_indexing=1)

    first = await retriever.retrieve("rent due", ORGANIZATION, targets, limit=5)
    await retriever.settle()
    later = await retriever.retrieve("rent due", ORGANIZATION, targets, limit=5)

    assert len(first.spans) == 1 and len(first.indexing) == 2
    assert len(later.spans) == 3 and later.indexing == []


async def test_neighbours_of_a_hit_come_from_the_index_in_order() -> None:
    retriever = Retriever(MemorySearchEngine())
    text = text_of(*(f"Paragraph {number} " + "words " * 150 for number in range(5)))
    await retriever.index(text, document_id="doc-doc.txt", scope=SCOPE)
    stored = target(text)
    stored = Target(stored.document_id, stored.name, stored.version, stored.scope)

    around = await retriever.spans(stored, [3, 1, 2, 99])

    assert [found.span.span_id for found in around] == ["S2", "S3", "S4"]


# -- the vector leg --------------------------------------------------------------------------------------------


async def test_with_embeddings_one_query_request_ranks_both_legs_fused() -> None:
    model = HashedEmbeddingModel()
    vectors = SpanVectors(model, SpanVectorStore(MemoryCollection("document_text")))
    engine = MemorySearchEngine()
    retriever = Retriever(engine, vectors=vectors)
    text = process_extracted(LEASE)
    where = VectorLocation("acme/contexts", "lease", "c" * 64)
    matrix = await vectors.embed_document(text, where)
    await retriever.index(text, document_id="lease", scope=SCOPE, vectors=matrix)
    before = len(model.requests)

    query = retriever.embed_query("monthly rent")
    found = await retriever.retrieve("monthly rent", ORGANIZATION, [stored_target(LEASE)], limit=2, query_vector=query)

    assert model.requests[before:] == [("query", 1)]
    assert found.legs.legs == ["lexical", "vector"] and found.legs.fusion == "rrf"
    assert found.spans[0].ref == "lease.txt::S1"


async def test_a_passage_only_the_vector_leg_ranks_well_is_among_a_hybrid_retrievals_first_passages() -> None:
    detail = "The landlord keeps the register, answers letters within a week and files each change. " * 8
    clauses = [f"Clause {n} sets the notice period for tenants in building {n}. {detail}" for n in range(1, 21)]
    # None of the question's content words (the lexical leg ranks it last), most of its other words (the vector
    # leg ranks it high): plain RRF would put every clause both legs hold above it.
    meaning = "Who is it for, and who is it not for? It is for whoever asks, and it is not for whoever does not."
    document = ExtractedDocument(pages=["\n\n".join([*clauses[:7], meaning, *clauses[7:]])], media_type="text/plain")
    vectors = SpanVectors(HashedEmbeddingModel(), SpanVectorStore(MemoryCollection("document_text")))
    retriever = Retriever(MemorySearchEngine(), vectors=vectors)
    text = process_extracted(document)
    stored = stored_target(document)
    await retriever.index(
        text, document_id="lease", scope=SCOPE, vectors=await vectors.embed_document(text, stored.stored)
    )
    question = "who is the notice period for, and is it for tenants"

    found = await retriever.retrieve(
        question, ORGANIZATION, [stored], limit=8, query_vector=retriever.embed_query(question)
    )

    assert len(found.spans) == 8 and found.spans[0].span.text.startswith("Clause 1 ")
    assert any(ranked.span.text.startswith("Who is it for") for ranked in found.spans[:HEAD_SLOTS])


async def test_a_failed_query_embedding_leaves_the_lexical_ranking_and_says_why() -> None:
    vectors = SpanVectors(HashedEmbeddingModel(), SpanVectorStore(MemoryCollection("document_text")))
    retriever = Retriever(MemorySearchEngine(), vectors=vectors)
    await retriever.index(process_extracted(LEASE), document_id="lease", scope=SCOPE)

    async def broken() -> np.ndarray:
        raise RuntimeError("https://secret.example failed")

    found = await retriever.retrieve(
        "monthly rent", ORGANIZATION, [stored_target(LEASE)], limit=2, query_vector=asyncio.ensure_future(broken())
    )

    assert found.legs.legs == ["lexical"] and found.legs.vector_error == "embedding_unavailable"
    assert found.legs.lexical_only == ["lease.txt"]
    assert found.spans[0].ref == "lease.txt::S1"


async def test_an_engine_vector_search_names_its_model() -> None:
    engine = MemorySearchEngine()
    vectors = SpanVectors(HashedEmbeddingModel(), SpanVectorStore(MemoryCollection("document_text")))
    retriever = Retriever(engine, vectors=vectors)
    text = process_extracted(LEASE)
    matrix = await vectors.embed_document(text, VectorLocation("p", "lease", "c"))
    await retriever.index(text, document_id="lease", scope=SCOPE, vectors=matrix)
    query = (await vectors.embed_query("rent")).tolist()

    same = await engine.search(
        SearchRequest(SearchFilter(ORGANIZATION), 3, vector=query, vector_model=vectors.store_key, mode="vector")
    )
    other = await engine.search(
        SearchRequest(SearchFilter(ORGANIZATION), 3, vector=query, vector_model="another", mode="vector")
    )

    assert same and other == []


@pytest.mark.parametrize("limit", [0, -1])
async def test_a_limit_below_one_is_refused(limit: int) -> None:
    with pytest.raises(ValueError):
        await Retriever(MemorySearchEngine()).retrieve("rent", ORGANIZATION, [], limit=limit)
