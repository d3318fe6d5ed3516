"""Deployment files agree with the code: requirements.txt with pyproject.toml, the Bicep template with the
settings model and the roles docs/deploying-to-azure.md lists (bicep and az are not installed here: the template
is read as text)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from orc.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
BICEP = (ROOT / "infra" / "main.bicep").read_text(encoding="utf-8")
DEPLOYING = (ROOT / "docs" / "deploying-to-azure.md").read_text(encoding="utf-8")
ROLE_NAMES = {
    "00000000-0000-0000-0000-000000000002": "Cosmos DB Built-in Data Contributor",
    "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
    "974c5e8b-45b9-4653-ba55-5f855dd0fb88": "Storage Queue Data Contributor",
    "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd": "Cognitive Services OpenAI User",
    "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
    "8ebe5a00-799e-43f5-93ac-243d3dce84a7": "Search Index Data Contributor",
    "7ca78c08-252a-4471-8644-bb5ff32d4ba0": "Search Service Contributor",
}


def pinned_requirements() -> dict[str, tuple[str, list[str]]]:
    """requirements.txt as name -> (pinned version, what it is required via)."""
    pins: dict[str, tuple[str, list[str]]] = {}
    current = ""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            requirement = Requirement(line.split(" ;")[0].strip())
            current = canonicalize_name(requirement.name)
            pins[current] = (str(requirement.specifier).removeprefix("=="), [])
        elif line.strip().startswith("#") and current and "via" not in line:
            pins[current][1].append(line.strip("# ").strip())
        elif line.strip().startswith("# via ") and current:
            pins[current][1].append(line.strip().removeprefix("# via ").strip())
    return pins


def project_dependencies() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(line) for line in project["dependencies"]]


def test_requirements_pin_exactly_the_projects_direct_dependencies() -> None:
    pins = pinned_requirements()
    direct = {name for name, (_, via) in pins.items() if "orc (pyproject.toml)" in via}

    assert direct == {canonicalize_name(dependency.name) for dependency in project_dependencies()}, (
        "requirements.txt is stale: run `make requirements`"
    )


def test_every_pin_satisfies_the_projects_version_range() -> None:
    pins = pinned_requirements()
    outside = [
        f"{dependency} (pinned {pins[canonicalize_name(dependency.name)][0]})"
        for dependency in project_dependencies()
        if pins[canonicalize_name(dependency.name)][0] not in dependency.specifier
    ]
    assert not outside, f"requirements.txt is stale, run `make requirements`: {outside}"


def test_every_orc_setting_the_template_sets_exists_in_the_settings_model() -> None:
    set_by_template = set(re.findall(r"name: '(ORC_[A-Z_]+)'", BICEP))
    known = {f"ORC_{name.upper()}" for name in Settings.model_fields}

    assert set_by_template, "the template sets no ORC_ settings"
    assert set_by_template <= known, set_by_template - known


def test_the_template_sets_the_settings_the_guide_requires_on_azure() -> None:
    for name in ("ORC_STORAGE", "ORC_COSMOS_ENDPOINT", "ORC_BLOB_ACCOUNT_URL", "ORC_MODEL", "ORC_AUTH"):
        assert f"name: '{name}'" in BICEP
    for name in ("PYTHON_ENABLE_INIT_INDEXING", "AZURE_CLIENT_ID", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"):
        assert f"name: '{name}'" in BICEP


def test_orcs_identity_gets_exactly_the_roles_the_guide_lists() -> None:
    section = DEPLOYING[DEPLOYING.index("### Identity and roles") : DEPLOYING.index("### Data layout")]
    listed = set(re.findall(r"^- \*\*(.+?)\*\*", section, flags=re.MULTILINE))
    # Each role assignment names its role definition variable and its principal; orc's is `identity`.
    assignments = re.findall(
        r"roleDefinitionId: [^\n]*?(\w+)[)}]?'?\n\s+principalId: (\w+)\.(?:properties\.|identity\.)principalId", BICEP
    )
    role_ids = dict(re.findall(r"var (\w+) = '([0-9a-f-]{36})'", BICEP))
    assigned_to_orc = {ROLE_NAMES[role_ids[role]] for role, principal in assignments if principal == "identity"}

    # orc's five, the host's blob and queue roles, and the deployment script's Search Service Contributor.
    assert len(assignments) == 8
    assert (
        assigned_to_orc
        == listed
        == {
            "Cosmos DB Built-in Data Contributor",
            "Storage Blob Data Contributor",
            "Storage Queue Data Contributor",
            "Cognitive Services OpenAI User",
            "Search Index Data Contributor",
        }
    )


def test_the_template_provisions_the_services_orc_runs_on() -> None:
    assert "'FlexConsumption'" in BICEP and "'EnableServerless'" in BICEP and "kind: 'OpenAI'" in BICEP
    assert "Microsoft.Storage/storageAccounts/queueServices/queues" in BICEP
    assert "Microsoft.Insights/components" in BICEP
    assert "Microsoft.ManagedIdentity/userAssignedIdentities" in BICEP
    assert "Microsoft.Search/searchServices" in BICEP


def test_a_publish_leaves_out_environments_tests_and_caches() -> None:
    ignored = set((ROOT / ".funcignore").read_text().split())
    assert {".venv/", "node_modules/", "tests/", "bench/", ".orc/", "tools/", "docs/", ".mypy_cache/"} <= ignored
    assert "local.settings.json" in (ROOT / ".gitignore").read_text().split()


def test_the_container_serves_as_a_non_root_user_on_all_interfaces() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^USER (?!root)\w+", dockerfile, flags=re.MULTILINE)
    assert '"orc", "serve", "--host", "0.0.0.0"' in dockerfile
