"""The context preprocess prompt files and the ``prompt_version`` they define (manifest-driven).

Task A's system prompt is ``context_preprocess_common.system`` followed by ``context_preprocess_per_file.system``;
Task B's is the common part followed by ``context_preprocess_aggregate.system``. A task's ``prompt_version`` is
the version ``prompts/manifest.json`` gives its prompt files: ``v1.4`` when both parts are at ``v1.4``, and
``<common>+<task>`` when they differ, so bumping either file's version changes the cache key of every digest
made with it. An ``ORC_PROMPTS_DIR`` override that changes a file's text adds a hash of it to that file's version
(:meth:`orc.models.prompting.PromptSet.version`), so its digests never reuse ones made with another text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from orc.models.prompting import PromptSet, active_prompts, load_prompt, prompt_from

COMMON = "context_preprocess_common.system"
PER_FILE = "context_preprocess_per_file.system"
AGGREGATE = "context_preprocess_aggregate.system"
RETRY = "context_preprocess_retry"


@dataclass(frozen=True, slots=True)
class TaskPrompt:
    """A task's full system prompt and the version recorded with what it produces."""

    system: str
    version: str


@lru_cache(maxsize=8)
def _task(prompts: PromptSet, name: str) -> TaskPrompt:
    common = prompt_from(prompts, COMMON)
    task = prompt_from(prompts, name)
    version = common.version if common.version == task.version else f"{common.version}+{task.version}"
    return TaskPrompt(system=f"{common.render()}\n\n{task.render()}", version=version)


def per_file_prompt() -> TaskPrompt:
    """Task A (PER_FILE_DIGEST), from the prompt set in force."""
    return _task(active_prompts(), PER_FILE)


def aggregate_prompt() -> TaskPrompt:
    """Task B (AGGREGATE_DIGEST), from the prompt set in force."""
    return _task(active_prompts(), AGGREGATE)


def retry_message(errors: list[str]) -> str:
    """What the model is told when its digest broke the rules: each broken rule on its own line."""
    return load_prompt(RETRY).render(errors="\n".join(f"- {error}" for error in errors))
