"""``ORC_PROMPTS_DIR``: prompt files a team changes without a redeploy, read once at start-up.

The value is a folder (a local path, or an Azure Files share mounted into the Function App) or a blob prefix
``blob://<container>/<prefix>`` in the storage account of ``ORC_BLOB_*``. Its files have the names of the packaged
``prompts/`` folder (``manifest.json`` included) and replace those; files it lacks stay packaged. The whole set is
checked before anything is served: an unknown file name, a template whose placeholders differ from the manifest,
or a sheet with a wrong or missing section stops the start with an error naming the file. A changed file gets an
effective version with a hash of its text, which goes into every digest cache key (``orc.models.prompting``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from orc.errors import ConfigurationError, ItemNotFound
from orc.models.prompting import PromptSet, override_prompts
from orc.models.sheets import check_prompts
from orc.settings import Settings

BLOB_SCHEME = "blob://"
_IGNORED = ("__init__.py",)
"""Files of a copied ``prompts/`` folder that are not prompts."""


async def prompts_for(settings: Settings) -> PromptSet | None:
    """The checked override ``ORC_PROMPTS_DIR`` names, or None when it is unset."""
    where = (settings.prompts_dir or "").strip()
    if not where:
        return None
    if where.startswith(BLOB_SCHEME):
        files = await _from_blobs(settings, where)
    else:
        files = await asyncio.to_thread(_from_folder, Path(where))
    if not files:
        raise ConfigurationError(f"ORC_PROMPTS_DIR {where} holds no prompt files")
    prompts = override_prompts(files, where.rstrip("/"))
    check_prompts(prompts)
    return prompts


def _from_folder(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise ConfigurationError(f"ORC_PROMPTS_DIR {folder} is not a folder")
    files = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.name not in _IGNORED:
            files[path.name] = _decoded(path.read_bytes(), f"{folder}/{path.name}")
    return files


async def _from_blobs(settings: Settings, where: str) -> dict[str, str]:
    container, _, prefix = where.removeprefix(BLOB_SCHEME).partition("/")
    prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
    from orc.storage.azure_blob import AzureBlobStore  # the Azure SDK only where a blob prefix is configured

    if settings.blob_connection_string is not None:
        store = AzureBlobStore.from_connection_string(
            settings.blob_connection_string.get_secret_value(), container, create_container=False
        )
    elif settings.blob_account_url:
        store = AzureBlobStore.from_account_url(settings.blob_account_url, container, create_container=False)
    else:
        raise ConfigurationError(
            "ORC_PROMPTS_DIR=blob://… reads the account of ORC_BLOB_CONNECTION_STRING or ORC_BLOB_ACCOUNT_URL; "
            "set one of them"
        )
    try:
        files = {}
        for info in await store.list(prefix):
            name = info.name.removeprefix(prefix)
            if "/" in name or name.startswith(".") or name in _IGNORED:
                continue  # only the prefix's own files, as in a folder
            data, _ = await store.get(info.name)
            files[name] = _decoded(data, f"{where.rstrip('/')}/{name}")
        return files
    except ItemNotFound:
        raise ConfigurationError(f"ORC_PROMPTS_DIR {where}: the blob container {container!r} does not exist") from None
    finally:
        await store.aclose()


def _decoded(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigurationError(f"prompt file {where} is not UTF-8 text") from None
