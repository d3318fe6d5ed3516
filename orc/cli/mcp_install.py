"""``orc mcp install claude|vscode|cursor``: write (or ``--print``) an MCP host's config entry for orc's stdio server.

Hosts start a stdio server from a directory of their own choosing (often ``/``), with a minimal environment, so
the entry names everything absolutely: the interpreter of this installation (``sys.executable``: a virtualenv's
own python, not resolved through its symlink, so the venv's packages are found), ``-m mcp_server`` and
``ORC_HOME``. Every client here gets ``--tool-names underscore``: Claude Desktop refuses a whole tool list when one
name is not ``^[a-zA-Z0-9_-]{1,64}$``, and underscore names are safe in Cursor and VS Code too.

Where each host reads its config (user level; documented in docs/mcp.md):

- ``claude`` (Claude Desktop): ``~/Library/Application Support/Claude/claude_desktop_config.json`` (macOS),
  ``%APPDATA%\\Claude\\claude_desktop_config.json`` (Windows), ``$XDG_CONFIG_HOME/Claude/...`` or
  ``~/.config/Claude/claude_desktop_config.json`` (Linux); servers under ``mcpServers``.
- ``cursor``: ``~/.cursor/mcp.json``; servers under ``mcpServers``.
- ``vscode``: the user ``mcp.json`` (``~/Library/Application Support/Code/User/mcp.json``,
  ``%APPDATA%\\Code\\User\\mcp.json``, ``~/.config/Code/User/mcp.json``); servers under ``servers`` with
  ``"type": "stdio"``.

Writing merges into the existing JSON (other servers and settings are kept), saves the previous file as
``<name>.bak`` first, and replaces the file atomically. A file that is not a JSON object is left untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from orc.cli.refusals import error_line
from orc.errors import InvalidInput
from orc.tool_contract import ToolNameForm

_BAD_CONFIG = "invalid_client_config"
"""The code of the error when the client's existing config cannot be merged into (it is left untouched)."""

Client = Literal["claude", "cursor", "vscode"]
CLIENTS: tuple[Client, ...] = ("claude", "cursor", "vscode")

TOOL_NAMES_FOR: dict[Client, ToolNameForm] = {"claude": "underscore", "cursor": "underscore", "vscode": "underscore"}
"""The tool-name form each host accepts (dotted names break Claude Desktop; underscore is safe everywhere)."""

_SERVERS_KEY: dict[Client, str] = {"claude": "mcpServers", "cursor": "mcpServers", "vscode": "servers"}

PRODUCT_NAMES: dict[Client, str] = {"claude": "Claude Desktop", "cursor": "Cursor", "vscode": "VS Code"}
"""The client as its user knows it, for what to restart."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLaunch:
    """How the host should start orc's stdio server."""

    python: Path
    orc_home: Path
    organization: str
    user: str
    allow_dirs: Sequence[Path] = ()
    tool_names: ToolNameForm | None = None
    name: str = "orc"


def config_path(client: Client, *, home: Path, platform: str, environ: Mapping[str, str]) -> Path:
    """The user-level config file ``client`` reads on ``platform`` (``sys.platform`` values)."""
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform.startswith("win"):
        base = Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    if client == "claude":
        return base / "Claude" / "claude_desktop_config.json"
    return base / "Code" / "User" / "mcp.json"


def server_entry(client: Client, launch: ServerLaunch) -> dict[str, Any]:
    """The entry for ``client``: absolute interpreter and ``ORC_HOME``, the form of tool names it accepts."""
    args = ["-m", "mcp_server", "--tool-names", launch.tool_names or TOOL_NAMES_FOR[client]]
    args += ["--organization", launch.organization, "--user", launch.user]
    for folder in launch.allow_dirs:
        args += ["--allow-dir", str(folder.expanduser().resolve())]
    entry: dict[str, Any] = {"type": "stdio"} if client == "vscode" else {}
    entry.update(
        command=str(launch.python if launch.python.is_absolute() else launch.python.absolute()),
        args=args,
        env={"ORC_HOME": str(launch.orc_home.expanduser().resolve())},
    )
    return entry


def merged_config(client: Client, existing: str | None, launch: ServerLaunch) -> dict[str, Any]:
    """``existing`` (the file's text, or None) with orc's entry added or replaced; everything else kept."""
    config: Any = {}
    if existing is not None and existing.strip():
        try:
            config = json.loads(existing)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"the existing config is not valid JSON (line {exc.lineno}); fix or move it", code=_BAD_CONFIG
            ) from None
    if not isinstance(config, dict):
        raise InvalidInput("the existing config is not a JSON object; fix or move it", code=_BAD_CONFIG)
    servers = config.setdefault(_SERVERS_KEY[client], {})
    if not isinstance(servers, dict):
        raise InvalidInput(
            f"the existing config's {_SERVERS_KEY[client]!r} is not a JSON object; fix or move it", code=_BAD_CONFIG
        )
    servers[launch.name] = server_entry(client, launch)
    return config


def install(client: Client, launch: ServerLaunch, *, path: Path, print_only: bool, out: TextIO) -> Path | None:
    """Print the merged config, or write it to ``path`` (backup first); returns the backup's path, if any."""
    existing = path.read_text(encoding="utf-8") if path.is_file() else None
    config = merged_config(client, existing, launch)
    text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
    if print_only:
        out.write(text)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if existing is not None:
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    temporary = path.with_name(path.name + ".orc-tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return backup


def run(
    client: Client,
    launch: ServerLaunch,
    *,
    print_only: bool,
    config: Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """``orc mcp install``: the exit status; messages on ``err`` so ``--print`` output stays pure JSON."""
    out = out or sys.stdout
    err = err or sys.stderr
    missing = [str(folder) for folder in launch.allow_dirs if not folder.expanduser().is_dir()]
    if missing:
        # The server refuses to start with such a folder, and the client then only says "Connection closed".
        print(error_line("folder_not_found", f"--allow-dir: no such folder: {', '.join(missing)}"), file=err)
        return 2
    path = config or config_path(client, home=Path.home(), platform=sys.platform, environ=os.environ)
    try:
        backup = install(client, launch, path=path, print_only=print_only, out=out)
    except InvalidInput as exc:
        print(error_line(exc.code, f"{path}: {exc.message}"), file=err)
        return 1
    except OSError as exc:
        print(error_line("config_not_written", f"{path}: {exc.strerror or type(exc).__name__}"), file=err)
        return 1
    if not print_only:
        kept = f" (previous config saved as {backup})" if backup else ""
        print(f"wrote the {launch.name!r} server to {path}{kept}; restart {PRODUCT_NAMES[client]} to load it", file=err)
    return 0
