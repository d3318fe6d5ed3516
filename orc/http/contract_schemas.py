"""The context handoff's published contracts (context-handoff-plan §6): JSON Schemas of the context request, a
slot, the supply payload and body, and the three handoff events, generated from the pydantic models and typed
events the code itself validates and emits, into ``docs/contracts/``.

The files are generated, never edited: ``make contracts`` (``python -m orc.http.contract_schemas``) writes them,
and ``tests/http/test_contract_schemas.py`` fails when the models and the files differ. The models are imported by
their public names (``orc.turns``, ``orc.handoff``, ``orc.conversations``), so moving a model between modules
changes nothing here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from orc.conversations.context_requests import RequiredSlot
from orc.handoff import SupplyBody, SupplyPayload
from orc.turns import ContextRequired, ContextRequiredEvent, ContextResolvedEvent, ContextUpdateEvent

DRAFT = "https://json-schema.org/draft/2020-12/schema"
CONTRACTS: Mapping[str, Any] = {
    # The JSON answer of POST /api/orc (and of a stream's pause) when a turn waits for context.
    "context-request.schema.json": ContextRequired,
    "slot.schema.json": RequiredSlot,
    "supply-payload.schema.json": SupplyPayload,
    # The JSON body of POST /api/sessions/{id}/context-requests/{request_id}/supply.
    "supply-body.schema.json": SupplyBody,
    "context_required.event.schema.json": ContextRequiredEvent,
    "context_update.event.schema.json": ContextUpdateEvent,
    "context_resolved.event.schema.json": ContextResolvedEvent,
}
"""File name → the model or typed event it is generated from (its docstring is the schema's description)."""
DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "docs" / "contracts"


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema document of contract ``name`` (a key of :data:`CONTRACTS`)."""
    return {"$schema": DRAFT, **TypeAdapter(CONTRACTS[name]).json_schema(mode="validation")}


def rendered() -> dict[str, str]:
    """Every contract file's exact text."""
    return {name: json.dumps(schema_for(name), indent=2, sort_keys=True) + "\n" for name in CONTRACTS}


def differences(folder: Path = DEFAULT_FOLDER) -> list[str]:
    """The contract files that are missing, stale or unexpected in ``folder``."""
    expected = rendered()
    present = {path.name for path in folder.glob("*.json")} if folder.is_dir() else set()
    stale = [
        name for name, text in expected.items() if name not in present or (folder / name).read_text("utf-8") != text
    ]
    return sorted(stale + sorted(present - set(expected)))


def write(folder: Path = DEFAULT_FOLDER) -> list[str]:
    """Write every contract file (and remove files no model makes any more); the names written."""
    folder.mkdir(parents=True, exist_ok=True)
    expected = rendered()
    for path in folder.glob("*.json"):
        if path.name not in expected:
            path.unlink()
    for name, text in expected.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(expected)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m orc.http.contract_schemas [--check] [--out FOLDER]``."""
    parser = argparse.ArgumentParser(prog="python -m orc.http.contract_schemas", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only report files that differ (exit status 1)")
    parser.add_argument("--out", type=Path, default=DEFAULT_FOLDER)
    args = parser.parse_args(argv)
    if args.check:
        stale = differences(args.out)
        for name in stale:
            print(f"out of date: {args.out / name} (run `make contracts`)", file=sys.stderr)
        return 1 if stale else 0
    for name in write(args.out):
        print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
