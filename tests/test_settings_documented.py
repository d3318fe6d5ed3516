"""Every setting earns its place: one row of the Configuration table (docs/configuration.md, which the README
links), whose default is the setting's own, and at least one test that sets it; a setting that became a constant is
listed under Changes and warned about."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from orc.settings import REMOVED, Settings

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
CONFIGURATION = REFERENCE[: REFERENCE.index("\n## Changes\n")]
CHANGES = REFERENCE[REFERENCE.index("\n## Changes\n") : REFERENCE.index("\n## Limits\n")]
DEPLOYING = (ROOT / "docs" / "deploying-to-azure.md").read_text(encoding="utf-8")
DEFAULT_BY_DESCRIPTION = {"home": "the user data folder", "digest_model": "`ORC_MODEL`"}
"""Defaults computed at start-up, shown as what they are rather than as a value."""


def env_name(field: str) -> str:
    return f"ORC_{field.upper()}"


def shown(value: object) -> str:
    """A default as the table shows it."""
    if value is None or value == [] or value == "":
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict):
        return "{}" if not value else str(value)
    return str(value)


def table_rows() -> dict[str, str]:
    """Each ``ORC_`` name of the Configuration table, with the default its row shows."""
    rows: dict[str, str] = {}
    for line in CONFIGURATION.splitlines():
        if not line.startswith("| `"):
            continue
        names_cell, default_cell = (cell.strip() for cell in line.strip("|").split("|")[:2])
        names = re.findall(r"`([A-Z_]+)`", names_cell)
        defaults = [part.strip() for part in default_cell.split(" / ")] if len(names) > 1 else [default_cell]
        if len(defaults) == 1:
            defaults *= len(names)  # one default shared by the row's names
        assert len(defaults) == len(names), f"one default per name in the row of {names}"
        for name, default in zip(names, defaults, strict=True):
            assert name not in rows, f"{name} has two rows"
            rows[name] = default
    return rows


def test_every_orc_setting_has_exactly_one_row_in_the_configuration_table() -> None:
    settings = {env_name(field) for field in Settings.model_fields}

    assert set(table_rows()) == settings


def test_each_default_the_table_shows_is_the_settings_own() -> None:
    rows = table_rows()
    wrong = {}
    for field, info in Settings.model_fields.items():
        name = env_name(field)
        expected = DEFAULT_BY_DESCRIPTION.get(field) or f"`{shown(info.get_default(call_default_factory=True))}`"
        if rows[name] not in (expected, expected.strip("`")):
            wrong[name] = (rows[name], expected)

    assert wrong == {}


def test_the_platform_variables_orc_reads_are_documented_by_their_own_names_and_are_no_settings() -> None:
    read = re.findall(r"os\.environ\.get\(\"(\w+)\"", (ROOT / "orc" / "hosting.py").read_text(encoding="utf-8"))

    assert read == ["WEBSITE_SITE_NAME", "WEBSITE_AUTH_ENABLED"]
    for name in read:
        assert f"`{name}`" in DEPLOYING and name not in table_rows()


def test_there_are_at_most_60_settings() -> None:
    assert len(Settings.model_fields) <= 60


def test_no_other_table_of_the_docs_restates_a_default() -> None:
    documents = [
        (ROOT / "README.md").read_text(encoding="utf-8"),
        REFERENCE.replace(CONFIGURATION, ""),
        *(path.read_text() for path in (ROOT / "docs").glob("*.md") if path.name != "configuration.md"),
    ]
    restated = [
        line
        for document in documents
        for line in document.splitlines()
        if line.startswith("| `ORC_") and re.search(r"\bdefault\b", line)
    ]

    assert restated == []


def test_every_setting_is_set_by_some_test() -> None:
    # A keyword (`Settings(name=…)`), an environment variable, or a JSON/dict key: a test that turns it.
    tests = "\n".join(
        path.read_text(encoding="utf-8") for path in (ROOT / "tests").rglob("*.py") if path.name != Path(__file__).name
    )
    unset = [
        field
        for field in Settings.model_fields
        if not re.search(rf"\b{field}=|\b{env_name(field)}\b|[\"']{field}[\"']:", tests)
    ]

    assert unset == []


def test_each_removed_setting_is_named_under_changes_and_is_no_setting_any_more() -> None:
    names = {env_name(field) for field in Settings.model_fields}
    for name in REMOVED:
        assert f"`{name}`" in CHANGES
        assert name not in names
        assert name not in CONFIGURATION


def test_a_removed_setting_still_set_is_warned_about_by_name(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ORC_HISTORY_TURNS", "3")

    with caplog.at_level(logging.WARNING, logger="orc.settings"):
        Settings()

    assert any("ORC_HISTORY_TURNS is no longer a setting" in record.getMessage() for record in caplog.records)
    assert not hasattr(Settings(), "history_turns")
