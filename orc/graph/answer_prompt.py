"""The answer's system prompt, rendered from the prompt sheet of the turn's interaction mode (prompts/*.sheet.toml).

The code makes each section's content, fenced and escaped as data: the context block (focus, historical
contexts, available documents), what tools returned, the sources (``<sources>``) and what the user supplied
(``<supplied_context>``, with where it came from). The sheet decides their order, headings and wording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

from orc.contracts import SourceSpan
from orc.models.prompting import format_sources
from orc.models.sheets import Mode, SectionName, load_sheet, sheet_name


def answer_system_prompt(
    mode: Mode,
    *,
    sources: Sequence[SourceSpan],
    supplied: Sequence[SourceSpan] = (),
    contexts: str = "",
    tool_answers: str = "",
    digest: str = "",
    file_digests: str = "",
    labels: Mapping[str, str] | None = None,
) -> str:
    """The system prompt of an answer request in ``mode`` (``document``, ``planned`` or ``resumed``)."""
    contents: dict[SectionName, str] = {
        "digest": f"<digest>\n{escape(digest)}\n</digest>" if digest else "",
        "file_digests": f"<file_digests>\n{file_digests}\n</file_digests>" if file_digests else "",
        "contexts": contexts,
        "tool_answers": tool_answers,
        "sources": f"<sources>\n{format_sources(sources, labels)}\n</sources>",
        "supplied": _supplied(supplied),
    }
    return load_sheet(sheet_name(mode)).render_system(contents)


def _supplied(supplied: Sequence[SourceSpan]) -> str:
    if not supplied:
        return ""
    items = []
    for source in supplied:
        origin = f" from={quoteattr(source.document)}"
        items.append(f"<source ref={quoteattr(source.ref)}{origin}>\n{escape(source.text)}\n</source>")
    return "<supplied_context>\n" + "\n".join(items) + "\n</supplied_context>"
