"""Extraction in worker processes under a memory cap (issue 14 §1): a PDF bomb fails in a worker, the serving
process's memory does not grow, and the next document is parsed as usual."""

from __future__ import annotations

import asyncio
import io
import multiprocessing
import os
import resource
import zlib
from pathlib import Path

import pytest
from asgi_lifespan import LifespanManager

from orc.composition import build_runtime, extraction_limits
from orc.documents.intake.uploads import Upload
from orc.documents.parsing.extraction_pool import IN_PROCESS_MAX_BYTES, ExtractionPool, parses_in_process
from orc.documents.records import ContextRef
from orc.errors import ExtractionError
from orc.http import create_app
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from tests.serving import services_of

INFLATED_BYTES = 400 * 1024 * 1024

LIMITS = extraction_limits()


def pdf_bomb() -> bytes:
    """A 1.2 MB PDF whose one page content stream inflates to 400 MB of text operators."""
    operators = b"BT /F1 12 Tf 72 712 Td (A) Tj ET\n" * 32_768  # 1 MiB, compressed piece by piece
    compressor = zlib.compressobj(9)
    stream = b"".join(compressor.compress(operators) for _ in range(INFLATED_BYTES // len(operators)))
    stream += compressor.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_a_pdf_bomb_fails_in_a_worker_and_the_serving_process_does_not_grow(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path / "home",
        model="offline",
        storage="embedded",
        auth="none",
        extraction_processes=1,
        extraction_memory_mb=512,
    )
    bomb = pdf_bomb()
    async with build_runtime(settings) as services:
        folder = ContextRef("folder", "legal")
        await services.foundation.directory.put(LOCAL_PRINCIPAL, folder, "Legal", None)
        library = services.foundation.context_documents
        # The worker starts with the first document it gets (a second or two): not part of what is measured.
        # Small plain text is parsed in this process, so the warm-up is a text over that size.
        warm_text = b"Warm up. " * (IN_PROCESS_MAX_BYTES // 8)
        (warm,) = await library.add(LOCAL_PRINCIPAL, folder, [Upload("warm.txt", warm_text)], wait_seconds=60)
        before = peak_rss_mb()

        (bombed,) = await library.add(LOCAL_PRINCIPAL, folder, [Upload("bomb.pdf", bomb)], wait_seconds=60)
        grown = peak_rss_mb() - before
        (after,) = await library.add(
            LOCAL_PRINCIPAL, folder, [Upload("after.txt", b"The rent is 900 euros.")], wait_seconds=60
        )

    assert len(bomb) < 2 * 1024 * 1024
    assert warm.record.status == "ready"
    assert bombed.record.status == "failed" and bombed.record.status_reason
    assert grown < 100, f"the serving process grew by {grown:.0f} MB"
    assert after.record.status == "ready"


def worker_that_cannot_start(memory_bytes: int) -> None:
    """An extraction worker's initializer that fails, as a worker of an unguarded program's ``__main__`` does."""
    raise SystemExit(f"cannot start (cap {memory_bytes})")


async def test_when_the_workers_cannot_start_documents_are_still_parsed_in_threads_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = ExtractionPool(1, 512 << 20, limits=LIMITS, deadline_seconds=60, initializer=worker_that_cannot_start)
    text = b"The rent is 900 euros. " * (IN_PROCESS_MAX_BYTES // 20)  # over the in-process size: for a worker
    try:
        extracted = await pool.extract(text, "lease.txt", "text/plain")
    finally:
        await pool.aclose()

    assert extracted.pages[0].startswith("The rent is 900 euros.")
    assert pool.in_threads
    assert "could not start" in caplog.text


async def test_small_plain_text_is_parsed_in_this_process_without_starting_a_worker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A worker that cannot start would log a warning and switch the pool to threads if anything were sent to it.
    pool = ExtractionPool(1, 512 << 20, limits=LIMITS, deadline_seconds=60, initializer=worker_that_cannot_start)
    try:
        extracted = [
            await pool.extract(data, name, None)
            for name, data in [
                ("lease.txt", b"The rent is 900 euros."),
                ("notes.md", b"# Notes\n\nPay on the first."),
                ("table.csv", b"item,price\nrent,900\n"),
            ]
        ]
    finally:
        await pool.aclose()

    assert ["900 euros" in extracted[0].text, "Pay on the first" in extracted[1].text, "900" in extracted[2].text] == [
        True,
        True,
        True,
    ]
    assert not pool.in_threads
    assert "could not start" not in caplog.text


def test_pdfs_and_office_files_go_to_a_worker_whatever_their_size() -> None:
    assert parses_in_process(b"The rent is 900 euros.", "lease.txt", "text/plain")
    assert parses_in_process(b'{"rent": 900}', "lease.json", None)
    assert not parses_in_process(b"x" * (IN_PROCESS_MAX_BYTES + 1), "big.txt", "text/plain")
    assert not parses_in_process(pdf_bomb()[:2000], "small.pdf", None)  # a PDF's magic bytes decide, not its size
    assert not parses_in_process(b"%PDF-1.4\n", "renamed.txt", "text/plain")


def _identity(value: int) -> int:
    return value


async def test_a_job_cancelled_while_its_worker_starts_leaves_no_worker_process_behind() -> None:
    before = set(multiprocessing.active_children())
    pool = ExtractionPool(1, 512 << 20, limits=LIMITS, deadline_seconds=60)
    failure = ExtractionError("not expected here")
    job = asyncio.create_task(pool.run(_identity, 1, organization="acme", overdue=failure, over_memory=failure))
    async with asyncio.timeout(120):  # the worker process is there; the job waits for its first answer
        while not set(multiprocessing.active_children()) - before:  # noqa: ASYNC110 - no event for a process start
            await asyncio.sleep(0.01)
    job.cancel()
    # Kept, as a caller that logs or gathers the outcome keeps it: the traceback holds the starting worker's
    # executor, so only the pool itself can stop that process.
    (outcome,) = await asyncio.gather(job, return_exceptions=True)
    await pool.aclose()

    assert isinstance(outcome, asyncio.CancelledError)
    async with asyncio.timeout(120):  # bounds a worker left behind; a stopped one is gone at once
        while set(multiprocessing.active_children()) - before:  # noqa: ASYNC110 - a process's exit has no event here
            await asyncio.sleep(0.05)


async def test_a_warmed_pool_parses_its_first_document_in_the_worker_it_started_ahead() -> None:
    before = set(multiprocessing.active_children())
    pool = ExtractionPool(1, 512 << 20, limits=LIMITS, deadline_seconds=60)
    failure = ExtractionError("not expected here")
    try:
        warming = pool.warm()
        assert warming is not None and pool.warm() is warming, "one start, however often it is asked for"
        await warming
        started = {child.pid for child in set(multiprocessing.active_children()) - before}
        first = await pool.run(os.getpid, organization="acme", overdue=failure, over_memory=failure)
    finally:
        await pool.aclose()

    assert len(started) == 1
    assert first in started


async def test_warming_a_pool_that_parses_in_threads_starts_nothing() -> None:
    pool = ExtractionPool(0, 512 << 20, limits=LIMITS, deadline_seconds=60)
    assert pool.warm() is None
    await pool.aclose()


async def test_a_pool_closed_while_its_worker_starts_ahead_leaves_no_process_behind() -> None:
    before = set(multiprocessing.active_children())
    pool = ExtractionPool(1, 512 << 20, limits=LIMITS, deadline_seconds=60)
    warming = pool.warm()
    assert warming is not None
    await pool.aclose()

    assert warming.done()
    for child in set(multiprocessing.active_children()) - before:
        child.join()  # a worker left running would hang here
        assert not child.is_alive()


async def test_a_served_app_starts_its_extraction_worker_before_any_upload(tmp_path: Path) -> None:
    before = set(multiprocessing.active_children())
    settings = Settings(home=tmp_path, extraction_processes=1)
    app = create_app(settings)
    async with LifespanManager(app):
        under_way = [task for task in asyncio.all_tasks() if task.get_name() == "extraction-warm"]
        already = set(multiprocessing.active_children()) - before
        warming = services_of(app).warm()  # the start under way, if it has not finished yet
        if warming is not None:
            await warming
        started = set(multiprocessing.active_children()) - before

    assert under_way or already, "the app's start-up began starting a worker, without waiting for it"
    assert len(started) == 1


async def test_a_parser_complaining_in_a_worker_writes_nothing_to_the_servers_terminal(
    capfd: pytest.CaptureFixture[str],
) -> None:
    pool = ExtractionPool(1, 512 << 20, limits=LIMITS, deadline_seconds=60)
    try:
        with pytest.raises(ExtractionError):
            await pool.extract(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog", "scan.pdf", None)  # cut off: no EOF marker
    finally:
        await pool.aclose()

    assert capfd.readouterr().err == "", "the file's status says why it failed; the terminal is the server's"
