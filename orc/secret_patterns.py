"""What a secret looks like, written once: the patterns that log records (:mod:`orc.log_safety`) and what a context
request offers (:mod:`orc.handoff.redaction`) are redacted with.

Each pattern is linear — possessive runs never give back what they took, and a URL's scheme starts only once per
word — so one crafted text cannot make matching take seconds (``tests/adversarial/test_redaction_time.py`` probes
every one). A pattern's ``label`` group, where it has one, names the secret (``AccountKey=``, ``Bearer``) and is
kept before the redaction mark, so a reader still sees what was there. Python's ``re`` and the ``regex`` engine
both compile them.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"

SECRET_PATTERNS: tuple[str, ...] = (
    # Private key blocks (PEM), whole. The body stops at the next BEGIN or END line: a text of many BEGIN lines
    # is read once, not once per line.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^-]|-(?!----(?:BEGIN|END) ))*+-----END [A-Z0-9 ]*PRIVATE KEY-----",
    # Connection-string secrets: Azure Storage / Service Bus / Cosmos keys and SAS signatures, SQL passwords.
    r"(?i)(?P<label>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|AccessKey|Password|Pwd)=)[^;\s\"']++",
    # Credentials inside URLs (postgres://user:secret@host, mongodb+srv://..., https://user:token@...). The scheme
    # starts where no scheme character precedes it, so a long run of them is read once.
    r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*+://[^\s/:@]++:[^\s/@]++@",
    # A SAS signature in a URL's query.
    r"(?i)(?P<label>\bsig=)[^&\s\"']++",
    # Bearer tokens in a pasted or logged header.
    r"(?i)(?P<label>\bbearer\s++)[A-Za-z0-9\-._~+/=]{8,}+",
    # OpenAI-style and Anthropic-style API keys.
    r"\bsk-[A-Za-z0-9_\-]{8,}+",
    # AWS access key ids and secret access keys given by name.
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"(?i)\baws_secret_access_key\s*+[=:]\s*+[A-Za-z0-9/+=]{30,}+",
    # GitHub and Slack tokens, JSON Web Tokens.
    r"\bgh[pousr]_[A-Za-z0-9]{30,}+",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}+",
    r"\beyJ[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+",
    # A secret given by name: api_key = ..., "client_secret": "...", an api-key header.
    r"(?i)(?P<label>\b(?:x-)?(?:api[_-]?key|client[_-]?secret|secret[_-]?key|access[_-]?token|auth[_-]?token)"
    r"[\"']?\s*+[:=]\s*+[\"']?)[^\s\"',;&}]{6,}+",
)
"""The built-in secret patterns, in the order they are applied."""


def redaction(match: re.Match[str]) -> str:
    """What a match becomes: its label, if the pattern has one, then :data:`REDACTED` (a ``sub`` replacement)."""
    return (match.groupdict().get("label") or "") + REDACTED
