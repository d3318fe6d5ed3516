"""``orc mcp install claude|vscode|cursor`` writes (or prints) each client's config, merging and backing up."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from orc.cli import main
from orc.cli.mcp_install import CLIENTS, Client, config_path
from orc.tool_contract import PORTABLE_TOOL_NAME


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME (and no XDG_CONFIG_HOME), and a relative ORC_HOME, as a user's shell would have."""
    fake = tmp_path / "home"
    fake.mkdir()
    monkeypatch.setenv("HOME", str(fake))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("ORC_HOME", "data/orc")
    monkeypatch.chdir(tmp_path)
    return fake


def linux_path(client: Client, home: Path) -> Path:
    return config_path(client, home=home, platform="linux", environ={})


def test_each_client_has_its_documented_config_file_per_platform() -> None:
    home = Path("/home/ann")
    assert linux_path("claude", home) == home / ".config/Claude/claude_desktop_config.json"
    assert linux_path("vscode", home) == home / ".config/Code/User/mcp.json"
    assert linux_path("cursor", home) == home / ".cursor/mcp.json"
    mac = config_path("claude", home=home, platform="darwin", environ={})
    assert mac == home / "Library/Application Support/Claude/claude_desktop_config.json"
    windows = config_path("vscode", home=home, platform="win32", environ={"APPDATA": "C:/Users/ann/AppData/Roaming"})
    assert windows == Path("C:/Users/ann/AppData/Roaming/Code/User/mcp.json")


AS_USERS_KNOW_IT = {"claude": "Claude Desktop", "cursor": "Cursor", "vscode": "VS Code"}


@pytest.mark.skipif(sys.platform != "linux", reason="the config locations checked here are Linux's")
@pytest.mark.parametrize("client", CLIENTS)
def test_install_writes_an_absolute_launch_with_underscore_names(
    home: Path, tmp_path: Path, client: Client, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "install", client]) == 0

    config = json.loads(linux_path(client, home).read_text(encoding="utf-8"))
    entry = config["servers" if client == "vscode" else "mcpServers"]["orc"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][:4] == ["-m", "mcp_server", "--tool-names", "underscore"]
    assert entry["env"] == {"ORC_HOME": str((tmp_path / "data/orc").resolve())}
    assert (entry.get("type") == "stdio") is (client == "vscode")
    said = capsys.readouterr().err
    assert f"; restart {AS_USERS_KNOW_IT[client]} to load it" in said


@pytest.mark.skipif(sys.platform != "linux", reason="the config locations checked here are Linux's")
def test_install_merges_into_the_existing_config_and_keeps_a_backup(home: Path) -> None:
    path = linux_path("claude", home)
    path.parent.mkdir(parents=True)
    before = {"mcpServers": {"other": {"command": "other-server"}}, "theme": "dark"}
    path.write_text(json.dumps(before), encoding="utf-8")

    assert main(["mcp", "--user", "ann", "install", "claude", "--allow-dir", str(home)]) == 0

    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["theme"] == "dark"
    assert after["mcpServers"]["other"] == {"command": "other-server"}
    assert after["mcpServers"]["orc"]["args"][-4:] == ["--user", "ann", "--allow-dir", str(home.resolve())]
    assert json.loads(path.with_name(path.name + ".bak").read_text(encoding="utf-8")) == before


def test_install_refuses_to_overwrite_a_config_that_is_not_json(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / "cursor.json"
    path.write_text("{ not json", encoding="utf-8")

    assert main(["mcp", "install", "cursor", "--config", str(path)]) == 1

    assert path.read_text(encoding="utf-8") == "{ not json"
    assert "not valid JSON" in capsys.readouterr().err


def test_print_writes_nothing_and_prints_only_the_json(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "install", "cursor", "--print"]) == 0

    printed = json.loads(capsys.readouterr().out)
    assert printed["mcpServers"]["orc"]["args"][:2] == ["-m", "mcp_server"]
    assert not (home / ".cursor").exists()


def test_every_name_install_makes_a_client_see_passes_the_strict_hosts_pattern() -> None:
    pinned = Path(__file__).with_name("published_tools_underscore.json")
    names = [tool["name"] for tool in json.loads(pinned.read_text(encoding="utf-8"))]
    assert all(PORTABLE_TOOL_NAME.fullmatch(name) for name in names)


def test_install_refuses_an_allowed_folder_that_does_not_exist(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = home / "Documents-that-are-not-there"

    assert main(["mcp", "install", "claude", "--allow-dir", str(missing)]) == 2

    assert "no such folder" in capsys.readouterr().err
    assert not list(home.rglob("claude_desktop_config.json"))
