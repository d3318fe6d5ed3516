"""A session's context files as the API serves them (context-digest-spec §7): manifest, files, digests, changes.

The manifest reports *effective* statuses: a digest made with another prompt or chunker is ``stale``; a
``parsing`` that nobody has worked on for :data:`STALE_AFTER` (its process died) is ``stale``; the aggregate is
``ready`` only while its inputs are exactly the current files' digests, so a client never shows an aggregate that
belongs to another revision. Reading a manifest that has ``stale`` work schedules it (read repair), which is how
digests catch up after a prompt upgrade or a restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

from orc.digests.schema import Digest
from orc.digests.sessions import SessionDigests, aggregate_inputs, session_key
from orc.digests.store import DigestStore
from orc.documents.records import PERMANENT_DIGEST_ERRORS
from orc.documents.sessions import ContextFile, ContextSet, SessionFiles, SpecDigestStatus, spec_digest_status
from orc.errors import Conflict, DigestFailed, NotFound, NotReady
from orc.names import validate_identifier
from orc.principal import Principal

STALE_AFTER = timedelta(minutes=10)
"""A digest ``parsing`` this long with no worker in this process is presumed abandoned (its process died)."""
WATCH_POLL_SECONDS = 2.0
"""How often a status stream re-reads storage without a local wake-up (changes made by other instances)."""
WATCH_KEEPALIVE_SECONDS = 15.0
WATCH_MAX_SECONDS = 300.0


class ContextFiles:
    """The context-files service behind ``/api/sessions/{id}/context…``."""

    def __init__(self, files: SessionFiles, digests: SessionDigests, store: DigestStore) -> None:
        self._files = files
        self._digests = digests
        self._store = store

    # -- reads --------------------------------------------------------------------------------------------------

    async def manifest(self, principal: Principal, session_id: str, *, repair: bool = True) -> ContextSet:
        """The context set at its latest revision with effective statuses; schedules stale work when ``repair``."""
        raw = await self._files.manifest(principal, session_id)
        view, stale = self._effective(principal, session_id, raw)
        if repair and stale and view.auto_parse:
            self._digests.schedule(principal, session_id)
        return view

    async def file(self, principal: Principal, session_id: str, file_id: str) -> ContextFile:
        """One file's metadata; :class:`NotFound` (``file_not_found``) when it is not in the set."""
        validate_identifier(file_id, what="file")
        manifest = await self.manifest(principal, session_id)
        return _find(manifest, file_id)

    async def file_digest(self, principal: Principal, session_id: str, file_id: str) -> tuple[ContextFile, Digest]:
        """The per-file digest of the file's current content; ``not_ready`` while it is being made."""
        validate_identifier(file_id, what="file")
        manifest = await self.manifest(principal, session_id)
        record = _find(manifest, file_id)
        _check_ready(record.digest_status, record.digest_error, f"the digest of {record.filename!r}")
        digest = await self._digests.file_digests.load(principal.partition_key, record.model_dump())
        if digest is None:
            self._digests.schedule(principal, session_id)
            raise NotReady(f"the digest of {record.filename!r} is being made again; retry shortly")
        return record, digest

    async def aggregate(self, principal: Principal, session_id: str) -> tuple[ContextSet, Digest]:
        """The aggregate digest of the latest revision; ``not_ready`` while it is being made."""
        manifest = await self.manifest(principal, session_id)
        _check_ready(manifest.aggregate_digest_status, manifest.aggregate_digest_error, "the aggregate digest")
        stored = await self._store.load(principal.partition_key, manifest.aggregate_digest_ref or "")
        if stored is None:
            self._digests.schedule(principal, session_id)
            raise NotReady("the aggregate digest is being made again; retry shortly")
        return manifest, stored.digest

    async def current_aggregate(self, principal: Principal, session_id: str) -> Digest | None:
        """The stored aggregate when the session's header says it is ready for the set's current revision, from the
        header alone (no file records); ``None`` otherwise, nothing scheduled. :class:`NotFound` for a session that
        never had files.

        Looser than :meth:`aggregate`: an aggregate whose files were re-digested since (a prompt upgrade) is still
        returned, as it still summarizes the same documents. For readers that want a ready summary cheaply (the
        answer prompt); the API reports effective statuses through :meth:`manifest`.
        """
        header = await self._files.header(principal, session_id)
        if header is None:
            raise NotFound("no such session", code="session_not_found")
        state = header.aggregate
        if state.status != "ready" or state.ref is None or state.revision != header.revision:
            return None
        stored = await self._store.load(principal.partition_key, state.ref)
        return stored.digest if stored is not None else None

    async def watch(
        self,
        principal: Principal,
        session_id: str,
        first: ContextSet,
        *,
        poll_seconds: float = WATCH_POLL_SECONDS,
        keepalive_seconds: float = WATCH_KEEPALIVE_SECONDS,
        max_seconds: float = WATCH_MAX_SECONDS,
    ) -> AsyncIterator[ContextSet | None]:
        """The manifest each time it changes, from ``first`` until nothing is parsing (or ``max_seconds``); ``None``
        items are keep-alives. Wakes on local changes at once and re-reads storage every ``poll_seconds``."""
        loop = asyncio.get_running_loop()
        signals = self._digests.signals
        key = session_key(principal, session_id)
        deadline = loop.time() + max_seconds
        manifest = first
        last = None
        last_sent = loop.time()
        with signals.watching(key) as seen:
            while True:
                dumped = manifest.model_dump(mode="json")
                if dumped != last:
                    yield manifest
                    last, last_sent = dumped, loop.time()
                if not manifest.parsing:
                    return
                now = loop.time()
                if now >= deadline:
                    return
                if now - last_sent >= keepalive_seconds:
                    yield None
                    last_sent = now
                timeout = min(poll_seconds, deadline - now, max(keepalive_seconds - (now - last_sent), 0.0))
                seen = await signals.wait(key, seen, timeout)
                try:
                    manifest = await self.manifest(principal, session_id, repair=False)
                except NotFound:
                    return  # the session was deleted while it was watched

    async def first_manifest(
        self,
        principal: Principal,
        session_id: str,
        *,
        poll_seconds: float = WATCH_POLL_SECONDS,
        max_seconds: float = WATCH_MAX_SECONDS,
    ) -> AsyncIterator[ContextSet | None]:
        """``None`` (a keep-alive) every poll until a session without files has a set, then that set; gives up after
        ``max_seconds``. Wakes at once on an upload to this process and re-reads storage every poll otherwise."""
        signals = self._digests.signals
        key = session_key(principal, session_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_seconds
        with signals.watching(key) as seen:
            while loop.time() < deadline:
                seen = await signals.wait(key, seen, min(poll_seconds, max(deadline - loop.time(), 0.0)))
                try:
                    yield await self.manifest(principal, session_id)
                    return
                except NotFound:
                    yield None

    # -- mutations ------------------------------------------------------------------------------------------------

    async def retry_parse(self, principal: Principal, session_id: str, file_id: str) -> ContextFile:
        """Make a file's failed digest again (the spec's "Retry parse", §8.2); the file as it is now.

        Only a digest in ``error`` is retried (anything else is already current or being made, so the call changes
        nothing); a file whose text could not be extracted, or that is too long to summarize, is refused with
        ``not_retryable``: the same bytes would fail again, replacing the file is what helps."""
        record = await self.file(principal, session_id, file_id)
        if record.status == "failed":
            raise Conflict(
                f"the text of {record.filename!r} could not be extracted; replace the file instead",
                code="not_retryable",
            )
        if record.digest_status == "error" and record.digest_error_code in PERMANENT_DIGEST_ERRORS:
            raise Conflict(f"{record.filename!r} cannot be summarized: {record.digest_error}", code="not_retryable")
        if record.digest_status != "error":
            return record
        self._digests.schedule(principal, session_id, retry={file_id}, force=True)
        return record.model_copy(update={"digest_status": "parsing", "digest_error": None, "digest_error_code": None})

    async def retry_aggregate(self, principal: Principal, session_id: str) -> ContextSet:
        """Make the session's failed aggregate digest again from its files' digests (the spec's "Retry parse" for the
        aggregate); the set as it is now, its aggregate ``parsing``.

        The pass goes through the same digest workflow as every other: admitted like the rest (a principal over its
        limits leaves it failed), made from per-file digests only. An aggregate that is not failed is answered as it
        is: it is current or already being made."""
        manifest = await self.manifest(principal, session_id, repair=False)
        if manifest.aggregate_digest_status != "error":
            return manifest
        self._digests.schedule(principal, session_id, force=True, retry_aggregate=True)
        return await self.manifest(principal, session_id, repair=False)

    async def set_auto_parse(self, principal: Principal, session_id: str, on: bool) -> ContextSet:
        """Turn "auto-parse on change" on or off; turning it on makes what is stale at once."""
        await self._files.set_auto_parse(principal, session_id, on)
        if on:
            # What changed while it was off waits ``stale``: a pass makes it now rather than at the next read.
            self._digests.schedule(principal, session_id)
        return await self.manifest(principal, session_id)

    async def parse_now(self, principal: Principal, session_id: str) -> ContextSet:
        """Make every stale digest of the session now, whatever auto-parse says (the spec's manual parse)."""
        await self.manifest(principal, session_id, repair=False)  # NotFound for a session without files
        self._digests.schedule(principal, session_id, force=True)
        return await self.manifest(principal, session_id, repair=False)

    # -- effective statuses ---------------------------------------------------------------------------------------

    def _effective(self, principal: Principal, session_id: str, raw: ContextSet) -> tuple[ContextSet, bool]:
        """The manifest with effective statuses, and whether some work is stale (nobody is doing it)."""
        busy = self._digests.busy(principal, session_id)
        retrying = self._digests.retrying(principal, session_id)
        retrying_aggregate = self._digests.retrying_aggregate(principal, session_id)
        fresh = self._digests.file_digests
        files: list[ContextFile] = []
        for record in raw.files:
            status: SpecDigestStatus = spec_digest_status(record.digest_status)
            if (
                status in ("ready", "error") and record.status == "ready" and not fresh.is_current(record.model_dump())
            ) or (
                status == "parsing"
                and not busy
                # With auto-parse off nobody makes a digest the upload marked as coming: it waits, stale.
                and (not raw.auto_parse or self._abandoned(record.digest_updated_at or record.updated_at))
            ):
                status = "stale"
            if (status == "stale" and busy) or (status == "error" and record.file_id in retrying):
                status = "parsing"
            files.append(
                record if status == record.digest_status else record.model_copy(update={"digest_status": status})
            )
        stored = raw.aggregate
        pending = [record.digest_status for record in files if record.digest_status in ("parsing", "stale")]
        aggregate: SpecDigestStatus
        if pending:
            aggregate = "parsing" if busy or "parsing" in pending else "stale"
        else:
            inputs = aggregate_inputs([f for f in files if f.digest_status == "ready"], self._digests.aggregate_version)
            if stored.inputs == inputs and stored.status == "error" and not retrying_aggregate:
                aggregate = "error"
            elif stored.inputs == inputs and stored.ref is not None and stored.status != "error":
                aggregate = "ready"
            elif busy or (
                stored.status == "parsing"
                # As for files: with auto-parse off nobody rebuilds the aggregate a change marked as coming.
                and raw.auto_parse
                and not self._abandoned(stored.updated_at or raw.updated_at)
            ):
                aggregate = "parsing"
            else:
                aggregate = "stale"
        stale = aggregate == "stale" or any(
            record.digest_status == "stale" and record.status == "ready" for record in files
        )
        view = raw.model_copy(
            update={
                "files": files,
                "aggregate_digest_status": aggregate,
                "aggregate_digest_ref": stored.ref if aggregate == "ready" else None,
                "aggregate_digest_error": stored.error if aggregate == "error" else None,
                "aggregate_digest_error_code": stored.error_code if aggregate == "error" else None,
                "parsing": aggregate == "parsing" or any(f.digest_status == "parsing" for f in files),
            }
        )
        return view, stale

    def _abandoned(self, since: str | None) -> bool:
        if not since:
            return True
        try:
            moment = datetime.fromisoformat(since)
        except ValueError:
            return True
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return datetime.now(UTC) - moment > STALE_AFTER


def _find(manifest: ContextSet, file_id: str) -> ContextFile:
    found = next((record for record in manifest.files if record.file_id == file_id), None)
    if found is None:
        raise NotFound("no such file in this session", code="file_not_found")
    return found


def _check_ready(status: str, error: str | None, what: str) -> None:
    if status == "error":
        raise DigestFailed(f"{what} could not be made: {error or 'unknown reason'}")
    if status != "ready":
        raise NotReady(f"{what} is {status}; follow GET …/context or …/context/stream and retry when it is ready")
