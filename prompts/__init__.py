"""Prompt files shipped with orc (installed as the ``orc.prompts`` package). See ``orc.models.prompting``."""
