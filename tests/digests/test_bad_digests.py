"""Malformed digests from the model never reach storage as ``ready``: one corrective retry, then ``error``."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from langchain_core.messages import BaseMessage

from orc.composition import Stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from tests.digests.support import digest_model, offline_answer, task_a_files, task_of

GOOD = Upload("good.txt", b"The monthly rent is 1,450 euros, payable on the first day of each month.")
BAD = Upload("bad.txt", b"The deposit is 2,900 euros and is returned within 30 days.")


def broken(change: Callable[[dict[str, object]], object]) -> Callable[[list[BaseMessage]], str]:
    """Answer like the offline model, except that bad.txt's digest is passed through ``change``."""

    def answer(messages: list[BaseMessage]) -> str:
        reply = offline_answer(messages)
        if task_of(messages) != ("A", "bad.txt"):
            return reply
        changed = change(json.loads(reply))
        return changed if isinstance(changed, str) else json.dumps(changed)

    return answer


def without(key: str) -> Callable[[dict[str, object]], object]:
    return lambda digest: {k: v for k, v in digest.items() if k != key}


def fact_without_sources(digest: dict[str, object]) -> object:
    digest["facts"] = [{"claim": "The deposit is 2,900 euros."}]
    return digest


def missing_span(digest: dict[str, object]) -> object:
    digest["facts"] = [{"claim": "The deposit is 2,900 euros.", "sources": ["bad.txt::S42"]}]
    return digest


MALFORMED = {
    "missing facts": without("facts"),
    "missing summary": without("summary"),
    "missing schema_version": without("schema_version"),
    "a fact without sources": fact_without_sources,
    "a SourceRef to a missing span": missing_span,
    "non-JSON": lambda digest: "Here is the digest you asked for: the deposit is 2,900 euros.",
}


@pytest.mark.parametrize("malformed", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_digest_is_retried_once_then_the_file_is_error_and_nothing_is_stored_as_ready(
    malformed: Callable[[dict[str, object]], object],
) -> None:
    model = digest_model(broken(malformed))
    collections = MemoryCollectionProvider()
    stores = Stores(collections=collections, blobs=MemoryBlobStore())
    async with build_runtime(Settings(), stores=stores, digest_model=model) as runtime:
        context = runtime.documents.context_files
        assert context is not None
        await runtime.foundation.session_files.add(LOCAL_PRINCIPAL, "s", [GOOD, BAD])
        assert await runtime.documents.digests.wait_idle(LOCAL_PRINCIPAL, "s", 120)
        manifest = await context.manifest(LOCAL_PRINCIPAL, "s")
        _, aggregate = await context.aggregate(LOCAL_PRINCIPAL, "s")
        stored = await (await collections.collection("digests")).query(LOCAL_PRINCIPAL.partition_key)

    status = {f.filename: (f.digest_status, f.digest_error, f.digest_ref) for f in manifest.files}
    assert status["good.txt"][0] == "ready"
    assert status["bad.txt"][0] == "error" and status["bad.txt"][2] is None
    assert "broke the digest rules twice" in str(status["bad.txt"][1])
    assert task_a_files(model).count("bad.txt") == 2  # the answer and one retry with the broken rules
    stored_files = {item.body.get("filename") for item in stored if item.body.get("kind") == "file_digest"}
    assert stored_files == {"good.txt"}
    # The aggregate is made from the valid digests only.
    assert manifest.aggregate_digest_status == "ready"
    assert [f["filename"] for f in aggregate["batch"]["files"]] == ["good.txt"]


async def test_a_digest_fixed_on_the_retry_is_ready() -> None:
    attempts: list[int] = []

    def first_without_sources(messages: list[BaseMessage]) -> str:
        reply = offline_answer(messages)
        if task_of(messages)[0] == "A" and not attempts:
            attempts.append(1)
            digest = json.loads(reply)
            digest["facts"][0]["sources"] = []
            return json.dumps(digest)
        return reply

    model = digest_model(first_without_sources)
    async with build_runtime(Settings(), stores=_memory(), digest_model=model) as runtime:
        context = runtime.documents.context_files
        assert context is not None
        await runtime.foundation.session_files.add(LOCAL_PRINCIPAL, "s", [GOOD])
        assert await runtime.documents.digests.wait_idle(LOCAL_PRINCIPAL, "s", 120)
        manifest = await context.manifest(LOCAL_PRINCIPAL, "s")

    retry = model.requests[1].messages
    assert "facts[0].sources must be a non-empty array" in retry[-1].text
    assert manifest.files[0].digest_status == "ready" and task_a_files(model) == ["good.txt", "good.txt"]


async def test_a_file_whose_text_cannot_be_extracted_gets_a_digest_error_and_no_model_call() -> None:
    model = digest_model()
    async with build_runtime(Settings(), stores=_memory(), digest_model=model) as runtime:
        context = runtime.documents.context_files
        assert context is not None
        await runtime.foundation.session_files.add(
            LOCAL_PRINCIPAL, "s", [Upload("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >>")]
        )
        assert await runtime.documents.digests.wait_idle(LOCAL_PRINCIPAL, "s", 120)
        manifest = await context.manifest(LOCAL_PRINCIPAL, "s")

    (record,) = manifest.files
    assert record.status == "failed" and record.digest_status == "error"
    assert str(record.digest_error).startswith("no digest: the text could not be extracted")
    assert task_a_files(model) == []


def _memory() -> Stores:
    return Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())
