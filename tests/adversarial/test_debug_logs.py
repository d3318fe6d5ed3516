"""DEBUG logs of a failing provider call carry no configured secret — not in messages, arguments or tracebacks —
and every access record still formats (uvicorn's access formatter unpacks the record's arguments)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from uvicorn.logging import AccessFormatter

from orc.composition import build_foundation
from orc.log_safety import install
from orc.settings import Settings
from tests.http.conftest import open_client
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, serve

MODEL_KEY = "orc-model-key-0123456789"
AZURE_KEY = "azureopenaikey0123456789abcdef"
OPENAI_KEY = "plain-openai-key-987654321"


def test_an_access_record_formats_with_secrets_redaction_installed() -> None:
    install(["some-configured-secret"])
    logger = logging.getLogger("uvicorn.access")
    record = logger.makeRecord(
        logger.name, logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', ("127.0.0.1:5", "GET", "/", "1.1", 200), None
    )

    line = AccessFormatter(fmt="%(client_addr)s %(request_line)s %(status_code)s", use_colors=False).format(record)

    assert line == "127.0.0.1:5 GET / HTTP/1.1 200 OK"


def test_fields_passed_with_extra_are_redacted_as_the_message_is(caplog: pytest.LogCaptureFixture) -> None:
    install([MODEL_KEY])
    extra = {
        "provider_error": f"Incorrect API key provided: {MODEL_KEY}",
        "attempts": [f"key={MODEL_KEY}", 2],
        "request": {"headers": {"api-key": MODEL_KEY}, "status": 401},
    }
    logger = logging.getLogger("orc.test.extra")
    with caplog.at_level(logging.INFO, logger=logger.name):
        logger.info("provider call failed", extra=extra)
    made = logger.makeRecord(logger.name, logging.INFO, __file__, 1, "made directly", (), None, extra=extra)

    for record in (caplog.records[-1], made):
        fields = {name: getattr(record, name) for name in extra}
        assert MODEL_KEY not in repr(fields)
        assert fields["attempts"][1] == 2 and fields["request"]["status"] == 401  # what is not text keeps its type
    assert caplog.records[-1].getMessage() == "provider call failed"


async def test_debug_logs_of_a_failing_provider_call_carry_no_configured_secret(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    caplog.set_level(logging.DEBUG)
    # `orc --log-level DEBUG` keeps the HTTP clients' loggers at INFO, and a CLI test may have run in this process.
    caplog.set_level(logging.DEBUG, logger="openai")
    for running in serve(OpenAIEndpoint()):
        running.endpoint.reset(Reply(status=401, text=f"Incorrect API key provided: {MODEL_KEY} ({AZURE_KEY})"))
        settings = Settings(
            model="openai:test-model", model_base_url=running.base_url, model_api_key=MODEL_KEY, model_max_retries=0
        )
        async with open_client(settings) as client:
            failed = await client.post("/api/orc", json={"question": "What is the rent?"})
            try:
                raise RuntimeError(f"provider refused the key {AZURE_KEY} and {OPENAI_KEY}")
            except RuntimeError:
                logging.getLogger("openai").debug("request failed: %s", {"api_key": MODEL_KEY}, exc_info=True)

    assert failed.status_code == 502
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    logged = "\n".join(formatter.format(record) for record in caplog.records)
    assert "request failed" in logged and "Traceback" in logged  # the DEBUG traceback is kept, redacted
    for secret in (MODEL_KEY, AZURE_KEY, OPENAI_KEY):
        assert secret not in logged


EMBEDDINGS_KEY = "orc-embeddings-key-5566778899"
ACCOUNT_KEY = "c3RvcmFnZWFjY291bnRrZXkxMjM0NTY3ODkw"
BLOB_CONNECTION = f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={ACCOUNT_KEY};EndpointSuffix=x"


def test_an_orc_command_at_debug_logs_no_configured_secret_when_the_provider_echoes_it(tmp_path: Path) -> None:
    # `orc --log-level DEBUG ask`: the provider's 401 echoes the key; openai and LangChain each raise an error
    # quoting it, and the turn's DEBUG traceback carries both.
    (tmp_path / "lease.txt").write_text("The rent is 900 euros.")
    for running in serve(OpenAIEndpoint()):
        echo = Reply(status=401, text=f"Incorrect API key provided: {MODEL_KEY}; embeddings: {EMBEDDINGS_KEY}")
        running.endpoint.reset(*[echo] * 4)
        running.endpoint.embedding_faults = [Reply(status=401, text=f"Incorrect API key: {EMBEDDINGS_KEY}")] * 8
        environment = {
            **os.environ,
            "ORC_HOME": str(tmp_path / "home"),
            "ORC_MODEL": "openai:test-model",
            "ORC_MODEL_BASE_URL": running.base_url,
            "ORC_MODEL_API_KEY": MODEL_KEY,
            "ORC_MODEL_MAX_RETRIES": "0",
            "ORC_EMBEDDINGS": "openai:test-embeddings",
            "ORC_EMBEDDINGS_BASE_URL": running.base_url,
            "ORC_EMBEDDINGS_API_KEY": EMBEDDINGS_KEY,
            "AzureWebJobsStorage": BLOB_CONNECTION,
        }
        command = [sys.executable, "-c", "import sys; from orc.cli import main; sys.exit(main())"]
        ran = subprocess.run(
            [*command, "--log-level", "DEBUG", "ask", "--file", str(tmp_path / "lease.txt"), "What is the rent?"],
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )

    logged = ran.stdout + ran.stderr
    assert ran.returncode == 1 and "model_misconfigured" in logged
    assert "Traceback" in logged and "Incorrect API key provided: [redacted]" in logged  # kept, redacted
    for secret in (MODEL_KEY, EMBEDDINGS_KEY, ACCOUNT_KEY):
        assert secret not in logged


# Used by no other test: a process-wide redactor installed by another test must not hide a missing one.
WORKER_KEY = "worker-model-key-4455667788"
WORKER_EMBEDDINGS_KEY = "worker-embeddings-key-99887766"
QUEUE_KEY = "cXVldWVhY2NvdW50a2V5OTg3NjU0MzIx"
QUEUE_CONNECTION = f"DefaultEndpointsProtocol=https;AccountName=jobs;AccountKey={QUEUE_KEY};EndpointSuffix=x"


async def test_every_process_built_from_settings_redacts_its_secrets_from_every_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # What orc worker, the stdio MCP server and the queue functions build: no HTTP app installs anything for them.
    settings = Settings(
        model_api_key=WORKER_KEY, embeddings_api_key=WORKER_EMBEDDINGS_KEY, queue_connection_string=QUEUE_CONNECTION
    )
    caplog.set_level(logging.DEBUG, logger="a.library")
    async with AsyncExitStack() as stack:
        await build_foundation(settings, stack)
        try:
            raise PermissionError(f"refused {WORKER_KEY}")
        except PermissionError:
            logging.getLogger("a.library").debug("keys %s %s", WORKER_EMBEDDINGS_KEY, QUEUE_KEY, exc_info=True)

    logged = "\n".join(logging.Formatter("%(message)s").format(record) for record in caplog.records)
    assert "PermissionError: refused [redacted]" in logged
    assert not any(secret in logged for secret in (WORKER_KEY, WORKER_EMBEDDINGS_KEY, QUEUE_KEY, QUEUE_CONNECTION))
