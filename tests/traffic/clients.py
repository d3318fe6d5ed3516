"""Three HTTP clients as people use them against ``orc serve``: ``httpx``, the standard library's ``urllib`` and the
``curl`` command. Each uploads files, asks questions, reads streamed answers and downloads exports its own way; the
tests only see what came back."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx

from tests.traffic.documents import Document

ClientName = Literal["httpx", "urllib", "curl"]
CLIENTS: tuple[ClientName, ...] = ("httpx", "urllib", "curl")
StreamFormat = Literal["ndjson", "sse"]
ACCEPT = {"ndjson": "application/x-ndjson", "sse": "text/event-stream"}
TIMEOUT = 300.0
"""A bound for a server that stopped answering, not a wait: every call returns as soon as its answer is complete."""


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Client(Protocol):
    def upload(self, url: str, documents: list[Document]) -> Reply:
        """POST the documents as one multipart form (field ``files``)."""

    def post_json(self, url: str, body: dict[str, Any], accept: str = "application/json") -> Reply:
        """POST a JSON body; the whole answer, streamed or not."""

    def get(self, url: str) -> Reply:
        """GET a resource."""


def multipart_files(files: list[tuple[str, bytes, str]]) -> tuple[bytes, str]:
    """A multipart/form-data body with the files under the field ``files``, and its content type."""
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        f"Content-Type: {media_type}\r\n\r\n".encode()
        + data
        + b"\r\n"
        for name, data, media_type in files
    ]
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def events(reply: Reply, fmt: StreamFormat) -> list[dict[str, Any]]:
    """The events of a streamed turn, decoded from NDJSON lines or from server-sent events' ``data:`` lines."""
    assert reply.content_type.startswith(ACCEPT[fmt]), reply.content_type
    text = reply.body.decode()
    if fmt == "ndjson":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    decoded = []
    for block in text.split("\n\n"):
        data = [line[len("data:") :].strip() for line in block.splitlines() if line.startswith("data:")]
        if data:
            decoded.append(json.loads("\n".join(data)))
    return decoded


class HttpxClient:
    def __init__(self) -> None:
        self._client = httpx.Client(timeout=TIMEOUT)

    def close(self) -> None:
        self._client.close()

    @staticmethod
    def _reply(response: httpx.Response) -> Reply:
        return Reply(response.status_code, response.headers.get("content-type", ""), response.content)

    def upload(self, url: str, documents: list[Document]) -> Reply:
        handles = [document.path.open("rb") for document in documents]
        try:
            files = [
                ("files", (document.filename, handle, document.media_type))
                for document, handle in zip(documents, handles, strict=True)
            ]
            return self._reply(self._client.post(url, files=files))
        finally:
            for handle in handles:
                handle.close()

    def post_json(self, url: str, body: dict[str, Any], accept: str = "application/json") -> Reply:
        # Streamed the way a client that shows tokens as they come reads them: chunk by chunk.
        with self._client.stream("POST", url, json=body, headers={"Accept": accept}) as response:
            content = b"".join(response.iter_bytes())
            return Reply(response.status_code, response.headers.get("content-type", ""), content)

    def get(self, url: str) -> Reply:
        return self._reply(self._client.get(url))


class UrllibClient:
    def close(self) -> None:
        pass

    @staticmethod
    def _open(request: urllib.request.Request) -> Reply:
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return Reply(response.status, response.headers.get("Content-Type", ""), response.read())
        except urllib.error.HTTPError as error:
            with error:
                return Reply(error.code, error.headers.get("Content-Type", ""), error.read())

    def upload(self, url: str, documents: list[Document]) -> Reply:
        # urllib has no multipart encoder: people build the body in memory, as here, and send it in one request.
        body, content_type = multipart_files([(d.filename, d.path.read_bytes(), d.media_type) for d in documents])
        request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
        return self._open(request)

    def post_json(self, url: str, body: dict[str, Any], accept: str = "application/json") -> Reply:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": accept}
        return self._open(urllib.request.Request(url, data=data, method="POST", headers=headers))

    def get(self, url: str) -> Reply:
        return self._open(urllib.request.Request(url))


class CurlClient:
    """The ``curl`` command; ``-w`` writes the status and content type after the body, on a line of its own."""

    def __init__(self, folder: Path) -> None:
        executable = shutil.which("curl")
        assert executable, "curl is not installed (make system-tools)"
        self._curl = executable
        self._folder = folder

    def close(self) -> None:
        pass

    def _run(self, url: str, *arguments: str) -> Reply:
        output = self._folder / "curl-body"
        completed = subprocess.run(
            [
                self._curl,
                "--silent",
                "--show-error",
                "--no-buffer",
                "--max-time",
                str(int(TIMEOUT)),
                "-o",
                str(output),
                "-w",
                "%{http_code} %{content_type}",
                *arguments,
                url,
            ],
            capture_output=True,
            check=False,
            timeout=TIMEOUT + 30,
        )
        assert completed.returncode == 0, completed.stderr.decode(errors="replace")
        status, _, content_type = completed.stdout.decode().partition(" ")
        return Reply(int(status), content_type, output.read_bytes())

    def upload(self, url: str, documents: list[Document]) -> Reply:
        forms = [
            f"files=@{document.path};filename={document.filename};type={document.media_type}" for document in documents
        ]
        return self._run(url, *[argument for form in forms for argument in ("-F", form)])

    def post_json(self, url: str, body: dict[str, Any], accept: str = "application/json") -> Reply:
        return self._run(
            url, "-H", "Content-Type: application/json", "-H", f"Accept: {accept}", "--data-binary", json.dumps(body)
        )

    def get(self, url: str) -> Reply:
        return self._run(url)


def open_client(name: ClientName, folder: Path) -> HttpxClient | UrllibClient | CurlClient:
    if name == "httpx":
        return HttpxClient()
    if name == "urllib":
        return UrllibClient()
    return CurlClient(folder)
