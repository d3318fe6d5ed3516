"""Pure mutation planning for a session's files: what an upload, replace or delete does to the set.

Nothing here reads or writes storage. The service (:mod:`orc.documents.sessions.service`) reads the header and
the records, asks :func:`plan_commit` for the next header, writes it conditionally and then stores what the plan
says must be stored; a concurrent writer makes it read and plan again. Keeping the decisions here lets them be
tested without storage: which files are new, changed or unchanged, which ids are kept, when an unchanged file is
stored again, the revision and the change banner, the limits and the ``If-Match`` precondition.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orc.documents.intake.uploads import Upload
from orc.documents.records import DigestStatus
from orc.documents.sessions.models import (
    ChangeSummary,
    ContextFile,
    ContextSet,
    Diff,
    FileChange,
    Member,
    SessionHeader,
    spec_digest_status,
)
from orc.errors import InvalidInput, NotFound, PreconditionFailed

Records = Mapping[str, ContextFile]
"""A session's file records by filename."""


EXISTS = -1
"""``if_match`` for ``If-Match: *``: the session must exist (any revision), per RFC 9110 §13.1.1."""


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """One file of a mutation: what it does and, when content must be stored, the upload to store."""

    member: Member
    diff: Diff
    upload: Upload | None
    previous: ContextFile | None
    """The file's record before the mutation (by filename), if it had one."""


Planner = Callable[[list[Member], Records, str], list[PlannedFile]]
"""Plans a mutation from the current members, the records by filename and the time of the commit."""


# -- planners ----------------------------------------------------------------------------------------------------


def plan_uploads(uploads: Sequence[Upload]) -> Planner:
    """Add ``uploads``: new names get new ids, known names are replaced in place."""

    def plan(members: list[Member], records: Records, now: str) -> list[PlannedFile]:
        by_name = {member.filename: member for member in members}
        return [plan_upload(upload, by_name.get(upload.filename), records, now=now) for upload in uploads]

    return plan


def plan_replacement(file_id: str, upload: Upload) -> Planner:
    """Replace the content of ``file_id``, which keeps its id and its filename (the upload's name is not used)."""

    def plan(members: list[Member], records: Records, now: str) -> list[PlannedFile]:
        member = _member(members, file_id)
        renamed = Upload(member.filename, upload.data, upload.content_type)
        return [plan_upload(renamed, member, records, now=now)]

    return plan


def plan_removal(file_id: str) -> Planner:
    """Delete ``file_id`` from the set."""

    def plan(members: list[Member], records: Records, now: str) -> list[PlannedFile]:
        member = _member(members, file_id)
        return [PlannedFile(member=member, diff="deleted", upload=None, previous=records.get(member.filename))]

    return plan


def plan_upload(upload: Upload, member: Member | None, records: Records, *, now: str) -> PlannedFile:
    """One upload against the member of the same name (``None`` for a new name)."""
    digest = upload.sha256
    record = records.get(upload.filename)
    if member is not None and member.content_hash == digest:
        # Unchanged content is stored again only when its earlier upload never completed or failed (the failure
        # may have been transient); the revision stays.
        redo = record is None or record.content_hash != digest or record.status == "failed"
        return PlannedFile(member=member, diff="unchanged", upload=upload if redo else None, previous=record)
    fresh = Member(
        file_id=member.file_id if member else f"doc-{uuid.uuid4().hex}",
        filename=upload.filename,
        content_hash=digest,
        size_bytes=len(upload.data),
        mime_type=upload.content_type or "application/octet-stream",
        uploaded_at=now,
    )
    return PlannedFile(member=fresh, diff="new" if member is None else "changed", upload=upload, previous=record)


def _member(members: Sequence[Member], file_id: str) -> Member:
    member = next((m for m in members if m.file_id == file_id), None)
    if member is None:
        raise NotFound("no such file in this session", code="file_not_found")
    return member


# -- the commit --------------------------------------------------------------------------------------------------


def plan_commit(
    header: SessionHeader,
    records: Records,
    plan: Planner,
    *,
    now: str,
    if_match: int | None = None,
    max_files: int,
    digests: bool,
) -> tuple[SessionHeader, list[PlannedFile]]:
    """The header to write after ``plan`` (new revision, membership and change banner) and the planned files.

    The revision moves only when something changed. ``digests`` (someone makes digests) marks the aggregate
    ``parsing`` on a change, unless the set's auto-parse is off: then nothing is coming and it reads ``stale``.
    Raises :class:`PreconditionFailed` (``revision_mismatch``) when ``if_match`` is not the header's revision and
    :class:`InvalidInput` (``too_many_files``) past ``max_files``.
    """
    if if_match == EXISTS:
        if header.revision == 0:
            raise PreconditionFailed(
                "If-Match: * asks for an existing session, and this one has no files yet", code="revision_mismatch"
            )
    elif if_match is not None and header.revision != if_match:
        raise PreconditionFailed(
            f"the session is at revision {header.revision}, not {if_match}; reload it and retry",
            code="revision_mismatch",
        )
    members = list(header.files or [])
    planned = plan(members, records, now)
    changed = [p for p in planned if p.diff != "unchanged"]
    next_members = apply_plan(members, planned)
    if len(next_members) > max_files:
        raise InvalidInput(f"a session holds at most {max_files} files", code="too_many_files")
    revision = header.revision + 1 if changed else header.revision
    counts = {diff: sum(1 for p in planned if p.diff == diff) for diff in ("new", "changed", "deleted")}
    update: dict[str, Any] = {
        "files": next_members,
        "last_change": ChangeSummary(revision=revision, unchanged=len(planned) - len(changed), **counts),
    }
    if changed:
        update["revision"] = revision
        update["updated_at"] = now
        if digests and header.auto_parse:
            update["aggregate"] = header.aggregate.model_copy(update={"status": "parsing", "updated_at": now})
    return header.model_copy(update=update), planned


def apply_plan(members: Sequence[Member], planned: Sequence[PlannedFile]) -> list[Member]:
    """The membership after ``planned``: deleted files leave, changed ones are updated in place, new ones append."""
    result = list(members)
    positions = {member.file_id: index for index, member in enumerate(result)}
    removed: set[str] = set()
    for item in planned:
        if item.diff == "deleted":
            removed.add(item.member.file_id)
        elif item.member.file_id in positions:
            result[positions[item.member.file_id]] = item.member
        else:
            positions[item.member.file_id] = len(result)
            result.append(item.member)
    return [member for member in result if member.file_id not in removed]


def needs_digest(planned: PlannedFile) -> bool:
    """Whether the file's digest must be (re)made: it changed, or it was uploaded again unchanged while its digest
    is missing or failed (the upload retries the digest)."""
    record = planned.previous
    return planned.diff != "unchanged" or record is None or record.digest_status in ("none", "stale", "error")


def replaced_records(planned: Sequence[PlannedFile]) -> list[ContextFile]:
    """The records whose content a mutation replaced (their digests are obsolete)."""
    return [p.previous for p in planned if p.diff == "changed" and p.previous is not None]


def new_record(planned: PlannedFile, *, now: str, digests: bool) -> ContextFile:
    """The ``uploading`` record stored for a planned upload (it keeps the creation time of the same file); its digest
    ``parsing`` when ``digests`` will be made now, else ``stale`` (waiting for someone to ask)."""
    member = planned.member
    previous = planned.previous if planned.previous and planned.previous.file_id == member.file_id else None
    return _uploading(member, "parsing" if digests else "stale", previous.created_at if previous else now, now)


def _uploading(member: Member, digest_status: DigestStatus, created_at: str, updated_at: str) -> ContextFile:
    """The record of a member whose upload is in flight."""
    return ContextFile(
        file_id=member.file_id,
        filename=member.filename,
        size_bytes=member.size_bytes,
        content_type=member.mime_type,
        content_hash=member.content_hash,
        status="uploading",
        digest_status=digest_status,
        created_at=created_at,
        updated_at=updated_at,
        uploaded_at=member.uploaded_at,
    )


# -- reporting ----------------------------------------------------------------------------------------------------


def file_changes(planned: Sequence[PlannedFile], current: Mapping[str, ContextFile]) -> list[FileChange]:
    """What the mutation did to each file, with the statuses of ``current`` (records by file id)."""
    changes = []
    for item in planned:
        record = current.get(item.member.file_id)
        changes.append(
            FileChange(
                file_id=item.member.file_id,
                filename=item.member.filename,
                status=record.status if record else "uploading",
                digest_status=spec_digest_status(record.digest_status) if record else "stale",
                diff=item.diff,
            )
        )
    return changes


def header_of(stored: SessionHeader | None, conversation_id: str, records: Records) -> SessionHeader:
    """The stored header, or a fresh one; membership derived from the records for headers that predate it."""
    header = stored if stored is not None else SessionHeader(conversation_id=conversation_id)
    if header.files is None:
        ordered = sorted(records.values(), key=lambda record: (record.created_at, record.file_id))
        header = header.model_copy(update={"files": [member_of(record) for record in ordered]})
    return header


def member_of(record: ContextFile) -> Member:
    """A record as a member of the set (for headers written before membership was kept)."""
    return Member(
        file_id=record.file_id,
        filename=record.filename,
        content_hash=record.content_hash,
        size_bytes=record.size_bytes,
        mime_type=record.content_type,
        uploaded_at=record.uploaded_at or record.updated_at,
    )


def listed_file(member: Member, record: ContextFile | None) -> ContextFile:
    """A member as listed: its record when the record holds the member's content, else the upload in flight."""
    if record is not None and record.content_hash == member.content_hash:
        if record.uploaded_at is None:
            return record.model_copy(update={"uploaded_at": member.uploaded_at})
        return record
    return _uploading(member, "parsing", record.created_at if record else member.uploaded_at, member.uploaded_at)


def context_set(header: SessionHeader, records: Sequence[ContextFile]) -> ContextSet:
    """The set at the header's revision: membership from the header, each member's state from its record."""
    by_id = {record.file_id: record for record in records}
    return ContextSet(
        context_set_id=header.context_set_id,
        session_id=header.conversation_id,
        revision=header.revision,
        updated_at=header.updated_at,
        files=[listed_file(member, by_id.get(member.file_id)) for member in header.files or ()],
        aggregate_digest_status=header.aggregate.status,
        aggregate_digest_ref=header.aggregate.ref,
        aggregate_digest_error=header.aggregate.error,
        aggregate_digest_error_code=header.aggregate.error_code,
        changes=header.last_change or ChangeSummary(revision=header.revision),
        aggregate=header.aggregate,
        auto_parse=header.auto_parse,
    )
