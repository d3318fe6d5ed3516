"""The embedded blob backend: blobs as plain files under a root folder.

Layout under ``root``::

    <name>                      the blob's bytes, at its own name (the folder stays browsable)
    .meta/blobs/<name>          sidecar JSON: etag, content type, metadata, and which file version it describes
    .meta/tmp/                  temporary files, renamed into place (same file system, so renames are atomic)

Why it looks like this:

- Every write goes to a temporary file first and is renamed over the target with :func:`os.replace`, so a
  reader sees the old or the new bytes, never a mix.
- The sidecar mirrors the blob's path, so sidecar paths collide exactly when blob paths do.
- The sidecar records the inode, size and mtime of the data file it describes. If they do not match (a
  crash between the two renames, or a writer in another process) the ETag is derived from the file itself
  instead: it then matches no ETag ever handed out, so a conditional write fails safely rather than
  overwriting bytes the caller has not seen.
- Conditional writes are serialized per name with an :class:`asyncio.Lock` (race-safe within one process);
  all file I/O runs in worker threads so the event loop never blocks.
- A blob cannot be both a file and a folder (``a`` and ``a/b``): writing the second raises
  :class:`ItemAlreadyExists`, which Azure Blob Storage would have allowed.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import json
import os
import stat
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound, StorageUnavailable
from orc.storage._common import check_blob_name, check_metadata, check_put_conditions, new_etag
from orc.storage.ports import BlobInfo

__all__ = ["LocalBlobStore"]

T = TypeVar("T")

META_DIR = ".meta"
_DEFAULT_CONTENT_TYPE = "application/octet-stream"
_REPLACE_ATTEMPTS = 5


class LocalBlobStore:
    """A :class:`~orc.storage.ports.BlobStore` that keeps blobs as files under ``root``.

    The folder is created on first use. Names whose path would leave ``root`` (``..``, absolute paths,
    symlinks pointing outside) or enter the hidden ``.meta`` folder are refused with :class:`ValueError`,
    even though callers validate names already.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._resolved_root: Path | None = None
        # Weak values: a lock lives while some coroutine holds it, so the table does not grow forever.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    # -- public API ------------------------------------------------------------------------------------------

    async def put(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str = _DEFAULT_CONTENT_TYPE,
        metadata: Mapping[str, str] | None = None,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> BlobInfo:
        check_blob_name(name)
        check_put_conditions(if_match, if_none_match)
        clean_metadata = check_metadata(metadata)
        payload = bytes(data)
        async with self._lock(name):
            return await _off_loop(self._put_sync, name, payload, content_type, clean_metadata, if_match, if_none_match)

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        check_blob_name(name)
        return await _read_off_loop(self._get_sync, name)

    async def head(self, name: str) -> BlobInfo | None:
        check_blob_name(name)
        return await _read_off_loop(self._head_sync, name)

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        if not isinstance(prefix, str):
            raise TypeError("prefix is a string")
        return await _read_off_loop(self._list_sync, prefix)

    async def delete(self, name: str) -> bool:
        check_blob_name(name)
        async with self._lock(name):
            return await _off_loop(self._delete_sync, name)

    async def aclose(self) -> None:
        """Nothing to release: no file stays open between calls."""

    # -- paths ----------------------------------------------------------------------------------------------

    def _lock(self, name: str) -> asyncio.Lock:
        lock = self._locks.get(name)
        if lock is None:
            lock = self._locks[name] = asyncio.Lock()
        return lock

    def _root(self) -> Path:
        root = self._resolved_root
        if root is None:
            root = self.root.resolve()
            (root / META_DIR / "blobs").mkdir(parents=True, exist_ok=True)
            (root / META_DIR / "tmp").mkdir(parents=True, exist_ok=True)
            self._resolved_root = root
        return root

    def _paths(self, name: str) -> tuple[Path, Path]:
        """The data file and sidecar of ``name``; :class:`ValueError` if the name could leave the store."""
        root = self._root()
        segments = name.split("/")
        if "\x00" in name or "\\" in name or any(s in ("", ".", "..") for s in segments):
            raise ValueError("blob name is not a plain relative path")
        if segments[0] == META_DIR:
            raise ValueError(f"blob names must not start with the reserved folder {META_DIR!r}")
        data_path = root.joinpath(*segments)
        # resolve() follows symlinks: a link inside root that points elsewhere is refused too.
        if not data_path.resolve().is_relative_to(root) or data_path.resolve() == root:
            raise ValueError("blob name resolves outside the store")
        return data_path, root.joinpath(META_DIR, "blobs", *segments)

    def _temp_path(self) -> Path:
        return self._root() / META_DIR / "tmp" / uuid.uuid4().hex

    # -- blocking implementations (run in worker threads) ---------------------------------------------------

    def _put_sync(
        self,
        name: str,
        payload: bytes,
        content_type: str,
        metadata: dict[str, str],
        if_match: str | None,
        if_none_match: bool,
    ) -> BlobInfo:
        data_path, meta_path = self._paths(name)
        current = self._info(name, data_path, meta_path)
        if if_none_match and current is not None:
            raise ItemAlreadyExists(f"blob {name!r} already exists")
        if if_match is not None:
            if current is None:
                raise ItemNotFound(f"blob {name!r} does not exist")
            if current.etag != if_match:
                raise ETagMismatch(f"blob {name!r} has changed")

        temp = self._temp_path()
        try:
            with temp.open("wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            written = os.stat(temp)
            now = datetime.now(UTC)
            sidecar = {
                "etag": new_etag(),
                "content_type": content_type,
                "metadata": metadata,
                "last_modified": now.isoformat(),
                "file": _fingerprint(written),
            }
            _replace_into(temp, data_path, name)
        finally:
            temp.unlink(missing_ok=True)
        self._write_sidecar(meta_path, sidecar, name)
        return BlobInfo(
            name=name,
            size=written.st_size,
            etag=str(sidecar["etag"]),
            content_type=content_type,
            last_modified=now,
            metadata=dict(metadata),
        )

    def _write_sidecar(self, meta_path: Path, sidecar: dict[str, Any], name: str) -> None:
        temp = self._temp_path()
        try:
            temp.write_text(json.dumps(sidecar, ensure_ascii=False), encoding="utf-8")
            _replace_into(temp, meta_path, name)
        finally:
            temp.unlink(missing_ok=True)

    def _get_sync(self, name: str) -> tuple[bytes, BlobInfo]:
        data_path, meta_path = self._paths(name)
        try:
            with data_path.open("rb") as handle:
                # fstat of the open handle: the bytes and the fingerprint belong to the same file version.
                status = os.fstat(handle.fileno())
                if not stat.S_ISREG(status.st_mode):
                    raise ItemNotFound(f"blob {name!r} does not exist")
                payload = handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ItemNotFound(f"blob {name!r} does not exist") from None
        return payload, _describe(name, status, meta_path)

    def _head_sync(self, name: str) -> BlobInfo | None:
        data_path, meta_path = self._paths(name)
        return self._info(name, data_path, meta_path)

    def _info(self, name: str, data_path: Path, meta_path: Path) -> BlobInfo | None:
        try:
            status = os.stat(data_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(status.st_mode):
            return None
        return _describe(name, status, meta_path)

    def _list_sync(self, prefix: str) -> Sequence[BlobInfo]:
        root = self._root()
        folder = prefix.rpartition("/")[0]
        # Walk only the deepest folder the prefix names, not the whole store.
        start = root.joinpath(*folder.split("/")) if folder else root
        if folder and not start.resolve().is_relative_to(root):
            raise ValueError("prefix resolves outside the store")
        # Plain strings and os.scandir rather than pathlib: listing is on every warm turn's path, and making Path
        # objects would be most of its cost.
        sidecars = os.path.join(root, META_DIR, "blobs")
        found: builtins.list[BlobInfo] = []
        pending = [(str(start), folder)]
        while pending:
            directory, relative = pending.pop()
            try:
                entries = builtins.list(os.scandir(directory))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                name = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if not (relative == "" and entry.name == META_DIR):
                        pending.append((entry.path, name))
                elif name.startswith(prefix) and entry.is_file(follow_symlinks=False):
                    # Symlinks and special files are never blobs.
                    found.append(_describe(name, entry.stat(follow_symlinks=False), os.path.join(sidecars, name)))
        found.sort(key=lambda info: info.name)
        return found

    def _delete_sync(self, name: str) -> bool:
        data_path, meta_path = self._paths(name)
        if self._info(name, data_path, meta_path) is None:
            return False
        # Sidecar first: if we stop half-way, the file is left without a sidecar (derived ETag, still safe),
        # never a stale sidecar that a new file with a recycled inode could be mistaken for.
        meta_path.unlink(missing_ok=True)
        try:
            data_path.unlink()
        except FileNotFoundError:
            return False
        root = self._root()
        _prune_empty_folders(data_path.parent, root)
        _prune_empty_folders(meta_path.parent, root / META_DIR / "blobs")
        return True


def _fingerprint(status: os.stat_result) -> dict[str, int]:
    return {"ino": status.st_ino, "size": status.st_size, "mtime_ns": status.st_mtime_ns}


def _describe(name: str, status: os.stat_result, meta_path: Path | str) -> BlobInfo:
    """The blob's info: from its sidecar when the sidecar describes this very file, else derived from it."""
    sidecar: dict[str, Any] | None
    try:
        with open(meta_path, encoding="utf-8") as sidecar_file:
            sidecar = json.loads(sidecar_file.read())
    except (OSError, ValueError):
        sidecar = None
    if isinstance(sidecar, dict) and sidecar.get("file") == _fingerprint(status):
        return BlobInfo(
            name=name,
            size=status.st_size,
            etag=str(sidecar["etag"]),
            content_type=str(sidecar.get("content_type") or _DEFAULT_CONTENT_TYPE),
            last_modified=datetime.fromisoformat(str(sidecar["last_modified"])),
            metadata={str(k): str(v) for k, v in dict(sidecar.get("metadata") or {}).items()},
        )
    return BlobInfo(
        name=name,
        size=status.st_size,
        etag=f"fs-{status.st_ino:x}-{status.st_mtime_ns:x}-{status.st_size:x}",
        content_type=_DEFAULT_CONTENT_TYPE,
        last_modified=datetime.fromtimestamp(status.st_mtime, UTC),
        metadata={},
    )


def _replace_into(source: Path, target: Path, name: str) -> None:
    """Rename ``source`` over ``target``, creating folders; a concurrent prune may remove them, so retry."""
    for attempt in range(_REPLACE_ATTEMPTS):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            return
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            raise ItemAlreadyExists(f"blob {name!r} collides with an existing blob or folder") from None
        except FileNotFoundError:
            if attempt == _REPLACE_ATTEMPTS - 1:
                raise


def _prune_empty_folders(folder: Path, stop: Path) -> None:
    """Remove now-empty folders from ``folder`` up to (not including) ``stop``."""
    while folder != stop and folder.is_relative_to(stop):
        try:
            folder.rmdir()
        except OSError:
            return  # not empty (or already gone): either way, stop climbing
        folder = folder.parent


_UNUSABLE = "the local blob folder is not usable; check its disk space and permissions"


async def _read_off_loop(function: Callable[..., T], *args: Any) -> T:
    """Run a blocking read in a worker thread; unexpected OS failures become :class:`StorageUnavailable`.

    Straight to the executor: a cancelled read may finish in its thread unobserved, which harms nothing, so it
    needs neither the task nor the shield that :func:`_off_loop` pays for on every write.
    """
    try:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(function, *args))
    except OSError as exc:
        raise StorageUnavailable(_UNUSABLE) from exc


async def _off_loop(function: Callable[..., T], *args: Any) -> T:
    """Run blocking file I/O (a write) in a worker thread; unexpected OS failures become
    :class:`StorageUnavailable`."""
    future = asyncio.ensure_future(asyncio.to_thread(function, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        # A worker thread cannot be interrupted. Wait for it before giving up the caller's per-name lock, so
        # a cancelled write never overlaps the next write of the same name.
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({future})
        if not future.cancelled():
            future.exception()  # retrieved: the caller was cancelled and will not see it
        raise
    except OSError as exc:
        raise StorageUnavailable(_UNUSABLE) from exc
