"""Reading multipart uploads (field ``files``) into :class:`~orc.documents.intake.uploads.Upload` objects: the one way
an HTTP request's files enter the intake pipeline (session files, context documents, a context request's supply).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request

from orc.documents.intake.uploads import Upload
from orc.errors import InvalidInput, InvalidName

MULTIPART_FILES: dict[str, Any] = {
    "requestBody": {
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}},
                    "required": ["files"],
                }
            }
        },
        "required": True,
    }
}
"""The OpenAPI request body of an upload route (``openapi_extra``): multipart form data, its ``files`` parts."""
MAX_FILES_PER_UPLOAD = 20


async def read_uploads(request: Request, max_upload_bytes: int) -> list[Upload]:
    """The ``files`` parts of a multipart request (see :func:`read_multipart`)."""
    uploads, _ = await read_multipart(request, max_upload_bytes)
    return uploads


async def read_multipart(
    request: Request, max_upload_bytes: int, *, max_files: int = MAX_FILES_PER_UPLOAD, fields: Sequence[str] = ()
) -> tuple[list[Upload], dict[str, str]]:
    """The ``files`` parts of a multipart request, and its text ``fields`` that were sent. Each file is read up to
    one byte over the limit, so an oversized file is refused by the upload checks without reading it whole."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise InvalidInput("send the files as multipart/form-data in parts named 'files'", code="not_multipart")
    async with request.form(max_files=max_files, max_fields=50) as form:
        values = {name: value for name in fields if isinstance(value := form.get(name), str)}
        uploads = []
        for part in form.getlist("files"):
            if not isinstance(part, UploadFile) or part.filename is None:
                raise InvalidInput("every 'files' part must be a file with a filename", code="invalid_upload")
            if "\\" in part.headers.get("content-disposition", ""):
                # The multipart parser keeps only what follows the last backslash of a Windows path
                # (``C:\\Users\\x\\report.txt`` → ``report.txt``): that would silently replace another file.
                raise InvalidName("a file name must not contain a backslash (send the file's own name, not a path)")
            data = await part.read(max_upload_bytes + 1)
            uploads.append(Upload(filename=part.filename, data=data, content_type=part.content_type))
    if not uploads:
        raise InvalidInput("no files were uploaded; send one or more parts named 'files'", code="no_files")
    return uploads, values
