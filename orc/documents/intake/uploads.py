"""What session and context uploads share: the checks made before anything is stored, and content hashing."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from pydantic import BaseModel, Field

from orc.admission import Admission, Admitted, Operation
from orc.documents.parsing.extraction import detect_media_type
from orc.errors import InvalidInput, OrcError, PayloadTooLarge
from orc.names import validate_blob_name
from orc.principal import Principal

UPLOAD_WAIT_SECONDS = 3.0
"""How long an upload request waits for its documents to be processed before answering with their status.

Small documents are ready within milliseconds, so the response (and every tool right after it) sees them
``ready``; a big PDF answers ``processing`` and keeps going in the background. Read when an upload waits
(:func:`upload_wait_seconds`), so a test suite on a machine too busy to process a note in 3 s can raise it."""


def upload_wait_seconds() -> float:
    """The upload wait of services built without their own (:data:`UPLOAD_WAIT_SECONDS`, as it is now)."""
    return UPLOAD_WAIT_SECONDS


def uploading(
    admission: Admission, principal: Principal, uploads: Sequence[Upload], operation: Operation = "upload"
) -> AbstractAsyncContextManager[Admitted]:
    """Admit ``uploads`` (an ``upload``, or a ``supply`` to a context request): counted against the principal's
    window, one of its concurrent-upload slots held while the block stores and processes them, or a
    :class:`~orc.errors.TooManyRequests` and nothing counted. The services enter it after the files are screened and
    before anything is stored, so a refused upload stores, parses and digests nothing."""
    return _admitted(admission.admit(principal, operation, files=len(uploads), size=sum(len(u.data) for u in uploads)))


@contextlib.asynccontextmanager
async def _admitted(admitting: Awaitable[Admitted]) -> AsyncIterator[Admitted]:
    async with await admitting as admitted:
        yield admitted


@dataclass(frozen=True, slots=True)
class Upload:
    """One uploaded file as received: its name (the blob name), bytes and declared content type."""

    filename: str
    data: bytes
    content_type: str | None = None

    @property
    def sha256(self) -> str:
        """The content hash (``content_hash``)."""
        return hashlib.sha256(self.data).hexdigest()


class RefusedUpload(BaseModel):
    """A file of an upload that was not stored (empty, too large, or a type orc cannot read)."""

    filename: str
    code: str = Field(description="The stable error code, e.g. unsupported_media_type, empty_file, payload_too_large.")
    message: str


def screen_uploads(uploads: Sequence[Upload], max_upload_bytes: int) -> tuple[list[Upload], list[RefusedUpload]]:
    """Split a batch into the files orc can take and the ones it refuses, so one bad file does not sink the rest.

    Names are checked for the whole request (a bad name is a client bug, not a file problem). Each file that is
    empty, over the limit or of a type orc cannot extract is refused on its own. When every file is refused, the
    first refusal is raised, so a single-file upload answers exactly as :func:`check_uploads` does.
    """
    if not uploads:
        raise InvalidInput("no files were uploaded; send one or more parts named 'files'", code="no_files")
    for upload in uploads:
        validate_blob_name(upload.filename)
    accepted: list[Upload] = []
    refused: list[RefusedUpload] = []
    first: OrcError | None = None
    for upload in uploads:
        try:
            check_uploads([upload], max_upload_bytes)
        except OrcError as exc:
            first = first or exc
            refused.append(RefusedUpload(filename=upload.filename, code=exc.code, message=exc.message))
        else:
            accepted.append(upload)
    if not accepted and first is not None:
        raise first
    return accepted, refused


def check_uploads(uploads: Sequence[Upload], max_upload_bytes: int) -> None:
    """Reject the whole request before anything is stored.

    No files or an empty one → :class:`InvalidInput`; a bad name → :class:`~orc.errors.InvalidName`; a file over
    the limit → :class:`PayloadTooLarge`; a type orc cannot extract → :class:`~orc.errors.UnsupportedMediaType`
    (415). A file that has a supported type but turns out to be damaged is accepted and ends ``failed``.
    """
    if not uploads:
        raise InvalidInput("no files were uploaded; send one or more parts named 'files'", code="no_files")
    for upload in uploads:
        validate_blob_name(upload.filename)
        if len(upload.data) > max_upload_bytes:
            raise PayloadTooLarge(f"{upload.filename!r} is larger than the upload limit of {max_upload_bytes} bytes")
        if not upload.data:
            raise InvalidInput(f"{upload.filename!r} is empty", code="empty_file")
    for upload in uploads:
        detect_media_type(upload.data, upload.filename, upload.content_type)
