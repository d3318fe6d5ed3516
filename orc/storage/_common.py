"""Helpers every storage adapter shares, so every backend accepts and refuses the same input and orders query
results the same way.

An id that works with the embedded backends must also work with Cosmos DB, so the Cosmos rules for ids are
enforced everywhere. Private to :mod:`orc.storage`: the adapters (memory, SQLite, Cosmos DB, local folder, Azure
Blob Storage) import it; nothing else should.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any

from orc.storage.ports import JsonScalar, StoredItem

# A collection becomes a Cosmos container id and a value in SQLite; this subset is valid everywhere.
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
# Field names are spliced into Cosmos SQL and SQLite JSON paths, so only plain identifiers are accepted.
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# Cosmos DB refuses these characters in ids (they are URL path syntax in its REST API).
_FORBIDDEN_ID_CHARS = frozenset("/\\?#")
MAX_ID_LENGTH = 255
_METADATA_KEY = re.compile(r"^[a-z_][a-z0-9_]{0,127}$")


def new_etag() -> str:
    """A fresh opaque ETag (embedded backends)."""
    return uuid.uuid4().hex


def check_collection_name(name: str) -> str:
    """Return ``name`` if it is a portable collection name, else raise :class:`ValueError`."""
    if not isinstance(name, str) or not _COLLECTION_NAME.fullmatch(name):
        raise ValueError("collection names are 1-63 letters, digits, '_' or '-', starting with a letter or digit")
    return name


def check_partition_key(partition_key: str) -> str:
    """Return ``partition_key`` if it is a string, else raise :class:`TypeError`."""
    if not isinstance(partition_key, str):
        raise TypeError("partition keys are strings")
    return partition_key


def check_item_id(item_id: str) -> str:
    """Return ``item_id`` if Cosmos DB would accept it as an id, else raise :class:`ValueError`."""
    if not isinstance(item_id, str):
        raise TypeError("item ids are strings")
    if not item_id or len(item_id) > MAX_ID_LENGTH:
        raise ValueError(f"item ids are 1-{MAX_ID_LENGTH} characters")
    if any(ch in _FORBIDDEN_ID_CHARS or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in item_id):
        raise ValueError("item ids must not contain '/', '\\', '?', '#' or control characters")
    if item_id[-1] == " ":
        raise ValueError("item ids must not end with a space")
    return item_id


def check_field_name(field: str) -> str:
    """Return ``field`` if it can name a top-level body field in a query, else raise :class:`ValueError`."""
    if not isinstance(field, str) or not _FIELD_NAME.fullmatch(field):
        raise ValueError("query fields are identifiers: letters, digits and '_', not starting with a digit")
    return field


def to_json_object(body: Mapping[str, Any]) -> dict[str, Any]:
    """A deep, JSON-only copy of ``body``: what every backend would give back after storing it.

    NaN and infinities are refused because Cosmos DB (and strict JSON) cannot store them.
    """
    if not isinstance(body, Mapping):
        raise TypeError("item bodies are JSON objects (mappings)")
    result: dict[str, Any] = json.loads(json.dumps(body, allow_nan=False, ensure_ascii=False))
    return result


def check_query(
    where: Mapping[str, JsonScalar] | None, order_by: str | None, limit: int | None, id_prefix: str | None
) -> dict[str, JsonScalar]:
    """Validate the query arguments shared by every backend; returns ``where`` as a plain dict."""
    conditions: dict[str, JsonScalar] = {}
    for field, value in (where or {}).items():
        check_field_name(field)
        if value is not None and not isinstance(value, str | int | float | bool):
            raise TypeError("where values are JSON scalars (str, int, float, bool or None)")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("where values must be finite numbers")
        conditions[field] = value
    if order_by is not None:
        check_field_name(order_by)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError("limit is a non-negative integer")
    if id_prefix is not None and not isinstance(id_prefix, str):
        raise TypeError("id_prefix is a string")
    return conditions


ABSENT = object()
"""The value of a field a body does not have (distinct from JSON null, which sorts after it)."""


def json_rank(value: object) -> int:
    """Cosmos DB's cross-type order: null < booleans < numbers < strings < arrays/objects; absent first."""
    if value is ABSENT:
        return 0
    if value is None:
        return 1
    if isinstance(value, bool):
        return 2
    if isinstance(value, int | float):
        return 3
    if isinstance(value, str):
        return 4
    return 5


def sort_key(value: object) -> tuple[int, Any]:
    """A total order over JSON values that agrees with :func:`json_rank`; equal keys mean equal JSON values."""
    rank = json_rank(value)
    if rank in (0, 1):
        return (rank, 0)
    if rank == 5:
        # Arrays and objects have no meaningful order; this only keeps sorting total and deterministic.
        return (rank, json.dumps(value, sort_keys=True, ensure_ascii=False))
    return (rank, value)


def field_value(body: Mapping[str, Any], field: str) -> object:
    """The top-level field of ``body``, or a marker for an absent field (distinct from JSON null)."""
    return body.get(field, ABSENT)


def json_equal(stored: object, wanted: JsonScalar) -> bool:
    """JSON equality as Cosmos DB sees it: ``true`` is not ``1``, ``1`` is ``1.0``, absent is not ``null``."""
    if stored is ABSENT:
        return False
    return sort_key(stored) == sort_key(wanted)


def break_ties_by_id(items: list[StoredItem], field: str, *, descending: bool) -> list[StoredItem]:
    """Re-order runs of equal ``field`` values by id (in the query's direction), keeping the runs in place."""
    result: list[StoredItem] = []
    run: list[StoredItem] = []
    for item in items:
        if run and sort_key(field_value(run[0].body, field)) != sort_key(field_value(item.body, field)):
            result.extend(sorted(run, key=lambda i: i.id, reverse=descending))
            run = []
        run.append(item)
    result.extend(sorted(run, key=lambda i: i.id, reverse=descending))
    return result


def check_blob_name(name: str) -> str:
    """Return ``name`` if it is a non-empty string; path safety is the callers' job (:mod:`orc.names`)."""
    if not isinstance(name, str) or not name:
        raise ValueError("blob names are non-empty strings")
    return name


def check_put_conditions(if_match: str | None, if_none_match: bool) -> None:
    """``if_match`` and ``if_none_match`` together can never both hold, so asking for both is a bug."""
    if if_match is not None and if_none_match:
        raise ValueError("put takes if_match or if_none_match, not both")


def check_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """Validate blob metadata so it survives a round trip through HTTP headers (Azure Blob Storage)."""
    result: dict[str, str] = {}
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not _METADATA_KEY.fullmatch(key):
            raise ValueError("metadata keys are lower-case ASCII identifiers")
        if not isinstance(value, str) or not all(0x20 <= ord(ch) < 0x7F for ch in value):
            raise ValueError("metadata values are printable ASCII strings")
        if value != value.strip():
            # HTTP trims header values, so leading or trailing spaces would not survive Azure.
            raise ValueError("metadata values must not start or end with white space")
        result[key] = value
    return result
