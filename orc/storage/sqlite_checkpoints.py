"""The embedded checkpointer: LangGraph's ``AsyncSqliteSaver`` in ``ORC_HOME``, tuned for one write per turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from orc.storage.checkpoints import NEW_TURN, checkpoint_serializer


class EmbeddedCheckpointSaver(AsyncSqliteSaver):
    """``AsyncSqliteSaver`` that, like :class:`orc.storage.checkpoints.CollectionCheckpointSaver`, reads nothing for a
    new turn: it starts from a complete fresh input, and history comes from the conversation store."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, the thread's latest, or nothing for a :data:`NEW_TURN` run."""
        if config["configurable"].get(NEW_TURN):
            return None
        return await super().aget_tuple(config)


@asynccontextmanager
async def open_embedded_checkpointer(path: Path) -> AsyncIterator[EmbeddedCheckpointSaver]:
    """The saver on ``path`` (WAL), with :func:`~orc.storage.checkpoints.checkpoint_serializer`, closed on exit.

    ``synchronous=NORMAL`` in WAL mode stops each commit from waiting for an fsync; it halved the time a turn
    spends writing its checkpoint. A commit can still be lost to a power failure, never to a crash of the
    process, and never half-written: what a checkpoint holds is a turn in flight (to resume an interrupt), while
    the conversation itself lives in the conversation store.
    """
    async with aiosqlite.connect(str(path)) as conn:
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA synchronous=NORMAL")
        saver = EmbeddedCheckpointSaver(conn, serde=checkpoint_serializer())
        # The saver makes its tables on its first write, and a process whose turns cannot pause writes none:
        # they are made here, so that deleting a conversation's checkpoints finds them.
        await saver.setup()
        yield saver
