"""Which model answers a turn: the configured default, or one the caller picks from the server's allow-list.

``ORC_MODELS`` maps aliases to model specs (``{"fast": "azure:gpt-4o-mini", "best": "azure:gpt-4.1"}``); a request
names an alias, never a spec, so a caller can only choose among models the operator has configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from orc.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class ModelCapabilities:
    """What the turn may expect of a model. A model class declares its own as ``orc_capabilities``; any other
    model is taken to be a real one that writes, may be asked again and may call tools."""

    cites_by_construction: bool = False
    """Every sentence it writes comes from a cited source: an uncited answer is not worth asking for again."""
    titles_conversations: bool = True
    """Worth a request to title a new conversation."""
    asks_for_context: bool = True
    """May be offered the ``request_context`` tool, to pause a turn that lacks context."""
    counted_with_tiktoken: bool = True
    """Its prompts' budgets are counted with OpenAI's tiktoken encodings (exact for OpenAI's models, close for other
    served ones); a model with no tokenizer of its own (the offline model, test doubles) is counted by estimate."""


REAL_MODEL = ModelCapabilities()


@dataclass(frozen=True, slots=True)
class ChosenModel:
    """A model a turn may use, with the label answers' metadata name it by."""

    model: BaseChatModel
    label: str

    @property
    def capabilities(self) -> ModelCapabilities:
        """The model's declared capabilities (:data:`REAL_MODEL` when it declares none)."""
        declared = getattr(self.model, "orc_capabilities", None)
        return declared if isinstance(declared, ModelCapabilities) else REAL_MODEL


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The default model and the allow-listed alternatives."""

    default: ChosenModel
    allowed: Mapping[str, ChosenModel]

    def pick(self, alias: str | None) -> ChosenModel:
        """The model ``alias`` names (the default for ``None``); ``model_not_allowed`` (400) for any other alias."""
        if alias is None:
            return self.default
        chosen = self.allowed.get(alias)
        if chosen is None:
            offered = ", ".join(sorted(self.allowed)) or "none (only the default model is configured)"
            raise InvalidInput(
                f"model {alias[:64]!r} is not offered by this server; choose one of: {offered}",
                code="model_not_allowed",
            )
        return chosen
