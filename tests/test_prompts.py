"""Every prompt file renders with exactly its declared variables, and the context block renders its parts."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from orc.contracts import SourceSpan
from orc.conversations import FocusContext
from orc.graph.context_block import render_context_block
from orc.graph.state import ListedDocument, fresh_turn_input
from orc.models.prompting import format_sources, load_prompt, prompt_names

PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


@pytest.mark.parametrize("name", prompt_names())
def test_every_template_renders_with_its_declared_variables_only(name: str) -> None:
    prompt = load_prompt(name)
    values = {variable: f"<<{variable}>>" for variable in prompt.variables}

    rendered = prompt.render(**values)

    assert prompt.version
    assert all(value in rendered for value in values.values())
    assert not PLACEHOLDER.search(rendered)  # no placeholder left behind (JSON examples keep their braces)
    if prompt.variables:
        with pytest.raises(KeyError):
            prompt.render(**{k: v for k, v in list(values.items())[1:]})
    with pytest.raises(KeyError):
        prompt.render(**values, unexpected="x")


def test_the_manifest_names_every_prompt_file_and_every_sheet() -> None:
    names = {entry.name for entry in resources.files("orc.prompts").iterdir()}
    manifest = json.loads(resources.files("orc.prompts").joinpath("manifest.json").read_text(encoding="utf-8"))
    sheets = {name for name, entry in manifest.items() if entry.get("kind") == "sheet"}

    assert {f"{name}.txt" for name in manifest if name not in sheets} == {n for n in names if n.endswith(".txt")}
    assert {f"{name}.toml" for name in sheets} == {n for n in names if n.endswith(".toml")}


def listed(filename: str, type_: str, id_: str, status: str, origin: str, is_focus: bool = False) -> ListedDocument:
    return ListedDocument(
        filename=filename, context_type=type_, context_id=id_, status=status, origin=origin, is_focus=is_focus
    )


def test_the_context_block_states_focus_history_documents_by_context_and_the_priority_rule() -> None:
    state = fresh_turn_input("q", [], FocusContext(type="usecase", id="u1"))
    state["historical_contexts"] = [FocusContext(type="folder", id="f9"), FocusContext(type="usecase", id="u7")]
    state["available_documents"] = [
        listed("s.txt", "session", "c", "ready", "session"),
        listed("u.pdf", "usecase", "u1", "processing", "focus", is_focus=True),
        listed("o.md", "organization", "acme", "ready", "focus"),
        listed("h.txt", "usecase", "u7", "ready", "historical"),
    ]

    block = render_context_block(state)

    assert "Focus context: usecase u1" in block
    assert "Historical contexts (oldest first): folder f9; usecase u7" in block
    assert "- session (attached to this conversation): s.txt [ready]" in block
    assert "- usecase u1 (the focus): u.pdf [processing]" in block
    assert "- organization acme (included by the focus): o.md [ready]" in block
    assert "- usecase u7 (historical context): h.txt [ready]" in block
    assert "Use a historical context only when" in block


def test_a_turn_with_attached_files_lists_them_without_a_catalog_read() -> None:
    block = render_context_block(fresh_turn_input("q", ["a.pdf", "b.txt"], None))

    assert "Focus context: none" in block and "Historical contexts (oldest first): none" in block
    assert "- session (attached to this question): a.pdf, b.txt" in block


def test_sources_name_the_context_they_came_from() -> None:
    source = SourceSpan(ref="h.txt::S1", document="h.txt", span_id="S1", text="Text.")

    rendered = format_sources([source], {"h.txt::S1": "usecase u7 (historical context)"})

    assert rendered == '<source ref="h.txt::S1" context="usecase u7 (historical context)">\nText.\n</source>'
