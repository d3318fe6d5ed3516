"""Admission: what every turn passes before it runs, and what it is charged after (DESIGN §8).

The turn service asks its :class:`TurnPolicy` to :meth:`~TurnPolicy.admit` a principal before any model-running
work, whichever way the turn came in (ask, stream, supply, run-without, the deadline fallback, MCP
``document_chat`` answering); the :class:`Admission` it gets back carries the turn's fairness gate into the typed
runtime context (``TurnContext.gate``) and is charged the turn's usage when it ends. The policy lives here, in the
pipeline every path takes, so an adapter can neither skip it nor apply it twice.

Two implementations: :class:`QuotaPolicy` (per-principal rate, daily tokens and concurrent turns, see
:mod:`orc.quotas`) for a served process, and :data:`UNLIMITED` for the CLI and embedders (one local user has nobody
to share the process with).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from orc.contracts import Usage
from orc.principal import Principal
from orc.quotas import Quotas, TurnSlot

if TYPE_CHECKING:  # the gate's module loads the graph's runtime (LangChain); policy is also built without it
    from orc.graph.context import TurnGate


class Admission(Protocol):
    """One admitted turn: its gate, its charge, its release (idempotent)."""

    @property
    def gate(self) -> TurnGate | None:
        """The gate the turn asks before each graph node (``None``: never waits)."""
        ...

    async def charge(self, usage: Usage) -> None:
        """Count what the turn used against its principal (its model tokens)."""
        ...

    def release(self) -> None:
        """Free what admission took (a concurrent-turn slot); later calls do nothing."""
        ...


class TurnPolicy(Protocol):
    """Admits or refuses a principal's turns, and charges them."""

    async def admit(self, principal: Principal) -> Admission:
        """Admit one turn, or raise the refusal (429 ``rate_limited``, ``token_quota_exceeded``,
        ``too_many_concurrent_turns``, with ``retry_after``) before anything runs or is stored."""
        ...

    def refuse_early(self, principal: Principal) -> None:
        """Raise, from memory only, the refusal this process already knows ``principal`` would get (so a flood is
        turned away before its requests are parsed); nothing when it does not know."""
        ...

    async def hold_refusal(self, refusal: BaseException) -> None:
        """Hold an early refusal a moment before it is sent (a flood's next request then comes later)."""
        ...


class _Free:
    """The admission of an unlimited policy: no gate, no charge, nothing to release."""

    gate: TurnGate | None = None

    async def charge(self, usage: Usage) -> None:
        """Nothing is counted."""

    def release(self) -> None:
        """Nothing was taken."""


class UnlimitedPolicy:
    """Admits every turn at once and counts nothing: the CLI's and an embedder's policy."""

    _FREE = _Free()

    async def admit(self, principal: Principal) -> Admission:
        """Every turn is admitted."""
        return self._FREE

    def refuse_early(self, principal: Principal) -> None:
        """Nothing is ever refused."""

    async def hold_refusal(self, refusal: BaseException) -> None:
        """There are no refusals to hold."""


UNLIMITED = UnlimitedPolicy()


class _QuotaAdmission:
    """A turn admitted under quotas: its concurrent-turn slot (also its gate) and its principal's token counter."""

    __slots__ = ("_principal", "_quotas", "_slot")

    def __init__(self, quotas: Quotas, principal: Principal, slot: TurnSlot) -> None:
        self._quotas = quotas
        self._principal = principal
        self._slot = slot

    @property
    def gate(self) -> TurnGate | None:
        """The slot: while its principal floods and others' turns run, the turn gives way at its nodes."""
        return self._slot

    async def charge(self, usage: Usage) -> None:
        """Add the turn's tokens to its principal's day."""
        await self._quotas.charge(self._principal, usage.total_tokens)

    def release(self) -> None:
        """Free the concurrent-turn slot."""
        self._slot.release()


class QuotaPolicy:
    """Admission under :class:`orc.quotas.Quotas`: the concurrency cap first (in memory, so a caller over it is
    refused without touching the store), then the rate and the day's tokens."""

    def __init__(self, quotas: Quotas) -> None:
        self._quotas = quotas

    async def admit(self, principal: Principal) -> Admission:
        """Take a slot and count the request; refused with the limit's 429."""
        slot = self._quotas.turn_slot(principal)
        try:
            await self._quotas.admit(principal)
        except BaseException:
            slot.release()
            raise
        return _QuotaAdmission(self._quotas, principal, slot)

    def refuse_early(self, principal: Principal) -> None:
        """The refusal known from memory (a full cap, a window known to be full)."""
        self._quotas.refuse_early(principal)

    async def hold_refusal(self, refusal: BaseException) -> None:
        """Hold a 429 up to a second (never longer than its ``Retry-After``)."""
        await self._quotas.hold_refusal(refusal)
