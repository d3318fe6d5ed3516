"""``orc doctor``: check the configuration and reach every configured resource; print what is missing and how to
fix it (the checks are :mod:`orc.doctor`'s, which the Functions start-up also runs). Exit status 0 when all is
in place, 1 otherwise."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # `orc --help` builds this command's parser and must not load the settings machinery
    from orc.settings import Settings


def add_doctor_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``doctor`` subcommand."""
    commands.add_parser(
        "doctor", help="check the configuration and reach each configured resource (storage, queues, models)"
    )


async def run_doctor(settings: Settings, out: TextIO | None = None) -> int:
    """Print the diagnosis of ``settings``; 0 when nothing is missing."""
    from orc.doctor import diagnose  # imported here: `orc --help` must not load the backends

    out = out or sys.stdout
    report = await diagnose(settings)
    for line in report.lines():
        print(line, file=out)
    return 0 if report.ok else 1
