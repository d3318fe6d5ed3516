"""Who is asking: the organization and user every read and write is scoped to."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from orc.errors import InvalidName
from orc.names import validate_identifier

Role = Literal["admin", "member"]


class Principal(BaseModel):
    """An authenticated caller. Identity never comes from a request body, only from an authenticator."""

    model_config = ConfigDict(frozen=True)

    organization: str
    user: str
    role: Role = "member"
    """``admin`` may change every context and document of the organization; a ``member`` only what it uploaded."""

    @field_validator("organization", "user")
    @classmethod
    def _safe(cls, value: str) -> str:
        try:
            return validate_identifier(value, what="principal")
        except InvalidName as exc:
            raise ValueError(exc.message) from None

    @field_validator("user")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        # {organization}/contexts/... holds context documents; a user of that name would share the folder.
        if value == "contexts":
            raise ValueError("'contexts' is reserved and cannot be a user id")
        return value

    @property
    def partition_key(self) -> str:
        """The storage partition holding this user's data (keeps users apart and queries in one partition)."""
        return f"{self.organization}/{self.user}"


LOCAL_PRINCIPAL = Principal(organization="default", user="default", role="admin")
