"""``session.attach_path``: attach a local file by its path instead of sending its bytes (stdio only).

A stdio server runs on the user's own machine as the user, so reading a file it names is what the user could do
anyway; over HTTP (or in the orchestrator's in-memory session) a path would name a file on the *server*, so the
tool refuses there. Even over stdio only the folders given at startup (``--allow-dir``, ``ORC_MCP_ALLOWED_DIRS``)
can be read: the path is resolved (``..`` and symlinks included) before it is checked, so neither can escape.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field

from mcp_server.tools.scoped import principal_tool
from mcp_server.tools.session import SessionChange, SessionId, attach_upload, render_change
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.intake.uploads import Upload
from orc.documents.sessions import SessionFiles
from orc.errors import ConfigurationError, InvalidInput, NotFound, PayloadTooLarge
from orc.names import validate_identifier
from orc.principal import Principal
from orc.tool_contract import SESSION_ATTACH_PATH

stdio_transport: ContextVar[bool] = ContextVar("orc_mcp_stdio", default=False)
"""Set by :func:`mcp_server.stdio.run_stdio` around the server task: only there may a path be read."""


class AllowedFolders:
    """The folders whose files ``session.attach_path`` may read, resolved once at startup."""

    def __init__(self, folders: Iterable[Path]) -> None:
        resolved: list[Path] = []
        for folder in folders:
            path = Path(folder).expanduser()
            if not path.is_dir():
                raise ConfigurationError(f"allowed folder {str(folder)!r} is not an existing directory")
            resolved.append(path.resolve(strict=True))
        self.folders: tuple[Path, ...] = tuple(resolved)

    def __bool__(self) -> bool:
        return bool(self.folders)

    def resolve(self, path: str) -> Path:
        """The real file ``path`` names, once it is known to lie inside an allowed folder.

        Relative paths are refused rather than guessed: hosts start servers from any working directory.
        """
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            raise InvalidInput("give the file's absolute path", code="path_not_allowed")
        # strict=False: a missing file outside the folders is refused the same way as an existing one, so the
        # answer does not reveal what exists elsewhere.
        real = candidate.resolve(strict=False)
        if not any(real.is_relative_to(folder) for folder in self.folders):
            raise InvalidInput(
                "this path is outside the folders the server may read (orc mcp --allow-dir)", code="path_not_allowed"
            )
        if not real.is_file():
            raise NotFound("no such file in the allowed folders", code="file_not_found")
        return real


def register(server: FastMCP, files: SessionFiles, scopes: DocumentScopes, folders: AllowedFolders) -> None:
    """Add ``session.attach_path`` to a stdio server that may read ``folders`` (nothing when there are none)."""
    if not folders:
        return

    @principal_tool(
        server,
        name=SESSION_ATTACH_PATH,
        title="Attach a local file to the session",
        description=(
            "Attach a file on this machine to the conversation by its absolute path (same name again replaces it), "
            f"instead of sending its content. Only files inside these folders can be read: {_listing(folders)}."
        ),
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
        ),
        failure="attaching the file failed",
        render=render_change,
    )
    async def session_attach_path(
        principal: Principal,
        session_id: SessionId,
        path: Annotated[str, Field(description="The file's absolute path, inside a folder the server may read.")],
        content_type: Annotated[str | None, Field(description="The media type, when the name does not say.")] = None,
    ) -> SessionChange:
        if not stdio_transport.get():
            raise InvalidInput("attaching by path is only possible over stdio", code="path_not_allowed")
        validate_identifier(session_id, what="session")
        real = folders.resolve(path)
        limit = files.max_upload_bytes
        if real.stat().st_size > limit:
            raise PayloadTooLarge(f"the document is larger than the upload limit of {limit} bytes")
        upload = Upload(real.name, real.read_bytes(), content_type)
        return await attach_upload(files, scopes, principal, session_id, upload)


def _listing(folders: AllowedFolders) -> str:
    return ", ".join(str(folder) for folder in folders.folders)


def folders_from(values: Sequence[str | Path]) -> AllowedFolders:
    """:class:`AllowedFolders` of the ``--allow-dir`` values and the setting's, in order, without repeats."""
    return AllowedFolders(dict.fromkeys(Path(value) for value in values))
