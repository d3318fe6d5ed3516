"""Every Azure resource orc's code uses, in one list: Cosmos DB containers (with their partition keys), the blob
container and the queues.

``infra/main.bicep`` declares each of them (``tests/azure/test_resources.py`` reads the template and fails on
drift in either direction). On Azure the app's identity holds data-plane roles only, which cannot create a Cosmos
DB container (a control-plane operation), so the app never creates one there: at start-up it checks that each
exists and refuses to start naming the missing one and the template resource to add (``orc doctor`` runs the
same checks). Local emulators and the embedded default create what they need.

A leaf module: the settings take their defaults from here, and nothing here imports the rest of orc.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BICEP_FILE = "infra/main.bicep"
PARTITION_KEY = "/pk"
"""Every collection partitions on ``/pk`` (see :mod:`orc.storage.cosmos`)."""


@dataclass(frozen=True, slots=True)
class CosmosContainer:
    """A Cosmos DB container of the ``orc`` database and what it holds."""

    name: str
    holds: str
    partition_key: str = PARTITION_KEY


COSMOS_CONTAINERS: tuple[CosmosContainer, ...] = (
    CosmosContainer("conversations", "conversation summaries and their turns"),
    CosmosContainer("catalog", "documents, contexts and their processing state"),
    CosmosContainer("digests", "per-file and aggregate context digests"),
    CosmosContainer("idempotency", "Idempotency-Key records of mutating requests"),
    CosmosContainer("document_text", "extracted text and spans of each processed document"),
    CosmosContainer("checkpoints", "LangGraph checkpoints of paused turns"),
    CosmosContainer("processing_leases", "leases of uploads and processing jobs, for crash recovery"),
    CosmosContainer("context_requests", "context handoff requests and their history"),
    CosmosContainer("context_request_deadlines", "the deadlines of pending context requests"),
    CosmosContainer("quotas", "per-principal rate-limit windows and daily token counters"),
)
COSMOS_CONTAINER_NAMES: frozenset[str] = frozenset(container.name for container in COSMOS_CONTAINERS)

BLOB_CONTAINER = "orc"
"""The documents' blob container (``ORC_BLOB_CONTAINER``'s default)."""
QUEUE_DOCUMENTS = "orc-documents"
"""Document processing jobs (a queue trigger of ``function_app.py`` binds this name: it is no setting)."""
QUEUE_DIGESTS = "orc-digests"
"""Session digest jobs (a queue trigger of ``function_app.py``)."""
QUEUES: tuple[str, str] = (QUEUE_DOCUMENTS, QUEUE_DIGESTS)
"""The two job queues, documents first."""

SEARCH_INDEX = "orc-spans"
"""The Azure AI Search index of every organization's spans (``ORC_SEARCH=azure``; schema in
:mod:`orc.search.azure.schema`)."""

ResourceKind = Literal["cosmos database", "cosmos container", "blob container", "queue", "search index"]

_BICEP_RESOURCES: dict[ResourceKind, str] = {
    "cosmos database": "resource database (Microsoft.DocumentDB/databaseAccounts/sqlDatabases) and its variable "
    "cosmosDatabase",
    "cosmos container": "an entry in the variable cosmosContainers (resource containers, "
    "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers)",
    "blob container": "an entry in the variable blobContainers (resource orcBlobContainers, "
    "Microsoft.Storage/storageAccounts/blobServices/containers)",
    "queue": "an entry in the variable queueNames (resource queues, "
    "Microsoft.Storage/storageAccounts/queueServices/queues)",
    "search index": "the variable searchIndex (created from orc/search/azure/schema.py by the deployment script "
    "searchIndexSchema, Microsoft.Resources/deploymentScripts)",
}


def bicep_resource(kind: ResourceKind) -> str:
    """Where ``infra/main.bicep`` declares a resource of ``kind``: what to add when one is missing."""
    return f"{BICEP_FILE}: {_BICEP_RESOURCES[kind]}"


@dataclass(frozen=True, slots=True)
class MissingResource:
    """A resource the app needs that the account lacks (or has in a shape the app cannot use)."""

    kind: ResourceKind
    name: str
    problem: str = "is missing"

    def describe(self) -> str:
        """One line for the operator: what is wrong and what to add to the template."""
        return f"{self.kind} {self.name!r} {self.problem}; declare it in {bicep_resource(self.kind)} and redeploy"
