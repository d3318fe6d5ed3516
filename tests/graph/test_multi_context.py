"""Multi-context sessions: focus and historical contexts in metadata, scope injection, the prompt's context
block, search-grounded answers without attached files, and the note when an answer leaves the focus."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from orc.composition import build_runtime
from orc.conversations import FocusContext
from orc.errors import NotFound
from orc.settings import Settings
from orc.testing import FunctionChatModel
from orc.turns import Orchestrator, TurnRequest, TurnResult
from tests.documents.library_support import ACME, SESSION, build_tree, memory_stores

_REF = re.compile(r'<source ref="([^"]+)"')


async def ask(orc: Orchestrator, question: str, focus: tuple[str, str] | None) -> TurnResult:
    context = FocusContext(type=focus[0], id=focus[1]) if focus else None  # type: ignore[arg-type]
    return await orc.ask(TurnRequest(question=question, conversation_id=SESSION, context=context), ACME)


def search_then_cite(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
    """A model that searches for the question once, then cites the first source it is shown."""
    if tools and not any(isinstance(m, ToolMessage) for m in messages):
        return AIMessage(
            "", tool_calls=[{"name": "documents__search", "args": {"query": messages[-1].text}, "id": "c1"}]
        )
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    if "<history>" in system:
        return messages[-1].text
    refs = _REF.findall(system)
    return f"It says so [{refs[0]}]." if refs else "I couldn't find that in the documents."


async def test_prior_focus_contexts_become_the_ordered_historical_contexts() -> None:
    async with build_runtime(Settings(), stores=memory_stores()) as runtime:
        await build_tree(runtime.foundation)
        orc = runtime.orchestrator
        first = await ask(orc, "What is the code word?", ("usecase", "u11"))
        second = await ask(orc, "And here?", ("folder", "f2"))
        third = await ask(orc, "And now?", ("usecase", "u11"))
        fourth = await ask(orc, "Across the company?", ("organization", "acme"))

    assert first.metadata.focus_context == FocusContext(type="usecase", id="u11")
    assert first.metadata.historical_contexts == []
    assert [c.id for c in second.metadata.historical_contexts] == ["u11"]
    assert [c.id for c in third.metadata.historical_contexts] == ["f2"]  # the focus is never historical
    assert [(c.type, c.id) for c in fourth.metadata.historical_contexts] == [("usecase", "u11"), ("folder", "f2")]


async def test_the_executor_injects_the_scope_and_the_model_never_sees_it() -> None:
    model = FunctionChatModel(search_then_cite)
    async with build_runtime(Settings(), stores=memory_stores(), model=model) as runtime:
        await build_tree(runtime.foundation)
        result = await ask(runtime.orchestrator, "What is the code word of u11?", ("usecase", "u11"))

    (call,) = result.metadata.tool_calls
    assert call.name == "documents.search"
    assert call.arguments == {
        "query": "What is the code word of u11?",
        "session_id": SESSION,
        "include_historical": True,
        "context_type": "usecase",
        "context_id": "u11",
    }
    planning = model.requests[0]
    assert "documents__search" in planning.tool_names
    assert "session__remove_document" not in planning.tool_names
    assert result.citations[0].ref == "u11.txt::S1"


async def test_the_prompt_carries_the_focus_historical_contexts_and_documents_by_context() -> None:
    model = FunctionChatModel(search_then_cite)
    async with build_runtime(Settings(), stores=memory_stores(), model=model) as runtime:
        await build_tree(runtime.foundation)
        await ask(runtime.orchestrator, "Code word?", ("usecase", "u21"))
        model_calls_before = len(model.requests)
        await ask(runtime.orchestrator, "Code word again?", ("usecase", "u11"))

    planning_system = model.requests[model_calls_before].messages[0].text  # no rewrite call before planning
    assert "Focus context: usecase u11" in planning_system
    assert "Historical contexts (oldest first): usecase u21" in planning_system
    assert "- session (attached to this conversation): session.txt [ready]" in planning_system
    assert "- usecase u11 (the focus): u11.txt [ready]" in planning_system
    assert "- folder f1 (included by the focus): f1.txt [ready]" in planning_system
    assert "- usecase u21 (historical context): u21.txt [ready]" in planning_system


async def test_the_offline_model_searches_and_cites_the_spans_it_found() -> None:
    async with build_runtime(Settings(), stores=memory_stores()) as runtime:
        await build_tree(runtime.foundation)
        result = await ask(runtime.orchestrator, "What is the code word of u12?", ("folder", "f1"))

    assert [call.name for call in result.metadata.tool_calls] == ["documents.search"]
    assert "zebrau12" in result.answer
    assert [citation.ref for citation in result.citations] == ["u12.txt::S1"]
    assert result.metadata.model_calls == 2  # plan, then answer (offered the tools again, it has enough)


async def test_an_answer_from_a_historical_context_says_so() -> None:
    async with build_runtime(Settings(), stores=memory_stores()) as runtime:
        await build_tree(runtime.foundation)
        await ask(runtime.orchestrator, "What is the code word of u21?", ("usecase", "u21"))
        result = await ask(runtime.orchestrator, "What is the code word of u21?", ("usecase", "u11"))

    assert result.citations[0].ref == "u21.txt::S1"
    assert "historical context usecase u21" in result.answer


async def test_with_no_document_available_no_planning_call_is_made() -> None:
    async with build_runtime(Settings(), stores=memory_stores()) as runtime:
        result = await ask(runtime.orchestrator, "What is the code word?", None)

    assert result.metadata.tool_calls == [] and result.metadata.model_calls == 1


async def test_an_unknown_or_foreign_focus_context_is_refused_before_the_turn() -> None:
    async with build_runtime(Settings(), stores=memory_stores()) as runtime:
        with pytest.raises(NotFound) as unknown:
            await ask(runtime.orchestrator, "Anything?", ("folder", "nope"))
        with pytest.raises(NotFound) as foreign:
            await ask(runtime.orchestrator, "Anything?", ("organization", "globex"))
        turns = await runtime.foundation.conversations.turns(ACME, SESSION)

    assert unknown.value.code == foreign.value.code == "context_not_found"
    assert turns == []
