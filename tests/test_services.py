"""The composition root hands entry points one frozen Services container; the orchestrator keeps turns (and deleting
a conversation, with its checkpoints); the sessions service the rest of what is done to conversations."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest

from orc.composition import Services, Stores, build_runtime
from orc.composition.foundation import parts_of
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.turns import Orchestrator

TURNS = {
    "start",
    "ask",
    "stream",
    "resume",
    "expire_due",
    "settle",
    "delete_session",
}


def test_no_service_in_the_container_is_optional() -> None:
    hints = typing.get_type_hints(Services)
    optional = [name for name, hint in hints.items() if type(None) in typing.get_args(hint)]

    assert optional == []


def test_the_orchestrator_offers_turns_and_no_collaborators() -> None:
    public = {name for name, _ in inspect.getmembers(Orchestrator) if not name.startswith("_")}

    assert public == TURNS


async def test_a_built_process_fills_every_service_and_freezes_them() -> None:
    stores = Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())
    async with build_runtime(Settings(), stores=stores) as services:
        assert all(getattr(services, field.name) is not None for field in dataclasses.fields(services))
        assert parts_of(services.foundation).stores is stores
        with pytest.raises(dataclasses.FrozenInstanceError):
            services.orchestrator = services.orchestrator  # type: ignore[misc]
