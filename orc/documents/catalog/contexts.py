"""The organization → folder → usecase tree, kept in the catalog, and the pure rules derived from it.

Context nodes and context documents live in the organization's shared partition (``{organization}/contexts``),
so every user of an organization sees the same tree and nothing of another organization's. The organization
node itself always exists for its members (a ``PUT`` only names it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from orc.clock import utc_now
from orc.conversations import Turn
from orc.documents.records import ContextNode, ContextRef, ContextType
from orc.errors import (
    InvalidInput,
    InvalidParent,
    NotFound,
)
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.updates import update_item

MAX_NAME_CHARS = 200
_NODE_PREFIX = "ctx:"


def organization_partition(organization: str) -> str:
    """The partition of an organization's shared items (contexts and their documents).

    ``{organization}/contexts`` can never be a user's partition: ``contexts`` is a reserved user id.
    """
    return f"{organization}/contexts"


def _node_id(ref: ContextRef) -> str:
    return f"{_NODE_PREFIX}{ref.type}:{ref.id}"


def context_not_found(ref: ContextRef) -> NotFound:
    """The error for a context the caller cannot see (another organization's looks exactly the same)."""
    return NotFound(f"no {ref.type} {ref.id!r} in your organization", code="context_not_found")


def derive_contexts(nodes: Mapping[ContextRef, ContextNode], focus: ContextRef) -> list[ContextRef]:
    """The contexts whose documents are available for ``focus`` (chat-tools-evolution "Availability Model").

    - usecase → the usecase, its parent folder and the organization;
    - folder → the folder, the organization and every usecase under the folder;
    - organization → the organization, every folder and every usecase.

    ``nodes`` is the organization's whole tree (the organization node included); the focus comes first.
    """
    if focus not in nodes:
        return []
    organization = next((ref for ref in nodes if ref.type == "organization"), None)
    derived = [focus]
    if focus.type == "usecase":
        folder = nodes[focus].parent
        if folder is not None and folder in nodes:
            derived.append(folder)
        if organization is not None:
            derived.append(organization)
    elif focus.type == "folder":
        if organization is not None:
            derived.append(organization)
        derived.extend(sorted(ref for ref, node in nodes.items() if ref.type == "usecase" and node.parent == focus))
    else:
        derived.extend(sorted(ref for ref in nodes if ref.type == "folder"))
        derived.extend(sorted(ref for ref in nodes if ref.type == "usecase"))
    return derived


def historical_contexts(previous_focuses: Iterable[ContextRef | None], focus: ContextRef | None) -> list[ContextRef]:
    """The conversation's earlier focus contexts in order of first use, without repeats or the current focus."""
    seen: set[ContextRef] = set()
    result: list[ContextRef] = []
    for ref in previous_focuses:
        if ref is None or ref == focus or ref in seen:
            continue
        seen.add(ref)
        result.append(ref)
    return result


def historical_from_turns(turns: Sequence[Turn], focus: ContextRef | None) -> list[ContextRef]:
    """The historical contexts of a conversation whose stored ``turns`` (oldest first) precede this one.

    Both the orchestrator (for the prompt and the turn's metadata) and the MCP server (for a scope with
    ``include_historical``) derive them this way, from the same stored history.
    """
    earlier = [
        ContextRef(turn.assistant.focus_context.type, turn.assistant.focus_context.id)
        if turn.assistant.focus_context
        else None
        for turn in turns
    ]
    return historical_contexts(earlier, focus)


class ContextDirectory:
    """Creates, renames and reads the context nodes of the caller's organization."""

    def __init__(self, catalog: DocumentCollection) -> None:
        self._catalog = catalog

    async def tree(self, organization: str) -> dict[ContextRef, ContextNode]:
        """Every node of ``organization``'s tree, the (implicit or named) organization node included."""
        items = await self._catalog.query(organization_partition(organization), id_prefix=_NODE_PREFIX)
        nodes = {node.ref: node for node in (ContextNode.model_validate(item.body) for item in items)}
        root = ContextRef("organization", organization)
        nodes.setdefault(root, ContextNode(type="organization", id=organization, name=organization))
        # A node of another organization cannot be stored here, but a stray one must never widen a focus.
        return {ref: node for ref, node in nodes.items() if ref.type != "organization" or ref == root}

    async def get(self, principal: Principal, ref: ContextRef) -> ContextNode:
        """The node, or :class:`NotFound` (``context_not_found``) when the caller's organization has none."""
        if ref.type == "organization" and ref.id != principal.organization:
            raise context_not_found(ref)
        item = await self._catalog.get(organization_partition(principal.organization), _node_id(ref))
        if item is not None:
            return ContextNode.model_validate(item.body)
        if ref.type == "organization":
            return ContextNode(type="organization", id=ref.id, name=ref.id)  # exists for its members, unnamed
        raise context_not_found(ref)

    async def children(self, principal: Principal, ref: ContextRef) -> list[ContextNode]:
        """The direct children of a node, sorted by type then id."""
        tree = await self.tree(principal.organization)
        return sorted((node for node in tree.values() if node.parent == ref), key=lambda n: (n.type, n.id))

    async def put(
        self, principal: Principal, ref: ContextRef, name: str, parent_id: str | None
    ) -> tuple[ContextNode, bool]:
        """Create or rename (and, for a usecase, move) a node; returns it and whether it was created.

        Rules: an organization's id is the caller's organization and it has no parent; a folder's parent is the
        organization (``null`` means the caller's); a usecase's parent is a folder of the organization.
        """
        name = _check_name(name)
        if ref.type == "organization" and ref.id != principal.organization:
            # Organizations come from sign-in, not from here: say which one is the caller's to name.
            raise NotFound(
                f"you can name only your own organization, {principal.organization!r}; "
                f"another one ({ref.id!r}) cannot be made here",
                code="context_not_found",
            )
        tree = await self.tree(principal.organization)
        parent = _check_parent(principal, tree, ref, parent_id)
        created = False

        def put(current: StoredItem | None) -> dict[str, object]:
            nonlocal created
            created, now = current is None, utc_now()
            since = ContextNode.model_validate(current.body).created_at if current is not None else None
            return _body(_node(ref, name, parent, created_at=since or now, updated_at=now))

        busy = "the context is being changed by other requests; retry"
        partition = organization_partition(principal.organization)
        stored = await update_item(self._catalog, partition, _node_id(ref), put, busy=busy)
        assert stored is not None  # put always writes
        return ContextNode.model_validate(stored.body), created


def _node(ref: ContextRef, name: str, parent: ContextRef | None, *, created_at: str, updated_at: str) -> ContextNode:
    return ContextNode(
        type=ref.type,
        id=ref.id,
        name=name,
        parent_type=parent.type if parent else None,
        parent_id=parent.id if parent else None,
        created_at=created_at,
        updated_at=updated_at,
    )


def _body(node: ContextNode) -> dict[str, object]:
    return {"kind": "context", **node.model_dump(mode="json")}


def _check_name(name: str) -> str:
    cleaned = " ".join(name.split()) if isinstance(name, str) else ""
    if not cleaned:
        raise InvalidInput("a context needs a non-empty name", code="invalid_name")
    if len(cleaned) > MAX_NAME_CHARS:
        raise InvalidInput(f"a context name is at most {MAX_NAME_CHARS} characters", code="invalid_name")
    if any(ord(ch) < 0x20 for ch in name if ch not in "\t\n\r"):
        raise InvalidInput("a context name must not contain control characters", code="invalid_name")
    return cleaned


def _descendants(tree: Mapping[ContextRef, ContextNode], ref: ContextRef) -> set[ContextRef]:
    found: set[ContextRef] = set()
    frontier = [ref]
    while frontier:
        current = frontier.pop()
        for child, node in tree.items():
            if node.parent == current and child not in found:
                found.add(child)
                frontier.append(child)
    return found


_PARENT_TYPE: dict[ContextType, ContextType | None] = {
    "organization": None,
    "folder": "organization",
    "usecase": "folder",
}


def _check_parent(
    principal: Principal, tree: Mapping[ContextRef, ContextNode], ref: ContextRef, parent_id: str | None
) -> ContextRef | None:
    expected = _PARENT_TYPE[ref.type]
    if expected is None:
        if parent_id is not None:
            raise InvalidParent("an organization has no parent; send parent_id null")
        return None
    if parent_id is None:
        if expected == "organization":
            return ContextRef("organization", principal.organization)
        raise InvalidParent("a usecase needs a parent_id: the id of a folder of your organization")
    wanted = ContextRef(expected, parent_id)
    if wanted in tree:
        return wanted
    # The node itself or anything under it as its own parent would make a cycle.
    if any(node_ref.id == parent_id for node_ref in ({ref} | _descendants(tree, ref))):
        raise InvalidParent(
            f"{ref.label} cannot be placed under itself or one of its own descendants", code="context_cycle"
        )
    others: Sequence[ContextRef] = [other for other in tree if other.id == parent_id]
    if others:
        article = "an" if expected == "organization" else "a"
        raise InvalidParent(f"the parent of a {ref.type} must be {article} {expected}, not a {others[0].type}")
    raise NotFound(f"no {expected} {parent_id!r} in your organization", code="parent_not_found")
