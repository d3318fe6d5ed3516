"""What the local-folder blob store promises beyond the port: plain files, confinement to its root, safety."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orc.errors import ETagMismatch, ItemAlreadyExists
from orc.storage.localfs import LocalBlobStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "blobs"


@pytest.fixture
def store(root: Path) -> LocalBlobStore:
    return LocalBlobStore(root)


async def test_blobs_are_plain_files_at_their_names(store: LocalBlobStore, root: Path) -> None:
    await store.put("org/user/conv/notes.txt", b"hello")

    assert (root / "org" / "user" / "conv" / "notes.txt").read_bytes() == b"hello"


@pytest.mark.parametrize(
    "name",
    ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "a/./b", "a//b", "a\\b", "nul\x00byte", "a/.."],
)
async def test_names_that_could_leave_the_root_are_refused(
    store: LocalBlobStore, root: Path, tmp_path: Path, name: str
) -> None:
    with pytest.raises(ValueError):
        await store.put(name, b"x")
    with pytest.raises(ValueError):
        await store.get(name)
    with pytest.raises(ValueError):
        await store.delete(name)

    assert not (tmp_path / "outside.txt").exists()


async def test_a_symlink_that_points_outside_the_root_is_not_followed(
    store: LocalBlobStore, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret")
    await store.put("org/placeholder", b"x")
    (root / "org" / "link").symlink_to(outside, target_is_directory=True)

    with pytest.raises(ValueError):
        await store.get("org/link/secret.txt")
    with pytest.raises(ValueError):
        await store.put("org/link/new.txt", b"x")
    assert [info.name for info in await store.list("org/")] == ["org/placeholder"]
    assert not (outside / "new.txt").exists()


async def test_the_metadata_folder_is_reserved_and_never_listed(store: LocalBlobStore, root: Path) -> None:
    await store.put("a.txt", b"x", metadata={"k": "v"})

    with pytest.raises(ValueError):
        await store.put(".meta/blobs/a.txt", b"{}")
    assert (root / ".meta").is_dir()
    assert [info.name for info in await store.list("")] == ["a.txt"]
    assert await store.list(".meta") == []


async def test_no_temporary_files_are_left_behind(store: LocalBlobStore, root: Path) -> None:
    for i in range(3):
        await store.put("a/b.txt", str(i).encode())
    await store.delete("a/b.txt")

    assert list((root / ".meta" / "tmp").iterdir()) == []


async def test_deleting_the_last_blob_of_a_folder_removes_the_empty_folders(store: LocalBlobStore, root: Path) -> None:
    await store.put("org/user/conv/a.txt", b"x")
    await store.put("org/keep.txt", b"x")

    await store.delete("org/user/conv/a.txt")

    assert not (root / "org" / "user").exists()
    assert (root / "org" / "keep.txt").is_file()


async def test_a_file_changed_behind_the_stores_back_gets_a_new_etag(store: LocalBlobStore, root: Path) -> None:
    put = await store.put("a.txt", b"original", content_type="text/plain")
    # Another process (or a crash between the data and sidecar renames) replaces the bytes only.
    replacement = root / "replacement"
    replacement.write_bytes(b"changed elsewhere")
    os.replace(replacement, root / "a.txt")

    data, info = await store.get("a.txt")

    assert data == b"changed elsewhere"
    assert info.etag != put.etag
    with pytest.raises(ETagMismatch):
        await store.put("a.txt", b"overwrite", if_match=put.etag)
    assert (await store.put("a.txt", b"overwrite", if_match=info.etag)).size == len(b"overwrite")


async def test_a_file_dropped_into_the_folder_is_a_blob(store: LocalBlobStore, root: Path) -> None:
    await store.put("org/a.txt", b"x")
    (root / "org" / "dropped.txt").write_bytes(b"by hand")

    data, info = await store.get("org/dropped.txt")

    assert data == b"by hand"
    assert info.content_type == "application/octet-stream" and info.etag
    assert [i.name for i in await store.list("org/")] == ["org/a.txt", "org/dropped.txt"]


async def test_a_name_cannot_be_both_a_blob_and_a_folder(store: LocalBlobStore) -> None:
    await store.put("a/b", b"x")
    await store.put("c", b"x")

    with pytest.raises(ItemAlreadyExists):
        await store.put("a", b"folder already there")
    with pytest.raises(ItemAlreadyExists):
        await store.put("c/d", b"file already there")
    assert await store.head("a") is None
