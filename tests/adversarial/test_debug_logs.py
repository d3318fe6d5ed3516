"""DEBUG logs of a failing provider call carry no configured secret — not in messages, arguments or tracebacks —
and every access record still formats (uvicorn's access formatter unpacks the record's arguments)."""

from __future__ import annotations

import logging

import pytest
from uvicorn.logging import AccessFormatter

from orc.http.log_safety import install
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
