"""The Azure AI Search index orc writes spans to: its schema, its document keys, and the query texts built for it.

Nothing here talks to the service; :mod:`orc.search.azure.engine` does. Kept apart so the schema can be read (and
compared with a live index by ``orc doctor``) without the engine, and so every string that reaches the service —
an OData filter, a Lucene query — is built in one place, with its escaping, and tested on its own.

The index holds one search document per span and one *head* per indexed document (``ordinal`` −1): the head says
which version of the document is indexed, how many spans and tokens it has and which model made its vectors.

- ``terms`` and ``title_terms`` hold orc's own tokens (:func:`orc.text.tokenize`) joined by spaces under the
  ``whitespace`` analyzer, so the service scores BM25 over exactly the token space every engine ranks; the
  retriever's weights travel as Lucene boosts.
- ``text`` and ``section`` are the span's words as written, for the semantic ranker.
- ``words`` holds the span's distinct tokens under the standard analyzer, the source of the ``vocabulary``
  suggester (a suggester's fields cannot use the ``whitespace`` analyzer).
- The scope fields (organization, owner, folder, usecase, session, document, page, section) are filterable; every
  query's filter starts with the organization's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from orc.search.port import SearchFilter

FIELD_KEY = "id"
SEMANTIC_CONFIGURATION = "orc-spans"
SUGGESTER = "orc-words"
VECTOR_PROFILE = "orc-vectors"
VECTOR_ALGORITHM = "orc-hnsw"
HEAD_ORDINAL = -1
"""The ``ordinal`` of a document's head item."""
API_VERSION = "2026-04-01"
"""The REST API version of the index definition (azure-search-documents 12's own); infra/main.bicep's deployment
script creates the index with it."""
TEMPLATE_FILE = "infra/search-index.json"
"""The index definition as the template creates it: written by ``python -m orc.search.azure.schema`` from
:func:`index_definition` (``tests/azure/test_resources.py`` keeps the two equal)."""
DEFAULT_DIMENSIONS = 1536
"""The vector field's size when the index is created without an embedding model to measure (text-embedding-3-small
and ada-002, the Azure reference deployments' model)."""

SCOPE_FIELDS = ("organization", "owner", "folder", "usecase", "session", "document_id", "page", "section")
"""The filterable fields that say where a span sits (issue 38's scope fields)."""
SPAN_FIELDS = (
    "document_id",
    "version",
    "ordinal",
    "span_id",
    "page",
    "start",
    "end",
    "text",
    "section",
    "sentences",
)
"""What a hit is read from."""
HEAD_FIELDS = ("document_id", "version", "spans", "tokens", "vector_model")

_LUCENE_SPECIAL = frozenset('+-&|!(){}[]^"~*?:\\/')


def index_definition(name: str, dimensions: int) -> Any:
    """The index as the SDK's ``SearchIndex``: fields, the vector profile (HNSW, cosine), the semantic
    configuration and the vocabulary suggester. Creating it again with the same definition changes nothing."""
    from azure.search.documents.indexes.models import (
        HnswAlgorithmConfiguration,
        HnswParameters,
        SearchField,
        SearchIndex,
        SearchSuggester,
        SemanticConfiguration,
        SemanticField,
        SemanticPrioritizedFields,
        SemanticSearch,
        VectorSearch,
        VectorSearchProfile,
    )

    def field(name: str, kind: str = "Edm.String", **options: Any) -> Any:
        # Every attribute said: the REST defaults make a string searchable, filterable, sortable and facetable
        # (each an index structure, and a 32 KB cap on filterable text).
        attributes = {"searchable": False, "filterable": False, "sortable": False, "facetable": False}
        return SearchField(name=name, type=kind, **(attributes | options))

    def scope(name: str, kind: str = "Edm.String", **options: Any) -> Any:
        return field(name, kind, filterable=True, retrievable=True, **options)

    fields = [
        field(FIELD_KEY, key=True, filterable=True, sortable=True, retrievable=True),
        scope("organization"),
        scope("owner"),
        scope("folder"),
        scope("usecase"),
        scope("session"),
        scope("document_id", sortable=True),
        scope("version"),
        scope("ordinal", "Edm.Int32", sortable=True),
        scope("page", "Edm.Int32"),
        scope("section", searchable=True, analyzer_name="standard.lucene"),
        field("span_id", retrievable=True),
        field("start", "Edm.Int32", retrievable=True),
        field("end", "Edm.Int32", retrievable=True),
        field("text", searchable=True, retrievable=True, analyzer_name="standard.lucene"),
        field("terms", searchable=True, retrievable=False, analyzer_name="whitespace"),
        field("title_terms", searchable=True, retrievable=False, analyzer_name="whitespace"),
        field("words", searchable=True, retrievable=False, analyzer_name="standard.lucene"),
        field("sentences", retrievable=True),
        scope("vector_model"),
        field("spans", "Edm.Int32", retrievable=True),
        field("tokens", "Edm.Int64", retrievable=True),
        field(
            "vector",
            "Collection(Edm.Single)",
            searchable=True,
            retrievable=False,
            stored=False,
            vector_search_dimensions=dimensions,
            vector_search_profile_name=VECTOR_PROFILE,
        ),
    ]
    return SearchIndex(
        name=name,
        fields=fields,
        vector_search=VectorSearch(
            algorithms=[HnswAlgorithmConfiguration(name=VECTOR_ALGORITHM, parameters=HnswParameters(metric="cosine"))],
            profiles=[VectorSearchProfile(name=VECTOR_PROFILE, algorithm_configuration_name=VECTOR_ALGORITHM)],
        ),
        semantic_search=SemanticSearch(
            default_configuration_name=SEMANTIC_CONFIGURATION,
            configurations=[
                SemanticConfiguration(
                    name=SEMANTIC_CONFIGURATION,
                    prioritized_fields=SemanticPrioritizedFields(
                        title_field=SemanticField(field_name="section"),
                        content_fields=[SemanticField(field_name="text")],
                    ),
                )
            ],
        ),
        suggesters=[SearchSuggester(name=SUGGESTER, source_fields=["words"])],
    )


def schema_problems(index: Mapping[str, Any], dimensions: int | None = None) -> list[str]:
    """What an existing index (its REST JSON) lacks for orc: missing fields, a scope field that cannot filter, the
    vector field's size when ``dimensions`` is given. Empty when orc can use it."""
    expected = {item["name"]: item for item in index_definition("expected", dimensions or 1).as_dict()["fields"]}
    found = {item.get("name"): item for item in index.get("fields", [])}
    problems = [f"has no field {name!r}" for name in expected if name not in found]
    for name in SCOPE_FIELDS:
        if name in found and not found[name].get("filterable"):
            problems.append(f"field {name!r} is not filterable")
    vector = found.get("vector")
    if vector is not None and dimensions is not None and vector.get("dimensions") != dimensions:
        problems.append(f"field 'vector' has {vector.get('dimensions')} dimensions, the embedding model {dimensions}")
    if not any(item.get("name") == SUGGESTER for item in index.get("suggesters", [])):
        problems.append(f"has no suggester {SUGGESTER!r}")
    return problems


def vector_dimensions(index: Mapping[str, Any]) -> int | None:
    """The size of an existing index's vector field (None without one)."""
    for item in index.get("fields", []):
        if item.get("name") == "vector":
            dimensions = item.get("dimensions")
            return int(dimensions) if dimensions else None
    return None


# -- keys --------------------------------------------------------------------------------------------------------


def document_key(organization: str, document_id: str) -> str:
    """The key prefix of a document's items: a digest, because keys allow only letters, digits, ``_ - =``."""
    return hashlib.sha256(f"{organization}\x00{document_id}".encode()).hexdigest()[:40]


def head_key(organization: str, document_id: str) -> str:
    """The key of a document's head item."""
    return f"{document_key(organization, document_id)}-head"


def span_key(organization: str, document_id: str, version: str, ordinal: int) -> str:
    """The key of one span of one version: the same span indexed twice is one item (idempotent upserts), and a new
    version's spans never overwrite the old one's while a replacement is under way."""
    digest = hashlib.sha256(version.encode()).hexdigest()[:16]
    return f"{document_key(organization, document_id)}-{digest}-{ordinal}"


# -- OData filters ----------------------------------------------------------------------------------------------


def odata_literal(value: str) -> str:
    """``value`` as an OData string literal: quoted, its single quotes doubled, so no value can end the literal
    and add a clause of its own."""
    return "'" + value.replace("'", "''") + "'"


def odata_in(field: str, values: Iterable[str]) -> str:
    """``field`` equals one of ``values`` (``false`` for none): ``search.in`` with a delimiter no value holds, or
    a disjunction of equalities when every candidate delimiter occurs in some value."""
    chosen = sorted(set(values))
    if not chosen:
        return "false"
    for delimiter in ("|", ",", ";", "~", "^"):
        if not any(delimiter in value for value in chosen):
            return f"search.in({field}, {odata_literal(delimiter.join(chosen))}, {odata_literal(delimiter)})"
    return "(" + " or ".join(f"{field} eq {odata_literal(value)}" for value in chosen) + ")"


def scope_filter(where: SearchFilter, *, heads: bool = False) -> str:
    """The OData filter of a query: always the organization's items, then the filter's owners and documents; spans
    only (or heads only, with ``heads``)."""
    clauses = [f"organization eq {odata_literal(where.organization)}"]
    if where.owners is not None:
        clauses.append(odata_in("owner", where.owners))
    if where.documents is not None:
        clauses.append(odata_in("document_id", where.documents))
    clauses.append(f"ordinal eq {HEAD_ORDINAL}" if heads else "ordinal ge 0")
    return " and ".join(clauses)


def document_filter(organization: str, document_id: str) -> str:
    """Every item (head and spans) of one document."""
    return f"organization eq {odata_literal(organization)} and document_id eq {odata_literal(document_id)}"


# -- Lucene query text ------------------------------------------------------------------------------------------


def lucene_term(term: str) -> str:
    """One token as a Lucene term: every character the full syntax treats as an operator escaped."""
    return "".join(f"\\{char}" if char in _LUCENE_SPECIAL else char for char in term)


def lucene_query(terms: Mapping[str, float], title_weight: float) -> str:
    """The weighted terms as one full-syntax query: each term on ``terms`` boosted by its weight, and on
    ``title_terms`` at ``title_weight`` of it. Any term may match (the service's default ``searchMode``)."""
    clauses = []
    for term, weight in terms.items():
        if not term or not _boost(weight):
            continue
        escaped = lucene_term(term)
        clauses.append(f"terms:{escaped}^{_boost(weight)}")
        if _boost(weight * title_weight):
            clauses.append(f"title_terms:{escaped}^{_boost(weight * title_weight)}")
    return " ".join(clauses)


def _boost(weight: float) -> str:
    """A boost as Lucene's parser reads it: a plain decimal (never an exponent), empty when it rounds to nothing."""
    text = f"{max(weight, 0.0):.4f}".rstrip("0").rstrip(".")
    return "" if text in ("", "0") else text


def phrase(term: str) -> str:
    """One token as a simple-syntax phrase (for counting the spans that hold it)."""
    return '"' + term.replace("\\", "\\\\").replace('"', '\\"') + '"'


def words_of(spans_terms: Sequence[str]) -> str:
    """A span's distinct tokens, for the vocabulary suggester."""
    return " ".join(dict.fromkeys(spans_terms))


def template_json(name: str, dimensions: int = DEFAULT_DIMENSIONS) -> str:
    """The index definition as REST JSON, as :data:`TEMPLATE_FILE` holds it."""
    import json

    return json.dumps(index_definition(name, dimensions).as_dict(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m orc.search.azure.schema > infra/search-index.json
    import sys

    from orc.resources import SEARCH_INDEX

    sys.stdout.write(template_json(SEARCH_INDEX))
