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

from orc.documents.intake.uploads import Upload, check_uploads
from orc.errors import InvalidInput, OrcError
from orc.names import folder_conflicts, validate_blob_name

MAX_CASES = 10_000
MAX_TURNS = 8
MAX_PROBLEMS = 50
"""Problems listed when a set is refused (the count says how many there are in all)."""
INVALID_SET = "invalid_eval_set"


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


def document_path(folder: Path, name: str) -> Path:
    """The file ``name`` names in the documents ``folder``: a valid blob name that stays inside the folder once
    every symbolic link is followed (a link out of it is refused, never read). Raises :class:`InvalidInput`."""
    validate_blob_name(name)
    path = folder / name
    try:
        resolved = path.resolve(strict=True)
    except OSError:
        raise InvalidInput(f"no such file in {folder}: {name}", code=INVALID_SET) from None
    if not resolved.is_relative_to(folder.resolve()):
        raise InvalidInput(f"{name} is a symbolic link out of {folder}; copy the file into it", code=INVALID_SET)
    if not resolved.is_file():
        raise InvalidInput(f"{name} in {folder} is not a file", code=INVALID_SET)
    return resolved


def load_cases(path: Path, documents: Path, *, max_upload_bytes: int | None = None) -> list[EvalCase]:
    """The cases of ``path``, the whole set checked before anything runs: each line's JSON and shape, ids used
    once, and each document as an upload of it would be (a valid name, a file inside ``documents`` — no symbolic
    link out —, not empty, at most ``max_upload_bytes``, of a type orc reads).

    Raises :class:`~orc.errors.InvalidInput` listing every problem found (the first :data:`MAX_PROBLEMS`), each
    with its line number.
    """
    cases: list[EvalCase] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    checked: dict[str, str | None] = {}
    """Each document named so far, and what is wrong with it (None: nothing)."""

    def problem(number: int, detail: str) -> None:
        problems.append(f"{path.name}:{number}: {detail}")

    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if len(cases) >= MAX_CASES:
                problem(number, f"more than {MAX_CASES} cases")
                break
            try:
                case = EvalCase.model_validate(json.loads(line))
            except json.JSONDecodeError as exc:
                problem(number, f"not JSON ({exc.msg})")
                continue
            except ValidationError as exc:
                for error in exc.errors():
                    where = ".".join(str(part) for part in error["loc"])
                    problem(number, f"{where}: {error['msg']}" if where else error["msg"])
                continue
            if case.id in first_line:
                problem(number, f"the id {case.id!r} is used twice (first on line {first_line[case.id]})")
            else:
                first_line[case.id] = number
            for name in case.docs:
                if name not in checked:
                    checked[name] = _document_problem(documents, name, max_upload_bytes)
                if checked[name] is not None:
                    problem(number, f"{checked[name]}")
            for name in folder_conflicts(case.docs, []):
                problem(number, f"{name!r} is both a file and a folder of this case's docs")
            cases.append(case)
    if not cases and not problems:
        raise InvalidInput(f"{path.name}: no cases", code=INVALID_SET)
    if problems:
        shown = problems[:MAX_PROBLEMS]
        more = [f"... and {len(problems) - MAX_PROBLEMS} more"] if len(problems) > MAX_PROBLEMS else []
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise InvalidInput("\n".join([f"{path.name}: {count}, no case was run", *shown, *more]), code=INVALID_SET)
    return cases


def _document_problem(folder: Path, name: str, max_upload_bytes: int | None) -> str | None:
    """What keeps document ``name`` of ``folder`` from being attached, or None."""
    try:
        path = document_path(folder, name)
        data = path.read_bytes()
        check_uploads([Upload(name, data)], max_upload_bytes if max_upload_bytes is not None else len(data))
    except OrcError as exc:
        return f"{name}: {exc.message}" if name not in exc.message else exc.message
    except OSError as exc:
        return f"{name}: cannot be read ({exc.strerror or type(exc).__name__})"
    return None
