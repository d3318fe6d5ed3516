"""Loading and rendering the prompt files in ``prompts/`` (shipped as the ``orc.prompts`` package).

Every prompt has a version in ``prompts/manifest.json``; rendering is strict: a missing or unexpected
variable is an error, so a template and its callers cannot drift apart silently. ``ORC_PROMPTS_DIR`` may replace
any of these files (manifest included) at start-up: :func:`override_prompts` builds that set and
:func:`use_prompts` puts it in force.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from orc.contracts import SourceSpan
from orc.errors import PromptFileError

_NEEDS_QUOTING = re.compile(r'[<>&"\\]|^\s|\s$')


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


PACKAGE = "orc.prompts"
MANIFEST = "manifest.json"


@dataclass(frozen=True, eq=False)
class PromptSet:
    """The prompt files in force: ``manifest.json`` and every prompt and sheet file, by file name.

    The packaged set comes from the ``orc.prompts`` package; an override (``ORC_PROMPTS_DIR``) replaces some of
    its files. A file whose text differs from the packaged one gets an effective version ``<version>+<hash>``,
    so every digest cache key made with it changes even when the override kept the manifest's version.
    Compared by identity: a set is made once at start-up and caches what is loaded from it.
    """

    files: Mapping[str, str]
    origin: str = "packaged"
    """Where the overriding files came from (a folder or a blob prefix), for error messages."""
    provided: frozenset[str] = frozenset()
    """The files the override provided."""
    changed: frozenset[str] = frozenset()
    """The provided files whose text differs from the packaged ones."""

    @cached_property
    def manifest(self) -> dict[str, dict[str, Any]]:
        """The manifest: prompt or sheet name → its version, variables and kind."""
        try:
            manifest = json.loads(self.files[MANIFEST])
        except (KeyError, json.JSONDecodeError) as exc:
            raise bad_file(self, MANIFEST, f"is not valid JSON ({exc})") from None
        if not isinstance(manifest, dict) or not all(isinstance(v, dict) for v in manifest.values()):
            raise bad_file(self, MANIFEST, "must map each prompt name to an object")
        return manifest

    def file_of(self, name: str) -> str:
        """The file of a manifest entry: ``<name>.txt`` for a prompt, ``<name>.toml`` for a sheet."""
        entry = self.manifest.get(name)
        if entry is None:
            raise KeyError(f"the manifest declares no prompt {name!r}")
        return f"{name}.toml" if entry.get("kind") == "sheet" else f"{name}.txt"

    def text(self, name: str) -> str:
        """The text of the file of manifest entry ``name``."""
        file = self.file_of(name)
        if file not in self.files:
            raise bad_file(self, file, "is declared in the manifest but missing")
        return self.files[file]

    def version(self, name: str) -> str:
        """The effective version of a prompt or sheet: the manifest's, plus a hash of an overriding text."""
        version = str(self.manifest[name]["version"])
        file = self.file_of(name)
        if file in self.changed:
            version += "+" + hashlib.sha256(self.files[file].encode()).hexdigest()[:8]
        return version

    def where(self, file: str) -> str:
        """Where ``file`` came from, for a message that names it."""
        if file in self.provided:
            return f"{self.origin}/{file}"
        return f"{file} (packaged)" if self.provided else file


def bad_file(prompts: PromptSet, file: str, problem: str) -> PromptFileError:
    """The error for ``file`` of ``prompts``, named where it came from."""
    return PromptFileError(f"prompt file {prompts.where(file)} {problem}", file=file)


@lru_cache(maxsize=1)
def packaged_prompts() -> PromptSet:
    """The prompt files shipped in the package."""
    folder = resources.files(PACKAGE)
    files = {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith((".txt", ".toml")) or entry.name == MANIFEST
    }
    return PromptSet(files)


def override_prompts(files: Mapping[str, str], origin: str) -> PromptSet:
    """The packaged prompts with ``files`` (file name → text) replacing theirs; a name the package does not have is
    an error naming it. Check the result with :func:`orc.models.sheets.check_prompts` before using it."""
    packaged = packaged_prompts()
    overriding = PromptSet(packaged.files, origin, frozenset(files))
    # An override may not add files: a misspelt name would otherwise be ignored without a word.
    for name in files:
        if name not in packaged.files:
            raise bad_file(overriding, name, f"is not one of orc's prompt files ({', '.join(sorted(packaged.files))})")
    changed = frozenset(name for name, text in files.items() if text != packaged.files[name])
    return PromptSet({**packaged.files, **files}, origin, frozenset(files), changed)


_active: PromptSet | None = None
"""The prompt set in force (None: the packaged one). Prompts are process-wide configuration, like the package
files they replace: the composition root installs an override once at start-up and restores the previous set when
its runtime closes."""


def active_prompts() -> PromptSet:
    """The prompt set in force."""
    return _active if _active is not None else packaged_prompts()


def use_prompts(prompts: PromptSet | None) -> PromptSet | None:
    """Put ``prompts`` in force (None: the packaged ones); returns the set it replaces, to restore it later."""
    global _active
    previous, _active = _active, prompts
    return previous


def restore_prompts(installed: PromptSet, previous: PromptSet | None) -> None:
    """Put ``previous`` back in force, unless another set replaced ``installed`` meanwhile (a runtime that started
    later keeps the prompts it installed when an earlier one closes)."""
    if _active is installed:
        use_prompts(previous)


def prompt_names() -> list[str]:
    """Every prompt template the manifest declares (sheets aside)."""
    manifest = active_prompts().manifest
    return sorted(name for name, entry in manifest.items() if entry.get("kind", "prompt") == "prompt")


def prompt_version(name: str) -> str:
    """The effective version of a prompt or sheet (see :meth:`PromptSet.version`)."""
    return active_prompts().version(name)


def load_prompt(name: str) -> Prompt:
    """Load ``prompts/<name>.txt`` (from the set in force) and check its placeholders against the manifest."""
    return prompt_from(active_prompts(), name)


@lru_cache(maxsize=128)
def prompt_from(prompts: PromptSet, name: str) -> Prompt:
    """Prompt ``name`` of ``prompts``, checked against its manifest."""
    entry = prompts.manifest[name]
    template = prompts.text(name)
    try:
        placeholders = {field for _, field, _, _ in string.Formatter().parse(template) if field}
    except ValueError as exc:  # an unbalanced brace
        raise bad_file(prompts, prompts.file_of(name), f"is not a valid template ({exc})") from None
    declared = frozenset(entry.get("variables", []))
    if placeholders != declared:
        raise bad_file(
            prompts, prompts.file_of(name), f"uses {sorted(placeholders)} but the manifest declares {sorted(declared)}"
        )
    return Prompt(name=name, version=prompts.version(name), template=template, variables=declared)


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


def quoted_name(name: str) -> str:
    """``name`` as the envelope shows it: as it is, or — when it holds a markup or quoting character — as a JSON
    string without one (``"x \\u003csystem\\u003e.md"``)."""
    if not _NEEDS_QUOTING.search(name):
        return name
    return markup_safe_json(json.dumps(name, ensure_ascii=False))


def unquoted_name(shown: str) -> str:
    """The file name an envelope line shows (the inverse of :func:`quoted_name`)."""
    if shown.startswith('"'):
        try:
            value = json.loads(shown)
        except ValueError:
            return shown
        return value if isinstance(value, str) else shown
    return shown


def markup_safe_json(encoded_json: str) -> str:
    """JSON text with ``<``, ``>`` and ``&`` written as ``\\u`` escapes: the same value, no markup character."""
    # In JSON text these characters occur only inside strings, where their \u escapes mean the same.
    return encoded_json.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
