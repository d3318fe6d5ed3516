"""The ``contexts.list`` tool: the caller's context tree (organization → folder → usecase), read-only.

External clients use it to find the ``context_type``/``context_id`` pairs the ``documents.*`` tools take as a focus;
a model may plan it too (it only reads names). Only the caller's own organization is ever listed.
"""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_server.tools.scoped import principal_tool
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.records import ContextNode, ContextRef
from orc.principal import Principal
from orc.tool_contract import CONTEXTS_LIST

_ORDER = {"organization": 0, "folder": 1, "usecase": 2}


class ContextEntry(BaseModel):
    """One context of the tree, with its parent and depth (0 for the organization)."""

    context_type: str
    context_id: str
    name: str
    parent_type: str | None = None
    parent_id: str | None = None
    depth: int = Field(description="0 for the organization, 1 for a folder, 2 for a usecase.")


class ContextTree(BaseModel):
    """The caller's organization and every folder and usecase under it, parents before their children."""

    organization: str
    contexts: list[ContextEntry]


def register(server: FastMCP, directory: ContextDirectory) -> None:
    """Add ``contexts.list`` to ``server``, over the context ``directory``."""

    @principal_tool(
        server,
        name=CONTEXTS_LIST,
        title="List the contexts",
        description=(
            "List the caller's contexts as a tree: the organization, its folders and their usecases (type, id, "
            "name, parent). Pass a context's type and id as context_type and context_id to the documents tools "
            "to focus on it; a folder makes its usecases' documents available too, the organization every one."
        ),
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False),
        failure="listing the contexts failed",
        render=render_tree,
    )
    async def contexts_list(principal: Principal) -> ContextTree:
        tree = await directory.tree(principal.organization)
        return ContextTree(organization=principal.organization, contexts=_walk(tree, principal.organization))


def _walk(tree: dict[ContextRef, ContextNode], organization: str) -> list[ContextEntry]:
    """Depth-first, children sorted by type then id, so the listing reads as an indented tree.

    A folder stored without a parent belongs to the organization (that is how availability treats it).
    """
    root = ContextRef("organization", organization)
    children: dict[ContextRef | None, list[ContextNode]] = {}
    for node in tree.values():
        parent = ContextRef(node.parent_type, node.parent_id) if node.parent_type and node.parent_id else None
        if parent is None and node.ref != root:
            parent = root
        children.setdefault(parent, []).append(node)
    entries: list[ContextEntry] = []
    seen: set[ContextRef] = set()

    def visit(node: ContextNode, parent: ContextRef | None, depth: int) -> None:
        if node.ref in seen:
            return
        seen.add(node.ref)
        entries.append(
            ContextEntry(
                context_type=node.type,
                context_id=node.id,
                name=node.name,
                parent_type=parent.type if parent else None,
                parent_id=parent.id if parent else None,
                depth=depth,
            )
        )
        for child in sorted(children.get(node.ref, []), key=lambda n: (_ORDER[n.type], n.id)):
            visit(child, node.ref, depth + 1)

    for top in sorted(children.get(None, []), key=lambda n: (_ORDER[n.type], n.id)):
        visit(top, None, 0)
    return entries


def render_tree(result: ContextTree) -> str:
    """``organization acme`` then indented ``folder legal (Legal)`` lines."""
    lines = [f"{len(result.contexts)} context(s) in organization {result.organization}:"]
    for entry in result.contexts:
        label = f"{entry.context_type} {entry.context_id}"
        if entry.name != entry.context_id:
            label += f" ({entry.name})"
        lines.append("  " * entry.depth + "- " + label)
    return "\n".join(lines)
