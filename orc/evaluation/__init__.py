"""Measuring answers: run a question set as real turns and score what came back (``orc eval``).

A team points it at its own documents and model (the offline default, an Azure OpenAI deployment, any
OpenAI-compatible server) before and after a change: :mod:`~orc.evaluation.cases` reads the set (JSON Lines),
:mod:`~orc.evaluation.runner` asks each case in a new conversation with its documents attached, exactly as a user
would, :mod:`~orc.evaluation.scoring` judges each answer, and :mod:`~orc.evaluation.report` writes the totals as
JSON and Markdown.
"""

from orc.evaluation.cases import EvalCase, EvalTurn, load_cases
from orc.evaluation.report import Report, summarize, to_markdown
from orc.evaluation.scoring import CaseOutcome
from orc.models.declines import is_decline

__all__ = [
    "CaseOutcome",
    "EvalCase",
    "EvalTurn",
    "Report",
    "is_decline",
    "load_cases",
    "summarize",
    "to_markdown",
]
