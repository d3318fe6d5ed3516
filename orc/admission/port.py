"""The one admission port: every costly operation of a principal — a turn, an upload, a supplied file, an export, a
digest pass — asks :meth:`Admission.admit` with its :data:`Operation` before it runs, and holds what it is given
until it ends (DESIGN §8). :data:`UNLIMITED` admits everything and counts nothing: the CLI's, an embedder's and
``ORC_AUTH=none``'s (one local user has nobody to share the process with); :class:`orc.admission.Limits` is a served
process's."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Literal, Protocol

from orc.contracts import Usage
from orc.principal import Principal

Operation = Literal["turn", "upload", "supply", "export", "digest"]
"""What is admitted: a turn (also an MCP ``document_chat`` answer), files uploaded to a session or a context, files
supplied to a context request, a conversation's export, a digest pass over a session's files."""


class Gate(Protocol):
    """What a running turn asks before each graph node: whether its caller must give way to other callers' turns.

    A per-principal cap bounds how many turns one caller runs at once, not how much of the event loop they take; so
    each node is a yield point where a flooding caller's turn waits while other callers' turns run, for a bounded
    time."""

    def yielding(self) -> bool:
        """Whether this turn must give way before its next step (cheap: asked before every node)."""
        ...

    def step(self) -> AbstractAsyncContextManager[None]:
        """Wait for this turn's turn, and hold it while the step runs."""
        ...


class Admitted(Protocol):
    """One admitted operation: its gate (a turn's), its charge, its release (idempotent; also on leaving it as an
    async context manager)."""

    @property
    def gate(self) -> Gate | None:
        """The gate the turn asks before each graph node (``None``: never waits)."""
        ...

    async def charge(self, usage: Usage) -> None:
        """Count what the operation used against its principal (a turn's model tokens)."""
        ...

    def release(self) -> None:
        """Free what admission took (a concurrent slot); later calls do nothing."""
        ...

    async def __aenter__(self) -> Admitted: ...

    async def __aexit__(self, *exc: object) -> None: ...


class Admission(Protocol):
    """Admits or refuses a principal's operations, and charges them."""

    async def admit(self, principal: Principal, operation: Operation, *, files: int = 0, size: int = 0) -> Admitted:
        """Admit one ``operation`` (of ``files`` files of ``size`` bytes, for uploads and supplies), or raise its
        refusal (429 with ``retry_after``: ``rate_limited``, ``token_quota_exceeded``, ``too_many_concurrent_turns``,
        ``upload_limit``, ``export_limit``…) before anything runs or is stored."""
        ...

    def refuse_early(self, principal: Principal) -> None:
        """Raise, from memory only, the refusal this process already knows ``principal``'s turn would get (so a
        flood is turned away before its requests are parsed); nothing when it does not know."""
        ...

    async def hold_refusal(self, refusal: BaseException) -> None:
        """Hold an early refusal a moment before it is sent (a flood's next request then comes later)."""
        ...


class Free:
    """An admission that took nothing: no gate, no charge, nothing to release."""

    gate: Gate | None = None

    async def charge(self, usage: Usage) -> None:
        """Nothing is counted."""

    def release(self) -> None:
        """Nothing was taken."""

    async def __aenter__(self) -> Free:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


FREE = Free()


class Unlimited:
    """Admits everything at once and counts nothing."""

    async def admit(self, principal: Principal, operation: Operation, *, files: int = 0, size: int = 0) -> Admitted:
        """Everything is admitted."""
        return FREE

    def refuse_early(self, principal: Principal) -> None:
        """Nothing is ever refused."""

    async def hold_refusal(self, refusal: BaseException) -> None:
        """There are no refusals to hold."""


UNLIMITED = Unlimited()
"""The one unlimited default."""
