"""Azure AI Search's errors as orc's (:mod:`orc.storage.azure_errors`): a missing index is a deployment to fix, not
an item that is absent."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from orc.storage.azure_errors import translated as azure_translated


def translated(what: str) -> AbstractAsyncContextManager[None]:
    """SDK errors raised inside as orc's; ``what`` names the resource a 404 says is missing."""
    return azure_translated(
        "Azure AI Search",
        what,
        credentials="check ORC_SEARCH_KEY or the identity's Search Index Data Contributor role",
        missing_is_setup=True,
    )
