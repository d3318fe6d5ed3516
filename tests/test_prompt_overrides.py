"""ORC_PROMPTS_DIR: prompt files replaced at start-up without a redeploy — from a folder or a blob prefix — checked
against the manifest, with their effective version in every digest cache key; a broken one stops the start."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob.aio import ContainerClient
from langchain_core.messages import BaseMessage

from orc.composition import Stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.errors import ConfigurationError
from orc.models.sheets import load_sheet
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest
from tests.digests.support import digest_model
from tests.emulators import AzuriteBlob

LEASE = Upload("lease.txt", b"The monthly rent is 1,450 euros, payable on the first day of each month.")
SHEET = "answer.document.sheet.toml"
PER_FILE = "context_preprocess_per_file.system.txt"


def packaged(name: str) -> str:
    return resources.files("orc.prompts").joinpath(name).read_text(encoding="utf-8")


def folder_with(tmp_path: Path, **files: str) -> Path:
    """An override folder holding ``files`` (keyword names use ``__`` for dots)."""
    folder = tmp_path / "prompts-override"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text, encoding="utf-8")
    return folder


def renamed_sources_heading() -> str:
    return packaged(SHEET).replace('heading = "Sources"', 'heading = "Evidence you may cite"')


def system_prompts(model: FunctionChatModel) -> list[str]:
    return [
        str(m.content) for r in model.requests for m in r.messages if isinstance(m, BaseMessage) and m.type == "system"
    ]


async def test_an_override_changes_the_rendered_answer_prompt_and_only_while_its_runtime_runs(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, answer__document__sheet__toml=renamed_sources_heading())
    model = FunctionChatModel(lambda messages, tools: "The rent is 1,450 euros.")

    async with build_runtime(Settings(home=tmp_path / "home", prompts_dir=str(folder)), model=model) as services:
        await services.foundation.session_files.add(LOCAL_PRINCIPAL, "c1", [LEASE])
        await services.orchestrator.ask(
            TurnRequest(question="What is the rent?", conversation_id="c1", blob_names=["lease.txt"])
        )
        in_force = load_sheet("answer.document")

    assert any("## Evidence you may cite" in prompt for prompt in system_prompts(model))
    assert not any("## Sources" in prompt for prompt in system_prompts(model))
    # The manifest's version, and a hash of the changed text.
    assert in_force.version.startswith(f"{load_sheet('answer.document').version}+")
    assert load_sheet("answer.document").section("sources").heading == "Sources"  # type: ignore[union-attr]


async def digest_of_lease(settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """The lease's catalog record once digested under ``settings``, and the Task A system prompts sent."""
    stores = Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())
    model = digest_model()
    async with build_runtime(settings, stores=stores, digest_model=model) as runtime:
        await runtime.foundation.session_files.add(LOCAL_PRINCIPAL, "s", [LEASE])
        assert await runtime.documents.digests.wait_idle(LOCAL_PRINCIPAL, "s", 120)
        catalog = await stores.collections.collection("catalog")
        (record,) = await catalog.query(LOCAL_PRINCIPAL.partition_key, id_prefix="sf:s:")
    return record.body, system_prompts(model)


async def test_an_override_of_the_digest_prompt_changes_the_digest_cache_key(tmp_path: Path) -> None:
    changed = packaged(PER_FILE) + "\nKeep every fact under 20 words.\n"
    folder = folder_with(tmp_path, context_preprocess_per_file__system__txt=changed)

    before, _ = await digest_of_lease(Settings(home=tmp_path / "a"))
    after, prompts = await digest_of_lease(Settings(home=tmp_path / "b", prompts_dir=str(folder)))

    assert before["digest_status"] == after["digest_status"] == "ready"
    assert before["prompt_version"] == "v1.4"
    assert after["prompt_version"] != before["prompt_version"] and after["prompt_version"].startswith("v1.4+")
    assert after["digest_key"] != before["digest_key"]
    assert any("Keep every fact under 20 words." in prompt for prompt in prompts)


async def test_an_override_identical_to_the_packaged_files_keeps_every_version(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, context_preprocess_per_file__system__txt=packaged(PER_FILE))

    record, _ = await digest_of_lease(Settings(home=tmp_path / "a", prompts_dir=str(folder)))

    assert record["prompt_version"] == "v1.4"


def broken_manifest() -> str:
    manifest = json.loads(packaged("manifest.json"))
    manifest["tool_planning.system"]["variables"] = ["context_block", "secrets"]
    return json.dumps(manifest)


@pytest.mark.parametrize(
    ("files", "file", "problem"),
    [
        ({SHEET: packaged(SHEET).replace('name = "sources"', 'name = "secrets"')}, SHEET, "unknown section 'secrets'"),
        (
            {SHEET: packaged(SHEET).replace('[[sections]]\nname = "sources"', '[[sections]]\nname = "history"')},
            SHEET,
            "twice",
        ),
        ({PER_FILE: packaged(PER_FILE) + "\nUse {secret}.\n"}, PER_FILE, "declares"),
        ({"answer.instructons.txt": "typo"}, "answer.instructons.txt", "is not one of orc's prompt files"),
        ({"manifest.json": "{not json"}, "manifest.json", "is not valid JSON"),
        ({"manifest.json": broken_manifest()}, "tool_planning.system.txt", "declares ['context_block', 'secrets']"),
    ],
)
async def test_a_broken_override_stops_start_up_naming_its_file(
    tmp_path: Path, files: dict[str, str], file: str, problem: str
) -> None:
    folder = tmp_path / "override"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")

    with pytest.raises(ConfigurationError, match=re.escape(problem)) as refused:
        async with build_runtime(Settings(home=tmp_path / "home", prompts_dir=str(folder))):
            pytest.fail("started with a broken prompt override")

    assert file in str(refused.value)
    assert load_sheet("answer.document").section("sources") is not None  # the packaged prompts stayed in force


async def test_a_missing_override_folder_stops_start_up(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="is not a folder"):
        async with build_runtime(Settings(home=tmp_path, prompts_dir=str(tmp_path / "nowhere"))):
            pytest.fail("started without its prompt folder")


@pytest.mark.emulator
async def test_an_override_under_a_blob_prefix_is_read_at_start_up(
    azure_settings: Settings, azurite: AzuriteBlob
) -> None:
    async with ContainerClient.from_connection_string(azurite.connection_string, "prompts") as container:
        if not await container.exists():
            await container.create_container()
        await container.upload_blob(f"team-a/{SHEET}", renamed_sources_heading().encode(), overwrite=True)
        await container.upload_blob("team-a/drafts/ignored.txt", b"not read: a sub-folder", overwrite=True)
    settings = Settings(**{**azure_settings.model_dump(), "prompts_dir": "blob://prompts/team-a/"})

    async with build_runtime(settings):
        sheet = load_sheet("answer.document")

    assert sheet.section("sources").heading == "Evidence you may cite"  # type: ignore[union-attr]
