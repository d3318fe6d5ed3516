"""The offline model answering from a sources block: citations, refusals, streaming, usage, metadata."""

from __future__ import annotations

from langchain_core.messages import AIMessageChunk, HumanMessage, SystemMessage

from orc.contracts import SourceSpan
from orc.graph.answer_prompt import answer_system_prompt
from orc.models.answering import MIN_EVIDENCE, NOT_FOUND, answer_with_evidence, find_sources
from orc.models.offline import OFFLINE_MODEL_NAME, UNSUPPORTED_REPLY, OfflineExtractiveModel
from orc.models.prompting import format_sources, load_prompt
from tests.models.corpus import answer_prompt, cited_refs, spans


def span(ref: str, text: str, page: int | None = None) -> SourceSpan:
    document, _, span_id = ref.partition("::")
    return SourceSpan(ref=ref, document=document, span_id=span_id, page=page, text=text)


LEASE = [
    span("lease.pdf::S1", "The lease starts on 1 April 2024. It ends on 31 March 2025.", page=1),
    span("lease.pdf::S2", "Either party may end the lease with 60 days' written notice.", page=1),
    span("lease.pdf::S3", "Monthly rent is $1,850, due on the first day of each month.", page=2),
]


def answer_messages(question: str, sources: list[SourceSpan] = LEASE) -> list[SystemMessage | HumanMessage]:
    return [SystemMessage(answer_prompt(sources)), HumanMessage(question)]


async def test_an_answer_quotes_the_matching_sentence_and_cites_its_span_in_brackets() -> None:
    reply = await OfflineExtractiveModel().ainvoke(answer_messages("How much notice is needed to end the lease?"))

    assert reply.text == "Either party may end the lease with 60 days' written notice. [lease.pdf::S2]"
    assert reply.tool_calls == []


async def test_a_question_the_sources_do_not_answer_gets_could_not_find_without_citation() -> None:
    reply = await OfflineExtractiveModel().ainvoke(answer_messages("Are pets allowed in the flat?"))

    assert reply.text == NOT_FOUND
    assert reply.text.startswith("I couldn't find")
    assert cited_refs(reply.text) == []


async def test_an_empty_sources_block_means_could_not_find() -> None:
    reply = await OfflineExtractiveModel().ainvoke(answer_messages("What is the monthly rent?", sources=[]))

    assert reply.text == NOT_FOUND


async def test_a_question_expecting_an_amount_is_not_answered_by_a_sentence_without_one() -> None:
    sources = [span("spec.pdf::S1", "The AquaSense S2 sensor monitors drinking water.")]

    reply = await OfflineExtractiveModel().ainvoke(
        answer_messages("What is the price of the AquaSense S2 sensor?", sources)
    )

    assert reply.text == NOT_FOUND


async def test_at_most_three_sentences_are_used() -> None:
    sources = [span(f"notes.md::S{i}", f"The rent rises in year {i}.") for i in range(1, 7)]

    reply = await OfflineExtractiveModel().ainvoke(answer_messages("When does the rent rise?", sources))

    assert 1 <= len(cited_refs(reply.text)) <= 3


def test_escaped_refs_pages_and_text_are_read_back_exactly() -> None:
    tricky = span('Q&A "draft" <v2>.pdf::S7', 'Fees < $5 & taxes > 0 are "waived".', page=3)
    rendered = load_prompt("document_chat.system").render(sources=format_sources([tricky]), file_digests="")

    (source,) = find_sources(rendered) or []

    assert (source.ref, source.page, source.text) == (tricky.ref, 3, tricky.text)


async def test_the_document_chat_prompt_and_extra_context_are_answered_the_same_way() -> None:
    system = load_prompt("document_chat.system").render(sources=format_sources(LEASE), file_digests="")
    with_context = answer_system_prompt(
        "planned", sources=LEASE, tool_answers='<tool_answer tool="documents.search">The rent is high.</tool_answer>'
    )
    model = OfflineExtractiveModel()

    plain = await model.ainvoke([SystemMessage(system), HumanMessage("What is the monthly rent?")])
    extra = await model.ainvoke([SystemMessage(with_context), HumanMessage("What is the monthly rent?")])

    assert cited_refs(plain.text) == cited_refs(extra.text) == ["lease.pdf::S3"]


async def test_streaming_yields_word_sized_chunks_that_join_to_the_full_answer() -> None:
    model = OfflineExtractiveModel()
    messages = answer_messages("When does the lease end?")

    chunks = [chunk async for chunk in model.astream(messages)]
    full = await model.ainvoke(messages)

    assert len(chunks) > 5
    assert all(isinstance(chunk, AIMessageChunk) and len(chunk.text.split()) <= 1 for chunk in chunks)
    assert "".join(chunk.text for chunk in chunks) == full.text
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert merged.usage_metadata == full.usage_metadata
    assert merged.response_metadata["model_name"] == OFFLINE_MODEL_NAME


def test_the_sync_api_gives_the_same_answer_as_the_async_one() -> None:
    model = OfflineExtractiveModel()
    messages = answer_messages("What is the monthly rent?")

    assert model.invoke(messages).text == "".join(chunk.text for chunk in model.stream(messages))


async def test_results_report_approximate_usage_and_the_model_name() -> None:
    model = OfflineExtractiveModel()

    reply = await model.ainvoke(answer_messages("What is the monthly rent?"))

    usage = reply.usage_metadata
    assert usage is not None and usage["input_tokens"] > 50 and usage["output_tokens"] > 5
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["model_name"] == "orc-offline-extractive"
    assert model._llm_type == "orc-offline"


async def test_a_task_it_does_not_recognise_gets_an_honest_short_reply() -> None:
    reply = await OfflineExtractiveModel().ainvoke([HumanMessage("Write a poem about leases.")])

    assert reply.text == UNSUPPORTED_REPLY
    assert "offline extractive model" in reply.text


async def test_rewrite_context_words_steer_ranking_but_never_make_an_answer_on_their_own() -> None:
    model = OfflineExtractiveModel()
    system = SystemMessage(answer_prompt(spans()))

    steered = await model.ainvoke([system, HumanMessage("What about the pet deposit? (context: security deposit)")])
    unrelated = await model.ainvoke([system, HumanMessage("What about the gym? (context: monthly rent)")])

    assert "lease-agreement.pdf::S7" in cited_refs(steered.text)
    assert unrelated.text == NOT_FOUND


PATENTS = [
    span(
        "license.txt::S3",
        "3. Patent Licenses\n"
        "Each Contributor grants You a patent license to make and sell the Work. "
        "If You institute patent litigation against any entity, the patent licenses granted to You terminate.",
    ),
    span("license.txt::S9", "Contents\n1 Definitions . . . . . . . . . . . . 2\n3 Patent litigation . . . . . . . 4"),
]


async def test_a_question_in_other_words_is_answered_through_related_words() -> None:
    # "sue" is the user's word for "institute … litigation": WordNet relates them, so the evidence is enough.
    reply = await OfflineExtractiveModel().ainvoke(answer_messages("What if I sue someone over a patent?", PATENTS))

    assert reply.text.startswith("If You institute patent litigation")
    assert cited_refs(reply.text) == ["license.txt::S3"]


async def test_a_table_of_contents_line_is_never_quoted() -> None:
    reply = await OfflineExtractiveModel().ainvoke(answer_messages("Where is patent litigation covered?", PATENTS))

    assert ". . ." not in reply.text


def test_the_decline_is_one_threshold_on_the_best_sentences_evidence() -> None:
    sources = find_sources(answer_prompt(PATENTS))
    assert sources is not None

    answered, strong = answer_with_evidence("What if I sue someone over a patent?", sources)
    declined, weak = answer_with_evidence("How much does a patent attorney cost?", sources)

    assert strong > MIN_EVIDENCE and not answered.startswith(NOT_FOUND)
    assert weak <= MIN_EVIDENCE and declined == NOT_FOUND
