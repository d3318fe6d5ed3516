"""`orc doctor`: the configuration and every configured resource, reached for real (the emulators, a local
OpenAI-compatible endpoint), with what is missing and how to fix it; and its checks run once at Functions start-up."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError
from azure.storage.blob.aio import ContainerClient
from azure.storage.queue.aio import QueueClient

from orc.cli import main
from orc.cli.doctor import run_doctor
from orc.doctor import StartupDiagnosis, diagnose
from orc.http import create_app
from orc.http.functions_relay import RelayFunctionApp
from orc.resources import COSMOS_CONTAINER_NAMES, QUEUES
from orc.settings import Settings
from tests.azure.test_resources import create_containers
from tests.emulators import AzuriteBlob, AzuriteQueue, CosmosEmulator
from tests.functions_requests import read, worker_request
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve


async def doctor_output(settings: Settings) -> tuple[int, str]:
    out = io.StringIO()
    status = await run_doctor(settings, out)
    return status, out.getvalue()


async def test_the_embedded_defaults_pass_every_check(tmp_path: Path) -> None:
    status, output = await doctor_output(Settings(home=tmp_path))

    assert status == 0
    assert output.splitlines()[-1] == "everything orc needs is in place"
    assert "OK    storage: embedded" in output and "OK    chat model: offline" in output
    assert "OK    prompts: the packaged prompt files" in output
    assert "OK    embeddings: off (lexical retrieval only)" in output


async def test_a_broken_prompt_override_is_named_with_its_file(tmp_path: Path) -> None:
    (tmp_path / "answer.correction.txt").write_text("Fix {this}.", encoding="utf-8")

    status, output = await doctor_output(Settings(home=tmp_path / "home", prompts_dir=str(tmp_path)))

    assert status == 1
    assert f"FAIL  prompts: prompt file {tmp_path}/answer.correction.txt uses ['this']" in output


def test_orc_doctor_is_a_command_whose_exit_status_says_whether_something_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ORC_AUTH", "api-key")  # without keys: a configuration the doctor must refuse

    assert main(["doctor"]) == 1
    output = capsys.readouterr().out
    assert "FAIL  configuration: ORC_AUTH=api-key needs ORC_API_KEYS" in output


async def test_easyauth_without_the_platforms_authentication_is_a_problem_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WEBSITE_AUTH_ENABLED", raising=False)
    status, output = await doctor_output(Settings(home=tmp_path, auth="easyauth"))

    assert status == 1
    assert "FAIL  sign-in: ORC_AUTH=easyauth but App Service authentication is not on" in output
    assert "fix: see docs/deploying-to-azure.md" in output


async def test_a_malformed_connection_string_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path, storage="azure", cosmos_endpoint="https://127.0.0.1:1", blob_connection_string="no;such=thing"
    )

    status, output = await doctor_output(settings)

    assert status == 1
    assert "FAIL  storage: the blob storage connection string is malformed" in output


@pytest.fixture(scope="module")
def running() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


async def test_the_model_endpoint_is_reached_and_a_refusal_says_what_to_check(
    tmp_path: Path, running: RunningEndpoint
) -> None:
    settings = Settings(
        home=tmp_path, model="openai:gpt-test", model_base_url=running.base_url, model_api_key="k", model_max_retries=0
    )
    running.endpoint.reset(Reply(text="OK"), Reply(status=401))

    fine = await diagnose(settings)
    refused = await diagnose(settings)

    assert [c.outcome for c in fine.checks if c.subject == "chat model"] == ["ok"]
    (model,) = [c for c in refused.checks if c.subject == "chat model"]
    assert model.outcome == "fail" and "refused" in model.detail and "ORC_MODEL" in model.fix
    assert len(running.endpoint.requests) == 2


async def test_the_embedding_endpoint_is_reached_and_a_refusal_says_what_to_check(
    tmp_path: Path, running: RunningEndpoint
) -> None:
    settings = Settings(
        home=tmp_path, embeddings="openai:local-embed", embeddings_base_url=running.base_url, model_max_retries=0
    )
    running.endpoint.reset()

    fine = await diagnose(settings)
    running.endpoint.embedding_faults = [Reply(status=404)]
    refused = await diagnose(settings)

    assert [c.outcome for c in fine.checks if c.subject == "embeddings"] == ["ok"]
    (embeddings,) = [c for c in refused.checks if c.subject == "embeddings"]
    assert embeddings.outcome == "fail" and "ORC_EMBEDDINGS" in embeddings.fix
    assert len(running.endpoint.embedding_requests) == 2


async def test_the_embedding_model_is_asked_once_for_its_check_and_the_search_indexs_vector_size(
    tmp_path: Path, running: RunningEndpoint
) -> None:
    origin = running.base_url.removesuffix("/v1")
    settings = Settings(
        home=tmp_path,
        embeddings="openai:local-embed",
        embeddings_base_url=running.base_url,
        model_max_retries=0,
        search="azure",
        search_endpoint=origin,
        search_key="search-key",
    )
    running.endpoint.reset()

    report = await diagnose(settings)

    assert [c.outcome for c in report.checks if c.subject == "embeddings"] == ["ok"]
    assert [c.outcome for c in report.checks if c.subject == "search index 'orc-spans'"] == ["fail"]
    assert len(running.endpoint.embedding_requests) == 1


# -- against the emulators ---------------------------------------------------------------------------------------


KEY_PRINCIPAL = {"organization": "acme", "user": "ana"}


def queue_settings(settings: Settings, queue: AzuriteQueue, **changes: object) -> Settings:
    return Settings(
        **{**settings.model_dump(), "jobs": "queue", "queue_connection_string": queue.connection_string, **changes}
    )


async def queues_exist(queue: AzuriteQueue, exist: bool) -> None:
    """Arrange the job queues (fixed names, in this session's Azurite) to exist or not."""
    for name in QUEUES:
        async with QueueClient.from_connection_string(queue.connection_string, name) as client:
            with contextlib.suppress(ResourceExistsError, ResourceNotFoundError):
                await (client.create_queue() if exist else client.delete_queue())


@pytest.fixture
def on_azure(monkeypatch: pytest.MonkeyPatch) -> None:
    """What App Service / Functions set in every app's environment."""
    monkeypatch.setenv("WEBSITE_SITE_NAME", "func-orc")


@pytest.mark.emulator
@pytest.mark.usefixtures("on_azure")
async def test_every_resource_in_place_on_the_emulators_passes_with_write_access(
    azure_settings: Settings, azurite: AzuriteBlob, azurite_queue: AzuriteQueue, cosmos_emulator: CosmosEmulator
) -> None:
    settings = queue_settings(azure_settings, azurite_queue, auth="api-key", api_keys={"k": KEY_PRINCIPAL})
    await create_containers(cosmos_emulator, settings.cosmos_database, set(COSMOS_CONTAINER_NAMES))
    async with ContainerClient.from_connection_string(azurite.connection_string, settings.blob_container) as blob:
        await blob.create_container()
    await queues_exist(azurite_queue, True)

    status, output = await doctor_output(settings)

    assert status == 0, output
    assert f"database {settings.cosmos_database!r} has the 10 containers" in output
    assert "the identity can write and delete items" in output
    assert f"container {settings.blob_container!r} exists" in output
    assert "orc-documents, orc-digests exist" in output


@pytest.mark.emulator
@pytest.mark.usefixtures("on_azure")
async def test_a_missing_container_blob_container_and_queue_are_each_named_with_the_template_entry_to_add(
    azure_settings: Settings, azurite_queue: AzuriteQueue, cosmos_emulator: CosmosEmulator
) -> None:
    settings = queue_settings(azure_settings, azurite_queue, auth="api-key", api_keys={"k": KEY_PRINCIPAL})
    await create_containers(cosmos_emulator, settings.cosmos_database, set(COSMOS_CONTAINER_NAMES) - {"quotas"})
    await queues_exist(azurite_queue, False)

    status, output = await doctor_output(settings)

    assert status == 1
    assert "FAIL  cosmos container 'quotas': is missing" in output
    assert "fix: declare it in infra/main.bicep: an entry in the variable cosmosContainers" in output
    assert f"FAIL  blob container {settings.blob_container!r}: is missing" in output
    assert "FAIL  queue 'orc-documents': is missing" in output
    assert "infra/main.bicep: an entry in the variable queueNames" in output
    assert output.splitlines()[-1] == "4 problem(s) to fix"
    # The doctor created nothing.
    assert (await doctor_output(settings))[1] == output


# -- at Functions start-up ---------------------------------------------------------------------------------------


async def test_a_functions_worker_runs_the_checks_once_and_logs_their_result(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(home=tmp_path)
    diagnosis = StartupDiagnosis(lambda: settings)
    functions = RelayFunctionApp(create_app(settings), on_start=diagnosis.start)
    handler = functions.get_functions()[0].get_user_function()
    try:
        with caplog.at_level(logging.INFO, logger="orc.doctor"):
            for _ in range(3):
                assert (await read(await handler(worker_request("GET", "http://localhost/api/health")))).status == 200
            report = await diagnosis.finished()
    finally:
        await functions.relay.shutdown()

    assert report.ok
    lines = [record.getMessage() for record in caplog.records if record.name == "orc.doctor"]
    assert lines.count("orc doctor: everything orc needs is in place") == 1
    assert "orc doctor: ok storage: embedded: SQLite and local files in ORC_HOME" in lines


def test_function_app_wires_the_diagnosis_into_its_start_up() -> None:
    source = (Path(__file__).resolve().parents[2] / "function_app.py").read_text(encoding="utf-8")

    assert "RelayFunctionApp(create_app(), on_start=diagnosis.start)" in source
    assert source.count("await job_services()") == 4
