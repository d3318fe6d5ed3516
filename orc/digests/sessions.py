"""The incremental digest workflow of a session (context-digest-spec §6 and §9), run in the background.

Every change to a session's files schedules a *refresh* of that session; one worker task per session runs the
refreshes one after another, and changes that arrive while it runs fold into its next pass (so a 10-file upload
is one pass, and one Task B). A pass:

1. gives every member whose text is ready a per-file digest for its current text — from the cache when the key
   (``extracted_text_hash``, ``chunking_version``, ``prompt_version``) is known, else by Task A, several files at
   once within the shared concurrency bound; members still being extracted in this process are waited for;
2. once every member is settled (digest ``ready`` or ``error``) and no newer change is waiting, rebuilds the
   aggregate with Task B — only when its inputs changed: the set of (file, ``digest_hash``) pairs and the
   aggregate prompt's version. The aggregate is made from the per-file digests only, never from spans.

Nothing here blocks a request: mutations only schedule, readers see the statuses move
``stale/parsing → ready | error``. Work runs in a fresh context, so it is never billed to the turn or request
that happened to schedule it.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orc.admission import UNLIMITED, Admission
from orc.clock import utc_now
from orc.digests.envelopes import format_name
from orc.digests.files import DigestTarget, FileDigests
from orc.digests.runner import DigestRunner, DigestStats
from orc.digests.schema import BATCH_FILENAME, BATCH_FORMAT, SCHEMA_VERSION, Digest, digest_hash, source_refs
from orc.digests.signals import SessionSignals
from orc.digests.store import DigestStore
from orc.documents.sessions import AggregateState, ContextFile, SessionFiles, SessionHeader, session_location
from orc.errors import NotFound, OrcError, TooManyRequests
from orc.principal import Principal

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_SECONDS = 5.0
"""How long shutdown may spend stopping digests and marking interrupted work ``stale`` (so another process picks it
up)."""


def session_key(principal: Principal, session_id: str) -> str:
    """The key that names one session of one principal (workers, signals)."""
    return f"{principal.partition_key}/{session_id}"


def aggregate_inputs(files: Sequence[ContextFile], prompt_version: str) -> str:
    """The fingerprint of an aggregate's inputs: its files' ids, names and ``digest_hash``es, and the prompt."""
    digest = hashlib.sha256(prompt_version.encode())
    for record in sorted(files, key=lambda f: f.file_id):
        digest.update(f"\x1e{record.file_id}\x1f{record.filename}\x1f{record.digest_hash}".encode())
    return digest.hexdigest()


def empty_aggregate() -> Digest:
    """The aggregate of a session without digested files (no model call is needed for it)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "batch",
        "document": {"filename": BATCH_FILENAME, "format": BATCH_FORMAT},
        "batch": {"files": []},
        "summary": "The session has no digested files.",
        "facts": [],
        "uncertainties": [],
    }


@dataclass(eq=False)
class _Worker:
    principal: Principal
    session_id: str
    dirty: bool = True
    retry: set[str] = field(default_factory=set)
    retrying: set[str] = field(default_factory=set)
    release: set[str] = field(default_factory=set)
    forced: bool = False  # digests asked for by name (parse now, retry): made even with auto-parse off
    retry_aggregate: bool = False  # the aggregate failed and its user asked to try again
    retrying_aggregate: bool = False
    task: asyncio.Task[None] | None = None


class SessionDigests:
    """Keeps each session's per-file and aggregate digests current, one background worker per session.

    A pass for a principal whose ``digest`` admission is refused (its turns are: digests are started by uploads, not
    asked for, and must not keep the model busy for it) makes no model call: its files' digests stay ``stale`` until
    the next change (or an explicit retry) finds the principal admitted again."""

    def __init__(
        self,
        files: SessionFiles,
        file_digests: FileDigests,
        store: DigestStore,
        runner: DigestRunner,
        signals: SessionSignals,
        *,
        admission: Admission = UNLIMITED,
    ) -> None:
        self._files = files
        self._file_digests = file_digests
        self._store = store
        self._runner = runner
        self.signals = signals
        self._workers: dict[str, _Worker] = {}
        self._closed = False
        self._admission = admission

    @property
    def file_digests(self) -> FileDigests:
        """The per-file digests service the workers use."""
        return self._file_digests

    @property
    def stats(self) -> DigestStats:
        """Task A and Task B calls and tokens spent by this process."""
        return self._runner.stats

    @property
    def aggregate_version(self) -> str:
        """The aggregate prompt's version (part of the aggregate's inputs)."""
        return self._runner.aggregate_version

    # -- ContextListener ----------------------------------------------------------------------------------------

    def files_changed(self, principal: Principal, conversation_id: str, released: Sequence[ContextFile]) -> None:
        """A mutation happened: refresh the session, and forget digests only the released records used."""
        self.schedule(principal, conversation_id, release={r.digest_key for r in released if r.digest_key})
        self.signals.notify(session_key(principal, conversation_id))

    async def session_removed(
        self, principal: Principal, conversation_id: str, released: Sequence[ContextFile]
    ) -> None:
        """The session is deleted: stop its worker, delete its aggregates and the digests only it used."""
        worker = self._workers.pop(session_key(principal, conversation_id), None)
        if worker is not None and worker.task is not None:
            worker.task.cancel()
            await asyncio.gather(worker.task, return_exceptions=True)
        await self._store.delete_aggregates(principal.partition_key, conversation_id)
        for key in {record.digest_key for record in released if record.digest_key}:
            await self._file_digests.release(principal.partition_key, key)
        self.signals.notify(session_key(principal, conversation_id))

    # -- scheduling -----------------------------------------------------------------------------------------------

    def schedule(
        self,
        principal: Principal,
        conversation_id: str,
        retry: Iterable[str] = (),
        release: Iterable[str] = (),
        *,
        force: bool = False,
        retry_aggregate: bool = False,
    ) -> None:
        """Refresh the session soon (now, or right after the pass that is running); ``retry`` names files whose
        digest failed and should be tried again, ``retry_aggregate`` asks for a failed aggregate to be made again
        from the same inputs, ``release`` names cached digests a removed or replaced file used. A session with
        auto-parse off makes no digest unless ``force`` (the user asked for them)."""
        if self._closed:
            return
        key = session_key(principal, conversation_id)
        worker = self._workers.get(key)
        if worker is None or worker.task is None or worker.task.done():
            worker = _Worker(principal, conversation_id)
            self._workers[key] = worker
            # A fresh context: the work is not part of whatever request or turn scheduled it.
            worker.task = asyncio.create_task(
                self._run(worker), name=f"digests-{conversation_id}", context=contextvars.Context()
            )

            def forget(done: asyncio.Task[None], key: str = key, worker: _Worker = worker) -> None:
                if self._workers.get(key) is worker:
                    del self._workers[key]

            worker.task.add_done_callback(forget)
        worker.dirty = True
        worker.forced = worker.forced or force
        worker.retry_aggregate = worker.retry_aggregate or retry_aggregate
        worker.retry.update(retry)
        worker.release.update(release)

    def busy(self, principal: Principal, conversation_id: str) -> bool:
        """Whether this process is refreshing the session now."""
        worker = self._workers.get(session_key(principal, conversation_id))
        return worker is not None and worker.task is not None and not worker.task.done()

    def retrying(self, principal: Principal, conversation_id: str) -> frozenset[str]:
        """Files whose failed digest this process is about to make again (they read as ``parsing``)."""
        worker = self._workers.get(session_key(principal, conversation_id))
        if worker is None or worker.task is None or worker.task.done():
            return frozenset()
        return frozenset(worker.retry | worker.retrying)

    def retrying_aggregate(self, principal: Principal, conversation_id: str) -> bool:
        """Whether this process is about to make the session's failed aggregate again (it reads as ``parsing``)."""
        worker = self._workers.get(session_key(principal, conversation_id))
        if worker is None or worker.task is None or worker.task.done():
            return False
        return worker.retry_aggregate or worker.retrying_aggregate

    async def wait_idle(self, principal: Principal, conversation_id: str, seconds: float) -> bool:
        """Wait up to ``seconds`` for the session's worker to finish; True when it is idle."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while True:
            worker = self._workers.get(session_key(principal, conversation_id))
            if worker is None or worker.task is None or worker.task.done():
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await asyncio.wait([worker.task], timeout=remaining)

    async def aclose(self) -> None:
        """Stop every worker; work they leave unfinished is marked ``stale`` for the next process."""
        self._closed = True
        workers = list(self._workers.values())
        tasks = [w.task for w in workers if w.task is not None and not w.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        interrupted = [w for w in workers if w.task in tasks]
        failed = False
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                try:
                    await self._file_digests.aclose()
                except OrcError:
                    failed = True  # the sessions' own statuses can still be reset below
                await self._leave_stale(interrupted)
        except (TimeoutError, OrcError):
            failed = True
        if failed:
            logger.warning("some interrupted digests stay 'parsing' until they are found stale")

    # -- the worker -------------------------------------------------------------------------------------------------

    async def _run(self, worker: _Worker) -> None:
        key = session_key(worker.principal, worker.session_id)
        while worker.dirty and not self._closed:
            worker.dirty = False
            retry, worker.retry = worker.retry, set()
            forced, worker.forced = worker.forced, False
            worker.retrying = retry
            worker.retrying_aggregate, worker.retry_aggregate = worker.retry_aggregate, False
            release, worker.release = worker.release, set()
            try:
                await self._pass(worker, retry, forced=forced, retry_aggregate=worker.retrying_aggregate)
                for digest_key in release:
                    await self._file_digests.release(worker.principal.partition_key, digest_key)
            except asyncio.CancelledError:
                raise
            except NotFound:
                return  # the session is gone
            except Exception as exc:
                # A failing pass (storage outage...) leaves statuses as they are; the next change or read retries.
                logger.warning("refreshing the digests of a session failed: %s", type(exc).__name__)
                logger.debug("digest refresh failure details", exc_info=True)
            finally:
                worker.retrying = set()
                worker.retrying_aggregate = False
                self.signals.notify(key)

    async def _may_digest(self, principal: Principal) -> bool:
        try:
            (await self._admission.admit(principal, "digest")).release()
        except TooManyRequests:
            return False
        return True

    async def _pass(
        self, worker: _Worker, retry: set[str], *, forced: bool = False, retry_aggregate: bool = False
    ) -> None:
        principal, session_id = worker.principal, worker.session_id
        if not await self._may_digest(principal):
            logger.info("digests deferred: the principal is over its limits")
            await self._leave_stale([worker])  # nobody works on them until the next change or retry
            return
        manifest = await self._files.manifest(principal, session_id)
        if not manifest.auto_parse and not forced:
            return  # the digests wait for "parse now" (released cached digests are still freed by the caller)
        settled = True
        jobs = []
        for record in manifest.files:
            if record.status == "uploading":
                settled = False  # its upload is being written; the mutation schedules another pass
                continue
            location = session_location(principal, session_id, record)
            if record.status == "processing":
                job = self._files.processor.running(location)
                if job is None:
                    settled = False  # processed elsewhere (or orphaned: documents.analyze restarts it)
                else:
                    jobs.append(self._after_extraction(principal, session_id, record, job, retry))
                continue
            jobs.append(self._digest(principal, session_id, record, retry))
        if jobs:
            # Every file's job runs to its end even when another one fails; a failure only postpones the aggregate.
            for outcome in await asyncio.gather(*jobs, return_exceptions=True):
                if isinstance(outcome, Exception):
                    settled = False
                    logger.warning("a file's digest failed: %s", type(outcome).__name__)
            self.signals.notify(session_key(principal, session_id))
        if settled and not worker.dirty:
            await self._aggregate(principal, session_id, retry_error=bool(retry) or retry_aggregate)
        elif retry_aggregate:
            worker.retry_aggregate = True  # not tried in this pass: the next one still owes it

    async def _after_extraction(
        self, principal: Principal, session_id: str, record: ContextFile, job: asyncio.Task[Any], retry: set[str]
    ) -> None:
        await asyncio.wait([job])
        item = await self._files.catalog.get(
            principal.partition_key, session_location(principal, session_id, record).item_id
        )
        if item is None:
            return
        await self._digest(principal, session_id, ContextFile.model_validate(item.body), retry)

    async def _digest(self, principal: Principal, session_id: str, record: ContextFile, retry: set[str]) -> None:
        body = record.model_dump()
        if self._file_digests.is_current(body) and not (record.digest_status == "error" and record.file_id in retry):
            return
        location = session_location(principal, session_id, record)
        if record.status == "failed":
            if record.digest_status != "error":
                reason = f"no digest: the text could not be extracted ({record.status_reason or 'processing failed'})"
                await self._file_digests.mark_error(location, record.content_hash, reason, "not_extracted")
            return
        target = DigestTarget.of(location, body)
        if target is not None:
            await self._file_digests.ensure(target)

    async def _aggregate(self, principal: Principal, session_id: str, *, retry_error: bool = False) -> None:
        manifest = await self._files.manifest(principal, session_id)
        if any(not self._file_digests.is_current(record.model_dump()) for record in manifest.files):
            return  # a member is not settled yet; its change schedules another pass
        ready = [record for record in manifest.files if record.digest_status == "ready"]
        inputs = aggregate_inputs(ready, self.aggregate_version)
        header = await self._files.header(principal, session_id)
        if header is None:
            return
        current = header.aggregate
        if current.inputs == inputs:
            if current.status == "error" and not retry_error:
                return  # the same inputs failed before; a change or an explicit retry tries again
            if current.status != "error" and current.ref is not None:
                if current.status != "ready":
                    # The set changed and changed back (or a shutdown left it stale): the stored aggregate is right.
                    await self._set_aggregate(principal, session_id, current.model_copy(update={"status": "ready"}))
                return
        if current.status != "parsing":
            await self._set_aggregate(principal, session_id, current.model_copy(update={"status": "parsing"}))
        digests: list[Digest] = []
        for record in ready:
            digest = await self._file_digests.load(principal.partition_key, record.model_dump())
            if digest is None:
                # Its cached digest vanished (released by another session at the same moment): digest it again.
                await self._file_digests.mark_stale(
                    session_location(principal, session_id, record), record.content_hash
                )
                self.schedule(principal, session_id)
                return
            digests.append(digest)
        files = [(record.filename, format_name(record.media_type, record.filename)) for record in ready]
        if digests:
            allowed = set().union(*(source_refs(digest) for digest in digests))
            outcome = await self._runner.aggregate(files, digests, allowed)
            made, error, code = outcome.digest, outcome.error, outcome.error_code
        else:
            made, error, code = empty_aggregate(), None, None
        if made is None:
            state = AggregateState(
                status="error",
                inputs=inputs,
                revision=manifest.revision,
                error=error,
                error_code=code,
                updated_at=utc_now(),
            )
            await self._set_aggregate(principal, session_id, state)
            return
        meta = {"inputs": inputs, "revision": manifest.revision, "prompt_version": self.aggregate_version}
        ref = await self._store.save_aggregate(principal.partition_key, session_id, inputs, made, meta)
        state = AggregateState(
            status="ready",
            ref=ref,
            digest_hash=digest_hash(made),
            inputs=inputs,
            revision=manifest.revision,
            files=len(ready),
            updated_at=utc_now(),
        )
        if await self._set_aggregate(principal, session_id, state) is not None:
            await self._store.delete_aggregates(principal.partition_key, session_id, keep=ref)

    async def _set_aggregate(
        self, principal: Principal, session_id: str, state: AggregateState
    ) -> SessionHeader | None:
        # Passes of one session run one at a time here, so the last write is the newest build; readers compare its
        # inputs with the current files anyway (see ContextFiles.manifest).
        updated = await self._files.update_aggregate(principal, session_id, lambda _: state)
        self.signals.notify(session_key(principal, session_id))
        return updated

    async def _leave_stale(self, workers: Sequence[_Worker]) -> None:
        """Shutdown: the interrupted sessions' ``parsing`` statuses become ``stale`` (nobody works on them now)."""
        for worker in workers:
            principal, session_id = worker.principal, worker.session_id
            try:
                manifest = await self._files.manifest(principal, session_id)
            except NotFound:
                continue
            for record in manifest.files:
                if record.digest_status == "parsing" and record.status != "uploading":
                    location = session_location(principal, session_id, record)
                    await self._file_digests.mark_stale(location, record.content_hash)
            await self._files.update_aggregate(
                principal,
                session_id,
                lambda header: (
                    header.aggregate.model_copy(update={"status": "stale"})
                    if header.aggregate.status == "parsing"
                    else None
                ),
            )
