"""Admission of every costly operation of a principal: one port (:class:`Admission`, asked with an
:data:`Operation`), one unlimited default (:data:`UNLIMITED`), and a served process's :class:`Limits` over counted
windows, concurrent slots and one fairness gate."""

from orc.admission.fairness import Fairness, TurnSlot
from orc.admission.limits import MAX_CONCURRENT_UPLOADS, Limits
from orc.admission.port import UNLIMITED, Admission, Admitted, Gate, Operation
from orc.rates import RateLimit

__all__ = [
    "MAX_CONCURRENT_UPLOADS",
    "UNLIMITED",
    "Admission",
    "Admitted",
    "Fairness",
    "Gate",
    "Limits",
    "Operation",
    "RateLimit",
    "TurnSlot",
]
