"""``ORC_PROMPTS_DIR`` changes wording, never what the code fills in, and reads nothing outside its folder: a template
with a placeholder that is not plain, a manifest that changes a prompt's variables, and a link to a file outside
the folder each stop the start with a message naming the file.

Before, each passed the start-up check: ``{documents:>50000000}`` sent a 50 MB prompt on every turn, a manifest
that added a variable (with the template using it) made every turn a 500, and a link to a file outside the folder
was followed and its text sent to the model."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from orc.composition import build_runtime
from orc.errors import ConfigurationError
from orc.models.prompting import load_prompt
from orc.settings import Settings

PLANNING = "tool_planning.system.txt"


def packaged(name: str) -> str:
    return resources.files("orc.prompts").joinpath(name).read_text(encoding="utf-8")


def override(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "override"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


async def refused_start(tmp_path: Path, folder: Path) -> str:
    with pytest.raises(ConfigurationError) as refused:
        async with build_runtime(Settings(home=tmp_path / "home", prompts_dir=str(folder))):
            pytest.fail("started with the override")
    return str(refused.value)


@pytest.mark.parametrize(
    "placeholder",
    ["{context_block:>50000000}", "{context_block!r}", "{context_block.__class__}", "{context_block[0]}"],
)
async def test_a_placeholder_that_is_not_plain_stops_the_start(tmp_path: Path, placeholder: str) -> None:
    template = packaged(PLANNING).replace("{context_block}", placeholder)
    assert template != packaged(PLANNING)

    message = await refused_start(tmp_path, override(tmp_path, {PLANNING: template}))

    assert PLANNING in message and "only plain placeholders" in message


async def test_a_positional_placeholder_stops_the_start(tmp_path: Path) -> None:
    template = packaged(PLANNING) + "\nAlso: {}\n"

    message = await refused_start(tmp_path, override(tmp_path, {PLANNING: template}))

    assert PLANNING in message and "only plain placeholders" in message


async def test_a_manifest_that_adds_a_variable_its_template_uses_stops_the_start(tmp_path: Path) -> None:
    manifest = json.loads(packaged("manifest.json"))
    manifest["tool_planning.system"]["variables"] = ["context_block", "secrets"]
    files = {"manifest.json": json.dumps(manifest), PLANNING: packaged(PLANNING) + "\n{secrets}\n"}

    message = await refused_start(tmp_path, override(tmp_path, files))

    assert "manifest.json" in message and "'tool_planning.system'" in message and "wording and version" in message


async def test_a_manifest_that_only_changes_versions_starts(tmp_path: Path) -> None:
    manifest = json.loads(packaged("manifest.json"))
    manifest["tool_planning.system"]["version"] = "4"
    folder = override(tmp_path, {"manifest.json": json.dumps(manifest)})

    async with build_runtime(Settings(home=tmp_path / "home", prompts_dir=str(folder))):
        pass


async def test_a_link_to_a_file_outside_the_folder_stops_the_start(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("The database password is hunter2. {context_block}", encoding="utf-8")
    folder = override(tmp_path, {})
    (folder / PLANNING).symlink_to(outside)

    message = await refused_start(tmp_path, folder)

    assert re.search(rf"{re.escape(PLANNING)} is a link to .*outside ORC_PROMPTS_DIR", message)


async def test_a_link_inside_the_folder_and_a_linked_folder_are_read(tmp_path: Path) -> None:
    real = override(tmp_path, {".planning": packaged(PLANNING) + "\nBe brief.\n"})  # hidden: not a prompt itself
    (real / PLANNING).symlink_to(real / ".planning")
    mounted = tmp_path / "mounted"
    mounted.symlink_to(real, target_is_directory=True)  # as a mounted share may be

    async with build_runtime(Settings(home=tmp_path / "home", prompts_dir=str(mounted))):
        in_force = load_prompt("tool_planning.system").template

    assert in_force.endswith("Be brief.\n")
