"""Building an MCP server over real document services (memory blob store, citing test model)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from mcp import ClientSession
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

from mcp_server.scope import current_principal
from mcp_server.server import build_document_chat_server
from mcp_server.services import DocumentChatServices
from orc.documents.chat.document_chat import DocumentChatService
from orc.documents.chat.file_cache import ProcessedFileCache
from orc.names import BlobPaths
from orc.principal import Principal
from orc.storage.ports import BlobStore
from orc.testing import FunctionChatModel
from tests.documents.doubles import CountingBlobStore, citing_model
from tests.documents.library_support import extraction_pool

ALICE = Principal(organization="acme", user="alice")
CONVERSATION = "conv-1"
HANDBOOK = b"Employee handbook.\n\nVacation: every employee has 25 days of paid vacation per year.\n"


@dataclass
class Served:
    """A server and what it runs on."""

    server: FastMCP
    blobs: CountingBlobStore
    model: FunctionChatModel


def build_served(blobs: BlobStore | None = None, *, max_question_chars: int = 500) -> Served:
    """An MCP server over a document_chat service with a counting memory blob store."""
    counting = CountingBlobStore()
    model = citing_model()
    service = DocumentChatService(
        blobs if blobs is not None else counting,
        ProcessedFileCache(600),
        model,
        model_label="test:citing",
        max_document_bytes=1_000_000,
        max_question_chars=max_question_chars,
        max_documents=3,
        extraction_pool=extraction_pool(),
    )
    services = DocumentChatServices(document_chat=service, max_question_chars=max_question_chars, max_document_names=3)
    return Served(server=build_document_chat_server(services), blobs=counting, model=model)


async def upload(blobs: BlobStore, name: str, data: bytes, principal: Principal = ALICE) -> None:
    """Put a session document where document_chat looks for it."""
    await blobs.put(BlobPaths.session_blob(principal.organization, principal.user, CONVERSATION, name), data)


@asynccontextmanager
async def connect(server: FastMCP, principal: Principal | None = ALICE) -> AsyncIterator[ClientSession]:
    """An in-memory client session whose server task acts for ``principal`` (as the orchestrator does)."""
    token = current_principal.set(principal)
    try:
        async with create_connected_server_and_client_session(server) as session:
            yield session
    finally:
        current_principal.reset(token)
