"""Loading and rendering the prompt files in ``prompts/`` (shipped as the ``orc.prompts`` package).

Every prompt has a version in ``prompts/manifest.json``; rendering is strict: a missing or unexpected
variable is an error, so a template and its callers cannot drift apart silently.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from orc.contracts import SourceSpan


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt template with its version and the variables it requires."""

    name: str
    version: str
    template: str
    variables: frozenset[str]

    def render(self, **values: Any) -> str:
        """Fill the template; every declared variable must be given and no other."""
        given = set(values)
        if given != self.variables:
            missing = sorted(self.variables - given)
            extra = sorted(given - self.variables)
            raise KeyError(f"prompt {self.name!r}: missing {missing}, unexpected {extra}")
        return self.template.format(**{key: str(value) for key, value in values.items()})


@lru_cache(maxsize=1)
def _manifest() -> dict[str, dict[str, Any]]:
    data = resources.files("orc.prompts").joinpath("manifest.json").read_text(encoding="utf-8")
    manifest: dict[str, dict[str, Any]] = json.loads(data)
    return manifest


def prompt_names() -> list[str]:
    """Every prompt template the manifest declares (sheets aside)."""
    return sorted(name for name, entry in _manifest().items() if entry.get("kind", "prompt") == "prompt")


def sheet_names() -> list[str]:
    """Every prompt sheet the manifest declares (``answer.document``… without the ``.sheet`` suffix)."""
    return sorted(name.removesuffix(".sheet") for name, entry in _manifest().items() if entry.get("kind") == "sheet")


def prompt_version(name: str) -> str:
    """The version ``prompts/manifest.json`` pins for a prompt or sheet."""
    return str(_manifest()[name]["version"])


@lru_cache(maxsize=64)
def load_prompt(name: str) -> Prompt:
    """Load ``prompts/<name>.txt`` and check its placeholders against the manifest."""
    entry = _manifest()[name]
    template = resources.files("orc.prompts").joinpath(f"{name}.txt").read_text(encoding="utf-8")
    placeholders = {field for _, field, _, _ in string.Formatter().parse(template) if field}
    declared = frozenset(entry["variables"])
    if placeholders != declared:
        raise ValueError(f"prompt {name!r} uses {sorted(placeholders)} but declares {sorted(declared)}")
    return Prompt(name=name, version=str(entry["version"]), template=template, variables=declared)


def format_sources(sources: Iterable[SourceSpan], contexts: Mapping[str, str] | None = None) -> str:
    """The ``<source>`` elements of a sources block; the offline model parses exactly this shape.

    ``contexts`` maps a SourceRef to the context it came from (``folder legal (historical context)``), shown as
    a ``context`` attribute so the model can prefer the focus and name a historical context it uses.
    """
    parts = []
    for source in sources:
        page = f" page={quoteattr(str(source.page))}" if source.page is not None else ""
        label = (contexts or {}).get(source.ref)
        context = f" context={quoteattr(label)}" if label else ""
        section = f" section={quoteattr(source.section)}" if source.section else ""
        parts.append(f"<source ref={quoteattr(source.ref)}{page}{section}{context}>\n{escape(source.text)}\n</source>")
    return "\n".join(parts)
