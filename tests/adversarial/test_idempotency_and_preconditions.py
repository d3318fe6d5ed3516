"""Idempotency under retries: a retry while the first request still runs is told when to come back."""

from __future__ import annotations

from orc.composition import build_runtime
from orc.idempotency import fingerprint
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.turns import TurnRequest
from tests.http.conftest import open_client


async def test_a_retry_while_the_first_request_runs_is_409_with_retry_after() -> None:
    turn = TurnRequest(question="What is the rent?", conversation_id="c1")
    settings = Settings()
    # Another instance (same store) holds the key: its request is still running.
    async with build_runtime(settings) as other_instance:
        parts = {"route": "orc", "body": turn.model_dump(mode="json")}
        await other_instance.foundation.idempotency.begin(LOCAL_PRINCIPAL, "retry-me", fingerprint(parts))
    async with open_client(settings) as client:
        retried = await client.post(
            "/api/orc", json=turn.model_dump(mode="json"), headers={"Idempotency-Key": "retry-me"}
        )

    assert retried.status_code == 409
    assert retried.json()["code"] == "idempotency_key_in_flight"
    assert int(retried.headers["retry-after"]) >= 1
