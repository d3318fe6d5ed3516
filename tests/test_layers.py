"""The import contracts in pyproject.toml keep the layers of DESIGN.md §8, and they fail when an import points up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(project: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    """Run ``lint-imports`` on the packages found first on the path from ``project``."""
    selected = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--no-logo", *selected],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_import_contracts_hold_for_the_product() -> None:
    result = lint_imports(ROOT)

    assert result.returncode == 0, result.stdout


def test_a_storage_module_that_imports_the_http_layer_breaks_the_layers_contract(tmp_path: Path) -> None:
    for package in ("orc", "mcp_server"):
        shutil.copytree(ROOT / package, tmp_path / package, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    ports = tmp_path / "orc" / "storage" / "ports.py"
    ports.write_text(ports.read_text(encoding="utf-8") + "\nfrom orc.http import app as _app  # noqa\n")

    result = lint_imports(tmp_path, "layers")

    assert result.returncode != 0
    assert "orc.storage.ports -> orc.http" in result.stdout
