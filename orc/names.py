"""Validation of the names that become storage paths, and the one resolver that builds those paths.

Names are rejected, never repaired: a repaired name could silently address another file.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from orc.errors import InvalidName
from orc.output_policy import OutputPolicy

MAX_NAME_BYTES = 1024
MAX_SEGMENT_BYTES = 255
"""The longest file or folder name file systems accept (ext4, NTFS, APFS): a longer segment cannot be stored."""
_IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_AS_SENT = OutputPolicy()
"""The strictest output policy (no image host allowed): a name it would change is refused, so every response can
carry a stored name exactly as it was given (a client sends it back to address the file)."""


_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"{port}{n}" for port in ("com", "lpt") for n in [*"123456789", "¹", "²", "³"]}
)
"""Names Windows gives to devices, with any extension (``CON``, ``nul.txt``): on a local folder such a file or
folder cannot be made, or is the device itself."""


def _is_windows_device(segment: str) -> bool:
    return segment.split(".", 1)[0].rstrip(" ").lower() in _WINDOWS_DEVICES


def validate_identifier(value: str, *, what: str) -> str:
    """Check an id that becomes one path segment (organization, user, conversation, context id)."""
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value) or value in {".", ".."}:
        raise InvalidName(
            f"{what} id must be 1-128 characters of letters, digits, '_', '-', '.', '@' and start with a "
            "letter or digit"
        )
    if value.endswith("."):
        # Windows drops a trailing dot: "x." and "x" would be one folder on a local store there.
        raise InvalidName(f"{what} id must not end with '.'")
    if _is_windows_device(value):
        raise InvalidName(f"{what} id must not be a Windows device name (CON, NUL, COM1...)")
    return value


def validate_blob_name(name: str) -> str:
    """Return ``name`` when it is a safe relative file name inside a conversation; raise :class:`InvalidName`.

    A blob name may contain ``/`` (sub-folders) but no segment may be empty, ``.`` or ``..``.
    """
    if not isinstance(name, str):
        raise InvalidName("blob name must be a string")
    return _checked_blob_name(name)


@lru_cache(maxsize=4096)
def _checked_blob_name(name: str) -> str:
    # A turn checks the same few names several times (request, session files, document_chat, paths); only valid
    # names are remembered, since a raised InvalidName is never cached.
    if not name:
        raise InvalidName("blob name must not be empty")
    # Before anything encodes it: a lone surrogate (JSON allows "\ud800") cannot be encoded as UTF-8.
    if any(unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"} for ch in name):
        raise InvalidName("blob name contains control or invisible characters")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidName(f"blob name is longer than {MAX_NAME_BYTES} bytes")
    if unicodedata.normalize("NFKC", name) != name:
        # Full-width dots and slashes (．／) and other compatibility forms fold into path syntax.
        raise InvalidName("blob name contains compatibility (look-alike) characters")
    if "\\" in name:
        raise InvalidName("blob name must not contain a backslash")
    if _PERCENT_ESCAPE.search(name):
        raise InvalidName("blob name must not contain percent-encoded characters")
    if _URL.match(name) or name.startswith("//"):
        raise InvalidName("blob name must be a file name, not a URL")
    if name.startswith("/"):
        raise InvalidName("blob name must be relative (no leading '/')")
    if _AS_SENT.text(name) != name:
        raise InvalidName("blob name must not contain markup or links (an HTML tag, or [text](address))")
    for segment in name.split("/"):
        if segment == "":
            raise InvalidName("blob name has an empty path segment")
        if segment in {".", ".."}:
            raise InvalidName("blob name must not contain '.' or '..' segments")
        if segment != segment.strip():
            raise InvalidName("blob name segments must not start or end with white space")
        if segment.endswith("."):
            # Windows drops a trailing dot: "report." and "report" would be one file there.
            raise InvalidName("blob name segments must not end with '.'")
        if _is_windows_device(segment):
            raise InvalidName("blob name segments must not be Windows device names (CON, NUL, COM1...)")
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise InvalidName(f"each part of a blob name must be at most {MAX_SEGMENT_BYTES} bytes")
    return name


def folder_conflicts(new: Iterable[str], existing: Iterable[str]) -> list[str]:
    """The names of ``new`` that would be both a file and a folder with the others (``dir`` beside
    ``dir/f.md``): a folder-based store cannot hold both, so they are refused on every backend alike."""
    names = list(new)
    everything = set(names) | set(existing)
    folders = {name.rsplit("/", 1)[0] for name in everything if "/" in name}
    parents: set[str] = set()
    for folder in folders:
        parts = folder.split("/")
        parents.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    conflicting = []
    for name in names:
        under_a_file = any(name.startswith(other + "/") for other in everything if other != name)
        if name in parents or under_a_file:
            conflicting.append(name)
    return conflicting


def normalize_blob_names(names: Iterable[str]) -> list[str]:
    """Strip, drop duplicates (keeping the first) and validate; order is kept for display."""
    seen: set[str] = set()
    result: list[str] = []
    for raw in names:
        if not isinstance(raw, str):
            raise InvalidName("blob names must be strings")
        name = validate_blob_name(raw.strip())
        if name not in seen:
            seen.add(name)
            result.append(name)
    return result


class BlobPaths:
    """Builds every blob path from validated parts. Nothing else in orc concatenates storage paths."""

    @staticmethod
    def session_prefix(organization: str, user: str, conversation_id: str) -> str:
        """The folder of one conversation's documents, ending with ``/``."""
        for value, what in (
            (organization, "organization"),
            (user, "user"),
            (conversation_id, "conversation"),
        ):
            validate_identifier(value, what=what)
        return f"{organization}/{user}/{conversation_id}/"

    @classmethod
    def session_blob(cls, organization: str, user: str, conversation_id: str, blob_name: str) -> str:
        """``{organization}/{user}/{conversation}/{blob_name}``."""
        return cls.session_prefix(organization, user, conversation_id) + validate_blob_name(blob_name)

    @staticmethod
    def context_prefix(organization: str, context_type: str, context_id: str) -> str:
        """The folder of a context's documents, ending with ``/``."""
        validate_identifier(organization, what="organization")
        validate_identifier(context_type, what="context type")
        validate_identifier(context_id, what="context")
        return f"{organization}/contexts/{context_type}/{context_id}/"

    @classmethod
    def context_blob(cls, organization: str, context_type: str, context_id: str, filename: str) -> str:
        """``{organization}/contexts/{type}/{id}/{filename}``."""
        return cls.context_prefix(organization, context_type, context_id) + validate_blob_name(filename)
