"""The answer request's system prompt as its sheet orders it: the session's digest once ready, the sources."""

from __future__ import annotations

from typing import Any

from orc.settings import Settings
from orc.testing import FunctionChatModel
from tests.digests.support import digest_model
from tests.http.conftest import open_client, settled, upload

LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month."


async def test_a_document_turn_shows_the_sessions_ready_digest_before_its_sources() -> None:
    prompts: list[str] = []

    def answer(messages: list[Any], tools: list[dict[str, Any]]) -> str:
        prompts.append(messages[0].text)
        return "The rent is 1,450 euros."

    digests = digest_model()
    async with open_client(Settings(), model=FunctionChatModel(answer), digest_model=digests) as client:
        await upload(client, "c1", ("lease.txt", LEASE))
        manifest = await settled(client, "c1")
        aggregate = (await client.get("/api/sessions/c1/context/digest")).json()
        await client.post(
            "/api/orc", json={"question": "What is the rent?", "conversation_id": "c1", "blob_names": ["lease.txt"]}
        )

    assert manifest["aggregate_digest_status"] == "ready"
    system = next(p for p in prompts if "<sources>" in p)  # the answer request (not a digest request)
    assert "## Session digest" in system and "<digest>" in system
    assert aggregate["facts"][0]["claim"].split()[0] in system
    assert system.index("## Session digest") < system.index("## Sources") < system.index("<sources>")
    assert "## Supplied context" not in system  # nothing was supplied: the section is left out
