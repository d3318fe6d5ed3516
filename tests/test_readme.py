"""The README is the operator's reference: it opens with the two commands and documents every setting."""

from __future__ import annotations

from pathlib import Path

from orc.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_the_readme_opens_with_the_two_commands() -> None:
    opening = README[: README.index("---")]
    assert "make demo" in opening and "make test" in opening


def test_every_setting_is_documented_by_its_environment_variable() -> None:
    undocumented = [f"ORC_{name.upper()}" for name in Settings.model_fields if f"ORC_{name.upper()}" not in README]
    assert undocumented == []
