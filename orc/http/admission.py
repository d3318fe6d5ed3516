"""Turns away a flooding caller's turns — the routes the route table classifies as turns: ``POST /api/orc`` and the
supply or run-without that resumes a paused turn — before FastAPI reads, validates and routes the request.

The turn service applies every limit (its :class:`orc.admission.Admission`); this ASGI middleware only answers
early what this process already knows from memory (:meth:`~orc.admission.Admission.refuse_early`), so that 150
requests in flight
from one caller cost the others a header parse and a dictionary lookup each, not a request's worth of work.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from orc.admission import Admission
from orc.errors import OrcError
from orc.http import problems
from orc.http.auth import Authenticator
from orc.http.route_table import RouteTable


class EarlyRefusal:
    """Answers 429 at once for a request that runs a turn whose principal is known to be over a limit.

    A supply's files are parsed before its turn is admitted: refused here, a flood of supplies over its turn limits
    costs no multipart read and no extraction."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        policy: Callable[[], Admission | None],
        table: RouteTable,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.policy = policy
        self.table = table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        turn = scope["type"] == "http" and self.table.route_for(scope).guards.turn
        limits = self.policy() if turn else None
        if limits is not None:
            headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
            try:
                limits.refuse_early(self.authenticator.authenticate(headers))
            except OrcError as exc:  # Unauthenticated included: the same answer the route would give
                await limits.hold_refusal(exc)  # a flood's 429s wait a little: its next request comes later
                await problems.problem_for(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)
