"""``ORC_PROMPTS_DIR``: prompt files a team changes without a redeploy, read once at start-up.

The value is a folder (a local path, or an Azure Files share mounted into the Function App) or a blob prefix
``blob://<container>/<prefix>`` in the storage account of ``ORC_BLOB_*``. Its files have the names of the packaged
``prompts/`` folder (``manifest.json`` included) and replace those; files it lacks stay packaged. The whole set is
checked before anything is served: an unknown file name, a template whose placeholders differ from the manifest,
or a sheet with a wrong or missing section stops the start with an error naming the file. A changed file gets an
effective version with a hash of its text, which goes into every digest cache key (``orc.models.prompting``).

An override changes wording, never what the code fills in, and reads nothing outside its folder, so these stop the
start too:

- a placeholder that is not plain: a format spec (``{documents:>50000000}`` sent a 50 MB prompt on every turn), a
  conversion (``{x!r}``), an attribute or index (``{x.y}``, ``{x[0]}``), a positional field (``{}``, ``{0}``);
- a manifest whose prompts take other variables than the code passes them (a variable added to the manifest and
  the template passed every check and then made every turn fail), or of another kind, or that declares prompts
  orc does not have; versions are the override's to change;
- a file that is a link to a file outside the folder (its text would be sent to the model).
"""

from __future__ import annotations

import asyncio
import json
import string
from collections.abc import Mapping
from pathlib import Path

from orc.errors import ConfigurationError, ItemNotFound
from orc.models.prompting import MANIFEST, PromptSet, bad_file, override_prompts, packaged_prompts
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
    for name, text in files.items():
        if name.endswith(".txt"):
            _check_placeholders(prompts, name, text)
    check_prompts(prompts)
    _check_manifest(prompts)  # after: a manifest at odds with its own templates is named as such first
    return prompts


def _check_placeholders(prompts: PromptSet, file: str, template: str) -> None:
    """Refuse a template with a placeholder that is not a plain ``{name}``."""
    try:
        fields = [(field, spec, conversion) for _, field, spec, conversion in string.Formatter().parse(template)]
    except ValueError as exc:  # an unbalanced brace
        raise bad_file(prompts, file, f"is not a valid template ({exc})") from None
    for field, spec, conversion in fields:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise bad_file(
                prompts,
                file,
                f"uses {shown[:80]}: only plain placeholders such as {{documents}} are allowed (no format spec, "
                "conversion, attribute, index or positional field)",
            )


def _check_manifest(prompts: PromptSet) -> None:
    """Refuse a manifest whose entries differ from the packaged ones in anything but their versions."""
    if MANIFEST not in prompts.provided:
        return
    packaged = packaged_prompts().manifest
    manifest = prompts.manifest
    added = sorted(set(manifest) - set(packaged))
    if added:
        raise bad_file(prompts, MANIFEST, f"declares prompts orc does not have: {', '.join(added)}")
    for name, entry in manifest.items():
        expected = packaged[name]
        if _fixed(entry) != _fixed(expected):
            raise bad_file(
                prompts,
                MANIFEST,
                f"changes what the code fills in {name!r} ({json.dumps(_fixed(entry))} instead of "
                f"{json.dumps(_fixed(expected))}); an override may change a prompt's wording and version only",
            )


def _fixed(entry: Mapping[str, object]) -> dict[str, object]:
    """What the code decides about a manifest entry: its kind and, for a prompt, its variables."""
    variables = entry.get("variables", [])
    return {
        "kind": entry.get("kind", "prompt"),
        "variables": sorted(str(v) for v in variables) if isinstance(variables, list) else variables,
    }


def _from_folder(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise ConfigurationError(f"ORC_PROMPTS_DIR {folder} is not a folder")
    inside = folder.resolve()  # the folder itself may be a link (a mounted share)
    files = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.name in _IGNORED:
            continue
        target = path.resolve()
        if not target.is_relative_to(inside):
            raise ConfigurationError(
                f"prompt file {folder}/{path.name} is a link to {target}, outside ORC_PROMPTS_DIR; copy the file "
                "into the folder instead"
            )
        if target.is_file():
            files[path.name] = _decoded(target.read_bytes(), f"{folder}/{path.name}")
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
