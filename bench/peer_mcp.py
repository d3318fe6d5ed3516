"""The peer's document server: a FastMCP server (mcp 1.x) with one tool, ``document_chat(question, blob_names)``.

It searches the same documents as orc with orc's own code, so both builds do the same work per search: extract
the text (:func:`orc.documents.parsing.extraction.extract`), cut it into spans (:func:`orc.search.spans.make_spans`),
rank the spans of the named files with BM25 (:func:`orc.text.rank_tokenized`, the 8 best, as orc's
``document_chat``), and return them as orc formats sources (``<source ref="lease.txt::S1">…</source>``). A file
is processed once and reused while its size and modification time stay the same, as orc reuses a processed file
while its ETag stays the same. The tool returns evidence, not an answer: the agent's model answers from it.

Served over streamable HTTP as FastMCP's own docs show it (``mcp.run(transport="streamable-http")``)::

    python -m bench.peer_server --app mcp --port 8770 --docs /tmp/docs
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp.server.fastmcp import FastMCP

from orc.contracts import SourceSpan
from orc.documents.parsing.extraction import extract
from orc.models.prompting import format_sources
from orc.search.spans import Span, make_spans, source_ref
from orc.text import rank_tokenized, tokenize

MAX_SOURCES = 8
"""As orc's ``document_chat`` (``DocumentChatService(max_sources=8)``)."""


@dataclass(frozen=True, slots=True)
class _Processed:
    version: tuple[int, int]
    spans: tuple[Span, ...]
    tokens: tuple[tuple[str, ...], ...]


class DocumentFolder:
    """The documents of one folder, processed on first use and searched with BM25."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self._processed: dict[str, _Processed] = {}
        self._lock = threading.Lock()

    def _path(self, name: str) -> Path:
        path = (self.folder / name).resolve()
        if path.parent != self.folder or not path.is_file():
            raise ValueError(f"no document named {name!r}")
        return path

    def _load(self, name: str) -> _Processed:
        path = self._path(name)
        stat = path.stat()
        version = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            cached = self._processed.get(name)
        if cached is not None and cached.version == version:
            return cached
        spans = tuple(make_spans(extract(path.read_bytes(), name)))
        processed = _Processed(version, spans, tuple(tuple(tokenize(span.text)) for span in spans))
        with self._lock:
            self._processed[name] = processed
        return processed

    def search(self, question: str, blob_names: Sequence[str]) -> list[SourceSpan]:
        """The best spans of the named documents for ``question``; the first of each when nothing matches."""
        files = [(name, self._load(name)) for name in dict.fromkeys(blob_names)]
        candidates = [(name, span) for name, processed in files for span in processed.spans]
        corpus = [tokens for _, processed in files for tokens in processed.tokens]
        ranked = rank_tokenized(tokenize(question), corpus, limit=MAX_SOURCES)
        chosen = [candidates[item.index] for item in ranked] or [
            (name, processed.spans[0]) for name, processed in files if processed.spans
        ][:MAX_SOURCES]
        return [
            SourceSpan(ref=source_ref(name, span.span_id), document=name, span_id=span.span_id, text=span.text)
            for name, span in chosen
        ]


def create_mcp(folder: Path, *, host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """The FastMCP server over the documents in ``folder``."""
    documents = DocumentFolder(folder)
    mcp = FastMCP("documents", host=host, port=port, log_level="WARNING")

    @mcp.tool()
    async def document_chat(question: str, blob_names: list[str]) -> str:
        """Search the attached documents named in blob_names for passages that answer the question.

        Returns the best passages as <source ref="file::span"> elements; cite them by their ref.
        """
        # File reads and extraction block: off the event loop, as orc does it.
        sources = await asyncio.to_thread(documents.search, question, blob_names)
        return format_sources(sources) if sources else "No passages found."

    return mcp
