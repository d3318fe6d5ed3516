"""Secrets are redacted from what a context request offers (suggestions and the artifacts listing) before it is
offered, and the redactions are counted (context-handoff-plan §4.2.1)."""

from __future__ import annotations

import json

import pytest

from orc.errors import ConfigurationError
from orc.handoff.redaction import REDACTED, Redactor
from orc.settings import Settings
from tests.http.conftest import open_client, upload

ACCOUNT_KEY = "Zm9vYmFyc2VjcmV0a2V5MTIzNDU2Nzg5MA=="
NOTES = (
    "Operations notes.\n\n"
    f"The storage connection string is DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={ACCOUNT_KEY};"
    "EndpointSuffix=core.windows.net and the badge of the operator is EMP-204117.\n\n"
    "The backup runs every night at two o'clock."
).encode()


async def test_a_redacted_key_never_reaches_a_suggestion_nor_the_artifacts_listing() -> None:
    settings = Settings(redact_patterns=[r"EMP-\d{6}"])
    async with open_client(settings) as client:
        assert (await upload(client, "s", ("notes.txt", NOTES))).status_code == 201
        first = {
            "question": "What is the storage connection string?",
            "conversation_id": "s",
            "blob_names": ["notes.txt"],
        }
        answered = (await client.post("/api/orc", json=first)).json()
        paused = (
            await client.post(
                "/api/orc",
                json={**first, "question": "What is the parking fee of the office?", "context_requests": "allow"},
            )
        ).json()
        listing = (await client.get("/api/sessions/s/artifacts")).json()
        stored = (await client.get("/api/sessions/s")).json()["context_requests"]

    assert ACCOUNT_KEY in answered["answer"]  # the earlier answer quoted it: the suggestions would offer it
    assert paused["status"] == "context_required"
    offered = json.dumps(paused["required"]) + json.dumps(listing["items"]) + json.dumps(stored)
    assert ACCOUNT_KEY not in offered and "EMP-204117" not in offered
    assert REDACTED in json.dumps(paused["required"]) and REDACTED in json.dumps(listing["items"])
    assert paused["redactions"] >= 1 and listing["redactions"] >= 2


@pytest.mark.parametrize(
    "secret",
    [
        "AccountKey=abcdEFGH1234abcdEFGH1234==",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh",
        "AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "postgres://admin:hunter2secret@db.internal:5432/app",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        'api_key: "abcd1234efgh5678ijkl"',
    ],
)
def test_common_secrets_are_redacted_by_the_built_in_patterns(secret: str) -> None:
    text, count = Redactor().redact(f"before {secret} after")

    assert count >= 1 and REDACTED in text and text.startswith("before ") and text.endswith(" after")
    assert not any(part in text for part in ("abcdEFGH1234", "abcdefghijklmnop", "IOSFODNN7", "hunter2", "MIIEow"))


def test_plain_text_is_left_alone_and_a_bad_configured_pattern_names_the_setting() -> None:
    assert Redactor().redact("The rent is 1,450 euros; the key is under the mat.") == (
        "The rent is 1,450 euros; the key is under the mat.",
        0,
    )
    with pytest.raises(ConfigurationError, match="ORC_REDACT_PATTERNS"):
        Redactor(["(unclosed"])
    with pytest.raises(ValueError, match="ORC_REDACT_PATTERNS"):
        Settings(redact_patterns="(unclosed")
