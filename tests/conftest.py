"""Suite-wide fixtures: isolated embedded data per test, and no real model requests anywhere."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from orc.documents.intake import uploads
from orc.models.guard import forbid_model_requests

pytest_plugins = ["tests.emulators"]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own ORC_HOME (one variable isolates all embedded data) and a clean ORC_ environment."""
    for name in list(os.environ):
        if name.startswith("ORC_") or name.startswith("AZURE_OPENAI") or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "orc-home"
    monkeypatch.setenv("ORC_HOME", str(home))
    # Scripted models answer requests in order and tests count them: a background title request would take a
    # scripted reply. Titles have their own tests (tests/http/test_generated_titles.py), which switch them on.
    monkeypatch.setenv("ORC_GENERATED_TITLES", "false")
    # Extraction worker processes cost a second to start per runtime: tests parse in threads, except the tests of
    # the pool itself (tests/documents/test_extraction_pool.py), which ask for workers.
    monkeypatch.setenv("ORC_EXTRACTION_PROCESSES", "0")
    yield home


PROCESSING_DEADLINE_SECONDS = 120.0
"""How long an upload made in a test waits for its documents' processing (the product waits 3 s).

Tests read ``ready`` in an upload's response and ask about the document right after it: that holds when the
upload waits for the processing to finish, not when the machine is quick enough to finish it in 3 s (under a
load average of 10-30 on 2 cores it is not). The upload returns as soon as processing ends; this deadline only
bounds a document that never gets there. Tests of the ``processing`` answer hold processing at a gate and
upload with ``wait_seconds=0`` or in a task of their own."""


@pytest.fixture(autouse=True)
def _uploads_wait_for_processing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uploads, "UPLOAD_WAIT_SECONDS", PROCESSING_DEADLINE_SECONDS)


@pytest.fixture(autouse=True, scope="session")
def _no_real_model_requests() -> Iterator[None]:
    """Any model request to a non-loopback host fails the test that made it."""
    with forbid_model_requests():
        yield
