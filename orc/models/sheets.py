"""Prompt sheets: files in ``prompts/`` that define the order and wording of a prompt's sections.

context-handoff-plan §4.1.5: the answer prompt is rendered by filling a sheet, not from strings in code, so its
wording and the order of its sections change without a release. One sheet per interaction mode
(``answer.document``, ``answer.planned``, ``answer.resumed``); each is a TOML file::

    version = "1"
    instructions = "answer.instructions"  # a prompt file with the rules, rendered first

    [[sections]]
    name = "sources"                   # one of SECTION_NAMES: what the code fills in
    heading = "Sources"                # the section's title in the prompt
    wording = "Cite these by ref."     # optional lines under the title

The code supplies each section's *content* (already fenced and escaped as data); the sheet decides whether it
appears, where, and what it is called. A section with no content this turn is left out. ``history`` and
``question`` are the chat messages that follow the system prompt: a sheet lists them last, in that order, and
may only word them, because chat models take the conversation as messages, not as text.

Loading is strict, like :func:`orc.models.prompting.load_prompt`: an unknown section, a section listed twice, a
sheet without ``sources`` or ``question``, or a version that differs from ``prompts/manifest.json`` is an error
at load time naming the file, never a silently different prompt. :func:`check_prompts` loads every prompt and
sheet of a set (an ``ORC_PROMPTS_DIR`` override) this way at start-up, so a broken override stops the start.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, get_args

from orc.models.prompting import (
    MANIFEST,
    Prompt,
    PromptSet,
    active_prompts,
    bad_file,
    packaged_prompts,
    prompt_from,
)

SectionName = Literal[
    "digest", "file_digests", "contexts", "tool_answers", "sources", "supplied", "history", "question"
]
"""What a sheet can place: the session's aggregate digest, the digests of the files a question asks to summarize,
the focus and historical contexts with their documents, what tools concluded, the retrieved sources, the context a
user supplied, the recent history, the latest input."""
SECTION_NAMES: tuple[str, ...] = get_args(SectionName)
MESSAGE_SECTIONS = ("history", "question")
"""Sections that are chat messages after the system prompt, in this order."""
Mode = Literal["document", "planned", "resumed"]
"""The interaction modes that have a sheet: a turn over documents, one a model planned with tools, one resumed
after the user supplied context."""


@dataclass(frozen=True, slots=True)
class Section:
    """One section of a sheet: what fills it, its title and the wording under it."""

    name: SectionName
    heading: str
    wording: str


@dataclass(frozen=True, slots=True)
class Sheet:
    """A loaded prompt sheet: the rules prompt, then the system sections in order, then the message sections."""

    name: str
    version: str
    instructions: Prompt
    sections: tuple[Section, ...]

    @property
    def system_sections(self) -> tuple[Section, ...]:
        """The sections rendered into the system prompt, in the sheet's order."""
        return tuple(section for section in self.sections if section.name not in MESSAGE_SECTIONS)

    def section(self, name: SectionName) -> Section | None:
        """The sheet's section ``name``, if it places one."""
        return next((section for section in self.sections if section.name == name), None)

    def render_system(self, contents: Mapping[SectionName, str]) -> str:
        """The system prompt: the rules, then each section that has content, with its heading and wording.

        ``contents`` holds each section's body, already fenced and escaped by the code that made it; a missing
        or blank body leaves the section out (no digest yet, nothing supplied).
        """
        parts = [self.instructions.render().strip()]
        for section in self.system_sections:
            body = (contents.get(section.name) or "").strip()
            if not body:
                continue
            lines = [f"## {section.heading}"]
            if section.wording:
                lines.append(section.wording)
            lines.append(body)
            parts.append("\n".join(lines))
        return "\n\n".join(parts) + "\n"


def sheet_name(mode: Mode) -> str:
    """The sheet of an interaction mode (``answer.document``…)."""
    return f"answer.{mode}"


def load_sheet(name: str) -> Sheet:
    """Load ``prompts/<name>.sheet.toml`` (from the prompt set in force) and check it (see the module's rules)."""
    return sheet_from(active_prompts(), name)


@lru_cache(maxsize=32)
def sheet_from(prompts: PromptSet, name: str) -> Sheet:
    """Sheet ``name`` of ``prompts``, checked; a broken one is a :class:`PromptFileError` naming its file."""
    try:
        return _parse(prompts, name)
    except ValueError as exc:  # tomllib's decode errors are ValueErrors too
        raise bad_file(prompts, f"{name}.sheet.toml", str(exc)) from None


def check_prompts(prompts: PromptSet) -> None:
    """Load every prompt and sheet of ``prompts`` (before it is put in force): the first broken file raises
    :class:`PromptFileError` naming it. A manifest must keep every entry the code uses."""
    dropped = sorted(set(packaged_prompts().manifest) - set(prompts.manifest))
    if dropped:
        raise bad_file(prompts, MANIFEST, f"lacks the entries orc uses: {', '.join(dropped)}")
    for name, entry in prompts.manifest.items():
        if entry.get("kind") == "sheet":
            sheet_from(prompts, name.removesuffix(".sheet"))
        else:
            prompt_from(prompts, name)


def _parse(prompts: PromptSet, name: str) -> Sheet:
    data = tomllib.loads(prompts.text(f"{name}.sheet"))
    version = str(data.get("version", ""))
    pinned = str(prompts.manifest[f"{name}.sheet"]["version"])
    if version != pinned:
        raise ValueError(f"sheet {name!r} is version {version!r} but the manifest pins {pinned!r}")
    instructions_name = str(data.get("instructions", ""))
    if prompts.manifest.get(instructions_name, {}).get("kind", "prompt") != "prompt":
        raise ValueError(f"sheet {name!r}: its instructions {instructions_name!r} are not a prompt of the manifest")
    instructions = prompt_from(prompts, instructions_name)
    if instructions.variables:
        raise ValueError(f"sheet {name!r}: its instructions {instructions.name!r} must take no variables")
    sections = tuple(_section(name, item) for item in data.get("sections", []))
    names = [section.name for section in sections]
    if len(set(names)) != len(names):
        raise ValueError(f"sheet {name!r} lists a section twice: {names}")
    for required in ("sources", "question"):
        if required not in names:
            raise ValueError(f"sheet {name!r} must place the {required!r} section")
    messages = [section for section in MESSAGE_SECTIONS if section in names]
    if names[len(names) - len(messages) :] != messages:
        raise ValueError(f"sheet {name!r}: 'history' and 'question' come last, in that order")
    return Sheet(name=name, version=prompts.version(f"{name}.sheet"), instructions=instructions, sections=sections)


def _section(sheet: str, item: object) -> Section:
    if not isinstance(item, dict):
        raise ValueError(f"sheet {sheet!r}: each [[sections]] entry is a table")
    name = item.get("name")
    if name not in SECTION_NAMES:
        raise ValueError(f"sheet {sheet!r}: unknown section {name!r} (known: {', '.join(SECTION_NAMES)})")
    unknown = set(item) - {"name", "heading", "wording"}
    if unknown:
        raise ValueError(f"sheet {sheet!r}: section {name!r} has unknown keys {sorted(unknown)}")
    heading = str(item.get("heading", "")).strip()
    if not heading and name not in MESSAGE_SECTIONS:
        raise ValueError(f"sheet {sheet!r}: section {name!r} needs a heading")
    return Section(name=name, heading=heading, wording=str(item.get("wording", "")).strip())
