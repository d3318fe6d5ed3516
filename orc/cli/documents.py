"""``orc docs add|list`` and ``orc contexts put``: documents and contexts from the command line (local principal).

``orc docs add`` uploads many files in small batches, lets them process in the background (bounded by the
pipeline's concurrency) and draws a progress bar as each one becomes ready or fails. A file orc cannot read
(unsupported type, empty, too large, bad name) is reported and skipped; the others go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from orc.documents.availability import DocumentScope, context_document
from orc.documents.library import DocumentLibrary
from orc.documents.processing import ProcessingResult
from orc.documents.records import ContextRef, DocumentInfo
from orc.documents.uploads import Upload, check_uploads
from orc.errors import InvalidInput, OrcError
from orc.principal import LOCAL_PRINCIPAL

BATCH_FILES = 8
"""Files read and stored per batch: bounds the memory a thousand-file upload needs."""
BAR_WIDTH = 30


@dataclass(frozen=True, slots=True)
class Target:
    """Where ``orc docs`` puts or lists documents: a context, or a session (conversation)."""

    context: ContextRef | None = None
    session_id: str | None = None

    @classmethod
    def parse(cls, context: str | None, session_id: str | None) -> Target:
        """``--context TYPE:ID`` or ``--session ID``; neither means the local organization."""
        if session_id is not None:
            return cls(session_id=session_id)
        if context is None:
            return cls(context=ContextRef("organization", LOCAL_PRINCIPAL.organization))
        kind, separator, identifier = context.partition(":")
        if not separator or not identifier:
            raise InvalidInput("--context takes TYPE:ID, for example folder:legal or organization:default")
        return cls(context=ContextRef.parse(kind, identifier))

    @property
    def label(self) -> str:
        """How messages name the target."""
        return f"session {self.session_id}" if self.session_id else self.context.label if self.context else ""


class ProgressBar:
    """``[#####.....] 5/10 name: status`` on stderr; redrawn in place on a terminal, one line per file otherwise."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total = total
        self.done = 0
        self.out = out
        self.live = out.isatty()

    def advance(self, name: str, status: str) -> None:
        """Count one more finished file and redraw."""
        self.done += 1
        filled = BAR_WIDTH * self.done // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total} {name}: {status}"
        if self.live:
            end = "\n" if self.done == self.total else ""
            print(f"\r\x1b[2K{line}", end=end, file=self.out, flush=True)
        else:
            print(line, file=self.out, flush=True)


async def _read(path: Path) -> Upload:
    return Upload(filename=path.name, data=await asyncio.to_thread(path.read_bytes))


async def add_documents(library: DocumentLibrary, target: Target, paths: Sequence[Path], err: TextIO) -> int:
    """Upload ``paths`` to ``target`` with a progress bar; 0 when every file ends ready, else 1."""
    principal = LOCAL_PRINCIPAL
    if target.context is not None:
        await library.directory.get(principal, target.context)
    bar = ProgressBar(len(paths), err)
    failed = 0
    watched: list[asyncio.Task[tuple[str, str]]] = []

    async def watch(name: str, job: asyncio.Task[ProcessingResult]) -> tuple[str, str]:
        result = await asyncio.shield(job)
        return name, result.outcome if result.reason is None else f"{result.outcome} ({result.reason})"

    for start in range(0, len(paths), BATCH_FILES):
        batch: list[Upload] = []
        for upload in await asyncio.gather(*(_read(path) for path in paths[start : start + BATCH_FILES])):
            try:
                check_uploads([upload], library.session_files.max_upload_bytes)
            except OrcError as exc:
                failed += 1
                bar.advance(upload.filename, f"skipped ({exc.code}: {exc.message})")
                continue
            batch.append(upload)
        if not batch:
            continue
        if target.session_id is not None:
            mutation = await library.session_files.add(principal, target.session_id, batch, wait_seconds=0)
            jobs = {
                record.file_id: job
                for record, job in await library.session_files.processing(principal, target.session_id)
            }
            # Read after the jobs: a document without a running job has finished, so its stored status is final.
            current = {
                record.file_id: record for record in await library.session_files.files(principal, target.session_id)
            }
            for change in mutation.files:
                if change.file_id in jobs:
                    watched.append(asyncio.create_task(watch(change.filename, jobs[change.file_id])))
                else:
                    status = current[change.file_id].status if change.file_id in current else change.status
                    failed += status == "failed"
                    bar.advance(change.filename, f"{status} ({change.diff})")
        else:
            assert target.context is not None
            for doc in await library.context_documents.add(principal, target.context, batch, wait_seconds=0):
                if doc.job is not None:
                    watched.append(asyncio.create_task(watch(doc.record.filename, doc.job)))
                else:
                    failed += doc.record.status == "failed"
                    bar.advance(doc.record.filename, f"{doc.record.status} ({doc.diff})")
    for finished in asyncio.as_completed(watched):
        name, status = await finished
        failed += not status.startswith(("ready", "superseded"))
        bar.advance(name, status)
    print(f"{len(paths) - failed} of {len(paths)} file(s) ready in {target.label}", file=err)
    return 0 if failed == 0 else 1


async def list_documents(library: DocumentLibrary, target: Target, out: TextIO) -> int:
    """Print the documents of ``target`` (exactly that context, or the session), one per line."""
    principal = LOCAL_PRINCIPAL
    documents: list[DocumentInfo]
    if target.session_id is not None:
        availability = await library.available(principal, DocumentScope(session_id=target.session_id))
        documents = [doc.info for doc in availability.documents]
    else:
        assert target.context is not None
        await library.directory.get(principal, target.context)
        records = await library.context_documents.documents(principal, target.context)
        documents = [context_document(principal.organization, record, None).info for record in records]
    if not documents:
        print(f"no documents in {target.label}", file=out)
    for doc in documents:
        tokens = f"~{doc.token_estimate} tokens" if doc.token_estimate is not None else "-"
        reason = f"  ({doc.status_reason})" if doc.status_reason else ""
        print(f"{doc.filename}\t{doc.status}\t{doc.size_bytes} bytes\t{tokens}\t{doc.document_id}{reason}", file=out)
    return 0


async def put_context(library: DocumentLibrary, ref: ContextRef, name: str | None, parent: str | None) -> str:
    """Create or rename a context of the local organization; returns what happened."""
    node, created = await library.directory.put(LOCAL_PRINCIPAL, ref, name or ref.id, parent)
    where = f" under {node.parent_type} {node.parent_id}" if node.parent_id else ""
    return f"{'created' if created else 'updated'} {ref.label} ({node.name}){where}"
