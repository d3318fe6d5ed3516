"""Values that do not fit a pydantic model, said in words: one line per value (``limit: must be a whole number
(got 'abc')``), without pydantic's report and its links. The MCP tools' argument errors and the CLI's settings
errors are both written here."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError
from pydantic_core import ErrorDetails

MAX_SHOWN_INPUT_CHARS = 40
"""How much of a rejected value a line repeats (enough to recognise it; a setting may hold a key)."""


def plain_errors(exc: ValidationError, name: Callable[[str], str] = str) -> list[str]:
    """One line per value that does not fit, in words (``limit: must be a whole number (got 'abc')``), without
    pydantic's report and its links; ``name`` says how a field is called where the value came from (an
    environment variable for a setting)."""
    return list(dict.fromkeys(_line(error, name) for error in exc.errors(include_url=False)))


_PLAIN = {
    "missing": "required",
    "extra_forbidden": "not an argument of this tool",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "string_type": "must be text",
    "list_type": "must be a list",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "literal_error": "must be one of {expected}",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "too_short": "must have at least {min_length} item(s)",
    "too_long": "must have at most {max_length} item(s)",
    "string_too_short": "must be at least {min_length} character(s)",
    "string_too_long": "must be at most {max_length} character(s)",
}


def _line(error: ErrorDetails, name: Callable[[str], str]) -> str:
    loc = [str(part) for part in error["loc"]]
    where = ".".join([name(loc[0]), *loc[1:]]) if loc else "arguments"
    context = error.get("ctx") or {}
    if error["type"] == "value_error" and "error" in context:
        problem = str(context["error"])  # the validator's own words, without pydantic's "Value error, "
    elif error["type"] in _PLAIN:
        problem = _PLAIN[error["type"]].format(**context)
    else:
        problem = error["msg"].removeprefix("Input ")
    if not problem.startswith(where):  # a validator that names the setting itself says it once
        problem = f"{where}: {problem}"
    if error["type"] in ("missing", "extra_forbidden"):
        return problem
    shown = repr(error.get("input"))
    if len(shown) > MAX_SHOWN_INPUT_CHARS:
        shown = shown[: MAX_SHOWN_INPUT_CHARS - 1] + "…"
    return f"{problem} (got {shown})"
