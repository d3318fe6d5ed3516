"""Redaction of what a user is offered to supply (context-handoff-plan §4.2.1: "size limits, redactions").

Artifacts and one-click suggestions come from earlier answers, digests and documents, which may quote a secret a
user pasted once: a storage key, an API token, a connection string. Offered as they are, one click would copy the
secret into a new prompt and a new stored request. So every text on offer goes through :class:`Redactor` first:
built-in patterns for common secrets, plus a deployment's own (``ORC_REDACT_PATTERNS``), each match replaced by
:data:`REDACTED`, and the number of replacements reported with the listing or request.

Nothing here reads or writes storage; the patterns are compiled once, when the composition root builds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from orc.errors import ConfigurationError

REDACTED = "[redacted]"

BUILT_IN_PATTERNS: tuple[str, ...] = (
    # Private key blocks (PEM), whole.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
    # Connection-string secrets: Azure Storage / Service Bus / Cosmos keys and SAS signatures, SQL passwords.
    r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|AccessKey|Password|Pwd|sig)=[^;\s&\"']+",
    # Credentials inside URLs (postgres://user:secret@host, mongodb+srv://..., https://user:token@...).
    r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@",
    # Bearer tokens in a pasted header.
    r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{12,}=*",
    # OpenAI-style and Anthropic-style API keys.
    r"\bsk-[A-Za-z0-9_\-]{16,}",
    # AWS access key ids and secret access keys given by name.
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"(?i)\baws_secret_access_key\s*[=:]\s*[A-Za-z0-9/+=]{30,}",
    # GitHub and Slack tokens, JSON Web Tokens.
    r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b",
    r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    # A secret given by name: api_key = ..., "client_secret": "...", token: ...
    r"(?i)\b(?:api[_-]?key|client[_-]?secret|secret[_-]?key|access[_-]?token|auth[_-]?token)\b[\"']?\s*[:=]\s*"
    r"[\"']?[A-Za-z0-9_\-./+=]{12,}",
)


class Redactor:
    """Replaces secrets in texts on offer by :data:`REDACTED`, counting the replacements."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        """The built-in patterns plus ``patterns`` (regular expressions); :class:`~orc.errors.ConfigurationError`
        names the first one that does not compile."""
        compiled = []
        for pattern in (*BUILT_IN_PATTERNS, *patterns):
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigurationError(f"ORC_REDACT_PATTERNS: {pattern!r} is not a regular expression") from exc
        self._patterns = tuple(compiled)

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every secret replaced, and how many were."""
        total = 0
        for pattern in self._patterns:
            text, count = pattern.subn(REDACTED, text)
            total += count
        return text, total

    def redact_optional(self, text: str | None) -> tuple[str | None, int]:
        """:meth:`redact` for a text that may be absent."""
        return (None, 0) if text is None else self.redact(text)


__all__ = ["BUILT_IN_PATTERNS", "REDACTED", "Redactor"]
