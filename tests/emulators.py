"""Session fixtures that run the storage emulators on free loopback ports (load with ``pytest_plugins``).

- ``azurite``: Azurite's blob service (``tools/emulators``, npm), with the well-known development account.
- ``azurite_queue``: Azurite's queue service (same package, same development account), for the job queues.
- ``cosmos_emulator``: ``@vercel/cosmosdb-server`` over HTTPS, with the well-known emulator key.

Each emulator starts on first use, is polled until it answers (bounded deadline, no fixed sleeps) and is
terminated at the end of the session. When an emulator is missing or does not start, its tests are skipped
locally and fail when ``CI=true``, so a CI run can never pass silently without them.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from orc.settings import Settings

REPO = Path(__file__).resolve().parent.parent
EMULATOR_BIN = REPO / "tools" / "emulators" / "node_modules" / ".bin"
START_DEADLINE_SECONDS = 120.0
"""Bounds an emulator that never answers (the loop ends as soon as it does, or exits): Node starting on a busy
machine takes tens of seconds."""
START_ATTEMPTS = 3  # a free port can be taken between choosing it and the emulator binding it

AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
COSMOS_EMULATOR_KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="


@dataclass(frozen=True, slots=True)
class AzuriteBlob:
    """Where the Azurite blob service listens, and how to connect to it."""

    blob_endpoint: str
    account_name: str
    account_key: str

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={self.account_name};AccountKey={self.account_key};"
            f"BlobEndpoint={self.blob_endpoint};"
        )


@dataclass(frozen=True, slots=True)
class AzuriteQueue:
    """Where the Azurite queue service listens, and how to connect to it."""

    queue_endpoint: str
    account_name: str
    account_key: str

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={self.account_name};AccountKey={self.account_key};"
            f"QueueEndpoint={self.queue_endpoint};"
        )


@dataclass(frozen=True, slots=True)
class CosmosEmulator:
    """Where cosmosdb-server listens (HTTPS, self-signed certificate) and its key."""

    endpoint: str
    key: str

    @property
    def connection_string(self) -> str:
        return f"AccountEndpoint={self.endpoint}/;AccountKey={self.key};"


def _unavailable(message: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true: emulator tests must run)", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers_http(port: int, *, tls: bool) -> bool:
    """True once the port accepts a connection and answers an HTTP request (any status)."""
    try:
        if tls:
            # The emulator's certificate is self-signed; this probe only checks that it speaks HTTPS.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                "127.0.0.1", port, timeout=2, context=context
            )
        else:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/")
            connection.getresponse().read()
        finally:
            connection.close()
    except (OSError, http.client.HTTPException):
        return False
    return True


def _tail(log: Path, limit: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-limit:]
    return ""


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def run_emulator(name: str, command: Callable[[int], list[str]], *, tls: bool, log_dir: Path) -> Iterator[int]:
    """Start ``command(port)`` on a free port, wait until it answers HTTP, yield the port, then stop it."""
    binary = Path(command(0)[0])
    if not binary.exists():
        _unavailable(f"{name} is not installed ({binary} is missing); run `make emulators`")
    failure = ""
    for attempt in range(START_ATTEMPTS):
        port = free_port()
        log = log_dir / f"{name}-{attempt}.log"
        with log.open("wb") as sink:
            try:
                process = subprocess.Popen(
                    command(port), stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            except OSError as exc:
                _unavailable(f"{name} could not be started: {exc}")
        try:
            deadline = time.monotonic() + START_DEADLINE_SECONDS
            while process.poll() is None and time.monotonic() < deadline:
                if _answers_http(port, tls=tls):
                    break
                time.sleep(0.05)  # poll interval, not a wait for readiness
            else:
                state = "exited" if process.poll() is not None else "did not answer in time"
                failure = f"{name} {state} (port {port}); log tail:\n{_tail(log)}"
                continue
            yield port
            return
        finally:
            _stop(process)
    _unavailable(f"{name} did not start after {START_ATTEMPTS} attempts: {failure}")


def azurite_command(location: Path) -> Callable[[int], list[str]]:
    """The command line of Azurite's blob service on a given loopback port, keeping its data in ``location``."""

    def command(port: int) -> list[str]:
        return [
            str(EMULATOR_BIN / "azurite-blob"),
            *("--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(location)),
            *("--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"),
        ]

    return command


def azurite_queue_command(location: Path) -> Callable[[int], list[str]]:
    """The command line of Azurite's queue service on a given loopback port, keeping its data in ``location``."""

    def command(port: int) -> list[str]:
        return [
            str(EMULATOR_BIN / "azurite-queue"),
            *("--queueHost", "127.0.0.1", "--queuePort", str(port), "--location", str(location)),
            *("--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"),
        ]

    return command


def cosmos_command(port: int) -> list[str]:
    """The command line of cosmosdb-server on a given loopback port."""
    return [str(EMULATOR_BIN / "cosmosdb-server"), "-p", str(port), "--host", "127.0.0.1"]


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzuriteBlob]:
    """Azurite's blob service on a free loopback port, for the whole session."""
    workdir = tmp_path_factory.mktemp("azurite")
    with run_emulator("azurite-blob", azurite_command(workdir / "data"), tls=False, log_dir=workdir) as port:
        yield AzuriteBlob(
            blob_endpoint=f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}",
            account_name=AZURITE_ACCOUNT,
            account_key=AZURITE_KEY,
        )


@pytest.fixture(scope="session")
def azurite_queue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzuriteQueue]:
    """Azurite's queue service on a free loopback port, for the whole session."""
    workdir = tmp_path_factory.mktemp("azurite-queue")
    with run_emulator("azurite-queue", azurite_queue_command(workdir / "data"), tls=False, log_dir=workdir) as port:
        yield AzuriteQueue(
            queue_endpoint=f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}",
            account_name=AZURITE_ACCOUNT,
            account_key=AZURITE_KEY,
        )


@pytest.fixture(scope="session")
def cosmos_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CosmosEmulator]:
    """cosmosdb-server (HTTPS, in memory) on a free loopback port, for the whole session."""
    workdir = tmp_path_factory.mktemp("cosmosdb-server")
    with run_emulator("cosmosdb-server", cosmos_command, tls=True, log_dir=workdir) as port:
        yield CosmosEmulator(endpoint=f"https://127.0.0.1:{port}", key=COSMOS_EMULATOR_KEY)


@pytest.fixture
def azure_settings(azurite: AzuriteBlob, cosmos_emulator: CosmosEmulator) -> Settings:
    """Production settings pointing at the emulators; a fresh database and container per test."""
    return Settings(
        storage="azure",
        cosmos_endpoint=cosmos_emulator.endpoint,
        cosmos_key=cosmos_emulator.key,
        cosmos_database=f"orc-{uuid.uuid4().hex[:12]}",
        blob_connection_string=azurite.connection_string,
        blob_container=f"orc-{uuid.uuid4().hex[:12]}",
    )
