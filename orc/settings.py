"""The one settings object, read from the environment (``ORC_`` prefix) by the composition root only."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from orc import hosting
from orc import resources as azure_resources
from orc.errors import ConfigurationError
from orc.rates import RateLimit

EASYAUTH_OFF = (
    "ORC_AUTH=easyauth but App Service authentication is not on (WEBSITE_AUTH_ENABLED is not True): a client could "
    "set X-MS-CLIENT-PRINCIPAL itself, so every request is refused (503 easyauth_not_enabled). Turn it on: deploy "
    "infra/main.bicep with authClientId (its authsettingsV2 resource), or choose ORC_AUTH=api-key; see "
    "docs/deploying-to-azure.md"
)
"""Why an app with ``ORC_AUTH=easyauth`` and no App Service authentication refuses every request."""
REMOVED = {
    "ORC_HISTORY_TURNS": "a turn reads the last 10 turns; ORC_HISTORY_TOKENS bounds what the answer model sees",
    "ORC_TOOL_TIMEOUT_SECONDS": "one tool call may take 120 s; ORC_TURN_TIMEOUT bounds the whole turn",
    "ORC_IDEMPOTENCY_TTL_SECONDS": "Idempotency-Key responses are kept for 24 hours",
    "ORC_CONTEXT_SWEEP_SECONDS": "paused turns are swept every 15 s, or every eighth of ORC_CONTEXT_REQUEST_TIMEOUT "
    "when that is shorter (on Azure, by the timer function's schedule)",
    "ORC_PROCESSING_SWEEP_SECONDS": "interrupted uploads are swept every 15 s (on Azure, by the timer function)",
    "ORC_PROCESSING_LEASE_SECONDS": "a processing lease lasts 30 s without renewal",
    "ORC_QUEUE_VISIBILITY_SECONDS": "a received job stays invisible for 300 s",
    "ORC_QUEUE_MAX_DELIVERIES": "a job delivered 4 times is given up (on Azure, host.json's maxDequeueCount)",
    "ORC_MAX_TOOL_ROUNDS": "a turn plans at most 4 rounds of tool calls",
    "ORC_DIGEST_CONCURRENCY": "a process makes at most 4 digest model calls at once",
    "ORC_FILE_CACHE_TTL_SECONDS": "document_chat keeps a processed file (and honours its file_id) for an hour",
    "ORC_MAX_DECOMPRESSED_BYTES": "a document may decompress to 200 MB; ORC_EXTRACTION_MEMORY_MB bounds its worker",
    "ORC_MAX_EXTRACTED_CHARS": "a document may extract to 10,000,000 characters",
    "ORC_EMBEDDINGS_BATCH_SIZE": "256 spans are embedded per request",
    "ORC_EMBEDDINGS_TIMEOUT_SECONDS": "ORC_MODEL_TIMEOUT_SECONDS bounds embeddings requests too",
    "ORC_EMBEDDINGS_MAX_RETRIES": "ORC_MODEL_MAX_RETRIES applies to embeddings requests too",
    "ORC_WORKER_CONCURRENCY": "`orc worker` runs 2 jobs at once unless --concurrency says otherwise",
    "ORC_COSMOS_EMULATOR": "an ORC_COSMOS_ENDPOINT on localhost or 127.0.0.1 is taken to be an emulator",
    "ORC_QUEUE_DOCUMENTS": "document jobs go to the queue orc-documents (the queue trigger of function_app.py)",
    "ORC_QUEUE_DIGESTS": "digest jobs go to the queue orc-digests (the queue trigger of function_app.py)",
}
"""Settings that became constants (docs/configuration.md, "Changes"), and what holds instead: an operator who still
sets one is told it has no effect rather than left to wonder."""

_JSON_OBJECTS = {
    "api_keys": "ORC_API_KEYS must be a JSON object of key -> {organization, user}",
    "models": 'ORC_MODELS must be a JSON object of alias -> model, e.g. {"fast": "offline"}',
}
"""What each JSON-object setting must look like, for the error that names it."""

log = logging.getLogger(__name__)


class ApiKeyPrincipal(BaseModel):
    """Who an API key speaks for, and with which role in its organization."""

    organization: str
    user: str
    role: Literal["admin", "member"] = "member"


def default_home() -> Path:
    """The platform's user data folder for orc: the same library from whatever folder ``orc`` runs in."""
    import platformdirs  # imported here: only needed when ORC_HOME is not set

    return Path(platformdirs.user_data_dir("orc", appauthor=False))


class Settings(BaseSettings):
    """Everything orc can be configured with. Library classes take explicit arguments instead of reading this."""

    model_config = SettingsConfigDict(env_prefix="ORC_", extra="ignore", populate_by_name=True)

    home: Path = Field(
        default_factory=lambda: default_home(),
        description="Folder for embedded data (SQLite files, local blobs); default: the platform's user data folder "
        "(~/.local/share/orc on Linux, ~/Library/Application Support/orc on macOS, %LOCALAPPDATA%\\orc on Windows).",
    )

    # -- models -----------------------------------------------------------------------------------------
    model: str = Field(
        default="offline",
        description="offline | openai:<model> | azure:<deployment>. With ORC_MODEL_BASE_URL, openai:<model> "
        "talks to any OpenAI-compatible server.",
    )
    model_base_url: str | None = None
    model_api_key: SecretStr | None = None
    model_timeout_seconds: float = Field(
        default=60.0, description="Seconds one request to the chat or embeddings model may take."
    )
    model_max_retries: int = Field(
        default=2, description="Retries of a failed request to the chat or embeddings model."
    )
    digest_model: str | None = Field(
        default=None,
        description="The model that makes context digests (Task A/B), same forms as ORC_MODEL; default: ORC_MODEL.",
    )
    models: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description='JSON object of the models a request may choose by alias, e.g. {"fast": "azure:gpt-4o-mini", '
        '"best": "azure:gpt-4.1"} (same forms as ORC_MODEL).',
    )

    embeddings: str = Field(
        default="off",
        description="off | openai:<model> | azure:<deployment>: the embedding model of hybrid retrieval's vector "
        "leg. With ORC_EMBEDDINGS_BASE_URL, openai:<model> talks to any OpenAI-compatible server (Ollama, vLLM, "
        "LM Studio). Off: lexical retrieval only.",
    )
    embeddings_base_url: str | None = None
    embeddings_api_key: SecretStr | None = None

    prompts_dir: str | None = Field(
        default=None,
        description="Prompt files replacing the packaged ones at start-up (same names as prompts/, manifest "
        "included): a folder (a mounted Azure Files share on Azure) or blob://<container>/<prefix> in the account "
        "of ORC_BLOB_*. Checked against the manifest: a broken file stops the start, named.",
    )

    # -- storage ----------------------------------------------------------------------------------------
    storage: Literal["embedded", "azure"] = "embedded"
    cosmos_endpoint: str | None = None
    cosmos_key: SecretStr | None = None
    cosmos_database: str = "orc"
    blob_connection_string: SecretStr | None = None
    blob_account_url: str | None = None
    blob_container: str = azure_resources.BLOB_CONTAINER
    resources: Literal["auto", "create", "check"] = Field(
        default="auto",
        description="create: make a missing Cosmos DB database or container, blob container, queue or search index "
        "on first use (emulators, a key-based development account). check: never create one; verify at start-up "
        "that each exists and refuse to start naming the missing one (Azure, where the identity's data roles cannot "
        "create them). auto: check on App Service / Functions or when Cosmos DB is reached with Entra ID, else "
        "create.",
    )
    search: Literal["embedded", "azure"] = Field(
        default="embedded",
        description="embedded: the span index in ORC_HOME/search, shared by every process of the machine. azure: "
        "Azure AI Search at ORC_SEARCH_ENDPOINT (its index orc-spans checked at start-up like the containers).",
    )
    search_endpoint: str | None = Field(
        default=None, description="https://<service>.search.windows.net (ORC_SEARCH=azure)."
    )
    search_key: SecretStr | None = Field(
        default=None, description="Admin key of the search service; without one, Entra ID (the app's identity)."
    )
    search_semantic: bool = Field(
        default=False,
        description="Re-rank lexical and hybrid queries with Azure AI Search's semantic ranker (a billed feature of "
        "the service; ORC_SEARCH=azure only).",
    )
    # -- identity ---------------------------------------------------------------------------------------
    auth: Literal["none", "api-key", "easyauth"] = "none"
    api_keys: Annotated[dict[str, ApiKeyPrincipal], NoDecode] = Field(
        default_factory=dict,
        description='JSON object: {"<key>": {"organization": "...", "user": "...", "role": "admin|member"}} '
        "(role: optional, default member).",
    )

    # -- limits -----------------------------------------------------------------------------------------
    max_question_chars: int = 4000
    max_upload_bytes: int = 20 * 1024 * 1024
    max_request_bytes: int = 1024 * 1024
    max_blob_names: int = 20
    history_tokens: int = Field(
        default=16_000,
        ge=0,
        description="Token budget of the recent history in the answer prompt (older messages are shortened, then "
        "the oldest turns dropped).",
    )
    sources_tokens: int = Field(
        default=4_000,
        ge=1,
        description="Token budget of the sources in the answer prompt: the best passages whole, then excerpts of the "
        "next ones until it is full.",
    )
    context_requests: Literal["allow", "never"] = Field(
        default="never",
        description="Whether a turn whose request does not say may pause to ask for missing context (context "
        'handoff). Clients that can show a request send "context_requests": "allow" themselves.',
    )
    context_request_timeout: float = Field(
        default=300.0, gt=0, description="Seconds a paused turn waits for context before it answers without it."
    )
    context_request_reminder: float = Field(
        default=0.8,
        ge=0,
        lt=1,
        description="When a paused turn reminds the user, as a share of ORC_CONTEXT_REQUEST_TIMEOUT (0.8: after 80 %"
        " of it); 0 sends no reminder.",
    )
    redact_patterns: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Regular expressions, one per line, for secrets to redact from artifacts and suggestions on "
        "offer to a context request, beside the built-in ones (keys, tokens, connection strings, private keys).",
    )
    extraction_processes: int = Field(
        default=1,
        ge=0,
        description="Worker processes that parse uploaded documents, each under ORC_EXTRACTION_MEMORY_MB, so a "
        "hostile file cannot exhaust the serving process (one organization uses at most this many; one more parses "
        "other organizations' documents while it does); 0 parses in threads of the serving process.",
    )
    extraction_memory_mb: int = Field(
        default=1024, ge=256, description="Address-space limit of each extraction worker process, in MiB."
    )
    extraction_seconds: float = Field(
        default=60.0,
        gt=0,
        description="How long one document may take to parse; past it the worker is replaced and the document "
        "fails (extraction_timeout).",
    )
    generated_titles: bool = Field(
        default=True,
        description="With a real model, title each conversation from its first exchange in the background (the "
        "first question's title shows until then; a title the user chose is never replaced).",
    )

    # -- quotas and deadlines (off under ORC_AUTH=none: one local user has nobody to share with) ------------
    rate_limit: str = Field(
        default="20/hour",
        description="Turns per principal per window: N/second|minute|hour|day, or 'off'. Counted in the store.",
    )
    token_quota_daily: int | None = Field(
        default=None, ge=1, description="Model tokens per principal per UTC day (unset: no quota)."
    )
    upload_rate: str = Field(
        default="300/hour",
        description="Files one principal may upload per window: N/second|minute|hour|day, or 'off'.",
    )
    export_rate: str = Field(
        default="60/hour", description="Exports one principal may make per window: N/second|minute|hour|day, or 'off'."
    )
    upload_mb_per_window: int | None = Field(
        default=2048, ge=1, description="Megabytes one principal may upload per ORC_UPLOAD_RATE window (unset: no cap)."
    )
    max_concurrent_turns: int = Field(default=4, ge=1, description="Turns one principal may run at once (per process).")
    turn_timeout: float = Field(
        default=200.0, gt=0, description="Seconds a whole turn may take (below Azure Functions' 230 s)."
    )
    max_streams_per_principal: int = Field(default=8, ge=1, description="Open streams per principal (per process).")
    max_streams: int = Field(default=512, ge=1, description="Open streams per process.")
    stream_max_seconds: float = Field(default=600.0, gt=0, description="Longest an open stream is kept.")
    stream_idle_seconds: float = Field(
        default=60.0, gt=0, description="A stream that sent nothing for this long is closed."
    )

    # -- background jobs (document processing, digests) --------------------------------------------------
    jobs: Literal["inprocess", "queue"] = Field(
        default="inprocess",
        description="inprocess: asyncio tasks in the process that took the upload. queue: Azure Storage Queues, "
        "consumed by the queue-triggered functions or `orc worker`.",
    )
    queue_connection_string: SecretStr | None = None
    queue_account_url: str | None = None

    # -- telemetry ------------------------------------------------------------------------------------------
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="json: one JSON object per log record, with the trace and span ids (orc.telemetry). Exporters "
        "follow APPLICATIONINSIGHTS_CONNECTION_STRING or OTEL_EXPORTER_OTLP_ENDPOINT.",
    )

    # -- MCP over HTTP ----------------------------------------------------------------------------------
    mcp_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["127.0.0.1:*", "localhost:*", "[::1]:*"],
        description="Host headers the /api/mcp endpoint accepts (DNS-rebinding protection); comma separated.",
    )

    # -- output policy (orc.output_policy) ----------------------------------------------------------------
    output_image_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Hosts whose https Markdown images an answer, title, export or MCP result may keep; comma "
        "separated. Empty: every image is replaced by its alt text (a renderer fetches images without a click).",
    )

    # -- MCP clients (tool names, local files) -----------------------------------------------------------
    mcp_tool_names: Literal["dotted", "underscore"] | None = Field(
        default=None,
        description="How /api/mcp and `orc mcp` spell tool names: dotted (documents.list, the design's names) or "
        "underscore (documents_list) for clients that refuse dots (Claude Desktop, OpenAI, Codex, Copilot CLI). "
        "Unset: underscore over stdio (what desktop clients start), dotted on /api/mcp.",
    )
    mcp_allowed_dirs: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Folders whose files the stdio MCP server may attach by path (session.attach_path), "
        f"separated by {os.pathsep!r}; none: the tool is not offered. Never used over HTTP.",
    )

    def model_post_init(self, context: Any, /) -> None:
        """Warn about each removed setting the environment still sets (pydantic-settings ignores it silently)."""
        for name in sorted(REMOVED.keys() & os.environ.keys()):
            log.warning(
                "%s is no longer a setting and has no effect: %s (docs/configuration.md, Changes)", name, REMOVED[name]
            )

    @field_validator("home")
    @classmethod
    def _home_is_a_folder(cls, value: Path) -> Path:
        # Refused here, by name: the stores would fail later with a bare FileExistsError from deep in start-up.
        if value.exists() and not value.is_dir():
            raise ValueError("must be a folder, not a file")
        return value

    @field_validator("redact_patterns", mode="before")
    @classmethod
    def _parse_redact_patterns(cls, value: object) -> object:
        if isinstance(value, str):
            value = [line.strip() for line in value.splitlines() if line.strip()]
        if isinstance(value, list):
            for pattern in value:
                try:
                    re.compile(str(pattern))
                except re.error as exc:
                    raise ValueError(f"ORC_REDACT_PATTERNS: {pattern!r} is not a regular expression") from exc
        return value

    @field_validator("mcp_allowed_dirs", mode="before")
    @classmethod
    def _parse_dirs(cls, value: object) -> object:
        if isinstance(value, str):
            return [Path(part) for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator("api_keys", "models", mode="before")
    @classmethod
    def _parse_json_object(cls, value: object, info: ValidationInfo) -> object:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(_JSON_OBJECTS[str(info.field_name)]) from exc
        return value

    @field_validator("rate_limit", "upload_rate", "export_rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        RateLimit.parse(value)
        return value.strip().lower()

    @field_validator("mcp_allowed_hosts", "output_image_hosts", mode="before")
    @classmethod
    def _parse_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def easyauth_unprotected(self) -> bool:
        """``ORC_AUTH=easyauth`` where App Service authentication is off: no principal header can be trusted."""
        return self.auth == "easyauth" and not hosting.easyauth_enabled()

    @property
    def creates_resources(self) -> bool:
        """Whether missing storage resources are created on first use (see ``ORC_RESOURCES``)."""
        if self.resources != "auto":
            return self.resources == "create"
        if self.storage == "embedded":
            return not hosting.on_azure()
        return not hosting.on_azure() and self.cosmos_key is not None

    def require(self, *names: str) -> None:
        """Fail fast, naming the environment variable, when a setting a chosen backend needs is missing."""
        missing = [f"ORC_{name.upper()}" for name in names if getattr(self, name) in (None, "")]
        if missing:
            raise ConfigurationError(f"missing required setting(s): {', '.join(missing)}")

    def check(self) -> None:
        """Validate combinations that single fields cannot express."""
        if self.auth == "api-key" and not self.api_keys:
            raise ConfigurationError("ORC_AUTH=api-key needs ORC_API_KEYS")
        if self.jobs == "queue" and self.queue_connection_string is None and not self.queue_account_url:
            raise ConfigurationError(
                "missing required setting(s): ORC_QUEUE_CONNECTION_STRING or ORC_QUEUE_ACCOUNT_URL (ORC_JOBS=queue)"
            )
        if self.search == "azure":
            self.require("search_endpoint")
        if self.storage == "azure":
            self.require("cosmos_endpoint")
            if self.blob_connection_string is None and not self.blob_account_url:
                raise ConfigurationError(
                    "missing required setting(s): ORC_BLOB_CONNECTION_STRING or ORC_BLOB_ACCOUNT_URL"
                )
