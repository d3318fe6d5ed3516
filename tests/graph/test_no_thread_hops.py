"""A warm turn hands no work to the event loop's thread pool: every node is a coroutine.

LangGraph runs a plain function (a node, or a conditional edge's function) of an async graph in the default
executor, and LangChain runs a model's ``_generate`` there when the model has no ``_agenerate``. Each is a
thread hand-off per turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from orc.composition import Stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.search.memory import MemorySearchEngine
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest
from tests.graph.test_document_chat_workflow import DOCS, cite_first_source


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor, counting what is handed to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted: list[str] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted.append(getattr(fn, "__qualname__", repr(fn)))
        return super().submit(fn, *args, **kwargs)


async def test_a_warm_document_chat_turn_on_memory_stores_uses_no_worker_thread() -> None:
    stores = Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore(), search=MemorySearchEngine())
    request = TurnRequest(question="What does it say?", conversation_id="conv", blob_names=["doc1.pdf.txt"])
    async with build_runtime(Settings(), model=FunctionChatModel(cite_first_source), stores=stores) as orc:
        await orc.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", [Upload("doc1.pdf.txt", DOCS["doc1.pdf.txt"])])
        assert orc.documents.context_files is not None
        # The upload's digests run in the background; let them finish so that only the turn is watched.
        assert await orc.documents.digests.wait_idle(LOCAL_PRINCIPAL, "conv", 120)
        await orc.orchestrator.ask(request)
        executor = CountingExecutor()
        asyncio.get_running_loop().set_default_executor(executor)

        result = await orc.orchestrator.ask(request)

    assert result.metadata.cache == "hit"
    assert executor.submitted == []
