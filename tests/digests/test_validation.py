"""The §5 invariants: what a digest must be before it may be stored as ready."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from orc.digests.schema import (
    digest_hash,
    parse_json_object,
    relabel,
    source_refs,
    validate_aggregate,
    validate_per_file,
)

SPANS = ["S1", "S2", "S3"]


def per_file(**changes: Any) -> dict[str, Any]:
    digest: dict[str, Any] = {
        "schema_version": "context_digest.v1.4.1",
        "mode": "single",
        "document": {"filename": "lease.pdf", "format": "pdf"},
        "summary": "A lease.",
        "facts": [
            {"id": "F1", "claim": "The rent is 900 euros.", "sources": ["lease.pdf::S2"]},
            {"id": "F2", "claim": "Notice is 60 days.", "sources": ["lease.pdf::S3::clause 9"]},
        ],
        "uncertainties": [{"issue": "The deposit is blank.", "sources": ["lease.pdf::S1"]}],
    }
    digest.update(changes)
    return digest


def errors_of(digest: Any) -> list[str]:
    return validate_per_file(digest, filename="lease.pdf", fmt="pdf", span_ids=SPANS)


def test_a_digest_that_cites_given_spans_is_valid_with_or_without_a_hint() -> None:
    assert errors_of(per_file()) == []


@pytest.mark.parametrize("key", ["schema_version", "mode", "summary", "facts", "uncertainties", "document"])
def test_each_required_key_is_required(key: str) -> None:
    digest = per_file()
    del digest[key]

    assert errors_of(digest), key


def test_a_fact_without_sources_is_invalid() -> None:
    digest = per_file()
    digest["facts"][0]["sources"] = []
    digest["facts"][1].pop("sources")

    errors = errors_of(digest)

    assert any("facts[0].sources" in error for error in errors)
    assert any("facts[1].sources" in error for error in errors)


def test_a_source_ref_to_a_span_that_was_not_given_is_invalid() -> None:
    digest = per_file()
    digest["facts"][0]["sources"] = ["lease.pdf::S9"]

    (error,) = errors_of(digest)

    assert "S9" in error and "S1-S3" in error


def test_a_source_ref_to_another_file_or_malformed_is_invalid() -> None:
    digest = per_file()
    digest["facts"][0]["sources"] = ["other.pdf::S1"]
    digest["uncertainties"][0]["sources"] = ["S1", 7]

    assert len(errors_of(digest)) == 3


def test_the_mode_and_document_must_describe_the_file() -> None:
    assert errors_of(per_file(mode="batch")) == ['"mode" must be "single"']
    assert errors_of(per_file(document={"filename": "other.pdf", "format": "pdf"}))


def test_a_fact_needs_a_claim() -> None:
    digest = per_file()
    digest["facts"][0]["claim"] = " "

    assert errors_of(digest) == ["facts[0].claim is required and must be a non-empty string"]


def test_non_json_and_non_objects_are_refused_but_a_code_fence_is_tolerated() -> None:
    assert parse_json_object("Here is the digest: {")[0] is None
    assert parse_json_object("[1, 2]")[1] == "the answer must be one JSON object, not list"
    assert parse_json_object('```json\n{"a": 1}\n```') == ({"a": 1}, None)


def aggregate(**changes: Any) -> dict[str, Any]:
    digest: dict[str, Any] = {
        "schema_version": "context_digest.v1.4.1",
        "mode": "batch",
        "document": {"filename": "__BATCH__", "format": "mixed"},
        "batch": {"files": [{"filename": "lease.pdf", "format": "pdf"}, {"filename": "a.md", "format": "markdown"}]},
        "summary": "Two files.",
        "facts": [{"claim": "The rent is 900 euros.", "sources": ["lease.pdf::S2", "a.md::S1"]}],
        "uncertainties": [],
    }
    digest.update(changes)
    return digest


MANIFEST = [("lease.pdf", "pdf"), ("a.md", "markdown")]
ALLOWED = {"lease.pdf::S2", "lease.pdf::S3::clause 9", "a.md::S1"}


def test_an_aggregate_may_only_copy_sources_from_its_input_digests() -> None:
    assert validate_aggregate(aggregate(), files=MANIFEST, allowed_refs=ALLOWED) == []

    invented = aggregate(facts=[{"claim": "x", "sources": ["lease.pdf::S1"]}])
    unknown_file = aggregate(facts=[{"claim": "x", "sources": ["b.txt::S1"]}])

    assert "not cited by any input digest" in validate_aggregate(invented, files=MANIFEST, allowed_refs=ALLOWED)[0]
    assert "names no file" in validate_aggregate(unknown_file, files=MANIFEST, allowed_refs=ALLOWED)[0]


def test_an_aggregate_is_a_batch_of_exactly_the_manifest_files() -> None:
    wrong = aggregate(mode="single", document={"filename": "lease.pdf", "format": "pdf"}, batch={"files": []})

    errors = validate_aggregate(wrong, files=MANIFEST, allowed_refs=ALLOWED)

    assert len(errors) == 3


def test_relabelling_a_cached_digest_points_its_refs_at_the_new_name() -> None:
    original = per_file()
    before = copy.deepcopy(original)

    moved = relabel(original, old_filename="lease.pdf", new_filename="lease-2024.pdf", fmt="pdf")

    assert original == before  # the cached digest is not modified
    assert source_refs(moved) == {"lease-2024.pdf::S2", "lease-2024.pdf::S3::clause 9", "lease-2024.pdf::S1"}
    assert validate_per_file(moved, filename="lease-2024.pdf", fmt="pdf", span_ids=SPANS) == []
    assert digest_hash(moved) != digest_hash(original)
    assert relabel(original, old_filename="lease.pdf", new_filename="lease.pdf", fmt="pdf") is original
