"""The context preprocess prompt files and the ``prompt_version`` they define (manifest-driven).

Task A's system prompt is ``context_preprocess_common.system`` followed by ``context_preprocess_per_file.system``;
Task B's is the common part followed by ``context_preprocess_aggregate.system``. A task's ``prompt_version`` is
the version ``prompts/manifest.json`` gives its prompt files: ``v1.4`` when both parts are at ``v1.4``, and
``<common>+<task>`` when they differ, so bumping either file's version changes the cache key of every digest
made with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from orc.models.prompting import load_prompt

COMMON = "context_preprocess_common.system"
PER_FILE = "context_preprocess_per_file.system"
AGGREGATE = "context_preprocess_aggregate.system"
RETRY = "context_preprocess_retry"


@dataclass(frozen=True, slots=True)
class TaskPrompt:
    """A task's full system prompt and the version recorded with what it produces."""

    system: str
    version: str


def _task(name: str) -> TaskPrompt:
    common = load_prompt(COMMON)
    task = load_prompt(name)
    version = common.version if common.version == task.version else f"{common.version}+{task.version}"
    return TaskPrompt(system=f"{common.render()}\n\n{task.render()}", version=version)


@lru_cache(maxsize=1)
def per_file_prompt() -> TaskPrompt:
    """Task A (PER_FILE_DIGEST)."""
    return _task(PER_FILE)


@lru_cache(maxsize=1)
def aggregate_prompt() -> TaskPrompt:
    """Task B (AGGREGATE_DIGEST)."""
    return _task(AGGREGATE)


def retry_message(errors: list[str]) -> str:
    """What the model is told when its digest broke the rules: each broken rule on its own line."""
    return load_prompt(RETRY).render(errors="\n".join(f"- {error}" for error in errors))
