"""A conversation's files (its session documents, which are its context files), split by job:

- :mod:`~orc.documents.sessions.models`: the spec's data models and the stored ContextSet header;
- :mod:`~orc.documents.sessions.planning`: what a mutation does to the set, decided without storage;
- :mod:`~orc.documents.sessions.locations`: where records, the header and blobs are stored;
- :mod:`~orc.documents.sessions.service`: :class:`SessionFiles`, which commits mutations and stores files, and the
  :class:`ContextListener` it tells about every change.
"""

from orc.documents.sessions.locations import session_location
from orc.documents.sessions.models import (
    MAX_FILES_PER_SESSION,
    AggregateState,
    ChangeSummary,
    ContextFile,
    ContextSet,
    Diff,
    FileChange,
    Member,
    Mutation,
    RefusedUpload,
    SessionHeader,
    SpecDigestStatus,
    spec_digest_status,
)
from orc.documents.sessions.service import ContextListener, SessionFiles

__all__ = [
    "MAX_FILES_PER_SESSION",
    "AggregateState",
    "ChangeSummary",
    "ContextFile",
    "ContextListener",
    "ContextSet",
    "Diff",
    "FileChange",
    "Member",
    "Mutation",
    "RefusedUpload",
    "SessionFiles",
    "SessionHeader",
    "SpecDigestStatus",
    "session_location",
    "spec_digest_status",
]
