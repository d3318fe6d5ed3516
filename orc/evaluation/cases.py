"""The question-set format of ``orc eval``: JSON Lines, one case a line.

``{"id", "docs": [file names in the documents folder], "target": the file that answers, or null when the
documents cannot answer (the case then passes only when the answer declines and cites nothing), "question",
"expect": a short phrase the cited sentence must contain, "page"?: the page that answers}``. A follow-up case
has ``"turns": [{"question"}, {"question", "expect"}]`` in one conversation instead of ``question``/``expect``:
only its last turn is scored.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from orc.errors import InvalidInput

MAX_CASES = 10_000
MAX_TURNS = 8


class EvalTurn(BaseModel):
    """One question of a case; ``expect`` only on the turn that is scored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1)
    expect: str | None = Field(default=None, min_length=1)


class EvalCase(BaseModel):
    """One case of a question set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=200)
    docs: list[str] = Field(min_length=1)
    target: str | None = None
    question: str | None = Field(default=None, min_length=1)
    expect: str | None = Field(default=None, min_length=1)
    page: int | None = Field(default=None, ge=1)
    turns: list[EvalTurn] | None = Field(default=None, min_length=2, max_length=MAX_TURNS)

    @model_validator(mode="after")
    def _one_shape(self) -> EvalCase:
        if (self.turns is None) == (self.question is None):
            raise ValueError('a case has either "question" or "turns", not both or neither')
        if self.turns is not None:
            if self.expect is not None:
                raise ValueError('a follow-up case puts "expect" on its last turn')
            if any(turn.expect is not None for turn in self.turns[:-1]):
                raise ValueError('only the last turn of a follow-up case may have "expect"')
        if self.target is not None and self.target not in self.docs:
            raise ValueError(f'"target" {self.target!r} is not one of "docs"')
        if self.target is None and self.scored.expect is not None:
            raise ValueError('an unanswerable case ("target": null) has no "expect"')
        if self.target is not None and self.scored.expect is None:
            raise ValueError('an answerable case needs "expect", the phrase its cited sentence must contain')
        return self

    @property
    def conversation(self) -> list[EvalTurn]:
        """The questions asked, in order, in one conversation."""
        if self.turns is not None:
            return list(self.turns)
        assert self.question is not None
        return [EvalTurn(question=self.question, expect=self.expect)]

    @property
    def scored(self) -> EvalTurn:
        """The turn whose answer is judged: the last one."""
        return self.conversation[-1]

    @property
    def answerable(self) -> bool:
        """Whether the documents hold the answer."""
        return self.target is not None

    @property
    def follow_up(self) -> bool:
        """Whether the scored question only makes sense after an earlier one."""
        return self.turns is not None


def load_cases(path: Path, documents: Path) -> list[EvalCase]:
    """The cases of ``path``, each checked, and each of its ``docs`` present in ``documents``.

    Raises :class:`~orc.errors.InvalidInput` naming the line of the first bad case.
    """
    cases: list[EvalCase] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                case = EvalCase.model_validate(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path.name}:{number}: not JSON ({exc.msg})", code="invalid_eval_set") from None
            except ValidationError as exc:
                problem = exc.errors()[0]
                where = ".".join(str(part) for part in problem["loc"])
                detail = f"{where}: {problem['msg']}" if where else problem["msg"]
                raise InvalidInput(f"{path.name}:{number}: {detail}", code="invalid_eval_set") from None
            if case.id in seen:
                raise InvalidInput(f"{path.name}:{number}: the id {case.id!r} is used twice", code="invalid_eval_set")
            missing = [name for name in case.docs if not (documents / name).is_file()]
            if missing:
                raise InvalidInput(
                    f"{path.name}:{number}: no such file in {documents}: {', '.join(missing)}", code="invalid_eval_set"
                )
            seen.add(case.id)
            cases.append(case)
            if len(cases) > MAX_CASES:
                raise InvalidInput(f"{path.name}: more than {MAX_CASES} cases", code="invalid_eval_set")
    if not cases:
        raise InvalidInput(f"{path.name}: no cases", code="invalid_eval_set")
    return cases
