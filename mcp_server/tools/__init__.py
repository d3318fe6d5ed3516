"""MCP tool families. Each module has a ``register(server, ...)`` that :mod:`mcp_server.server` calls; tools that
act for the caller are registered through :mod:`mcp_server.tools.scoped`. Tool names come from
:mod:`orc.tool_contract`.

Errors follow one rule for every tool: a mistake the caller or model can fix, or a dependency that may
recover, becomes a :class:`ToolError` whose message starts with the stable ``code`` of the orc error
(``not_found: ...``), so the client gets an ``isError`` result that says what to do next. FastMCP prefixes
the text it sends with ``Error executing tool <name>: ``; :func:`split_tool_error` recovers code and message.
Anything else is logged without its message and reported as ``internal_error``: exception text can carry
storage URLs or secrets. Arguments that do not fit a tool's schema are ``invalid_input`` too, one line per bad
argument (``limit: must be a whole number (got 'abc')``), not pydantic's report with its links.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from orc.errors import CallerError, ModelBehaviourError, OrcError, ServiceUnavailable
from orc.plain_errors import plain_errors

logger = logging.getLogger(__name__)

_ERROR_TEXT = re.compile(r"^(?:Error executing tool [^:]+: )?([a-z][a-z_]*): (.*)$", re.DOTALL)


@contextmanager
def tool_errors(tool: str, *, failure: str) -> Iterator[None]:
    """Translate exceptions raised inside a tool body into ``code: message`` :class:`ToolError` results.

    ``failure`` is the generic text of the ``internal_error`` result (e.g. "document processing failed").
    """
    try:
        yield
    except ToolError:
        raise
    except (CallerError, ServiceUnavailable, ModelBehaviourError) as exc:
        # These messages are written for the caller and are free of URLs and secrets by contract.
        raise ToolError(f"{exc.code}: {exc.message}") from None
    except Exception as exc:
        code = exc.code if isinstance(exc, OrcError) else "unexpected"
        logger.warning("MCP tool %s failed: %s (%s)", tool, type(exc).__name__, code)
        logger.debug("MCP tool %s failure details", tool, exc_info=True)
        raise ToolError(f"internal_error: {failure}; try again later") from None


def split_tool_error(text: str) -> tuple[str, str]:
    """``(code, message)`` of an ``isError`` result's text; ``("tool_error", text)`` when it has no code."""
    match = _ERROR_TEXT.match(text)
    if match is None:
        return "tool_error", text
    return match.group(1), match.group(2)


def structured_result(result: BaseModel, text: str) -> CallToolResult:
    """A tool result with ``result`` as structured content and ``text`` as its readable rendering.

    FastMCP would otherwise send the structured content again as indented JSON text, which is what a model
    reads: a compact rendering costs a fraction of the tokens and reads better.
    """
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structuredContent=result.model_dump(mode="json")
    )


def argument_errors(exc: ValidationError) -> str:
    """``invalid_input: …`` for arguments that do not fit a tool's schema: one line per bad argument, in words."""
    return "invalid_input: " + "\n".join(plain_errors(exc))
