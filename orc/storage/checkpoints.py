"""LangGraph checkpoints on the document-collection port, so a paused turn resumes on any instance.

Used in production (Cosmos DB), where no well-kept checkpointer package both fits LangGraph 1.x's contract and
runs against the Cosmos emulator; the embedded default keeps LangGraph's own ``AsyncSqliteSaver``. One
partition per thread keeps every read of a turn inside one partition. Checkpoint ids are time-ordered
(uuid6), so the latest checkpoint is the greatest id.
"""

from __future__ import annotations

import base64
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from orc.errors import ItemAlreadyExists
from orc.storage.ports import DocumentCollection, StoredItem

_CHECKPOINT = "checkpoint"
_WRITE = "write"
NEW_TURN = "orc_new_turn"
"""Configurable flag of a run that starts a new turn: it begins from fresh input, so no checkpoint is read."""


def checkpoint_serializer() -> JsonPlusSerializer:
    """LangGraph's serializer, deserializing only the types LangGraph knows to be safe until a graph registers its
    own with ``with_allowlist`` (:func:`orc.graph.builder.build_graph` does): a checkpoint never imports and builds
    a class nobody named, and a registered type is read back without LangGraph's "unregistered type" warning."""
    return JsonPlusSerializer(allowed_msgpack_modules=None)


def _encode(typed: tuple[str, bytes]) -> dict[str, str]:
    return {"type": typed[0], "data": base64.b64encode(typed[1]).decode("ascii")}


def _decode(value: dict[str, str]) -> tuple[str, bytes]:
    return value["type"], base64.b64decode(value["data"])


def _safe(part: str) -> str:
    # Item ids may not contain '/', '\\', '?' or '#'; namespaces and task paths can.
    return base64.urlsafe_b64encode(part.encode()).decode("ascii").rstrip("=") or "-"


class CollectionCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpoint saver whose items live in a :class:`DocumentCollection` (async only: the sync methods
    are the base class's, which raise ``NotImplementedError``).

    ``serde`` defaults to :func:`checkpoint_serializer`.
    """

    def __init__(self, collection: DocumentCollection, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde or checkpoint_serializer())
        self._items = collection

    # -- reads ----------------------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``checkpoint_id``, or the thread's latest in its namespace.

        A new turn (:data:`NEW_TURN`) starts from a complete fresh input, and the conversation store, not the
        checkpoints, holds history: reading the previous turn's checkpoint would be a wasted round trip.
        """
        if config["configurable"].get(NEW_TURN):
            return None
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            item = await self._items.get(thread_id, self._checkpoint_item_id(namespace, checkpoint_id))
        else:
            latest = await self._items.query(
                thread_id,
                where={"kind": _CHECKPOINT, "ns": namespace},
                order_by="checkpoint_id",
                descending=True,
                limit=1,
            )
            item = latest[0] if latest else None
        return await self._tuple(thread_id, item) if item else None

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints of a thread, newest first; ``filter`` matches metadata keys exactly."""
        if config is None:
            raise ValueError("listing checkpoints needs a thread_id: they are partitioned by thread")
        thread_id = str(config["configurable"]["thread_id"])
        where: dict[str, Any] = {"kind": _CHECKPOINT}
        if "checkpoint_ns" in config["configurable"]:
            where["ns"] = str(config["configurable"]["checkpoint_ns"])
        items = await self._items.query(thread_id, where=where, order_by="checkpoint_id", descending=True)
        only_id = get_checkpoint_id(config)
        before_id = get_checkpoint_id(before) if before else None
        returned = 0
        for item in items:
            body = item.body
            if only_id and body["checkpoint_id"] != only_id:
                continue
            if before_id and body["checkpoint_id"] >= before_id:
                continue
            if filter:
                metadata = self.serde.loads_typed(_decode(body["metadata"]))
                if any(metadata.get(key) != value for key, value in filter.items()):
                    continue
            if limit is not None and returned >= limit:
                return
            returned += 1
            yield await self._tuple(thread_id, item)

    async def _tuple(self, thread_id: str, item: StoredItem) -> CheckpointTuple:
        body = item.body
        namespace, checkpoint_id = body["ns"], body["checkpoint_id"]
        writes = await self._items.query(
            thread_id, id_prefix=self._writes_prefix(namespace, checkpoint_id), order_by="order"
        )
        parent = body.get("parent_id")
        return CheckpointTuple(
            config={
                "configurable": {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": checkpoint_id}
            },
            checkpoint=self.serde.loads_typed(_decode(body["checkpoint"])),
            metadata=self.serde.loads_typed(_decode(body["metadata"])),
            parent_config=(
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": parent}}
                if parent
                else None
            ),
            pending_writes=[
                (w.body["task_id"], w.body["channel"], self.serde.loads_typed(_decode(w.body["value"]))) for w in writes
            ],
        )

    # -- writes ---------------------------------------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint (idempotent: the same id overwrites itself)."""
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        body = {
            "kind": _CHECKPOINT,
            "ns": namespace,
            "checkpoint_id": checkpoint["id"],
            "parent_id": config["configurable"].get("checkpoint_id"),
            "checkpoint": _encode(self.serde.dumps_typed(checkpoint)),
            "metadata": _encode(self.serde.dumps_typed(metadata)),
        }
        await self._items.upsert(thread_id, self._checkpoint_item_id(namespace, checkpoint["id"]), body)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store a task's pending writes; special channels (errors, interrupts) overwrite, others keep the first."""
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        checkpoint_id = str(config["configurable"]["checkpoint_id"])
        for index, (channel, value) in enumerate(writes):
            slot = WRITES_IDX_MAP.get(channel, index)
            item_id = f"{self._writes_prefix(namespace, checkpoint_id)}{_safe(task_id)}:{slot}"
            body = {
                "kind": _WRITE,
                "ns": namespace,
                "checkpoint_id": checkpoint_id,
                "task_id": task_id,
                "task_path": task_path,
                "channel": channel,
                "order": f"{task_path}|{task_id}|{slot + 1000:06d}",
                "value": _encode(self.serde.dumps_typed(value)),
            }
            if slot < 0:
                await self._items.upsert(thread_id, item_id, body)
            else:
                try:
                    await self._items.create(thread_id, item_id, body)
                except ItemAlreadyExists:
                    continue

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread."""
        for item in await self._items.query(thread_id):
            await self._items.delete(thread_id, item.id)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Monotonic, string-sortable channel versions (as LangGraph's own savers make them)."""
        current_v = 0 if current is None else int(str(current).split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    @staticmethod
    def _checkpoint_item_id(namespace: str, checkpoint_id: str) -> str:
        return f"cp:{_safe(namespace)}:{checkpoint_id}"

    @staticmethod
    def _writes_prefix(namespace: str, checkpoint_id: str) -> str:
        return f"wr:{_safe(namespace)}:{checkpoint_id}:"
