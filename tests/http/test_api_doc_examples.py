"""The curl examples of docs/http-api.md run as written: each request of a block, in order, against the app (the
host and port aside), so an example never names a file it did not upload or pauses a turn that answers."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "http-api.md").read_text(encoding="utf-8")


def curl_blocks() -> list[list[list[str]]]:
    """Each ``bash``/``sh`` block of the guide as its curl commands' argv (continuation lines joined)."""
    blocks = re.findall(r"^```(?:bash|sh)\n(.*?)^```$", GUIDE, flags=re.MULTILINE | re.DOTALL)
    return [[shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()] for block in blocks]


async def run_curl(client: httpx.AsyncClient, argv: list[str], request_id: str | None) -> httpx.Response:
    """One curl command as the guide writes it: ``-F files=@PATH`` uploads, ``-d JSON`` posts."""
    assert argv[0] == "curl", argv
    url = next(arg for arg in argv if arg.startswith("localhost:8000/"))
    path = url.removeprefix("localhost:8000").replace("REQUEST_ID", request_id or "REQUEST_ID")
    if "-F" in argv:
        name, at = argv[argv.index("-F") + 1].split("=@", 1)
        source = ROOT / at
        return await client.post(path, files=[(name, (source.name, source.read_bytes(), "text/plain"))])
    if "-d" in argv:
        return await client.post(path, json=json.loads(argv[argv.index("-d") + 1]))
    return await client.get(path)


async def test_the_context_request_example_uploads_its_file_pauses_and_resumes_with_the_supplied_text(
    client: httpx.AsyncClient,
) -> None:
    (block,) = [block for block in curl_blocks() if any("REQUEST_ID/supply" in " ".join(argv) for argv in block)]
    request_id = None
    responses = []
    for argv in block:
        response = await run_curl(client, argv, request_id)
        assert response.status_code in (200, 201, 202), (argv, response.text)
        request_id = response.json().get("request_id", request_id)
        responses.append(response.json())

    paused, resumed = responses[-2], responses[-1]
    assert paused["status"] == "context_required", paused
    assert resumed["status"] == "answered" and "80 euros" in resumed["answer"], resumed
    assert [citation["ref"] for citation in resumed["citations"]] == ["supplied::evidence-1"]
