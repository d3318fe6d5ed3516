"""Start-up checks of the Azure resources ``orc.resources`` lists, without creating any of them.

On Azure the app's identity holds data-plane roles only: a Cosmos DB container it lacks cannot be made by the
app, and a first request failing deep inside a turn would say nothing useful. So a process that must not create
resources reads what exists once, before serving, and refuses to start naming each missing resource and the
``infra/main.bicep`` entry that declares it. ``orc doctor`` runs the same checks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from orc.errors import ConfigurationError
from orc.resources import COSMOS_CONTAINERS, MissingResource
from orc.storage.azure_blob import AzureBlobStore
from orc.storage.azure_queue import AzureJobQueue
from orc.storage.cosmos import CosmosCollectionProvider

logger = logging.getLogger(__name__)


async def missing_cosmos_containers(cosmos: CosmosCollectionProvider) -> list[MissingResource]:
    """The database or the listed containers the account lacks, or has with another partition key."""
    existing = await cosmos.container_partition_keys()
    if existing is None:
        return [MissingResource("cosmos database", cosmos.database_name)]
    missing = []
    for container in COSMOS_CONTAINERS:
        paths = existing.get(container.name)
        if paths is None:
            missing.append(MissingResource("cosmos container", container.name))
        elif paths != [container.partition_key]:
            problem = f"has partition key {paths!r}, not [{container.partition_key!r}]"
            missing.append(MissingResource("cosmos container", container.name, problem))
    return missing


async def missing_blob_container(blobs: AzureBlobStore) -> list[MissingResource]:
    """The documents' blob container, when it does not exist."""
    if await blobs.container_exists():
        return []
    return [MissingResource("blob container", blobs.container_name)]


async def missing_queues(queues: Sequence[AzureJobQueue]) -> list[MissingResource]:
    """The job queues that do not exist."""
    return [MissingResource("queue", queue.name) for queue in queues if not await queue.exists()]


def refuse_to_start(missing: Sequence[MissingResource]) -> None:
    """Log one line per missing resource and raise :class:`ConfigurationError` naming them all (nothing if none)."""
    if not missing:
        return
    for resource in missing:
        logger.error("orc cannot start: %s", resource.describe())
    raise ConfigurationError("orc cannot start: " + "; ".join(resource.describe() for resource in missing))
