"""The document_chat tool through a real in-memory MCP client session."""

from __future__ import annotations

from typing import Any

from mcp import types

from mcp_server.tools import split_tool_error
from orc.contracts import DocumentChatResult
from orc.storage.ports import BlobInfo
from tests.documents.doubles import CountingBlobStore
from tests.mcp_server.helpers import ALICE, CONVERSATION, HANDBOOK, build_served, connect, upload


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def _arguments(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "question": "How many vacation days?",
        "document_names": ["handbook.txt"],
        "session_id": CONVERSATION,
    }
    arguments.update(overrides)
    return arguments


async def test_tools_list_shows_document_chat_with_input_and_output_schemas() -> None:
    served = build_served()

    async with connect(served.server) as session:
        tools = (await session.list_tools()).tools

    tool = next(tool for tool in tools if tool.name == "document_chat")
    assert set(tool.inputSchema["required"]) == {"question", "document_names", "session_id"}
    assert set(tool.inputSchema["properties"]) == {
        "question",
        "document_names",
        "session_id",
        "cached_file_info",
        "mode",
    }
    assert tool.inputSchema["properties"]["mode"]["default"] == "answer"
    assert "evidence" in tool.inputSchema["properties"]["mode"]["description"]
    assert "ctx" not in tool.inputSchema["properties"]
    assert tool.outputSchema is not None
    assert set(tool.outputSchema["required"]) == {"answer", "files", "metadata"}
    assert tool.annotations is not None and tool.annotations.readOnlyHint is True


async def test_a_call_returns_structured_content_matching_the_contract() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    async with connect(served.server) as session:
        result = await session.call_tool("document_chat", _arguments())

    assert result.isError is False
    parsed = DocumentChatResult.model_validate(result.structuredContent)
    assert parsed.answer == "The documents say so [handbook.txt::S1]."
    assert [ref.blob_name for ref in parsed.files] == ["handbook.txt"]
    assert parsed.metadata.cache == "miss"
    assert parsed.metadata.model_calls == 1
    # Clients that ignore structured content still get the same result as text.
    assert "handbook.txt::S1" in _text(result)


async def test_mode_answer_given_explicitly_keeps_the_contract_and_makes_one_model_call() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    async with connect(served.server) as session:
        default = await session.call_tool("document_chat", _arguments())
        explicit = await session.call_tool("document_chat", _arguments(mode="answer"))

    first = DocumentChatResult.model_validate(default.structuredContent)
    second = DocumentChatResult.model_validate(explicit.structuredContent)
    assert second.answer == first.answer == "The documents say so [handbook.txt::S1]."
    assert second.metadata.model_calls == first.metadata.model_calls == 1
    assert served.model.calls == 2


async def test_mode_evidence_returns_the_ranked_spans_and_files_without_a_model_call() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    async with connect(served.server) as session:
        result = await session.call_tool("document_chat", _arguments(mode="evidence"))

    assert result.isError is False
    parsed = DocumentChatResult.model_validate(result.structuredContent)
    assert parsed.answer == ""
    assert parsed.metadata.model_calls == 0 and parsed.metadata.usage.total_tokens == 0
    assert parsed.metadata.sources and parsed.metadata.sources[0].ref.startswith("handbook.txt::S")
    assert [ref.blob_name for ref in parsed.files] == ["handbook.txt"]
    assert served.model.calls == 0


async def test_an_unknown_mode_is_an_error_result() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    async with connect(served.server) as session:
        result = await session.call_tool("document_chat", _arguments(mode="summary"))

    assert result.isError is True
    assert served.model.calls == 0


async def test_cached_file_info_from_the_previous_result_is_a_cache_hit() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    async with connect(served.server) as session:
        first = await session.call_tool("document_chat", _arguments())
        files = first.structuredContent["files"] if first.structuredContent else None
        second = await session.call_tool("document_chat", _arguments(cached_file_info=files))

    assert second.structuredContent is not None
    assert second.structuredContent["files"] == files
    assert second.structuredContent["metadata"]["cache"] == "hit"
    assert sum(served.blobs.gets.values()) == 1


async def test_an_unknown_document_is_an_error_result_with_the_not_found_code() -> None:
    served = build_served()

    async with connect(served.server) as session:
        result = await session.call_tool("document_chat", _arguments(document_names=["missing.pdf"]))

    assert result.isError is True
    assert "not_found: document 'missing.pdf' is not attached to this conversation" in _text(result)
    assert "Traceback" not in _text(result)
    code, message = split_tool_error(_text(result))
    assert code == "not_found"
    assert message.startswith("document 'missing.pdf' is not attached")


async def test_an_invalid_name_is_an_error_result_with_the_invalid_name_code() -> None:
    served = build_served()

    async with connect(served.server) as session:
        result = await session.call_tool("document_chat", _arguments(document_names=["../bob/secret.pdf"]))

    assert result.isError is True
    assert "invalid_name: " in _text(result)
    assert not served.blobs.heads


async def test_an_empty_question_is_an_error_result_with_the_invalid_input_code() -> None:
    served = build_served()

    async with connect(served.server) as session:
        result = await session.call_tool("document_chat", _arguments(question="  "))

    assert result.isError is True
    assert "invalid_input: question must not be empty" in _text(result)


async def test_limits_on_the_question_and_the_number_of_documents_are_error_results() -> None:
    served = build_served(max_question_chars=30)

    async with connect(served.server) as session:
        long_question = await session.call_tool("document_chat", _arguments(question="why " * 10))
        many_documents = await session.call_tool(
            "document_chat", _arguments(document_names=["a.txt", "b.txt", "c.txt", "d.txt"])
        )

    assert long_question.isError is True
    assert "payload_too_large: the question is longer than 30 characters" in _text(long_question)
    assert many_documents.isError is True
    assert "invalid_input: at most 3 documents" in _text(many_documents)


async def test_a_session_without_a_principal_is_unauthenticated() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    async with connect(served.server, principal=None) as session:
        result = await session.call_tool("document_chat", _arguments())

    assert result.isError is True
    assert "unauthenticated: " in _text(result)
    assert not served.blobs.heads


async def test_each_principal_only_sees_its_own_documents() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)
    bob = ALICE.model_copy(update={"user": "bob"})

    async with connect(served.server, principal=bob) as session:
        result = await session.call_tool("document_chat", _arguments())

    assert result.isError is True
    assert "not_found: " in _text(result)


class ExplodingBlobStore(CountingBlobStore):
    """Fails like a misbehaving storage SDK, with a URL and a key in the message."""

    async def head(self, name: str) -> BlobInfo | None:
        raise RuntimeError("GET https://account.blob.core.windows.net/orc/acme?sig=SECRET failed")


async def test_an_unexpected_failure_is_a_generic_error_without_urls_or_traces(caplog: Any) -> None:
    served = build_served(blobs=ExplodingBlobStore())

    async with connect(served.server) as session:
        result = await session.call_tool("document_chat", _arguments())

    text = _text(result)
    assert result.isError is True
    assert "internal_error: document processing failed; try again later" in text
    assert "blob.core.windows.net" not in text
    assert "SECRET" not in text
    assert "Traceback" not in text
    assert "SECRET" not in caplog.text
    assert "RuntimeError" in caplog.text


def test_error_texts_without_a_code_are_reported_as_plain_tool_errors() -> None:
    text = "Error executing tool document_chat: 1 validation error for document_chatArguments"

    assert split_tool_error(text) == ("tool_error", text)
