"""The answer request's sources: the best passages whole, later ones as excerpts when the budget needs it."""

from __future__ import annotations

from orc.contracts import RetrievalLegs, SourceSpan
from orc.graph.answer import answer_sources
from orc.graph.packing import EXCERPT_CHARS, WHOLE_PASSAGES, WHOLE_PASSAGES_HYBRID, pack_sources
from orc.models.budget import within_budget
from orc.models.tokens import EstimatedTokens
from tests.search.ranking import ranked, target, text_of

COUNTER = EstimatedTokens()
FILLER = "The committee reviewed the quarterly figures in detail. " * 12


def span(number: int, text: str, document: str = "policy.pdf") -> SourceSpan:
    return SourceSpan(ref=f"{document}::S{number}", document=document, span_id=f"S{number}", page=number, text=text)


def test_a_ranking_that_fits_is_sent_whole_in_rank_order() -> None:
    ranked = [span(n, f"Clause {n} of the agreement.") for n in range(1, 10)]

    sent = pack_sources(ranked, "what does clause 7 say?", COUNTER, budget=4_000)

    assert sent == ranked


def test_past_the_best_passages_a_ranking_that_does_not_fit_is_sent_as_excerpts_around_the_question() -> None:
    answer = "Travel by rail in first class is reimbursed for trips over four hours."
    ranked = [span(n, FILLER + f"Item {n}.") for n in range(1, 30)]
    ranked[11] = span(12, FILLER + answer + " " + FILLER)
    whole_cost = sum(COUNTER.count(source.text) for source in ranked)

    sent = pack_sources(ranked, "Can I travel first class on long train trips?", COUNTER, budget=whole_cost // 2)

    assert sent[:WHOLE_PASSAGES] == ranked[:WHOLE_PASSAGES]
    by_ref = {source.ref: source for source in ranked}
    for source in sent[WHOLE_PASSAGES:]:
        original = by_ref[source.ref]
        assert source.text in original.text and len(source.text) <= EXCERPT_CHARS
        assert (source.page, source.span_id, source.document) == (original.page, original.span_id, original.document)
    excerpt = next(source for source in sent if source.ref == "policy.pdf::S12")
    assert answer in excerpt.text
    assert sum(COUNTER.count(source.text) + 4 for source in sent) <= whole_cost // 2
    whole_only = within_budget(ranked, [source.text for source in ranked], COUNTER, budget=whole_cost // 2)
    assert len(sent) > len(whole_only)  # more, shorter passages in the same budget


def test_an_excerpt_is_cut_around_the_question_words_few_other_sources_hold() -> None:
    common = "The quarterly report lists the figures. " * 12
    answer = "Any fee is reimbursed within thirty days."
    ranked = [span(n, common + f"Item {n}.") for n in range(1, 30)]
    ranked[10] = span(11, "Quarterly report figures were filed. " + "Nothing else happened that week. " * 15 + answer)

    sent = pack_sources(ranked, "Is a quarterly report fee reimbursed?", COUNTER, budget=3_000)

    excerpt = next(source for source in sent if source.ref == "policy.pdf::S11")
    # "quarterly" and "report" are in every source; "fee" and "reimbursed" only in this one.
    assert answer in excerpt.text and len(excerpt.text) <= EXCERPT_CHARS


def test_the_spans_the_previous_answer_cited_follow_the_best_passages_whole_and_once() -> None:
    ranked = [span(n, FILLER + f"Item {n}.") for n in range(1, 30)]
    cited = span(40, FILLER + "The previous answer's evidence.", document="notes.md")

    sent = pack_sources(ranked, "and for trains?", COUNTER, budget=3_000, kept=[cited, ranked[1]])

    refs = [source.ref for source in sent]
    assert refs[: WHOLE_PASSAGES + 1] == [*(source.ref for source in ranked[:WHOLE_PASSAGES]), cited.ref]
    assert sent[WHOLE_PASSAGES] == cited and len(refs) == len(set(refs))


async def test_a_deep_lexical_search_starts_with_the_results_of_a_shallow_one() -> None:
    passages = [f"Section {n}: the fee for service {n} is {n * 10} euros, paid monthly." for n in range(1, 80)]
    targets = [target(text_of(passage), f"s{n}.txt") for n, passage in enumerate(passages)]

    shallow = await ranked("what is the monthly fee for service 12?", targets, limit=8)
    deep = await ranked("what is the monthly fee for service 12?", targets, limit=48)

    assert [found.ref for found in deep[:8]] == [found.ref for found in shallow]
    assert len(deep) == 48


MANUAL_OPTION = "\n".join(
    [
        "     KeepAliveProbe",
        "             Sets how often, in seconds, the client probes a silent server",
        "             connection.  The probe is sent only after the connection has",
        "             been idle for the whole interval, and it travels inside the",
        "             encrypted channel so that nothing on the path can forge it.",
        "             The default is 0, which disables the probes entirely unless",
        "             batch mode is on.",
        "",
        "             Three unanswered probes in a row close the connection.",
    ]
)


def test_a_lower_ranked_manual_page_option_is_excerpted_without_its_indentation_so_its_late_answer_fits() -> None:
    ranked = [span(n, FILLER + f"Item {n}.") for n in range(1, 30)]
    ranked[9] = span(10, MANUAL_OPTION, document="client.1")
    assert len(MANUAL_OPTION) > EXCERPT_CHARS  # as laid out, the closing sentence is past an excerpt's reach

    sent = pack_sources(ranked, "How often does the client probe a silent server?", COUNTER, budget=3_000)

    excerpt = next(source for source in sent if source.ref == "client.1::S10")
    assert "Three unanswered probes in a row close the connection." in excerpt.text
    assert len(excerpt.text) <= EXCERPT_CHARS
    assert " ".join(excerpt.text.split()) == " ".join(MANUAL_OPTION.split())  # the same words, in order
    assert "\n\nThree unanswered" in excerpt.text and "  " not in excerpt.text  # paragraphs kept, padding gone


def test_the_best_passages_are_sent_with_their_layout() -> None:
    listing = "Run it as:\n\n    for name in names:\n        print(name)\n\n" + FILLER
    ranked = [span(1, listing), *(span(n, FILLER + f"Item {n}.") for n in range(2, 30))]

    sent = pack_sources(ranked, "How do I print every name?", COUNTER, budget=3_000)

    assert sent[0] == ranked[0]


def _found_by_meaning() -> tuple[list[SourceSpan], str]:
    """A ranking whose 8th span answers in words the question does not use: its only words in common with the
    question open the span, far from the answer at its end (as a span the vector leg finds by its meaning)."""
    answer = "Upgrades are refunded for trips beyond four hours."
    ranked = [span(n, FILLER + f"Item {n}.") for n in range(1, 30)]
    ranked[7] = span(8, "Rail journey bookings go through the travel desk. " + FILLER + answer)
    return ranked, answer


def test_a_hybrid_ranking_sends_more_of_its_best_passages_whole_so_an_answer_found_by_meaning_is_not_cut_away() -> None:
    ranked, answer = _found_by_meaning()
    question = "Is a premium seat on a long rail journey paid back?"

    lexical = pack_sources(ranked, question, COUNTER, budget=3_000)
    hybrid = pack_sources(ranked, question, COUNTER, budget=3_000, hybrid=True)

    # Cut around "rail journey", the excerpt loses the answer; whole, the span keeps it.
    assert answer not in next(source.text for source in lexical if source.ref == "policy.pdf::S8")
    assert answer in next(source.text for source in hybrid if source.ref == "policy.pdf::S8")
    assert hybrid[:WHOLE_PASSAGES_HYBRID] == ranked[:WHOLE_PASSAGES_HYBRID]
    assert len(hybrid[WHOLE_PASSAGES_HYBRID].text) <= EXCERPT_CHARS
    assert sum(COUNTER.count(source.text) + 4 for source in hybrid) <= 3_000


def test_the_answer_node_packs_a_ranking_as_hybrid_when_its_retrieval_ran_the_vector_leg() -> None:
    ranked, answer = _found_by_meaning()
    state = {"question": "Is a premium seat on a long rail journey paid back?", "sources": ranked}

    def sent_with(legs: list[str]) -> str:
        retrieval = RetrievalLegs(legs=legs)  # type: ignore[arg-type]
        sources = answer_sources({**state, "retrieval": retrieval}, COUNTER, 3_000)  # type: ignore[typeddict-item]
        return next(source.text for source in sources if source.ref == "policy.pdf::S8")

    assert answer in sent_with(["lexical", "vector"])
    assert answer not in sent_with(["lexical"])
