"""The ``document_chat`` tool: a grounded answer over named session documents (document-chat-workflow)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from mcp_server.scope import resolve_principal
from mcp_server.services import DocumentChatServices
from mcp_server.tools import tool_errors
from orc.contracts import DocumentChatResult, FileRef
from orc.tool_contract import DOCUMENT_CHAT

DESCRIPTION = """Answer a question from documents the user attached to this conversation.

Pass the question and the attached documents' names exactly as given (document_names). When the previous
document_chat result was for exactly the same set of names, pass its `files` as cached_file_info so the server
can skip reprocessing; otherwise omit it. The result has the answer with [document::S<n>] citations, the
`files` to keep for the next turn, and the evidence spans in metadata.sources.

mode "answer" (the default) answers with one model call. mode "evidence" makes no model call: `answer` is empty,
metadata.sources holds the ranked spans (cite them as [document::S<n>]) and metadata.model_calls is 0; use it
when you will write the answer yourself."""


def register(server: FastMCP, services: DocumentChatServices) -> None:
    """Add ``document_chat`` to ``server``, answering with ``services.document_chat``."""

    async def document_chat(
        question: Annotated[str, Field(description="The user's question, standalone.")],
        document_names: Annotated[list[str], Field(description="Names of the documents attached to the conversation.")],
        session_id: Annotated[str, Field(description="The conversation id the documents belong to.")],
        ctx: Context[Any, Any, Any],
        cached_file_info: Annotated[
            list[FileRef] | None,
            Field(description="The `files` of the previous document_chat result for the same documents."),
        ] = None,
        mode: Annotated[
            Literal["answer", "evidence"],
            Field(
                description='"answer" (default): a grounded answer from one model call. "evidence": no model call; '
                "the ranked spans in metadata.sources, the files, and an empty answer."
            ),
        ] = "answer",
    ) -> Annotated[CallToolResult, DocumentChatResult]:
        principal = resolve_principal(ctx)
        if len(question) > services.max_question_chars:
            raise ToolError(
                f"payload_too_large: the question is longer than {services.max_question_chars} characters; shorten it"
            )
        if len(document_names) > services.max_document_names:
            raise ToolError(
                f"invalid_input: at most {services.max_document_names} documents can be used in one "
                "question; ask about fewer documents"
            )
        with tool_errors(DOCUMENT_CHAT, failure="document processing failed"):
            result = await services.document_chat.answer(
                principal, session_id, question, document_names, cached_file_info, mode=mode
            )
        # A CallToolResult annotated with its contract keeps the advertised output schema and is checked by
        # FastMCP with the pydantic model; a plain return value would make the low-level server re-validate
        # the JSON Schema against its metaschema on every call (a cost larger than a warm turn's own work).
        return CallToolResult(
            content=[TextContent(type="text", text=result.model_dump_json())],
            structuredContent=result.model_dump(mode="json"),
        )

    server.add_tool(
        document_chat,
        name=DOCUMENT_CHAT,
        title="Chat with attached documents",
        description=DESCRIPTION,
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=False, openWorldHint=False),
        structured_output=True,
    )
