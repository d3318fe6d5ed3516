"""The offline model planning tool calls by orc's tool access rules."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool

from orc.models.offline import OfflineExtractiveModel
from orc.models.planning import query_parameter, wants_document_list
from orc.models.prompting import load_prompt


def mcp_like_tool(name: str, schema: dict[str, Any]) -> StructuredTool:
    """A tool whose schema is plain JSON schema, the way langchain-mcp-adapters builds MCP tools."""

    async def call(**kwargs: Any) -> str:
        return ""

    return StructuredTool(name=name, description=name, args_schema=schema, coroutine=call)


SEARCH = mcp_like_tool(
    "documents__search",
    {"type": "object", "properties": {"text": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["text"]},
)
LIST = mcp_like_tool("documents__list", {"type": "object", "properties": {}})
DOCUMENT_CHAT = mcp_like_tool(
    "document_chat",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "document_names": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["question", "document_names"],
    },
)


def planning(question: str, *after: BaseMessage) -> list[BaseMessage]:
    system = load_prompt("tool_planning.system").render(context_block="")
    return [SystemMessage(system), HumanMessage(question), *after]


async def test_a_question_calls_the_search_tool_with_the_question_in_its_string_parameter() -> None:
    model = OfflineExtractiveModel().bind_tools([SEARCH, LIST])

    reply = await model.ainvoke(planning("What is the notice period?"))

    assert reply.tool_calls == [
        {
            "name": "documents__search",
            "args": {"text": "What is the notice period?"},
            "id": "call_0",
            "type": "tool_call",
        }
    ]
    assert reply.text == ""


async def test_asking_which_documents_are_available_calls_the_list_tool() -> None:
    model = OfflineExtractiveModel().bind_tools([SEARCH, LIST])

    reply = await model.ainvoke(planning("Which documents are available to me?"))

    assert [(call["name"], call["args"]) for call in reply.tool_calls] == [("documents__list", {})]


@pytest.mark.parametrize(
    ("question", "lists"),
    [
        ("Show me all the files", True),
        ("List the uploaded documents.", True),
        ("What files do I have?", True),
        ("Can less show two files side by side?", False),
        ("Does the tool list open files it holds?", False),
        ("Which files are available?", True),
        ("I want every object from another file available inside my filter: which option does that?", False),
    ],
)
def test_only_a_question_about_which_documents_exist_asks_for_the_list(question: str, lists: bool) -> None:
    assert wants_document_list(question) is lists


async def test_document_chat_is_never_called_even_when_it_is_the_only_tool() -> None:
    reply = await OfflineExtractiveModel().bind_tools([DOCUMENT_CHAT]).ainvoke(planning("Summarise my contract."))

    assert reply.tool_calls == []


async def test_document_chat_is_not_called_when_offered_next_to_search() -> None:
    reply = await OfflineExtractiveModel().bind_tools([DOCUMENT_CHAT, SEARCH]).ainvoke(planning("What is the rent?"))

    assert [call["name"] for call in reply.tool_calls] == ["documents__search"]


async def test_once_tool_results_are_in_the_turn_no_more_tools_are_called() -> None:
    call = {"name": "documents__search", "args": {"text": "rent"}, "id": "call_0", "type": "tool_call"}
    after = (AIMessage("", tool_calls=[call]), ToolMessage("Rent is $1,850.", tool_call_id="call_0"))

    reply = await OfflineExtractiveModel().bind_tools([SEARCH]).ainvoke(planning("What is the rent?", *after))

    assert reply.tool_calls == []
    assert reply.text == ""


async def test_tool_results_from_an_earlier_turn_do_not_stop_planning() -> None:
    earlier = [
        HumanMessage("Old question"),
        AIMessage(
            "", tool_calls=[{"name": "documents__search", "args": {"text": "x"}, "id": "c", "type": "tool_call"}]
        ),
        ToolMessage("old result", tool_call_id="c"),
    ]
    messages = [SystemMessage("plan"), *earlier, HumanMessage("What is the rent?")]

    reply = await OfflineExtractiveModel().bind_tools([SEARCH]).ainvoke(messages)

    assert [call["name"] for call in reply.tool_calls] == ["documents__search"]


async def test_dotted_tool_names_work_too() -> None:
    dotted = mcp_like_tool("documents.search", {"type": "object", "properties": {"query": {"type": "string"}}})

    reply = await OfflineExtractiveModel().bind_tools([dotted]).ainvoke(planning("rent?"))

    assert [(call["name"], call["args"]) for call in reply.tool_calls] == [("documents.search", {"query": "rent?"})]


async def test_tool_calls_stream_as_one_chunk_that_parses_into_the_same_calls() -> None:
    model = OfflineExtractiveModel().bind_tools([SEARCH])

    chunks = [chunk async for chunk in model.astream(planning("What is the rent?"))]

    assert len(chunks) == 1
    assert chunks[0].tool_calls == (await model.ainvoke(planning("What is the rent?"))).tool_calls


def test_the_query_parameter_prefers_query_like_names_then_required_strings() -> None:
    def tool(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"function": {"name": "s", "parameters": {"properties": properties, "required": required}}}

    assert query_parameter(tool({"limit": {"type": "integer"}, "query": {"type": "string"}}, [])) == "query"
    assert query_parameter(tool({"scope": {"type": "string"}, "terms": {"type": "string"}}, ["terms"])) == "terms"
    assert query_parameter(tool({"limit": {"type": "integer"}}, ["limit"])) is None
