"""The search port's contract (orc.testing.conformance), run against the in-memory and the embedded engines."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from orc.search.embedded import EmbeddedSearchEngine
from orc.search.memory import MemorySearchEngine
from orc.search.port import SearchEngine
from orc.testing.conformance import SearchConformance


class TestMemoryEngine(SearchConformance):
    """The reference engine (text that is never stored is ranked by it)."""

    @pytest_asyncio.fixture
    async def engine(self) -> AsyncIterator[SearchEngine]:
        engine = MemorySearchEngine()
        yield engine
        await engine.aclose()


class TestEmbeddedEngine(SearchConformance):
    """The engine beside the embedded database; ``peer`` is a second instance on the same folder, as another
    process (``orc serve --workers 2``, ``orc worker``) opens it."""

    @pytest.fixture
    def root(self, tmp_path: Path) -> Path:
        return tmp_path / "search"

    @pytest_asyncio.fixture
    async def engine(self, root: Path) -> AsyncIterator[SearchEngine]:
        engine = EmbeddedSearchEngine(root)
        yield engine
        await engine.aclose()

    @pytest_asyncio.fixture
    async def peer(self, root: Path) -> AsyncIterator[SearchEngine]:
        engine = EmbeddedSearchEngine(root)
        yield engine
        await engine.aclose()


class TestEmbeddedEngineFromSegments(TestEmbeddedEngine):
    """The same engine when every vector query is answered from its ANN segments (each write folded into one
    before it returns), as an organization too big for an exact scan is answered."""

    @pytest_asyncio.fixture
    async def engine(self, root: Path) -> AsyncIterator[SearchEngine]:
        engine = EmbeddedSearchEngine(root, exact_spans=0, fold_spans=1, fold_in_background=False)
        yield engine
        await engine.aclose()

    @pytest_asyncio.fixture
    async def peer(self, root: Path) -> AsyncIterator[SearchEngine]:
        engine = EmbeddedSearchEngine(root, exact_spans=0, fold_spans=1, fold_in_background=False)
        yield engine
        await engine.aclose()
