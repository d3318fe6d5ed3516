"""Task A and Task B model calls: envelopes, one corrective retry, and errors instead of invalid digests."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from orc.digests.runner import DigestRunner
from orc.errors import ServiceUnavailable
from orc.models.offline import OfflineExtractiveModel
from orc.testing import ScriptedChatModel

SPANS = [("S1", "The monthly rent is 900 euros."), ("S2", "Notice is 60 days.")]


def valid(**changes: Any) -> dict[str, Any]:
    digest: dict[str, Any] = {
        "schema_version": "context_digest.v1.4.1",
        "mode": "single",
        "document": {"filename": "lease.txt", "format": "text"},
        "summary": "A lease.",
        "facts": [{"claim": "The monthly rent is 900 euros.", "sources": ["lease.txt::S1"]}],
        "uncertainties": [],
    }
    digest.update(changes)
    return digest


async def test_task_a_shows_one_files_spans_in_the_spec_envelope_under_the_prompt_files() -> None:
    model = ScriptedChatModel([json.dumps(valid())])

    outcome = await DigestRunner(model).per_file("lease.txt", "text", SPANS)

    assert outcome.error is None and outcome.digest == valid() and outcome.prompt_version == "v1.4"
    system, human = model.requests[0].messages
    assert isinstance(system, SystemMessage) and "PER_FILE_DIGEST" in system.text and "Deduplication" in system.text
    assert isinstance(human, HumanMessage)
    assert human.text.splitlines() == [
        "TASK: PER_FILE_DIGEST",
        "FILE: lease.txt",
        "FORMAT: text",
        "SOURCE_SPANS:",
        "[S1] The monthly rent is 900 euros.",
        "[S2] Notice is 60 days.",
        "END_FILE",
    ]


async def test_an_invalid_digest_is_sent_back_once_with_the_broken_rules() -> None:
    bad = valid(facts=[{"claim": "Rent.", "sources": ["lease.txt::S7"]}])
    model = ScriptedChatModel([json.dumps(bad), json.dumps(valid())])
    runner = DigestRunner(model)

    outcome = await runner.per_file("lease.txt", "text", SPANS)

    assert outcome.digest == valid() and outcome.calls == 2
    retry = model.requests[1].messages
    assert retry[2].text == json.dumps(bad) and "S7" in retry[3].text and "S1-S2" in retry[3].text
    assert runner.stats.per_file.calls == 2 and runner.stats.aggregate.calls == 0


async def test_two_invalid_answers_end_in_an_error_with_the_reason_and_no_digest() -> None:
    model = ScriptedChatModel(["Sure! Here is your digest.", json.dumps(valid(facts=[{"claim": "x"}]))])

    outcome = await DigestRunner(model).per_file("lease.txt", "text", SPANS)

    assert outcome.digest is None and outcome.calls == 2
    assert outcome.error is not None and "facts[0].sources" in outcome.error


async def test_a_failing_model_is_an_error_without_a_retry() -> None:
    model = ScriptedChatModel([ServiceUnavailable("the model is overloaded")])

    outcome = await DigestRunner(model).per_file("lease.txt", "text", SPANS)

    assert outcome.digest is None and outcome.calls == 1
    assert outcome.error == "the model could not make the digest: the model is overloaded"


async def test_task_b_sees_the_manifest_and_digests_never_the_spans() -> None:
    first = valid()
    second = valid(
        document={"filename": "b.md", "format": "markdown"},
        facts=[{"claim": "Pets are allowed.", "sources": ["b.md::S1"]}],
    )
    model = OfflineExtractiveModel()
    runner = DigestRunner(model)

    outcome = await runner.aggregate(
        [("lease.txt", "text"), ("b.md", "markdown")], [first, second], {"lease.txt::S1", "b.md::S1"}
    )

    assert outcome.error is None and outcome.digest is not None
    assert outcome.digest["mode"] == "batch" and [f["filename"] for f in outcome.digest["batch"]["files"]] == [
        "lease.txt",
        "b.md",
    ]
    assert runner.stats.aggregate.calls == 1 and runner.stats.aggregate.usage.total_tokens > 0


async def test_the_task_b_envelope_holds_one_digest_json_per_line() -> None:
    model = ScriptedChatModel(["not json", "still not json"])

    outcome = await DigestRunner(model).aggregate([("lease.txt", "text")], [valid()], {"lease.txt::S1"})

    envelope = model.requests[0].messages[1].text
    assert outcome.digest is None
    assert "SOURCE_SPANS" not in envelope and "[S1]" not in envelope
    lines = envelope.splitlines()
    assert lines[:4] == ["TASK: AGGREGATE_DIGEST", "MANIFEST:", "- filename: lease.txt", "  format: text"]
    assert json.loads(lines[lines.index("FILE_DIGESTS:") + 1]) == valid() and lines[-1] == "END_FILE_DIGESTS"
