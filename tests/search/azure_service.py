"""An azure-core transport that answers like Azure AI Search, from memory: the Azure engine's requests go through the
real SDK pipeline (serialization, paging, retries, error mapping) and come back in the service's shapes.

The shapes are the REST API reference's (Search Documents, Index Documents, Autocomplete, Get/Create Index):
``{"value": [{"@search.score": …, <selected fields>}], "@odata.count": …}``, indexing results
``{"value": [{"key", "status", "errorMessage", "statusCode"}]}`` (207 when an item failed), errors
``{"error": {"code", "message"}}``. What it computes is deliberately simple and documented here, not the service's
ranking: a full-syntax query scores the sum of its matching clauses' boosts times the term's count; a vector query
scores ``1 / (1 + (1 - cosine))`` (the cosine metric's score); hybrid fuses both rankings by RRF (k = 60); the
semantic ranker's score is the number of the semantic query's words in the span's text. Filters are evaluated by a
small OData parser that knows what the engine sends (``eq ne gt ge lt le and or``, parentheses, ``search.in``) and
fails loudly on anything else, so a malformed filter fails the test that sent it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from azure.core.pipeline.transport import AsyncHttpTransport
from azure.core.rest import HttpRequest
from azure.core.rest._http_response_impl_async import AsyncHttpResponseImpl

ENDPOINT = "https://orc-test.search.windows.net"


@dataclass
class Recorded:
    """One request as the service received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]


@dataclass
class SearchService(AsyncHttpTransport):
    """The service: one index definition, its items, and every request received (``requests``).

    ``fault`` may answer a request before the service does (a status and a JSON body), to play throttling, outages
    and refusals; returning None lets the request through."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    index: dict[str, Any] | None = None
    requests: list[Recorded] = field(default_factory=list)
    fault: Callable[[Recorded], tuple[int, Any, dict[str, str]] | None] | None = None

    async def __aenter__(self) -> SearchService:
        return self

    async def __aexit__(self, *args: object) -> None:
        return None

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def sleep(self, duration: float) -> None:
        # The SDK's retry backoff: a service in memory answers at once, so the tests do not wait on time.
        return None

    async def send(self, request: HttpRequest, **kwargs: Any) -> AsyncHttpResponseImpl:  # type: ignore[override]
        url = urlparse(request.url)
        content = request.content
        body = json.loads(content) if content else None
        recorded = Recorded(request.method, unquote(url.path), parse_qs(url.query), body, dict(request.headers))
        self.requests.append(recorded)
        answer = self.fault(recorded) if self.fault is not None else None
        status, payload, headers = answer if answer is not None else self._answer(recorded)
        return _response(request, status, payload, headers)

    # -- routes ------------------------------------------------------------------------------------------------

    def _answer(self, request: Recorded) -> tuple[int, Any, dict[str, str]]:
        path = request.path
        if re.fullmatch(r"/indexes\('[^']+'\)", path) or re.fullmatch(r"/indexes/[^/]+", path):
            if request.method == "GET":
                if self.index is None:
                    return 404, {"error": {"code": "", "message": "No index with the name was found."}}, {}
                return 200, self.index, {}
            if request.method == "PUT":
                created = self.index is None
                self.index = request.body
                return (201 if created else 200), request.body, {}
        if path.endswith("/docs/search.index"):
            return self._index_documents(request.body)
        if path.endswith("/docs/search.post.search"):
            return 200, self._search(request.body), {}
        if path.endswith("/docs/search.post.autocomplete"):
            return 200, self._autocomplete(request.body), {}
        raise AssertionError(f"the service has no route {request.method} {path}")

    def _index_documents(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        results = []
        for action in body["value"]:
            kind = action["@search.action"]
            fields = {name: value for name, value in action.items() if not name.startswith("@")}
            key = fields["id"]
            if kind == "delete":
                self.items.pop(key, None)
                results.append({"key": key, "status": True, "errorMessage": None, "statusCode": 200})
                continue
            assert kind == "mergeOrUpload", kind
            unknown = set(fields) - {item["name"] for item in (self.index or {}).get("fields", [])}
            if unknown:
                message = f"The property '{sorted(unknown)[0]}' does not exist on type 'search.documentFields'."
                return 400, {"error": {"code": "", "message": message}}, {}
            created = key not in self.items
            self.items[key] = {**self.items.get(key, {}), **fields}
            results.append({"key": key, "status": True, "errorMessage": None, "statusCode": 201 if created else 200})
        return 200, {"value": results}, {}

    def _search(self, body: dict[str, Any]) -> dict[str, Any]:
        where = body.get("filter")
        candidates = [item for item in self.items.values() if where is None or ODataFilter(where).matches(item)]
        text = body.get("search")
        vectors = body.get("vectorQueries") or []
        semantic = body.get("queryType") == "semantic"
        rankings: list[list[tuple[str, float]]] = []
        if text and text != "*":
            scored = [(item["id"], self._text_score(item, text, body)) for item in candidates]
            rankings.append(sorted([pair for pair in scored if pair[1] > 0], key=lambda pair: -pair[1]))
        for query in vectors:
            assert query["kind"] == "vector" and query["fields"] == "vector"
            scored = [
                (item["id"], 1.0 / (2.0 - _cosine(item["vector"], query["vector"])))
                for item in candidates
                if item.get("vector")
            ]
            rankings.append(sorted(scored, key=lambda pair: -pair[1])[: query["k"]])
        if not rankings:
            scores = {item["id"]: 1.0 for item in candidates}
        elif len(rankings) == 1:
            scores = dict(rankings[0])
        else:
            scores = {}
            for ranking in rankings:
                for rank, (key, _) in enumerate(ranking, start=1):
                    scores[key] = scores.get(key, 0.0) + 1.0 / (60 + rank)
        found = [self.items[key] for key in scores]
        order = [part.strip() for part in (body.get("orderby") or "").split(",") if part.strip()]
        found.sort(key=lambda item: _order_key(item, scores[item["id"]], order))
        if semantic:
            words = set((body.get("semanticQuery") or text or "").split())
            reranked = {item["id"]: float(len(words & set(item.get("text", "").lower().split()))) for item in found}
            found = sorted(found[:50], key=lambda item: -reranked[item["id"]])
        top = body.get("top", 50)
        select = body.get("select")
        chosen = select.split(",") if select else [name for name in found[0]] if found else []
        value = []
        for item in found[:top]:
            row: dict[str, Any] = {"@search.score": scores[item["id"]]}
            if semantic:
                row["@search.rerankerScore"] = reranked[item["id"]]
            row |= {name: item.get(name) for name in chosen}
            value.append(row)
        answer: dict[str, Any] = {"value": value}
        if body.get("count"):
            answer["@odata.count"] = len(found)
        return answer

    def _text_score(self, item: dict[str, Any], text: str, body: dict[str, Any]) -> float:
        if body.get("queryType") == "full":
            score = 0.0
            for field_name, term, boost in re.findall(r"(\w+):((?:\\.|[^\s^\\])+)\^([0-9.e-]+)", text):
                plain = re.sub(r"\\(.)", r"\1", term)
                score += float(boost) * (item.get(field_name) or "").split().count(plain)
            return score
        fields = (body.get("searchFields") or "terms").split(",")
        words = [word.strip('"') for word in text.split()]
        return float(sum((item.get(name) or "").split().count(word) for name in fields for word in words))

    def _autocomplete(self, body: dict[str, Any]) -> dict[str, Any]:
        assert body["suggesterName"] == "orc-words" and body.get("autocompleteMode") == "oneTerm"
        prefix = body["search"]
        where = body.get("filter")
        words = sorted(
            {
                word
                for item in self.items.values()
                if where is None or ODataFilter(where).matches(item)
                for word in (item.get("words") or "").split()
                if word.startswith(prefix)
            }
        )
        return {"value": [{"text": word, "queryPlusText": word} for word in words[: body.get("top", 5)]]}


def _response(request: HttpRequest, status: int, payload: Any, headers: dict[str, str]) -> AsyncHttpResponseImpl:
    content = json.dumps(payload).encode() if payload is not None else b""
    all_headers = {"Content-Type": "application/json; odata.metadata=none", **headers}
    response = AsyncHttpResponseImpl(
        request=request,
        internal_response=None,
        status_code=status,
        reason="OK" if status < 400 else "Error",
        content_type=all_headers["Content-Type"],
        headers=all_headers,
        stream_download_generator=None,
    )
    response._content = content  # the body is already in memory
    return response


def _cosine(left: list[float], right: list[float]) -> float:
    dot = sum(a * b for a, b in zip(left, right, strict=True))
    norm = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return dot / norm if norm else 0.0


def _order_key(item: dict[str, Any], score: float, order: list[str]) -> tuple[Any, ...]:
    if not order:
        return (-score,)
    key: list[Any] = []
    for clause in order:
        name, _, direction = clause.partition(" ")
        value: Any = score if name == "search.score()" else item.get(name)
        descending = direction.strip() == "desc"
        if isinstance(value, int | float):
            key.append(-value if descending else value)
        else:
            assert not descending, "descending text order is not played"
            key.append(value or "")
    return tuple(key)


# -- OData filters -----------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+)|(?P<word>[A-Za-z_][\w.]*)|(?P<punct>[(),]))")


class ODataFilter:
    """The subset of OData ``$filter`` the engine writes, parsed strictly."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, Any]] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                if text[position:].strip() == "":
                    break
                raise AssertionError(f"unparseable filter at {text[position:]!r}")
            position = match.end()
            kind = match.lastgroup
            value = match.group(kind)  # type: ignore[arg-type]
            if kind == "string":
                self.tokens.append(("value", value[1:-1].replace("''", "'")))
            elif kind == "number":
                self.tokens.append(("value", int(value)))
            elif value in ("null",):
                self.tokens.append(("value", None))
            elif value in ("false", "true"):
                self.tokens.append(("bool", value == "true"))
            else:
                self.tokens.append((kind or "", value))

    def matches(self, item: dict[str, Any]) -> bool:
        self.position = 0
        result = self._or(item)
        assert self.position == len(self.tokens), f"trailing filter tokens {self.tokens[self.position :]}"
        return result

    def _peek(self) -> tuple[str, Any] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self) -> tuple[str, Any]:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def _or(self, item: dict[str, Any]) -> bool:
        result = self._and(item)
        while self._peek() == ("word", "or"):
            self._take()
            right = self._and(item)
            result = result or right
        return result

    def _and(self, item: dict[str, Any]) -> bool:
        result = self._atom(item)
        while self._peek() == ("word", "and"):
            self._take()
            right = self._atom(item)
            result = result and right
        return result

    def _atom(self, item: dict[str, Any]) -> bool:
        kind, value = self._take()
        if (kind, value) == ("punct", "("):
            result = self._or(item)
            assert self._take() == ("punct", ")")
            return result
        if kind == "bool":
            return bool(value)
        if (kind, value) == ("word", "search.in"):
            assert self._take() == ("punct", "(")
            _, name = self._take()
            assert self._take() == ("punct", ",")
            _, values = self._take()
            assert self._take() == ("punct", ",")
            _, delimiter = self._take()
            assert self._take() == ("punct", ")")
            return item.get(name) in values.split(delimiter)
        assert kind == "word", f"expected a field, found {value!r}"
        operator = self._take()[1]
        literal_kind, literal = self._take()
        assert literal_kind == "value", f"expected a literal after {value} {operator}"
        field_value = item.get(value)
        if operator == "eq":
            return bool(field_value == literal)
        if operator == "ne":
            return bool(field_value != literal)
        if field_value is None:
            return False
        comparisons = {"gt": field_value > literal, "ge": field_value >= literal}
        comparisons |= {"lt": field_value < literal, "le": field_value <= literal}
        return bool(comparisons[operator])
