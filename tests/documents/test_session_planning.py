"""What a mutation does to a session's set, planned without storage (orc.documents.sessions.planning)."""

from __future__ import annotations

import pytest

from orc.documents.intake.uploads import Upload
from orc.documents.sessions.models import AggregateState, ContextFile, Member, SessionHeader
from orc.documents.sessions.planning import (
    PlannedFile,
    Records,
    apply_plan,
    context_set,
    header_of,
    listed_file,
    needs_digest,
    plan_commit,
    plan_removal,
    plan_replacement,
    plan_upload,
    plan_uploads,
)
from orc.errors import InvalidInput, NotFound, PreconditionFailed

NOW = "2026-01-02T03:04:05.000000+00:00"
EARLIER = "2026-01-01T00:00:00.000000+00:00"


def member(name: str, data: bytes, file_id: str | None = None) -> Member:
    upload = Upload(name, data)
    return Member(
        file_id=file_id or f"doc-{name}",
        filename=name,
        content_hash=upload.sha256,
        size_bytes=len(data),
        mime_type="text/plain",
        uploaded_at=EARLIER,
    )


def record(
    of: Member, *, status: str = "ready", digest_status: str = "ready", data: bytes | None = None
) -> ContextFile:
    return ContextFile(
        file_id=of.file_id,
        filename=of.filename,
        size_bytes=of.size_bytes,
        content_type=of.mime_type,
        content_hash=Upload(of.filename, data).sha256 if data is not None else of.content_hash,
        status=status,  # type: ignore[arg-type]
        digest_status=digest_status,  # type: ignore[arg-type]
        created_at=EARLIER,
        updated_at=EARLIER,
    )


def header(*members: Member, revision: int = 1) -> SessionHeader:
    return SessionHeader(conversation_id="conv", revision=revision, files=list(members))


def commit(
    start: SessionHeader, records: Records, uploads: list[Upload], **options: object
) -> tuple[SessionHeader, list[PlannedFile]]:
    settings: dict[str, object] = {"max_files": 10, "digests": False, **options}
    return plan_commit(start, records, plan_uploads(uploads), now=NOW, **settings)  # type: ignore[arg-type]


# -- one upload -------------------------------------------------------------------------------------------------


def test_a_new_name_gets_a_new_id_and_is_stored() -> None:
    planned = plan_upload(Upload("a.txt", b"alpha", "text/plain"), None, {}, now=NOW)

    assert planned.diff == "new" and planned.upload is not None and planned.previous is None
    assert planned.member.file_id.startswith("doc-") and planned.member.uploaded_at == NOW
    assert planned.member.content_hash == Upload("a.txt", b"alpha").sha256


def test_new_content_under_a_known_name_keeps_the_id_and_is_changed() -> None:
    known = member("a.txt", b"alpha")
    previous = record(known)

    planned = plan_upload(Upload("a.txt", b"beta"), known, {"a.txt": previous}, now=NOW)

    assert planned.diff == "changed" and planned.member.file_id == known.file_id
    assert planned.upload is not None and planned.previous == previous


def test_the_same_content_is_unchanged_and_not_stored_again() -> None:
    known = member("a.txt", b"alpha")

    planned = plan_upload(Upload("a.txt", b"alpha"), known, {"a.txt": record(known)}, now=NOW)

    assert planned.diff == "unchanged" and planned.upload is None and planned.member == known


@pytest.mark.parametrize(
    "stored",
    [
        pytest.param(None, id="the record was never written"),
        pytest.param("failed", id="processing failed"),
        pytest.param("other content", id="the record holds other content"),
    ],
)
def test_the_same_content_is_stored_again_when_its_earlier_upload_did_not_complete(stored: str | None) -> None:
    known = member("a.txt", b"alpha")
    records: Records = {}
    if stored == "failed":
        records = {"a.txt": record(known, status="failed")}
    elif stored == "other content":
        records = {"a.txt": record(known, data=b"older")}

    planned = plan_upload(Upload("a.txt", b"alpha"), known, records, now=NOW)

    assert planned.diff == "unchanged" and planned.upload is not None


def test_a_replacement_keeps_the_files_name_whatever_the_upload_is_called() -> None:
    known = member("a.txt", b"alpha")

    (planned,) = plan_replacement(known.file_id, Upload("renamed.txt", b"beta"))([known], {}, NOW)

    assert planned.member.filename == "a.txt" and planned.member.file_id == known.file_id
    assert planned.diff == "changed"


@pytest.mark.parametrize("plan", [plan_removal("doc-missing"), plan_replacement("doc-missing", Upload("a", b"x"))])
def test_removing_or_replacing_a_file_outside_the_set_is_file_not_found(plan: object) -> None:
    with pytest.raises(NotFound) as raised:
        plan([member("a.txt", b"alpha")], {}, NOW)  # type: ignore[operator]

    assert raised.value.code == "file_not_found"


# -- the commit ---------------------------------------------------------------------------------------------------


def test_a_change_moves_the_revision_and_counts_the_diff_in_the_banner() -> None:
    kept, changed = member("keep.txt", b"same"), member("edit.txt", b"old")
    records = {"keep.txt": record(kept), "edit.txt": record(changed)}
    uploads = [Upload("keep.txt", b"same"), Upload("edit.txt", b"new"), Upload("add.txt", b"added")]

    after, planned = commit(header(kept, changed, revision=4), records, uploads)

    assert [p.diff for p in planned] == ["unchanged", "changed", "new"]
    assert after.revision == 5 and after.updated_at == NOW
    assert after.last_change is not None and after.last_change.text == "+1 new, ~1 changed, −0 deleted"
    assert after.last_change.unchanged == 1
    assert [m.filename for m in after.files or ()] == ["keep.txt", "edit.txt", "add.txt"]


def test_uploading_only_unchanged_files_keeps_the_revision() -> None:
    kept = member("keep.txt", b"same")
    start = header(kept, revision=3)

    after, _ = commit(start, {"keep.txt": record(kept)}, [Upload("keep.txt", b"same")])

    assert after.revision == 3 and after.updated_at == start.updated_at
    assert after.last_change is not None and after.last_change.text == "no changes"


def test_a_change_marks_the_aggregate_parsing_only_when_digests_are_made() -> None:
    start = header(revision=1).model_copy(update={"aggregate": AggregateState(status="ready")})

    with_digests, _ = commit(start, {}, [Upload("a.txt", b"alpha")], digests=True)
    without, _ = commit(start, {}, [Upload("a.txt", b"alpha")], digests=False)

    assert with_digests.aggregate.status == "parsing" and with_digests.aggregate.updated_at == NOW
    assert without.aggregate.status == "ready"


def test_an_expected_revision_that_is_not_the_current_one_is_refused() -> None:
    with pytest.raises(PreconditionFailed) as raised:
        commit(header(revision=2), {}, [Upload("a.txt", b"alpha")], if_match=1)

    assert raised.value.code == "revision_mismatch"


def test_the_expected_revision_lets_the_mutation_through() -> None:
    after, _ = commit(header(revision=2), {}, [Upload("a.txt", b"alpha")], if_match=2)

    assert after.revision == 3


def test_a_set_may_not_grow_past_its_file_limit() -> None:
    full = [member(f"{n}.txt", str(n).encode()) for n in range(2)]

    with pytest.raises(InvalidInput) as raised:
        commit(header(*full), {}, [Upload("one-more.txt", b"x")], max_files=2)

    assert raised.value.code == "too_many_files"


def test_deleted_files_leave_changed_ones_stay_in_place_and_new_ones_append() -> None:
    first, second, third = member("1.txt", b"1"), member("2.txt", b"2"), member("3.txt", b"3")
    changed = second.model_copy(update={"content_hash": "new"})
    added = member("4.txt", b"4")
    planned = [
        PlannedFile(member=added, diff="new", upload=None, previous=None),
        PlannedFile(member=first, diff="deleted", upload=None, previous=None),
        PlannedFile(member=changed, diff="changed", upload=None, previous=None),
    ]

    after = apply_plan([first, second, third], planned)

    assert after == [changed, third, added]


def test_a_removal_counts_as_deleted_and_moves_the_revision() -> None:
    gone, kept = member("gone.txt", b"g"), member("kept.txt", b"k")

    after, planned = plan_commit(
        header(gone, kept, revision=7), {}, plan_removal(gone.file_id), now=NOW, max_files=10, digests=False
    )

    assert [p.diff for p in planned] == ["deleted"]
    assert after.revision == 8 and after.files == [kept]
    assert after.last_change is not None and after.last_change.deleted == 1


# -- digests and listing -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("digest_status", "expected"), [("ready", False), ("none", True), ("error", True)])
def test_an_unchanged_upload_retries_only_a_missing_or_failed_digest(digest_status: str, expected: bool) -> None:
    known = member("a.txt", b"alpha")
    planned = PlannedFile(
        member=known, diff="unchanged", upload=None, previous=record(known, digest_status=digest_status)
    )

    assert needs_digest(planned) is expected


def test_a_header_written_before_membership_was_kept_takes_it_from_the_records_in_upload_order() -> None:
    late, early = member("late.txt", b"l"), member("early.txt", b"e")
    records = {
        "late.txt": record(late).model_copy(update={"created_at": NOW}),
        "early.txt": record(early),
    }

    derived = header_of(SessionHeader(conversation_id="conv", files=None), "conv", records)
    fresh = header_of(None, "conv", {})

    assert [m.filename for m in derived.files or ()] == ["early.txt", "late.txt"]
    assert fresh.revision == 0 and fresh.files == []


def test_a_member_whose_record_holds_other_content_is_listed_as_uploading() -> None:
    known = member("a.txt", b"alpha")

    in_flight = listed_file(known, record(known, data=b"older"))
    stored = listed_file(known, record(known))

    assert in_flight.status == "uploading" and in_flight.content_hash == known.content_hash
    assert stored.status == "ready" and stored.uploaded_at == known.uploaded_at


def test_the_context_set_lists_the_headers_members_in_order_with_their_records() -> None:
    first, second = member("1.txt", b"1"), member("2.txt", b"2")
    at = header(first, second, revision=2)

    listed = context_set(at, [record(second), record(first)])

    assert listed.session_id == "conv" and listed.revision == 2
    assert [f.filename for f in listed.files] == ["1.txt", "2.txt"]
    assert listed.changes.revision == 2 and listed.changes.text == "no changes"
