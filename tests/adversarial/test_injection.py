"""Secrets stay out of logs: the provider's error text, configured keys and connection strings are redacted from
every log record, whichever library writes it, and tracebacks stay at DEBUG."""

from __future__ import annotations

import logging
import sys

import pytest

from orc.log_safety import REDACTED, RedactSecrets
from orc.settings import Settings
from tests.http.conftest import open_client
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, serve

MODEL_KEY = "sk-proj-0123456789abcdefXYZ"


@pytest.mark.parametrize(
    "line",
    [
        "Incorrect API key provided: sk-proj-0123456789abcdefXYZ. You can find your key at ...",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWtleS12YWx1ZQ==;EndpointSuffix=x",
        "GET https://acct.blob.core.windows.net/orc/a.pdf?sv=2024&sig=AbCdEf0123%2Bxyz&se=2026",
        "Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.signature",
        'headers={"api-key": "0123456789abcdef0123"}',
        "the configured key my-own-api-key-42 was refused",
    ],
)
def test_secret_shaped_text_is_redacted(line: str) -> None:
    redacted = RedactSecrets(["my-own-api-key-42"]).redact(line)

    assert REDACTED in redacted
    for secret in ("sk-proj-0123", "c2VjcmV0", "AbCdEf0123", "eyJhbGci", "0123456789abcdef0123", "my-own-api-key"):
        assert secret not in redacted


def test_a_record_above_debug_keeps_its_exception_type_but_not_its_traceback() -> None:
    logger = logging.getLogger("orc.tests.quiet")
    logger.setLevel(logging.INFO)
    try:
        raise ValueError("AccountKey=c2VjcmV0LWtleS12YWx1ZQ==")
    except ValueError:
        record = logger.makeRecord(logger.name, logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    RedactSecrets().filter(record)

    assert record.exc_info is None
    assert record.getMessage() == "failed (ValueError)"


async def test_a_model_401_quoting_the_key_leaves_no_key_in_the_response_or_the_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    for running in serve(OpenAIEndpoint()):
        running.endpoint.reset(Reply(status=401, text=f"Incorrect API key provided: {MODEL_KEY}"))
        settings = Settings(
            model="openai:test-model", model_base_url=running.base_url, model_api_key=MODEL_KEY, model_max_retries=0
        )
        async with open_client(settings) as client:
            failed = await client.post("/api/orc", json={"question": "What is the rent?"})
            logging.getLogger("openai").warning("provider said: Incorrect API key provided: %s", MODEL_KEY)

    assert failed.status_code == 502 and failed.json()["code"] == "model_misconfigured"
    assert MODEL_KEY not in failed.text
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "provider said" in logged
    assert MODEL_KEY not in logged
