"""The Azure resources orc uses: one list in the code (orc.resources), the same list in infra/main.bicep, and a
start-up on Azure that refuses to run without one of them, naming it and its template entry."""

from __future__ import annotations

import ast
import logging
import re
import uuid
from pathlib import Path

import pytest
from azure.cosmos import PartitionKey
from azure.cosmos.aio import CosmosClient

from orc.composition import Stores, build_runtime
from orc.composition.foundation import parts_of
from orc.errors import ConfigurationError
from orc.principal import Principal
from orc.resources import BLOB_CONTAINER, COSMOS_CONTAINER_NAMES, COSMOS_CONTAINERS, QUEUES, SEARCH_INDEX
from orc.search.azure.schema import API_VERSION, TEMPLATE_FILE, template_json
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.turns import TurnRequest
from tests.emulators import AzuriteBlob, CosmosEmulator
from tests.http.conftest import open_client

ROOT = Path(__file__).resolve().parents[2]
BICEP = (ROOT / "infra" / "main.bicep").read_text(encoding="utf-8")


def bicep_var(name: str) -> str:
    """The text of ``var <name> = …`` up to the next declaration."""
    match = re.search(rf"^var {name} = (.*?)(?=^(?:var|param|resource|output|//|@) )", BICEP, re.S | re.M)
    assert match, f"infra/main.bicep declares no var {name}"
    return match.group(1)


def bicep_strings(name: str) -> list[str]:
    return re.findall(r"'([^']*)'", bicep_var(name))


def resources_of_type(kind: str) -> list[str]:
    """The bodies of every resource of ``kind`` the template declares."""
    return re.findall(rf"^resource \w+ '{re.escape(kind)}@[^']+' = (.*?)^[}}\]]", BICEP, re.S | re.M)


def test_the_template_declares_every_cosmos_container_of_the_code_with_its_partition_key_and_no_other() -> None:
    declared = re.findall(r"\{ name: '([^']+)', partitionKey: '([^']+)' \}", bicep_var("cosmosContainers"))

    assert sorted(declared) == sorted((c.name, c.partition_key) for c in COSMOS_CONTAINERS)
    (containers,) = resources_of_type("Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers")
    assert "for container in cosmosContainers" in containers
    assert "paths: [container.partitionKey]" in containers
    assert bicep_strings("cosmosDatabase") == [Settings().cosmos_database]


def test_the_template_declares_the_blob_container_and_the_queues_of_the_code_and_no_other() -> None:
    assert bicep_strings("blobContainers") == [BLOB_CONTAINER] == [Settings().blob_container]
    assert bicep_strings("queueNames") == list(QUEUES)
    blob_resources = resources_of_type("Microsoft.Storage/storageAccounts/blobServices/containers")
    # orc's containers, and the Functions host's deployment packages.
    assert sorted(body.split("\n")[0] for body in blob_resources) == ["[", "{"]
    assert any("for container in blobContainers" in body for body in blob_resources)
    assert any("name: deploymentContainer" in body for body in blob_resources)
    (queues,) = resources_of_type("Microsoft.Storage/storageAccounts/queueServices/queues")
    assert "for queue in queueNames" in queues


def test_the_template_declares_the_search_service_and_creates_the_index_the_code_defines() -> None:
    assert bicep_strings("searchIndex") == [SEARCH_INDEX]
    assert bicep_strings("searchApiVersion") == [API_VERSION]
    assert (ROOT / TEMPLATE_FILE).read_text(encoding="utf-8") == template_json(SEARCH_INDEX)
    (service,) = resources_of_type("Microsoft.Search/searchServices")
    assert "disableLocalAuth: true" in service and "semanticSearch: searchSemantic" in service
    (script,) = resources_of_type("Microsoft.Resources/deploymentScripts")
    assert "loadJsonContent('search-index.json')" in script and "searchIndex}?api-version=${searchApiVersion}" in script
    assert "{ name: 'ORC_SEARCH', value: 'azure' }" in BICEP
    roles = resources_of_type("Microsoft.Authorization/roleAssignments")
    orc_search = [body for body in roles if "searchIndexDataContributor)" in body]
    assert len(orc_search) == 1 and "identity.properties.principalId" in orc_search[0]
    index_admin = [body for body in roles if "searchServiceContributor)" in body]
    assert len(index_admin) == 1 and "deployIdentity.properties.principalId" in index_admin[0]


def test_the_queue_triggers_listen_on_the_listed_queues() -> None:
    tree = ast.parse((ROOT / "function_app.py").read_text(encoding="utf-8"))
    names = [
        keyword.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "queue_trigger"
        for keyword in node.keywords
        if keyword.arg == "queue_name" and isinstance(keyword.value, ast.Name)
    ]

    assert names == ["QUEUE_DOCUMENTS", "QUEUE_DIGESTS"]


class RecordingProvider(MemoryCollectionProvider):
    """In-memory collections that remember which names the app opened."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: set[str] = set()

    async def collection(self, name: str):  # type: ignore[no-untyped-def]
        self.opened.add(name)
        return await super().collection(name)


async def test_the_code_opens_exactly_the_listed_cosmos_containers(tmp_path: Path) -> None:
    provider = RecordingProvider()
    settings = Settings(
        home=tmp_path,
        storage="azure",
        cosmos_endpoint="https://unused.invalid",
        auth="api-key",
        api_keys={"k": {"organization": "acme", "user": "ana"}},
    )
    async with build_runtime(settings, stores=Stores(provider, MemoryBlobStore())) as services:
        principal = Principal(organization="acme", user="ana")
        await services.orchestrator.ask(TurnRequest(question="What is alpha?", conversation_id="c1"), principal)

    assert provider.opened == COSMOS_CONTAINER_NAMES


# -- start-up on Azure against the emulators ---------------------------------------------------------------------


async def create_containers(emulator: CosmosEmulator, database: str, names: set[str]) -> None:
    async with CosmosClient(emulator.endpoint, emulator.key, enable_endpoint_discovery=False) as client:
        made = await client.create_database_if_not_exists(database)
        for name in names:
            await made.create_container_if_not_exists(name, partition_key=PartitionKey("/pk"))


@pytest.fixture
def on_azure(monkeypatch: pytest.MonkeyPatch) -> None:
    """What App Service / Functions set in every app's environment."""
    monkeypatch.setenv("WEBSITE_SITE_NAME", "func-orc-test")


@pytest.mark.emulator
@pytest.mark.usefixtures("on_azure")
async def test_an_app_on_azure_with_a_cosmos_container_missing_refuses_to_start_and_names_it(
    azure_settings: Settings, cosmos_emulator: CosmosEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    settings = azure_settings
    await create_containers(cosmos_emulator, settings.cosmos_database, set(COSMOS_CONTAINER_NAMES) - {"quotas"})
    assert not settings.creates_resources

    with caplog.at_level(logging.ERROR), pytest.raises(ConfigurationError) as refused:
        async with open_client(settings):
            pytest.fail("the app started without the quotas container")

    assert "cosmos container 'quotas' is missing" in str(refused.value)
    (line,) = [r.getMessage() for r in caplog.records if "quotas" in r.getMessage()]
    assert "infra/main.bicep" in line and "cosmosContainers" in line
    # Nothing was created on the way: the container is still missing, and so is the blob container.
    async with CosmosClient(cosmos_emulator.endpoint, cosmos_emulator.key, enable_endpoint_discovery=False) as client:
        names = {c["id"] async for c in client.get_database_client(settings.cosmos_database).list_containers()}
    assert "quotas" not in names
    assert f"blob container {settings.blob_container!r} is missing" in str(refused.value)


@pytest.mark.emulator
@pytest.mark.usefixtures("on_azure")
async def test_an_app_on_azure_without_its_database_names_the_database(azure_settings: Settings) -> None:
    with pytest.raises(ConfigurationError, match=f"cosmos database {azure_settings.cosmos_database!r} is missing"):
        async with build_runtime(azure_settings):
            pytest.fail("the app started without its database")


@pytest.mark.emulator
async def test_local_emulators_still_get_what_they_need_created(azure_settings: Settings, azurite: AzuriteBlob) -> None:
    assert azure_settings.creates_resources
    async with build_runtime(azure_settings) as services:
        assert parts_of(services.foundation).settings.storage == "azure"


@pytest.mark.emulator
@pytest.mark.usefixtures("on_azure")
async def test_an_app_on_azure_with_every_resource_starts_without_creating_any(
    azure_settings: Settings, cosmos_emulator: CosmosEmulator, azurite: AzuriteBlob
) -> None:
    settings = azure_settings
    await create_containers(cosmos_emulator, settings.cosmos_database, set(COSMOS_CONTAINER_NAMES))
    from azure.storage.blob.aio import ContainerClient

    async with ContainerClient.from_connection_string(azurite.connection_string, settings.blob_container) as blob:
        await blob.create_container()

    async with build_runtime(settings) as services:
        principal = Principal(organization="default", user="default")
        answer = await services.orchestrator.ask(
            TurnRequest(question="Hello?", conversation_id=f"c{uuid.uuid4().hex[:6]}"), principal
        )
    assert answer.answer
