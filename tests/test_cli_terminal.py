"""``orc chat`` on a real terminal (a pseudo-terminal): line editing and history, Ctrl-C and Ctrl-D handled
cleanly, and the prompt shown before the heavy parts of orc are loaded."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

WAIT_SECONDS = 90.0
"""How long an expectation may wait on a loaded machine (returns as soon as the text shows)."""


_ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[()][A-Z0-9]|[=>])|\r")
PROMPT_READY = "\x1b[?2004h"
"""prompt-toolkit turns bracketed paste on each time it shows the prompt."""


class Terminal:
    """``orc chat`` attached to a pseudo-terminal, read as a user would see it."""

    def __init__(self, home: Path) -> None:
        self.main, child = pty.openpty()
        env = {**os.environ, "ORC_HOME": str(home), "ORC_MODEL": "offline", "TERM": "xterm"}
        env["PROMPT_TOOLKIT_NO_CPR"] = "1"  # nobody answers cursor-position requests here
        command = [sys.executable, "-c", "import sys; from orc.cli import main; sys.exit(main(['chat']))"]
        self.process = subprocess.Popen(command, stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
        os.close(child)
        self.seen = ""

    @property
    def text(self) -> str:
        """What was written, without the terminal's control sequences."""
        return _ESCAPES.sub("", self.seen)

    def prompts(self, count: int) -> None:
        """Wait until the prompt has been shown ``count`` times."""
        self._wait(lambda: self.seen.count(PROMPT_READY) >= count, f"prompt #{count}")

    def expect(self, text: str) -> None:
        """Read until ``text`` shows (control sequences aside)."""
        self._wait(lambda: text in self.text, repr(text))

    def _wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while not done():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"{what} never showed; the terminal shows:\n{self.text[-2000:]}"
            ready, _, _ = select.select([self.main], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.main, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, f"{what} never showed before the end:\n{self.text[-2000:]}"
                self.seen += chunk.decode("utf-8", "replace")

    def send(self, keys: str) -> None:
        os.write(self.main, keys.encode())

    def close(self) -> int:
        try:
            return self.process.wait(timeout=WAIT_SECONDS)
        finally:
            os.close(self.main)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_the_prompt_edits_lines_recalls_history_and_ctrl_c_and_ctrl_d_end_cleanly(home: Path) -> None:
    terminal = Terminal(home)
    terminal.prompts(1)
    terminal.send("Wht is the rent?")
    terminal.send("\x1b[D" * 14 + "a\r")  # left arrow to the typo and fix it: not an invalid_question error
    terminal.prompts(2)  # answered (there are no files: it says so) and back at the prompt
    terminal.send("half a question\x03")  # Ctrl-C at the prompt clears the line
    terminal.prompts(3)
    terminal.send("\x1b[A\r")  # up arrow: the question asked before, asked again
    terminal.prompts(4)
    terminal.send("\x04")  # Ctrl-D leaves
    assert terminal.close() == 0
    assert "Traceback" not in terminal.text and "invalid_question" not in terminal.text
    history = (home / "chat_history").read_text()
    # Asked twice, kept once (a repeat of the last entry is not stored again); the cleared line is not kept.
    assert history.count("What is the rent?") == 1 and "half a question" not in history
