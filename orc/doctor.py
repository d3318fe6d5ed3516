"""``orc doctor``: is this deployment able to run? The configuration, each configured resource and the identity's
access to it, checked one by one, with what is missing and how to fix it.

The same checks run once when an Azure Functions worker starts (:class:`StartupDiagnosis`), and their result goes
to the log, so an operator reads the state of a fresh deployment in Application Insights without a shell on it.

What is checked:

- the settings (``ORC_*`` and the platform's own variables) and their combinations, and the identity mode on
  Azure (``ORC_AUTH=easyauth`` needs App Service authentication on; ``none`` would make every caller an admin);
- storage: embedded, the ``ORC_HOME`` folder is writable; Azure, the Cosmos DB database has every container
  :mod:`orc.resources` lists with its partition key, the blob container exists, and the identity may write to
  both (one probe item and one probe blob, written and deleted);
- the job queues (``ORC_JOBS=queue``) exist and the identity may read them;
- search: embedded, nothing to reach (on Azure it says that each instance keeps its own copy); Azure AI Search,
  the index ``orc-spans`` exists with every field orc writes (its vector size the embedding model's), and the
  identity may write and delete (one probe document, in an organization no caller can have);
- the prompt files: an ``ORC_PROMPTS_DIR`` override is read and checked against the manifest as start-up does;
- the chat model (and the digest model when it differs) and the embedding model (``ORC_EMBEDDINGS``) each
  answer one short request.

Nothing is ever created here, and no line carries an endpoint, a key or a connection string.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langchain_core.messages import HumanMessage

from orc import hosting
from orc.composition import azure_search_engine, azure_stores, model_from_settings
from orc.composition.foundation import embedding_model_from_settings
from orc.composition.stores import job_queue
from orc.errors import ConfigurationError, ModelMisconfigured, OrcError, ServiceUnavailable
from orc.models.faults import mapped_model_faults
from orc.prompt_source import prompts_for
from orc.resources import COSMOS_CONTAINERS, QUEUES, MissingResource, bicep_resource
from orc.settings import EASYAUTH_OFF, Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")
Outcome = Literal["ok", "fail"]
PROBE_PARTITION = "orc-doctor"
"""Where the write probes go (an item and a blob deleted right after they are written)."""

_ROLE_FIX = {
    "cosmos": "give the app's identity (AZURE_CLIENT_ID) the Cosmos DB Built-in Data Contributor role on the account "
    "(infra/main.bicep resource cosmosData), or set ORC_COSMOS_KEY for a key-based account",
    "blob": "give the app's identity the Storage Blob Data Contributor role on the storage account (infra/main.bicep "
    "resource blobData), or set ORC_BLOB_CONNECTION_STRING",
    "queue": "give the app's identity the Storage Queue Data Contributor role on the storage account (infra/main.bicep "
    "resource queueData), or set ORC_QUEUE_CONNECTION_STRING",
    "search": "give the app's identity the Search Index Data Contributor role on the search service (infra/main.bicep "
    "resource searchData), or set ORC_SEARCH_KEY",
}
SEARCH_PROBE_ORGANIZATION = "orc-doctor-probe"
"""The organization of the search probe (its document id is random, and it is deleted right after)."""


@dataclass(frozen=True, slots=True)
class Check:
    """One finding: what was checked, whether it is fine, what was seen, and how to fix it when it is not."""

    subject: str
    outcome: Outcome
    detail: str
    fix: str = ""


@dataclass(slots=True)
class Report:
    """Every finding of one diagnosis, in the order they were made."""

    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return all(check.outcome == "ok" for check in self.checks)

    @property
    def problems(self) -> list[Check]:
        """The failed checks."""
        return [check for check in self.checks if check.outcome == "fail"]

    def lines(self) -> list[str]:
        """The report as text: one line per check, its fix under a failed one, then a summary."""
        lines = []
        for check in self.checks:
            lines.append(f"{check.outcome.upper():4}  {check.subject}: {check.detail}")
            if check.fix:
                lines.append(f"      fix: {check.fix}")
        count = len(self.problems)
        lines.append("everything orc needs is in place" if not count else f"{count} problem(s) to fix")
        return lines


async def diagnose(settings: Settings) -> Report:
    """Check ``settings`` and reach everything they configure; never raises for what it finds."""
    report = Report()
    try:
        settings.check()
    except ConfigurationError as exc:
        report.checks.append(Check("configuration", "fail", exc.message, "set the named variable(s) and run again"))
        return report
    report.checks.append(
        Check(
            "configuration",
            "ok",
            f"storage {settings.storage}, jobs {settings.jobs}, auth {settings.auth}, model {settings.model}"
            + (" (on Azure)" if hosting.on_azure() else ""),
        )
    )
    report.checks.extend(identity_checks(settings))
    async with AsyncExitStack() as stack:
        # One embedding request serves both its own check and the search index's vector size.
        embeddings, dimensions = await _embedding_probe(settings, stack)
        report.checks.extend(await storage_checks(settings, stack))
        report.checks.extend(await queue_checks(settings, stack))
        report.checks.extend(await search_checks(settings, stack, dimensions=dimensions))
        report.checks.extend(await prompt_checks(settings, stack))
        report.checks.extend(await model_checks(settings, stack))
        report.checks.extend(embeddings)
    return report


def identity_checks(settings: Settings) -> list[Check]:
    """How callers are identified, and whether that is safe where the app runs."""
    if settings.easyauth_unprotected:
        return [Check("sign-in", "fail", EASYAUTH_OFF.split(": a client")[0], "see docs/deploying-to-azure.md#sign-in")]
    if hosting.on_azure() and settings.auth == "none":
        return [
            Check(
                "sign-in",
                "fail",
                "ORC_AUTH=none on Azure: every caller is the local admin",
                "set ORC_AUTH=easyauth (with the template's App Service authentication) or ORC_AUTH=api-key",
            )
        ]
    if settings.auth == "easyauth":
        return [Check("sign-in", "ok", "App Service authentication is on; X-MS-CLIENT-PRINCIPAL comes from it")]
    return [Check("sign-in", "ok", f"ORC_AUTH={settings.auth}")]


async def storage_checks(settings: Settings, stack: AsyncExitStack) -> list[Check]:
    """The embedded folder, or the Cosmos DB containers and the blob container with a write probe each."""
    if settings.storage == "embedded":
        return [await _embedded_home(settings)]
    from orc.storage.azure_checks import missing_blob_container, missing_cosmos_containers

    # Only ever opened, never created: a missing resource is reported, not made.
    try:
        cosmos, blobs = azure_stores(settings.model_copy(update={"resources": "check"}))
    except ConfigurationError as exc:
        return [Check("storage", "fail", exc.message, "fix the ORC_COSMOS_* and ORC_BLOB_* settings")]
    stack.push_async_callback(cosmos.aclose)
    stack.push_async_callback(blobs.aclose)

    async def write_item() -> bool:
        probe = await cosmos.collection(COSMOS_CONTAINERS[0].name)
        item = uuid.uuid4().hex
        await probe.create(PROBE_PARTITION, item, {"probe": True})
        return await probe.delete(PROBE_PARTITION, item)

    async def write_blob() -> bool:
        name = f"{PROBE_PARTITION}/{uuid.uuid4().hex}"
        await blobs.put(name, b"probe", content_type="text/plain")
        return await blobs.delete(name)

    checks: list[Check] = []
    missing = await _reach("Cosmos DB", "cosmos", lambda: missing_cosmos_containers(cosmos), checks)
    if missing:
        checks.extend(_missing(missing))
    elif missing is not None and await _reach("Cosmos DB", "cosmos", write_item, checks) is not None:
        checks.append(
            Check(
                "Cosmos DB",
                "ok",
                f"database {cosmos.database_name!r} has the {len(COSMOS_CONTAINERS)} containers orc uses (partition "
                "key /pk); the identity can write and delete items",
            )
        )
    missing = await _reach("Blob Storage", "blob", lambda: missing_blob_container(blobs), checks)
    if missing:
        checks.extend(_missing(missing))
    elif missing is not None and await _reach("Blob Storage", "blob", write_blob, checks) is not None:
        checks.append(
            Check("Blob Storage", "ok", f"container {blobs.container_name!r} exists; the identity can write and delete")
        )
    return checks


async def queue_checks(settings: Settings, stack: AsyncExitStack) -> list[Check]:
    """The job queues, when jobs go through queues."""
    if settings.jobs != "queue":
        return [Check("job queues", "ok", "not used (ORC_JOBS=inprocess: jobs run in the serving process)")]
    from orc.storage.azure_checks import missing_queues

    queues = []
    for name in QUEUES:
        try:
            queue = job_queue(settings, name, create=False)
        except ConfigurationError as exc:
            return [
                Check("job queues", "fail", exc.message, "fix ORC_QUEUE_CONNECTION_STRING or ORC_QUEUE_ACCOUNT_URL")
            ]
        stack.push_async_callback(queue.aclose)
        queues.append(queue)
    checks: list[Check] = []
    missing = await _reach("job queues", "queue", lambda: missing_queues(queues), checks)
    if missing:
        checks.extend(_missing(missing))
    elif missing is not None:
        checks.append(Check("job queues", "ok", f"{', '.join(queue.name for queue in queues)} exist"))
    return checks


async def search_checks(
    settings: Settings, stack: AsyncExitStack, *, dimensions: int | None = None, **client_options: Any
) -> list[Check]:
    """The search index: embedded (nothing to reach), or Azure AI Search's index, its schema and a write probe.
    ``dimensions`` is the embedding model's vector size (None when embeddings are off or unreachable);
    ``client_options`` go to the search SDK's clients (a transport, in tests)."""
    if settings.search == "embedded":
        if hosting.on_azure():
            # It works (each instance indexes what its searches need from the stored text), but every instance
            # builds and holds its own copy: said, not failed, so a deployment from before ORC_SEARCH still passes.
            return [
                Check(
                    "search",
                    "ok",
                    "embedded index in ORC_HOME/search: each instance keeps its own copy; ORC_SEARCH=azure (the "
                    "template's) shares one",
                )
            ]
        return [Check("search", "ok", "embedded index in ORC_HOME/search")]
    from orc.search.azure.schema import SCOPE_FIELDS
    from orc.search.port import IndexedDocument, IndexedSpan, ScopeFields

    try:
        engine = azure_search_engine(settings, **client_options)
    except ConfigurationError as exc:
        return [Check("Azure AI Search", "fail", exc.message, "fix ORC_SEARCH_ENDPOINT")]
    stack.push_async_callback(engine.aclose)
    checks: list[Check] = []
    missing = await _reach(
        "Azure AI Search", "search", lambda: engine.prepare(create=False, dimensions=dimensions), checks
    )
    if missing:
        return [
            *checks,
            *(
                Check(
                    f"{resource.kind} {resource.name!r}",
                    "fail",
                    resource.problem,
                    "run azd provision (its deployment script searchIndexSchema creates the index from "
                    "infra/search-index.json); a vector size that differs needs a new index",
                )
                for resource in missing
            ),
        ]
    if missing is None:
        return checks
    probe = IndexedDocument(
        organization=SEARCH_PROBE_ORGANIZATION,
        document_id=uuid.uuid4().hex,
        version="probe",
        scope=ScopeFields(organization=SEARCH_PROBE_ORGANIZATION, owner="organization:probe"),
        spans=[IndexedSpan(0, "S1", None, 0, 5, "probe", None, ("probe",))],
    )

    async def write() -> bool:
        await engine.upsert(probe)
        await engine.delete(probe.organization, probe.document_id)
        return True

    if await _reach("Azure AI Search", "search", write, checks) is not None:
        semantic = ", semantic ranker on" if settings.search_semantic else ""
        checks.append(
            Check(
                "Azure AI Search",
                "ok",
                f"index {engine.index_name!r} has the fields orc writes ({len(SCOPE_FIELDS)} filterable scope fields, "
                f"vectors of {engine.dimensions}{semantic}); the identity can write and delete",
            )
        )
    return checks


async def prompt_checks(settings: Settings, stack: AsyncExitStack) -> list[Check]:
    """The prompt files in force: the packaged ones, or an ``ORC_PROMPTS_DIR`` override checked as start-up does."""
    try:
        prompts = await prompts_for(settings)
    except ConfigurationError as exc:
        return [Check("prompts", "fail", exc.message, "fix the named file in ORC_PROMPTS_DIR, or unset it")]
    if prompts is None:
        return [Check("prompts", "ok", "the packaged prompt files")]
    changed = ", ".join(sorted(prompts.changed)) or "none"
    return [Check("prompts", "ok", f"ORC_PROMPTS_DIR override checked against the manifest; changed: {changed}")]


async def model_checks(settings: Settings, stack: AsyncExitStack) -> list[Check]:
    """One short request to the chat model, and to the digest model when it is another one."""
    names = [("chat model", settings.model)]
    if settings.digest_model and settings.digest_model != settings.model:
        names.append(("digest model", settings.digest_model))
    checks = []
    for subject, name in names:
        if name == "offline":
            checks.append(Check(subject, "ok", "offline extractive model (no endpoint to reach)"))
            continue
        try:
            model = model_from_settings(settings, name, resources=stack)
            async with mapped_model_faults():
                await model.ainvoke([HumanMessage("Reply with the single word OK.")])
        except ModelMisconfigured:
            refused = f"{name} refused the request (credentials or deployment)"
            checks.append(Check(subject, "fail", refused, _model_fix("ORC_MODEL", name)))
        except (ServiceUnavailable, OrcError) as exc:
            reason = exc.message.split(";")[0]  # the rest speaks to a turn's caller ("nothing was stored")
            checks.append(Check(subject, "fail", f"{name}: {reason}", "check the endpoint, the network and the quota"))
        else:
            checks.append(Check(subject, "ok", f"{name} answered"))
    return checks


async def _embedding_probe(settings: Settings, stack: AsyncExitStack) -> tuple[list[Check], int | None]:
    """The embedding model's check and its vector size (None when it is off or did not answer)."""
    fix = _model_fix("ORC_EMBEDDINGS", settings.embeddings)
    try:
        model = embedding_model_from_settings(settings, stack)
        if model is None:
            return [Check("embeddings", "ok", "off (lexical retrieval only)")], None
        async with mapped_model_faults():
            (vector,) = await model.embed(["orc doctor"], "query")
    except ModelMisconfigured:
        refused = f"{settings.embeddings} refused the request (credentials or deployment)"
        return [Check("embeddings", "fail", refused, fix)], None
    except OrcError as exc:
        return [Check("embeddings", "fail", f"{settings.embeddings}: {exc.message.split(';')[0]}", fix)], None
    return [Check("embeddings", "ok", f"{settings.embeddings} answered")], len(vector)


def _model_fix(setting: str, spec: str) -> str:
    """What to check when the model ``spec`` that ``setting`` names refused a request."""
    if spec.startswith("azure:"):
        return (
            f"check {setting}'s deployment name and AZURE_OPENAI_ENDPOINT, and give the identity the Cognitive "
            "Services OpenAI User role (infra/main.bicep resource openAiUser)"
        )
    return f"check {setting}, {setting}_BASE_URL and {setting}_API_KEY"


async def _embedded_home(settings: Settings) -> Check:
    def probe() -> None:
        settings.home.mkdir(parents=True, exist_ok=True)
        marker = settings.home / f".{PROBE_PARTITION}-{uuid.uuid4().hex}"
        marker.write_bytes(b"probe")
        marker.unlink()

    try:
        await asyncio.to_thread(probe)
    except OSError as exc:
        return Check(
            "storage", "fail", f"ORC_HOME is not writable ({type(exc).__name__})", "point ORC_HOME at a writable folder"
        )
    detail = "embedded: SQLite and local files in ORC_HOME"
    if hosting.on_azure():
        # Each Functions instance has its own disk: conversations would not be shared between instances.
        return Check("storage", "fail", f"{detail} on Azure", "set ORC_STORAGE=azure (the template does)")
    return Check("storage", "ok", detail)


async def _reach(subject: str, service: str, call: Callable[[], Awaitable[T]], checks: list[Check]) -> T | None:
    """``call``'s result, or None after recording why the service could not be used (refused or unreachable)."""
    try:
        return await call()
    except ServiceUnavailable as exc:
        checks.append(Check(subject, "fail", exc.message, "check the endpoint setting and the network path to it"))
    except OrcError as exc:
        checks.append(Check(subject, "fail", exc.message, _ROLE_FIX[service]))
    return None


def _missing(missing: list[MissingResource]) -> list[Check]:
    return [
        Check(
            f"{resource.kind} {resource.name!r}",
            "fail",
            resource.problem,
            f"declare it in {bicep_resource(resource.kind)} and redeploy (azd provision)",
        )
        for resource in missing
    ]


class StartupDiagnosis:
    """Runs :func:`diagnose` once per process, in the background, and logs its result (Azure Functions start-up).

    In the background because a cold start must not wait on a model round trip; once because every first request
    and first job of a worker would otherwise log it again.
    """

    def __init__(self, settings: Callable[[], Settings] = Settings) -> None:
        self._settings = settings
        self._task: asyncio.Task[Report] | None = None

    @property
    def started(self) -> bool:
        """Whether the diagnosis was started in this process."""
        return self._task is not None

    def start(self) -> None:
        """Start the diagnosis unless it already ran or is running."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def finished(self) -> Report:
        """The report, once the diagnosis ends (starting it if needed)."""
        self.start()
        assert self._task is not None
        return await self._task

    async def _run(self) -> Report:
        try:
            report = await diagnose(self._settings())
        except Exception as exc:  # a background task: what goes wrong is logged here or nowhere
            logger.error("orc doctor could not run: %s", type(exc).__name__)
            return Report([Check("doctor", "fail", f"could not run ({type(exc).__name__})")])
        for check in report.checks:
            level = logging.INFO if check.outcome == "ok" else logging.ERROR
            fix = f" (fix: {check.fix})" if check.fix else ""
            logger.log(level, "orc doctor: %s %s: %s%s", check.outcome, check.subject, check.detail, fix)
        summary = "everything orc needs is in place" if report.ok else f"{len(report.problems)} problem(s) to fix"
        logger.log(logging.INFO if report.ok else logging.ERROR, "orc doctor: %s", summary)
        return report
