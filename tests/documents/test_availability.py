"""The availability model over the whole tree: what each focus makes available, with origins (table-driven)."""

from __future__ import annotations

import pytest

from orc.documents.catalog.availability import DocumentScope
from orc.documents.catalog.contexts import derive_contexts, historical_contexts
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextNode, ContextRef
from tests.documents.library_support import ACME, SESSION, build_tree, library_of, open_runtime

ALL_CONTEXT_FILES = {"acme.txt", "f1.txt", "f2.txt", "u11.txt", "u12.txt", "u21.txt"}


@pytest.mark.parametrize(
    ("focus", "expected"),
    [
        (None, {"session.txt"}),
        (("usecase", "u11"), {"session.txt", "u11.txt", "f1.txt", "acme.txt"}),
        (("usecase", "u12"), {"session.txt", "u12.txt", "f1.txt", "acme.txt"}),
        (("usecase", "u21"), {"session.txt", "u21.txt", "f2.txt", "acme.txt"}),
        (("folder", "f1"), {"session.txt", "f1.txt", "acme.txt", "u11.txt", "u12.txt"}),
        (("folder", "f2"), {"session.txt", "f2.txt", "acme.txt", "u21.txt"}),
        (("organization", "acme"), {"session.txt"} | ALL_CONTEXT_FILES),
    ],
)
async def test_each_focus_makes_exactly_its_derived_documents_available(
    focus: tuple[str, str] | None, expected: set[str]
) -> None:
    async with open_runtime() as runtime:
        library = library_of(runtime)
        await build_tree(runtime.foundation)
        scope = await runtime.foundation.scopes.resolve(
            ACME,
            session_id=SESSION,
            context_type=focus[0] if focus else None,
            context_id=focus[1] if focus else None,
        )
        listed = await library.list_documents(ACME, scope)

    assert {doc.filename for doc in listed.documents} == expected
    assert listed.documents[0].filename == "session.txt"  # session documents come first
    assert all(doc.status == "ready" for doc in listed.documents)


async def test_every_document_reports_its_origin_context() -> None:
    async with open_runtime() as runtime:
        library = library_of(runtime)
        await build_tree(runtime.foundation)
        scope = await runtime.foundation.scopes.resolve(
            ACME, session_id=SESSION, context_type="usecase", context_id="u11"
        )
        listed = await library.list_documents(ACME, scope)

    origins = {doc.filename: (doc.context_type, doc.context_id, doc.origin) for doc in listed.documents}
    assert origins == {
        "session.txt": ("session", SESSION, "session"),
        "u11.txt": ("usecase", "u11", "focus"),
        "f1.txt": ("folder", "f1", "focus"),
        "acme.txt": ("organization", "acme", "focus"),
    }


async def test_historical_contexts_add_their_documents_only_when_asked() -> None:
    async with open_runtime() as runtime:
        await build_tree(runtime.foundation)
        without = await runtime.foundation.scopes.available(
            ACME,
            await runtime.foundation.scopes.resolve(ACME, session_id=SESSION, context_type="usecase", context_id="u21"),
        )
        scope = DocumentScope(
            session_id=SESSION,
            focus=ContextRef("usecase", "u21"),
            historical=(ContextRef("usecase", "u11"),),
            include_historical=True,
        )
        with_history = await runtime.foundation.scopes.available(ACME, scope)

    assert {d.info.filename for d in without.documents} == {"session.txt", "u21.txt", "f2.txt", "acme.txt"}
    by_name = {d.info.filename: d.info.origin for d in with_history.documents}
    assert by_name == {
        "session.txt": "session",
        "u21.txt": "focus",
        "f2.txt": "focus",
        "acme.txt": "focus",
        "u11.txt": "historical",
        "f1.txt": "historical",
    }
    assert with_history.historical_contexts == (ContextRef("usecase", "u11"), ContextRef("folder", "f1"))


def test_derivation_follows_the_tree_and_ignores_unknown_foci() -> None:
    org = ContextRef("organization", "acme")
    f1, u1 = ContextRef("folder", "f1"), ContextRef("usecase", "u1")
    nodes = {
        org: ContextNode(type="organization", id="acme", name="Acme"),
        f1: ContextNode(type="folder", id="f1", name="F1", parent_type="organization", parent_id="acme"),
        u1: ContextNode(type="usecase", id="u1", name="U1", parent_type="folder", parent_id="f1"),
    }

    assert derive_contexts(nodes, u1) == [u1, f1, org]
    assert derive_contexts(nodes, f1) == [f1, org, u1]
    assert derive_contexts(nodes, org) == [org, f1, u1]
    assert derive_contexts(nodes, ContextRef("folder", "nope")) == []


def test_historical_contexts_keep_first_use_order_without_repeats_or_the_focus() -> None:
    a, b, c = ContextRef("folder", "a"), ContextRef("usecase", "b"), ContextRef("organization", "c")

    assert historical_contexts([a, None, b, a, c, b], focus=c) == [a, b]


async def test_a_document_filed_in_two_contexts_is_available_and_found_once() -> None:
    policy = b"Contracts above 10,000 euros need two signatures."
    async with open_runtime() as runtime:
        library = library_of(runtime)
        await build_tree(runtime.foundation)
        for ref in (ContextRef("folder", "f1"), ContextRef("usecase", "u11")):
            await runtime.foundation.context_documents.add(ACME, ref, [Upload("policy.txt", policy)])
        scope = await runtime.foundation.scopes.resolve(
            ACME, session_id=SESSION, context_type="usecase", context_id="u11"
        )
        listed = await library.list_documents(ACME, scope)
        found = await library.search(ACME, scope, "How many signatures do contracts above 10,000 euros need?")

    assert [doc.filename for doc in listed.documents].count("policy.txt") == 1
    hits = [hit for hit in found.results if hit.filename == "policy.txt"]
    assert len(hits) == 1 and hits[0].ref == "policy.txt::S1"  # one copy: no "(usecase u11)" disambiguation
