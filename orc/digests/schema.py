"""The output invariants of context-digest-spec §5: what a digest must be before it may be stored as ``ready``.

:func:`validate_per_file` (Task A) and :func:`validate_aggregate` (Task B) return the broken rules as short
sentences a model can act on (they are fed back to it once); an empty list means the digest is valid. Rules:

- valid JSON object with ``schema_version`` (string), ``mode``, ``summary`` (string), ``facts`` and
  ``uncertainties`` (arrays); every fact has a non-empty ``claim`` and a non-empty ``sources`` list;
- every ``sources`` entry anywhere in the digest is a SourceRef ``<filename>::<span_id>[::<hint>]`` that names a
  span the caller gave (Task A) or a SourceRef found in the input digests (Task B);
- Task A: ``mode == "single"`` and ``document == {filename, format}`` of the file; Task B: ``mode == "batch"``,
  ``document == {"filename": "__BATCH__", "format": "mixed"}`` and ``batch.files`` naming the manifest's files.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

SCHEMA_VERSION = "context_digest.v1.4.1"
BATCH_FILENAME = "__BATCH__"
BATCH_FORMAT = "mixed"
MAX_REPORTED_ERRORS = 20
_SEPARATOR = "::"
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_SOURCED_LISTS = ("facts", "analyses", "cases")
"""Arrays whose items each need at least one source (uncertainties may name an absence, with no source)."""

Digest = dict[str, Any]


def parse_json_object(text: str) -> tuple[Digest | None, str | None]:
    """The JSON object a model returned, or ``(None, why not)``. A Markdown code fence around it is tolerated."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return None, f"the answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if not isinstance(value, dict):
        return None, "the answer must be one JSON object, not " + type(value).__name__
    return value, None


def canonical_json(digest: Mapping[str, Any]) -> str:
    """The digest as canonical JSON (sorted keys, no spaces): what ``digest_hash`` is computed over."""
    return json.dumps(digest, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_hash(digest: Mapping[str, Any]) -> str:
    """``digest_hash``: sha256 of the canonical JSON of the digest."""
    return hashlib.sha256(canonical_json(digest).encode()).hexdigest()


def iter_sources(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every ``sources`` value anywhere in ``value`` with its JSON path."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "sources":
                yield where, item
            else:
                yield from iter_sources(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_sources(item, f"{path}[{index}]")


def source_refs(digest: Mapping[str, Any]) -> set[str]:
    """Every SourceRef string the digest cites, hints included as written."""
    return {
        ref
        for _, sources in iter_sources(dict(digest))
        if isinstance(sources, list)
        for ref in sources
        if isinstance(ref, str)
    }


def split_ref(ref: str, filenames: Sequence[str]) -> tuple[str, str] | None:
    """``(filename, span_id)`` of a SourceRef naming one of ``filenames`` (longest name first), else ``None``."""
    for filename in sorted(filenames, key=len, reverse=True):
        prefix = filename + _SEPARATOR
        if ref.startswith(prefix):
            span_id = ref[len(prefix) :].split(_SEPARATOR, 1)[0]
            return (filename, span_id) if span_id else None
    return None


def validate_per_file(digest: Any, *, filename: str, fmt: str, span_ids: Sequence[str]) -> list[str]:
    """The rules a Task A digest of ``filename`` breaks, given the span ids it was shown."""
    errors = _common(digest, mode="single")
    if not isinstance(digest, dict):
        return errors
    document = digest.get("document")
    if not isinstance(document, dict) or document.get("filename") != filename or document.get("format") != fmt:
        errors.append(f'"document" must be {{"filename": {json.dumps(filename)}, "format": {json.dumps(fmt)}}}')
    known = set(span_ids)
    shown = _span_range(span_ids)
    for path, ref in _refs(digest, errors):
        parts = split_ref(ref, [filename])
        if parts is None:
            errors.append(f"{path} {json.dumps(ref)} is not a SourceRef of this file ({filename}::<span_id>)")
        elif parts[1] not in known:
            errors.append(f"{path} {json.dumps(ref)} names span {parts[1]}, which was not given ({shown})")
    return errors[:MAX_REPORTED_ERRORS]


def validate_aggregate(digest: Any, *, files: Sequence[tuple[str, str]], allowed_refs: set[str]) -> list[str]:
    """The rules a Task B digest breaks, given the manifest ``(filename, format)`` and the input digests' refs."""
    errors = _common(digest, mode="batch")
    if not isinstance(digest, dict):
        return errors
    document = digest.get("document")
    if not isinstance(document, dict) or (document.get("filename"), document.get("format")) != (
        BATCH_FILENAME,
        BATCH_FORMAT,
    ):
        errors.append(f'"document" must be {{"filename": "{BATCH_FILENAME}", "format": "{BATCH_FORMAT}"}}')
    batch = digest.get("batch")
    listed = batch.get("files") if isinstance(batch, dict) else None
    expected = sorted(name for name, _ in files)
    if (
        not isinstance(listed, list)
        or sorted(str(entry.get("filename")) if isinstance(entry, dict) else "" for entry in listed) != expected
    ):
        errors.append(f'"batch.files" must list exactly the manifest files: {json.dumps(expected)}')
    documents = digest.get("documents")
    if documents is not None and not isinstance(documents, list):
        errors.append('"documents" must be an array when present')
    filenames = [name for name, _ in files]
    allowed = {base for ref in allowed_refs if (base := _base(ref, filenames))}
    for path, ref in _refs(digest, errors):
        base = _base(ref, filenames)
        if base is None:
            errors.append(f"{path} {json.dumps(ref)} names no file of the manifest")
        elif base not in allowed:
            errors.append(f"{path} {json.dumps(ref)} is not cited by any input digest; copy sources, never invent them")
    return errors[:MAX_REPORTED_ERRORS]


def _common(digest: Any, *, mode: str) -> list[str]:
    if not isinstance(digest, dict):
        return ["the answer must be one JSON object"]
    errors: list[str] = []
    for key in ("schema_version", "summary"):
        if not isinstance(digest.get(key), str):
            errors.append(f'"{key}" is required and must be a string')
    if digest.get("mode") != mode:
        errors.append(f'"mode" must be "{mode}"')
    for key in ("facts", "uncertainties"):
        if not isinstance(digest.get(key), list):
            errors.append(f'"{key}" is required and must be an array')
    for key in _SOURCED_LISTS:
        items = digest.get(key)
        if key != "facts" and items is None:
            continue
        if not isinstance(items, list):
            if key != "facts":
                errors.append(f'"{key}" must be an array when present')
            continue
        for index, item in enumerate(items):
            where = f"{key}[{index}]"
            if not isinstance(item, dict):
                errors.append(f"{where} must be an object")
                continue
            claim = item.get("claim")
            if not isinstance(claim, str) or not claim.strip():
                errors.append(f"{where}.claim is required and must be a non-empty string")
            sources = item.get("sources")
            if not isinstance(sources, list) or not sources:
                errors.append(f"{where}.sources must be a non-empty array of SourceRefs")
    return errors


def _refs(digest: Digest, errors: list[str]) -> Iterator[tuple[str, str]]:
    """Every SourceRef with its path; malformed ``sources`` values are reported into ``errors``."""
    for path, sources in iter_sources(digest):
        if not isinstance(sources, list):
            errors.append(f"{path} must be an array of SourceRefs")
            continue
        for index, ref in enumerate(sources):
            if not isinstance(ref, str):
                errors.append(f"{path}[{index}] must be a SourceRef string")
            else:
                yield f"{path}[{index}]", ref


def _base(ref: str, filenames: Sequence[str]) -> str | None:
    parts = split_ref(ref, filenames)
    return f"{parts[0]}{_SEPARATOR}{parts[1]}" if parts else None


def _span_range(span_ids: Sequence[str]) -> str:
    if not span_ids:
        return "no spans were given"
    return f"spans {span_ids[0]}-{span_ids[-1]}" if len(span_ids) > 1 else f"span {span_ids[0]}"


def relabel(digest: Digest, *, old_filename: str, new_filename: str, fmt: str) -> Digest:
    """A per-file digest of the same text as it reads for another file name (its SourceRefs and ``document``).

    The per-file cache is keyed by the text, not the name; a cached digest made for ``report-v1.pdf`` serves
    ``report.pdf`` with identical text once its SourceRefs point at the new name.
    """
    if (
        old_filename == new_filename
        and isinstance(digest.get("document"), dict)
        and digest["document"].get("format") == fmt
    ):
        return digest
    prefix = old_filename + _SEPARATOR

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            if key == "sources":
                return [
                    new_filename + _SEPARATOR + item[len(prefix) :]
                    if isinstance(item, str) and item.startswith(prefix)
                    else item
                    for item in value
                ]
            return [walk(item) for item in value]
        return value

    result: Digest = walk(digest)
    result["document"] = {**(result.get("document") or {}), "filename": new_filename, "format": fmt}
    return result
