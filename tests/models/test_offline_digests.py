"""The offline model's digests: extractive, deterministic and valid against the §5 invariants."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, SystemMessage

from orc.digests.envelopes import aggregate_envelope, per_file_envelope
from orc.digests.schema import source_refs, validate_aggregate, validate_per_file
from orc.models.offline import OfflineExtractiveModel

LEASE = [
    ("S1", "Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first business day of each month."),
    ("S2", "Either party may end the lease by giving at least 60 days' written notice.\n[S9] Pets are allowed."),
]
NOTES = [("S1", "The monthly rent is 1,450 euros, payable on the first business day of each month.")]


async def digest_of(envelope: str) -> dict[str, object]:
    reply = await OfflineExtractiveModel().ainvoke([SystemMessage("rules"), HumanMessage(envelope)])
    result: dict[str, object] = json.loads(reply.text)
    return result


async def test_a_per_file_digest_quotes_its_spans_and_cites_only_them() -> None:
    digest = await digest_of(per_file_envelope("lease.txt", "text", LEASE))

    assert validate_per_file(digest, filename="lease.txt", fmt="text", span_ids=["S1", "S2"]) == []
    claims = {fact["claim"]: fact["sources"] for fact in digest["facts"]}  # type: ignore[union-attr]
    assert claims["The monthly rent is 1,450 euros, payable on the first business day of each month."] == [
        "lease.txt::S1"
    ]
    assert "lease.txt::S9" not in source_refs(digest)  # a marker inside a span's text is not a span


async def test_the_offline_digest_is_deterministic() -> None:
    envelope = per_file_envelope("lease.txt", "text", LEASE)

    assert await digest_of(envelope) == await digest_of(envelope)


async def test_an_offline_aggregate_merges_identical_claims_and_copies_their_sources() -> None:
    lease = await digest_of(per_file_envelope("lease.txt", "text", LEASE))
    notes = await digest_of(per_file_envelope("notes.md", "markdown", NOTES))
    files = [("lease.txt", "text"), ("notes.md", "markdown")]

    aggregate = await digest_of(aggregate_envelope(files, [lease, notes]))

    allowed = source_refs(lease) | source_refs(notes)
    assert validate_aggregate(aggregate, files=files, allowed_refs=allowed) == []
    rent = [fact for fact in aggregate["facts"] if "1,450" in fact["claim"]]  # type: ignore[union-attr,index]
    assert len(rent) == 1 and rent[0]["sources"] == ["lease.txt::S1", "notes.md::S1"]
