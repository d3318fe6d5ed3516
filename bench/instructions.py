"""N warm in-process turns on embedded storage with the scripted bench model, for counting instructions.

Instruction counts do not drift with the host's speed, so two commits compare exactly on this busy VM:

    PYTHONHASHSEED=0 valgrind --tool=callgrind python -m bench.instructions 40   # and again with 0
    (instructions at 40 - instructions at 0) / 40 = instructions per warm turn

It also runs on commits before the structure change (their ``Runtime`` had ``orchestrator.files``).
"""

import asyncio
import sys
import tempfile
from pathlib import Path

N = int(sys.argv[1]) if len(sys.argv) > 1 else 40


async def main() -> None:
    from bench.common import SAMPLE_DOCS, SAMPLE_NAMES, bench_settings, scripted_model
    from orc.principal import LOCAL_PRINCIPAL
    from orc.turns import TurnRequest

    try:
        from orc.documents.intake.uploads import Upload
    except ImportError:
        from orc.session_files import Upload
    import orc.composition as composition

    with tempfile.TemporaryDirectory() as home:
        async with composition.build_runtime(bench_settings(Path(home)), model=scripted_model()) as rt:
            layered = hasattr(rt, "foundation")  # Services holds its layers (foundation, documents)
            files = (
                rt.foundation.session_files if layered else getattr(rt, "session_files", None) or rt.orchestrator.files
            )
            await files.add(LOCAL_PRINCIPAL, "c", [Upload(n, SAMPLE_DOCS[n]) for n in SAMPLE_NAMES])
            context = None if layered else getattr(rt, "context_files", None) or rt.orchestrator.context
            digests = rt.documents.digests if layered else context.digests
            assert await digests.wait_idle(LOCAL_PRINCIPAL, "c", 600)
            req = TurnRequest(
                question="How much notice is needed to end the lease?",
                conversation_id="c",
                blob_names=list(SAMPLE_NAMES),
            )
            for _ in range(5):
                await rt.orchestrator.ask(req)
            for _ in range(N):
                await rt.orchestrator.ask(req)


asyncio.run(main())
