"""context_builder turns typed tool results into typed state: sources, file refs, records, answers, usage."""

from __future__ import annotations

from typing import Any, cast

from langchain_core.messages import ToolMessage
from langgraph.runtime import Runtime

from orc.contracts import DocumentChatMetadata, DocumentChatResult, FileRef, SourceSpan, ToolCallRecord, Usage
from orc.graph.context import TurnContext
from orc.graph.context_builder import context_builder
from orc.graph.state import SourceContext, ToolAnswer, ToolResult, TurnState, fresh_turn_input

SPAN = SourceSpan(ref="lease.txt::S1", document="lease.txt", span_id="S1", page=1, text="Rent is 900 euros.")
NO_CONTEXT = cast(Runtime[TurnContext], Runtime(context=None))  # context_builder reads nothing but the state


def result(name: str, structured: dict[str, Any], *, call_id: str | None = None, text: str = "") -> ToolResult:
    return ToolResult(
        id=call_id or name,
        name=name,
        model_name=name.replace(".", "__"),
        arguments={"session_id": "conv"},
        structured=structured,
        text=text,
        is_error=False,
        duration_ms=12.345,
    )


async def build(*results: ToolResult) -> TurnState:
    state = fresh_turn_input("What is the rent?", [], None)
    state["tool_results"] = list(results)
    command = await context_builder(state, NO_CONTEXT)
    assert command.goto == "answer" and isinstance(command.update, dict)
    return command.update  # type: ignore[return-value]


async def test_a_document_chat_result_becomes_sources_file_refs_a_record_and_its_usage() -> None:
    chat = DocumentChatResult(
        answer="Rent is 900 euros.",
        files=[FileRef(file_id="f-1", blob_name="lease.txt")],
        metadata=DocumentChatMetadata(
            cache="hit", model="m", model_calls=1, usage=Usage(total_tokens=7), sources=[SPAN]
        ),
    )

    update = await build(result("document_chat", chat.model_dump()))

    assert update["sources"] == [SPAN]
    assert update["uploaded_file_refs"] == chat.files
    assert update["cache"] == "hit"
    assert update["tool_usage"] == Usage(total_tokens=7) and update["tool_model_calls"] == 1
    assert update["tool_records"] == [
        ToolCallRecord(name="document_chat", arguments={"session_id": "conv"}, duration_ms=12.35)
    ]
    assert update["context_docs"] == [ToolAnswer(tool="document_chat", text="Rent is 900 euros.")]
    assert update["planning_messages"] == []  # the forced call has no model request to answer
    assert update["tool_results"] == [] and update["rounds"] == 1


async def test_search_results_become_sources_with_their_context_and_answer_the_model_call() -> None:
    hit = {"ref": SPAN.ref, "text": SPAN.text, "page": 1, "origin": "historical", "context_type": "folder",
           "context_id": "f9"}  # fmt: skip

    update = await build(result("documents.search", {"results": [hit]}, call_id="c1", text="{...}"))

    assert update["sources"] == [SPAN]
    assert update["source_contexts"] == {SPAN.ref: SourceContext(origin="historical", type="folder", id="f9")}
    assert update["context_docs"] == [
        ToolAnswer(tool="documents.search", text="1 passage(s), listed with the sources.")
    ]
    (message,) = update["planning_messages"]
    assert isinstance(message, ToolMessage)
    assert (message.tool_call_id, message.name, message.content) == ("c1", "documents__search", "{...}")
