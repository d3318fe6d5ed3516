"""The four scenarios of document-chat-workflow.md through the real graph, MCP server and embedded storage."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from mcp.server.fastmcp import FastMCP

from orc.composition import Services, build_runtime
from orc.composition.tuning import Tuning
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest, TurnResult

DOCS = {
    "doc1.pdf.txt": b"The termination notice period is 60 days.\n\nRent is due on the first day of the month.",
    "doc2.pdf.txt": b"The warranty lasts two years.\n\nBattery life is 38 hours.",
    "Doc1.pdf.txt": b"An upper-case twin with different content about parking spaces.",
}
_REF = re.compile(r'<source ref="([^"]+)"')


def cite_first_source(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
    """A deterministic stand-in for a model: cite the first source it is shown, or plan a tool call if offered."""
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    if tools and not any(isinstance(m, ToolMessage) for m in messages):
        return AIMessage("", tool_calls=[{"name": tools[0]["function"]["name"], "args": {"text": "hi"}, "id": "c1"}])
    refs = _REF.findall(system)
    return f"Here is what the documents say [{refs[0]}]." if refs else "No sources."


@pytest.fixture
def model() -> FunctionChatModel:
    return FunctionChatModel(cite_first_source)


@pytest.fixture
async def orchestrator(model: FunctionChatModel) -> AsyncIterator[Services]:
    async with build_runtime(Settings(), model=model) as orc:
        await orc.foundation.session_files.add(
            LOCAL_PRINCIPAL, "conv", [Upload(name, data) for name, data in DOCS.items()]
        )
        yield orc


async def ask(orc: Services, *names: str, question: str = "What does it say?") -> TurnResult:
    return await orc.orchestrator.ask(TurnRequest(question=question, conversation_id="conv", blob_names=list(names)))


def sent_arguments(result: TurnResult) -> dict[str, Any]:
    (call,) = result.metadata.tool_calls
    assert call.name == "document_chat"
    return call.arguments


async def stored_refs(orc: Services) -> list[dict[str, str]]:
    turns = await orc.foundation.conversations.turns(LOCAL_PRINCIPAL, "conv")
    return [ref.model_dump() for ref in turns[-1].assistant.uploaded_file_refs]


async def test_first_upload_sends_only_document_names_and_stores_the_returned_files(orchestrator: Services) -> None:
    result = await ask(orchestrator, "doc1.pdf.txt")

    args = sent_arguments(result)
    assert args["document_names"] == ["doc1.pdf.txt"]
    assert "cached_file_info" not in args
    assert result.metadata.cache == "miss"
    assert [f.blob_name for f in result.files] == ["doc1.pdf.txt"]
    assert await stored_refs(orchestrator) == [f.model_dump() for f in result.files]
    assert result.citations and result.citations[0].document == "doc1.pdf.txt"


async def test_the_same_documents_send_cached_file_info_and_reuse_the_file_ids(orchestrator: Services) -> None:
    first = await ask(orchestrator, "doc1.pdf.txt")
    second = await ask(orchestrator, "doc1.pdf.txt")

    assert sent_arguments(second)["cached_file_info"] == [f.model_dump() for f in first.files]
    assert second.metadata.cache == "hit"
    assert second.files == first.files
    assert await stored_refs(orchestrator) == [f.model_dump() for f in second.files]


async def test_the_cache_match_ignores_order_but_not_case(orchestrator: Services) -> None:
    both = await ask(orchestrator, "doc1.pdf.txt", "doc2.pdf.txt")
    reordered = await ask(orchestrator, "doc2.pdf.txt", "doc1.pdf.txt")
    other_case = await ask(orchestrator, "Doc1.pdf.txt", "doc2.pdf.txt")

    assert reordered.metadata.cache == "hit"
    assert {f.file_id for f in reordered.files} == {f.file_id for f in both.files}
    assert "cached_file_info" not in sent_arguments(other_case)
    assert other_case.metadata.cache == "miss"


async def test_different_documents_omit_cached_file_info_and_overwrite_the_refs(orchestrator: Services) -> None:
    await ask(orchestrator, "doc1.pdf.txt")
    second = await ask(orchestrator, "doc2.pdf.txt")

    assert "cached_file_info" not in sent_arguments(second)
    assert second.metadata.cache == "miss"
    assert await stored_refs(orchestrator) == [f.model_dump() for f in second.files]
    assert [ref["blob_name"] for ref in await stored_refs(orchestrator)] == ["doc2.pdf.txt"]


async def test_a_superset_of_the_cached_documents_is_not_partially_reused(orchestrator: Services) -> None:
    await ask(orchestrator, "doc1.pdf.txt")
    second = await ask(orchestrator, "doc1.pdf.txt", "doc2.pdf.txt")

    assert "cached_file_info" not in sent_arguments(second)
    assert second.metadata.cache == "miss"


async def test_expired_file_ids_fall_back_to_fresh_processing_with_new_ids(model: FunctionChatModel) -> None:
    # A nanosecond TTL expires every processed file before the next turn: the cache looks valid but is not.
    async with build_runtime(Settings(), model=model, tuning=Tuning(file_cache_ttl_seconds=1e-9)) as orc:
        await orc.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", [Upload("doc1.pdf.txt", DOCS["doc1.pdf.txt"])])
        first = await ask(orc, "doc1.pdf.txt")
        second = await ask(orc, "doc1.pdf.txt")

        assert sent_arguments(second)["cached_file_info"] == [f.model_dump() for f in first.files]
        assert second.metadata.cache == "miss"
        assert second.files[0].file_id != first.files[0].file_id
        assert await stored_refs(orc) == [f.model_dump() for f in second.files]


async def test_with_attached_documents_no_planning_call_is_made(
    orchestrator: Services, model: FunctionChatModel
) -> None:
    result = await ask(orchestrator, "doc1.pdf.txt")

    assert all(request.tool_names == [] for request in model.requests)
    assert model.calls == 1 == result.metadata.model_calls  # the answer; document_chat returns evidence


def add_echo_tool(server: FastMCP) -> None:
    @server.tool(name="documents.echo", description="Echo text back.")
    def echo(text: str) -> str:
        return text


def call_echo(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
    """Plan one call to the echo tool, then answer like :func:`cite_first_source`."""
    if tools and not any(isinstance(m, ToolMessage) for m in messages):
        return AIMessage("", tool_calls=[{"name": "documents__echo", "args": {"text": "hi"}, "id": "c1"}])
    return cite_first_source(messages, tools)


async def test_without_attached_documents_document_chat_is_never_offered() -> None:
    model = FunctionChatModel(call_echo)
    async with build_runtime(Settings(), model=model, mcp_extensions=[add_echo_tool]) as orc:
        result = await orc.orchestrator.ask(TurnRequest(question="Say hi", conversation_id="conv"))

    offered = {name for request in model.requests for name in request.tool_names}
    assert "documents__echo" in offered and "documents__search" in offered
    assert offered.isdisjoint({"document_chat", "session__attach_document", "session__remove_document"})
    assert result.metadata.tool == "documents.echo"
    assert [call.name for call in result.metadata.tool_calls] == ["documents.echo"]


async def test_history_seeds_the_next_turn_after_a_restart(model: FunctionChatModel) -> None:
    settings = Settings()
    async with build_runtime(settings, model=model) as orc:
        await orc.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", [Upload("doc1.pdf.txt", DOCS["doc1.pdf.txt"])])
        first = await ask(orc, "doc1.pdf.txt")

    restarted_model = FunctionChatModel(cite_first_source)
    async with build_runtime(settings, model=restarted_model) as orc:
        follow_up = await ask(orc, "doc1.pdf.txt", question="and the rent?")

    # The refs came from stored history: they are sent, and the new process honours them (same stores).
    assert sent_arguments(follow_up)["cached_file_info"] == [f.model_dump() for f in first.files]
    assert follow_up.metadata.cache == "hit"
    assert sent_arguments(follow_up)["question"].startswith("and the rent?")
    assert sent_arguments(follow_up)["mode"] == "evidence"
    assert follow_up.metadata.model_calls == restarted_model.calls == 1  # the answer only: no rewrite call


async def test_ten_concurrent_turns_on_one_conversation_are_each_stored_once_in_order(
    orchestrator: Services,
) -> None:
    questions = [f"question number {i}" for i in range(10)]
    await asyncio.gather(*(ask(orchestrator, "doc1.pdf.txt", question=q) for q in questions))

    turns = await orchestrator.foundation.conversations.turns(LOCAL_PRINCIPAL, "conv")
    assert [turn.seq for turn in turns] == list(range(1, 11))
    assert sorted(turn.user.content for turn in turns) == sorted(questions)
    summary = await orchestrator.foundation.conversations.get(LOCAL_PRINCIPAL, "conv")
    assert summary is not None and summary.message_count == 20


def failing_answer(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    if "<sources>" in system:
        raise RuntimeError("upstream model exploded with secret sk-123")
    return cite_first_source(messages, tools)  # type: ignore[return-value]


async def test_a_failed_turn_stores_nothing_and_streams_a_clean_error() -> None:
    async with build_runtime(Settings(), model=FunctionChatModel(failing_answer)) as orc:
        await orc.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", [Upload("doc1.pdf.txt", DOCS["doc1.pdf.txt"])])
        events = [
            e
            async for e in orc.orchestrator.stream(
                TurnRequest(question="What?", conversation_id="conv", blob_names=["doc1.pdf.txt"])
            )
        ]

        assert events[-1]["type"] == "error"
        assert events[-1]["code"] == "internal_error"
        assert "sk-123" not in str(events)
        assert await orc.foundation.conversations.turns(LOCAL_PRINCIPAL, "conv") == []


async def test_ask_requests_the_answer_whole_and_a_stream_gets_it_token_by_token(
    orchestrator: Services, model: FunctionChatModel
) -> None:
    asked = await ask(orchestrator, "doc1.pdf.txt")
    whole = model.requests[-1]

    request = TurnRequest(question="What does it say?", conversation_id="conv", blob_names=["doc1.pdf.txt"])
    events = [event async for event in orchestrator.orchestrator.stream(request)]

    assert not whole.streamed and model.requests[-1].streamed
    tokens = "".join(event["text"] for event in events if event["type"] == "token")
    final = next(event for event in events if event["type"] == "final")
    assert tokens.strip() == final["answer"] and asked.answer == final["answer"]
    assert any(event["type"] == "progress" for event in events)


async def test_a_turn_reports_every_model_request_it_made_and_their_tokens(
    orchestrator: Services, model: FunctionChatModel
) -> None:
    first = await ask(orchestrator, "doc1.pdf.txt")
    before = model.calls
    request = TurnRequest(question="And the rent?", conversation_id="conv", blob_names=["doc1.pdf.txt"])
    final = [event async for event in orchestrator.orchestrator.stream(request) if event["type"] == "final"][-1]

    # The answer is the one request of a document turn, first turn and follow-up alike.
    assert first.metadata.model_calls == 1 and final["metadata"]["model_calls"] == model.calls - before == 1
    assert 0 < first.metadata.usage.total_tokens < final["metadata"]["usage"]["total_tokens"]


async def test_a_planned_tool_round_costs_no_second_planning_request() -> None:
    model = FunctionChatModel(call_echo)
    async with build_runtime(Settings(), model=model, mcp_extensions=[add_echo_tool]) as orc:
        first = await orc.orchestrator.ask(TurnRequest(question="Say hi", conversation_id="conv"))
        calls_after_first = model.calls
        follow_up = await orc.orchestrator.ask(TurnRequest(question="And again?", conversation_id="conv"))

    # plan, then the answer (offered the tools again, it has what it needs); a follow-up the same, no rewrite.
    assert first.metadata.model_calls == calls_after_first == 2
    assert follow_up.metadata.model_calls == model.calls - calls_after_first == 2
    answer_request = model.requests[-1]
    assert "documents__echo" in answer_request.tool_names
    assert any(isinstance(m, ToolMessage) for m in answer_request.messages)
    assert [call.name for call in follow_up.metadata.tool_calls] == ["documents.echo"]


def always_echo(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
    """A model that calls the echo tool whenever it may, and otherwise answers."""
    if tools:
        calls = sum(isinstance(m, ToolMessage) for m in messages)
        return AIMessage("", tool_calls=[{"name": "documents__echo", "args": {"text": "hi"}, "id": f"c{calls}"}])
    return cite_first_source(messages, tools)


async def test_an_answer_that_keeps_asking_for_tools_is_bounded_by_the_tool_rounds() -> None:
    model = FunctionChatModel(always_echo)
    tuning = Tuning(max_tool_rounds=2)
    async with build_runtime(Settings(), model=model, mcp_extensions=[add_echo_tool], tuning=tuning) as orc:
        result = await orc.orchestrator.ask(TurnRequest(question="Say hi", conversation_id="conv"))

    # plan (round 1), the answer asks for round 2, then the last answer is offered no tools and answers.
    assert [call.name for call in result.metadata.tool_calls] == ["documents.echo", "documents.echo"]
    assert [bool(request.tool_names) for request in model.requests] == [True, True, False]
    assert result.metadata.model_calls == 3 and result.answer


async def test_a_streamed_turn_whose_answer_asks_for_more_tools_streams_the_final_answer() -> None:
    model = FunctionChatModel(always_echo)
    tuning = Tuning(max_tool_rounds=2)
    async with build_runtime(Settings(), model=model, mcp_extensions=[add_echo_tool], tuning=tuning) as orc:
        events = [
            event async for event in orc.orchestrator.stream(TurnRequest(question="Say hi", conversation_id="conv"))
        ]

    final = events[-1]
    tokens = "".join(event["text"] for event in events if event["type"] == "token")
    assert final["type"] == "final" and tokens.strip() == final["answer"]
    assert [event["name"] for event in events if event["type"] == "tool" and event["status"] == "ok"] == [
        "documents.echo",
        "documents.echo",
    ]
    assert [request.streamed for request in model.requests] == [False, True, True]
