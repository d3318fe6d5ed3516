"""Azure Functions entry: the same ASGI app as ``orc serve``, relayed by one streaming HTTP function, and the
queue-triggered functions that process documents and digests (``ORC_JOBS=queue``). No logic here.

Settings come from the Function App's application settings (``ORC_*``); see docs/deploying-to-azure.md. host.json
sets no route prefix, so the one HTTP function receives every path: the page at ``/``, its assets under ``/web``
and the API under ``/api``. The queue names come from orc.resources, the list infra/main.bicep declares; the host
reads them through its own storage connection (``AzureWebJobsStorage``). A handler that raises (another worker
holds the job, storage failed) leaves the message to the host, which delivers it again; orc marks a document
``failed`` before the host's own poison limit.

The first request or job of a worker process also runs ``orc doctor``'s checks once, in the background, and logs
their result.
"""

import azure.functions as func

from orc.composition import Services, SharedRuntime
from orc.doctor import StartupDiagnosis
from orc.http import create_app
from orc.http.functions_relay import RelayFunctionApp
from orc.resources import QUEUE_DIGESTS, QUEUE_DOCUMENTS

diagnosis = StartupDiagnosis()
app = RelayFunctionApp(create_app(), on_start=diagnosis.start)
jobs = SharedRuntime()


async def job_services() -> Services:
    """The queue and timer functions' services (the first one of the process also starts the diagnosis)."""
    diagnosis.start()
    return await jobs.get()


@app.queue_trigger(arg_name="message", queue_name=QUEUE_DOCUMENTS, connection="AzureWebJobsStorage")
async def process_document(message: func.QueueMessage) -> None:
    """Extract, span and index one uploaded document (orc.jobs.worker)."""
    services = await job_services()
    await services.documents.jobs.handle_message("process", message.get_body(), message.dequeue_count or 1)


@app.queue_trigger(arg_name="message", queue_name=QUEUE_DIGESTS, connection="AzureWebJobsStorage")
async def refresh_digests(message: func.QueueMessage) -> None:
    """Refresh one session's per-file and aggregate digests (orc.jobs.worker)."""
    services = await job_services()
    await services.documents.jobs.handle_message("digest", message.get_body(), message.dequeue_count or 1)


@app.timer_trigger(arg_name="timer", schedule="*/15 * * * * *", run_on_startup=False)
async def expire_context_requests(timer: func.TimerRequest) -> None:
    """Answer, without their context, the paused turns whose deadline passed (ORC_CONTEXT_REQUEST_TIMEOUT)."""
    services = await job_services()
    await services.orchestrator.expire_due()


@app.timer_trigger(arg_name="timer", schedule="*/15 * * * * *", run_on_startup=True)
async def recover_interrupted_documents(timer: func.TimerRequest) -> None:
    """Resume (or fail) uploads and processing that an instance stopped mid-way (orc.documents.intake.recovery)."""
    services = await job_services()
    await services.documents.recovery.sweep()
