"""The one settings object, read from the environment (``ORC_`` prefix) by the composition root only."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from orc.errors import ConfigurationError


class ApiKeyPrincipal(BaseModel):
    """Who an API key speaks for."""

    organization: str
    user: str


class Settings(BaseSettings):
    """Everything orc can be configured with. Library classes take explicit arguments instead of reading this."""

    model_config = SettingsConfigDict(env_prefix="ORC_", extra="ignore", populate_by_name=True)

    home: Path = Field(default=Path(".orc"), description="Folder for embedded data (SQLite files, local blobs).")

    # -- models -----------------------------------------------------------------------------------------
    model: str = Field(
        default="offline",
        description="offline | openai:<model> | azure:<deployment>. With ORC_MODEL_BASE_URL, openai:<model> "
        "talks to any OpenAI-compatible server.",
    )
    model_base_url: str | None = None
    model_api_key: SecretStr | None = None
    model_timeout_seconds: float = 60.0
    model_max_retries: int = 2
    digest_model: str | None = Field(
        default=None,
        description="The model that makes context digests (Task A/B), same forms as ORC_MODEL; default: ORC_MODEL.",
    )
    digest_concurrency: int = Field(default=4, ge=1, description="Digest model calls running at once.")

    # -- storage ----------------------------------------------------------------------------------------
    storage: Literal["embedded", "azure"] = "embedded"
    cosmos_endpoint: str | None = None
    cosmos_key: SecretStr | None = None
    cosmos_database: str = "orc"
    cosmos_emulator: bool = Field(
        default=False,
        description="Target a local Cosmos DB emulator (cosmosdb-server): single region, and a missing item's "
        "point read answers 500 there instead of 404. Never set this against a real account.",
    )
    blob_connection_string: SecretStr | None = None
    blob_account_url: str | None = None
    blob_container: str = "orc"

    # -- identity ---------------------------------------------------------------------------------------
    auth: Literal["none", "api-key", "easyauth"] = "none"
    api_keys: Annotated[dict[str, ApiKeyPrincipal], NoDecode] = Field(
        default_factory=dict,
        description='JSON object: {"<key>": {"organization": "...", "user": "..."}}.',
    )

    # -- limits -----------------------------------------------------------------------------------------
    max_question_chars: int = 4000
    max_upload_bytes: int = 20 * 1024 * 1024
    max_request_bytes: int = 1024 * 1024
    max_blob_names: int = 20
    max_tool_rounds: int = 4
    file_cache_ttl_seconds: float = Field(default=3600.0, gt=0)
    history_turns: int = Field(default=10, ge=0, le=10, description="Turns of history a turn reads (at most 10).")
    history_tokens: int = Field(
        default=16_000,
        ge=0,
        description="Token budget of the recent history in the answer prompt (older messages are shortened, then "
        "the oldest turns dropped).",
    )
    sources_tokens: int = Field(default=12_000, ge=1, description="Token budget of the sources in the answer prompt.")
    tool_timeout_seconds: float = 120.0
    idempotency_ttl_seconds: float = Field(default=86400.0, gt=0, description="How long Idempotency-Keys are kept.")

    # -- MCP over HTTP ----------------------------------------------------------------------------------
    mcp_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["127.0.0.1:*", "localhost:*", "[::1]:*"],
        description="Host headers the /api/mcp endpoint accepts (DNS-rebinding protection); comma separated.",
    )

    # -- MCP clients (tool names, local files) -----------------------------------------------------------
    mcp_tool_names: Literal["dotted", "underscore"] = Field(
        default="dotted",
        description="How /api/mcp and `orc mcp` spell tool names: dotted (documents.list, the design's names) or "
        "underscore (documents_list) for clients that refuse dots (Claude Desktop, OpenAI, Codex, Copilot CLI).",
    )
    mcp_allowed_dirs: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Folders whose files the stdio MCP server may attach by path (session.attach_path), "
        f"separated by {os.pathsep!r}; none: the tool is not offered. Never used over HTTP.",
    )

    @field_validator("mcp_allowed_dirs", mode="before")
    @classmethod
    def _parse_dirs(cls, value: object) -> object:
        if isinstance(value, str):
            return [Path(part) for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator("api_keys", mode="before")
    @classmethod
    def _parse_api_keys(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError("ORC_API_KEYS must be a JSON object of key -> {organization, user}") from exc
        return value

    @field_validator("mcp_allowed_hosts", mode="before")
    @classmethod
    def _parse_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    def require(self, *names: str) -> None:
        """Fail fast, naming the environment variable, when a setting a chosen backend needs is missing."""
        missing = [f"ORC_{name.upper()}" for name in names if getattr(self, name) in (None, "")]
        if missing:
            raise ConfigurationError(f"missing required setting(s): {', '.join(missing)}")

    def check(self) -> None:
        """Validate combinations that single fields cannot express."""
        if self.auth == "api-key" and not self.api_keys:
            raise ConfigurationError("ORC_AUTH=api-key needs ORC_API_KEYS")
        if self.storage == "azure":
            self.require("cosmos_endpoint")
            if self.blob_connection_string is None and not self.blob_account_url:
                raise ConfigurationError(
                    "missing required setting(s): ORC_BLOB_CONNECTION_STRING or ORC_BLOB_ACCOUNT_URL"
                )
