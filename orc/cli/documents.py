"""``orc docs add|list|remove`` and ``orc contexts put|list``: documents and contexts from the command line (local
principal).

``orc docs add`` uploads many files in small batches, lets them process in the background (bounded by the
pipeline's concurrency) and draws a progress bar as each one becomes ready or fails. A file orc cannot read
(unsupported type, empty, too large, bad name) is reported and skipped; the others go on.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from orc.cli.refusals import short_message
from orc.cli.table import table
from orc.composition import Foundation
from orc.documents.catalog.availability import DocumentScope, context_document
from orc.documents.intake.processing import ProcessingResult
from orc.documents.intake.uploads import Upload, check_uploads
from orc.documents.records import ContextRef, DocumentInfo
from orc.errors import InvalidInput, NotFound, OrcError
from orc.principal import LOCAL_PRINCIPAL

BATCH_FILES = 8
"""Files read and stored per batch: bounds the memory a thousand-file upload needs."""
BAR_WIDTH = 30


def parse_context(text: str) -> ContextRef:
    """``TYPE:ID`` (``folder:legal``, ``usecase:leases``, ``organization:default``) as a :class:`ContextRef`."""
    kind, separator, identifier = text.partition(":")
    if not separator or not identifier:
        raise InvalidInput("--context takes TYPE:ID, for example folder:legal or organization:default")
    return ContextRef.parse(kind, identifier)


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
        return cls(context=parse_context(context))

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


async def add_documents(foundation: Foundation, target: Target, paths: Sequence[Path], err: TextIO) -> int:
    """Upload ``paths`` to ``target`` with a progress bar; 0 when every file ends ready, else 1."""
    principal = LOCAL_PRINCIPAL
    if target.context is not None:
        await foundation.directory.get(principal, target.context)
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
                check_uploads([upload], foundation.session_files.max_upload_bytes)
            except OrcError as exc:
                failed += 1
                bar.advance(upload.filename, f"skipped ({exc.code}: {short_message(exc.code, exc.message)})")
                continue
            batch.append(upload)
        if not batch:
            continue
        if target.session_id is not None:
            mutation = await foundation.session_files.add(principal, target.session_id, batch, wait_seconds=0)
            jobs = {
                record.file_id: job
                for record, job in await foundation.session_files.processing(principal, target.session_id)
            }
            # Read after the jobs: a document without a running job has finished, so its stored status is final.
            current = {
                record.file_id: record for record in await foundation.session_files.files(principal, target.session_id)
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
            for doc in await foundation.context_documents.add(principal, target.context, batch, wait_seconds=0):
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


async def list_documents(foundation: Foundation, target: Target, out: TextIO) -> int:
    """Print the documents of ``target`` (exactly that context, or the session), one per line."""
    principal = LOCAL_PRINCIPAL
    documents: list[DocumentInfo]
    if target.session_id is not None:
        availability = await foundation.scopes.available(principal, DocumentScope(session_id=target.session_id))
        documents = [doc.info for doc in availability.documents]
    else:
        assert target.context is not None
        await foundation.directory.get(principal, target.context)
        records = await foundation.context_documents.documents(principal, target.context)
        documents = [context_document(principal.organization, record, None).info for record in records]
    if not documents:
        print(f"no documents in {target.label}", file=out)
    _print_documents(documents, out)
    return 0


async def put_context(foundation: Foundation, ref: ContextRef, name: str | None, parent: str | None) -> str:
    """Create or rename a context of the local organization; returns what happened."""
    node, created = await foundation.directory.put(LOCAL_PRINCIPAL, ref, name or ref.id, parent)
    where = f" under {node.parent_type} {node.parent_id}" if node.parent_id else ""
    return f"{'created' if created else 'updated'} {ref.label} ({node.name}){where}"


async def list_everything(foundation: Foundation, out: TextIO) -> int:
    """Every document the local principal has: each context of the organization, then each session with files."""
    principal = LOCAL_PRINCIPAL
    tree = await foundation.directory.tree(principal.organization)
    found = 0
    for ref in sorted(tree, key=lambda ref: (_TYPE_ORDER[ref.type], ref.id)):
        records = await foundation.context_documents.documents(principal, ref)
        if records:
            found += len(records)
            print(f"{ref.label}:", file=out)
            infos = [context_document(principal.organization, record, None).info for record in records]
            _print_documents(infos, out, indent="  ")
    headers = await foundation.session_files.sessions(principal)
    titles = await foundation.sessions.titles(principal, headers)
    shared = {title for title, count in Counter(titles.values()).items() if count > 1}
    for header in headers:
        availability = await foundation.scopes.available(principal, DocumentScope(session_id=header.conversation_id))
        if availability.documents:
            found += len(availability.documents)
            title = titles[header.conversation_id]
            # Headed as the page lists it; the id only tells apart conversations of the same title.
            named = f"conversation “{title}”" + (f" (session {header.conversation_id})" if title in shared else "")
            print(f"{named}:", file=out)
            _print_documents([doc.info for doc in availability.documents], out, indent="  ")
    if not found:
        print("no documents yet; add some with: orc docs add PATH... [--context TYPE:ID | --session ID]", file=out)
    return 0


_TYPE_ORDER = {"organization": 0, "folder": 1, "usecase": 2}


def _print_documents(documents: Sequence[DocumentInfo], out: TextIO, indent: str = "") -> None:
    """One aligned line per document: name, status, size, tokens and the id ``orc docs remove`` also takes."""
    rows = []
    for doc in documents:
        tokens = f"~{doc.token_estimate:,}" if doc.token_estimate is not None else "-"
        status = f"{doc.status} ({doc.status_reason})" if doc.status_reason else doc.status
        rows.append((doc.filename, status, _size(doc.size_bytes), tokens, doc.document_id))
    for line in table(("NAME", "STATUS", "SIZE", "TOKENS", "ID"), rows, indent=indent):
        print(line, file=out)


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


async def remove_document(foundation: Foundation, target: Target, name_or_id: str, err: TextIO) -> int:
    """Remove one document of ``target``, named by its id or its filename."""
    principal = LOCAL_PRINCIPAL
    if target.session_id is not None:
        records = await foundation.session_files.files(principal, target.session_id)
        match = next((r for r in records if name_or_id in (r.file_id, r.filename)), None)
        if match is None:
            raise NotFound(f"no document {name_or_id!r} in {target.label}", code="document_not_found")
        await foundation.session_files.remove(principal, target.session_id, match.file_id)
        print(f"removed {match.filename} ({match.file_id}) from {target.label}", file=err)
        return 0
    assert target.context is not None
    documents = await foundation.context_documents.documents(principal, target.context)
    found = next((d for d in documents if name_or_id in (d.document_id, d.filename)), None)
    if found is None:
        raise NotFound(f"no document {name_or_id!r} in {target.label}", code="document_not_found")
    await foundation.context_documents.remove(principal, target.context, found.document_id)
    print(f"removed {found.filename} ({found.document_id}) from {target.label}", file=err)
    return 0


async def list_contexts(foundation: Foundation, out: TextIO) -> int:
    """The local organization's context tree, one ``TYPE:ID`` per line, indented under its parent."""
    tree = await foundation.directory.tree(LOCAL_PRINCIPAL.organization)
    children: dict[ContextRef | None, list[ContextRef]] = {}
    for ref, node in tree.items():
        children.setdefault(node.parent, []).append(ref)

    def show(ref: ContextRef, depth: int) -> None:
        node = tree[ref]
        name = f"  ({node.name})" if node.name != ref.id else ""
        print(f"{'  ' * depth}{ref.type}:{ref.id}{name}", file=out)
        for child in sorted(children.get(ref, []), key=lambda child: (_TYPE_ORDER[child.type], child.id)):
            show(child, depth + 1)

    for root in sorted(children.get(None, []), key=lambda ref: (_TYPE_ORDER[ref.type], ref.id)):
        show(root, 0)
    return 0
