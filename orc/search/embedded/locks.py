"""Exclusive file locks shared by every process on the machine (released by the OS if a process dies): one writer of
an organization's index at a time, and one process folding its vectors."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt
    import time

    def _lock(descriptor: int) -> None:
        while True:
            try:
                msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
                return
            except OSError:
                time.sleep(0.01)  # msvcrt has no blocking lock without a 10-second give-up

    def _unlock(descriptor: int) -> None:
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)

    def _try_lock(descriptor: int) -> bool:
        try:
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _lock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_EX)

    def _unlock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_UN)

    def _try_lock(descriptor: int) -> bool:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


@contextlib.contextmanager
def held(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the lock of the file at ``path`` (created when missing); with ``wait=False``, yield False at once
    instead of waiting when another process holds it."""
    with open(path, "a+b") as handle:
        if wait:
            _lock(handle.fileno())
        elif not _try_lock(handle.fileno()):
            yield False
            return
        try:
            yield True
        finally:
            _unlock(handle.fileno())
