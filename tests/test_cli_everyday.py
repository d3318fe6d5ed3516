"""The everyday CLI: a fast --help, asking within a context, listing and removing everything, an interactive chat,
and messages that say what went wrong (a new conversation, an unreachable model)."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orc.cli import main
from orc.cli.commands import Console

HEAVY = ("langgraph", "langchain_core", "langchain_openai", "mcp", "azure", "openai", "aiosqlite", "fastapi")


def test_help_imports_no_langgraph_mcp_azure_or_model_client() -> None:
    script = (
        "import json, sys\n"
        "from orc.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)

    assert "usage: orc" in result.stdout
    assert json.loads(result.stdout.splitlines()[-1]) == []


TURN_MACHINERY = ("langgraph", "langchain_core", "langchain_openai", "openai", "mcp", "tiktoken", "numpy")


@pytest.mark.parametrize(
    "command",
    [["sessions", "list"], ["docs", "list"], ["contexts", "list"], ["sessions", "show", "c1"]],
    ids=" ".join,
)
def test_a_command_that_only_reads_what_is_stored_loads_no_turn_machinery(tmp_path: Path, command: list[str]) -> None:
    lease = tmp_path / "lease.txt"
    lease.write_text("The monthly rent is 1,450 euros.\n")
    assert main(["ask", "What is the rent?", "--file", str(lease), "--conversation", "c1"]) == 0
    script = (
        "import json, sys\n"
        "from orc.cli import main\n"
        f"code = main({command!r})\n"
        f"print(json.dumps([code, sorted({{m.split('.')[0] for m in sys.modules}} & set({list(TURN_MACHINERY)!r}))]))"
    )

    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)

    code, loaded = json.loads(result.stdout.splitlines()[-1])
    assert (code, loaded) == (0, [])
    assert "c1" in result.stdout or "lease.txt" in result.stdout or "organization:default" in result.stdout


def test_ask_with_a_context_answers_from_that_contexts_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.txt"
    policy.write_text("Contractors must return their badge within 5 days.\n")
    assert main(["contexts", "put", "folder", "legal"]) == 0
    assert main(["docs", "add", str(policy), "--context", "folder:legal"]) == 0
    capsys.readouterr()

    assert main(["ask", "When must contractors return their badge?", "--context", "folder:legal"]) == 0

    out, _ = capsys.readouterr()
    assert "5 days" in out
    assert "policy.txt" in out


def test_ask_with_a_context_that_does_not_exist_says_how_to_create_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "anything?", "--context", "folder:nope"]) == 1
    assert "orc contexts put" in capsys.readouterr().err


def test_docs_list_without_flags_lists_every_context_and_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"{name} holds a sentence.\n")
    main(["contexts", "put", "folder", "legal"])
    main(["contexts", "put", "usecase", "leases", "--parent", "legal"])
    main(["docs", "add", str(tmp_path / "a.txt"), "--context", "folder:legal"])
    main(["docs", "add", str(tmp_path / "b.txt"), "--context", "usecase:leases"])
    main(["docs", "add", str(tmp_path / "c.txt"), "--session", "s1"])
    capsys.readouterr()

    assert main(["docs", "list"]) == 0

    out, _ = capsys.readouterr()
    assert "No documents" not in out and "no documents" not in out
    assert out.index("folder legal:") < out.index("  a.txt") < out.index("usecase leases:") < out.index("  b.txt")
    assert out.index("conversation “c.txt”:") < out.index("  c.txt")


def test_docs_list_heads_each_conversation_with_the_title_the_page_lists_and_the_id_only_to_tell_two_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lease = tmp_path / "lease.txt"
    lease.write_text("The monthly rent is 1,450 euros.\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("The boiler is serviced every spring.\n")
    conversation = "0b7c7a0e-5a2f-4a8e-9d43-2f1f6f0c9a11"
    assert main(["ask", "What is the monthly rent?", "--file", str(lease), "--conversation", conversation]) == 0
    for session in ("notes-one", "notes-two"):
        assert main(["docs", "add", str(notes), "--session", session]) == 0
    capsys.readouterr()
    assert main(["sessions", "list"]) == 0
    page_title = next(line for line in capsys.readouterr().out.splitlines() if conversation in line)

    assert main(["docs", "list"]) == 0

    out, _ = capsys.readouterr()
    assert "conversation “Monthly rent”:" in out and "Monthly rent" in page_title
    assert conversation not in out  # a title of its own needs no id
    assert "conversation “notes.txt” (session notes-one):" in out
    assert "conversation “notes.txt” (session notes-two):" in out


def test_docs_list_on_a_fresh_home_says_how_to_add_documents(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "list"]) == 0
    assert "orc docs add" in capsys.readouterr().out


def test_contexts_list_shows_the_tree(capsys: pytest.CaptureFixture[str]) -> None:
    main(["contexts", "put", "folder", "legal", "--name", "Legal"])
    main(["contexts", "put", "usecase", "leases", "--parent", "legal"])
    capsys.readouterr()

    assert main(["contexts", "list"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "organization:default",
        "  folder:legal  (Legal)",
        "    usecase:leases",
    ]


def test_docs_remove_takes_a_filename_or_an_id_in_a_context_or_a_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    note = tmp_path / "note.txt"
    note.write_text("A note.\n")
    main(["docs", "add", str(note), "--session", "s1"])
    main(["docs", "add", str(note)])

    assert main(["docs", "remove", "note.txt", "--session", "s1"]) == 0
    assert main(["docs", "remove", "note.txt"]) == 0
    assert "removed note.txt" in capsys.readouterr().err
    assert main(["docs", "remove", "note.txt"]) == 1
    assert "document_not_found" in capsys.readouterr().err
    main(["docs", "list"])
    assert "note.txt" not in capsys.readouterr().out


def test_a_conversation_id_that_does_not_exist_is_said_to_start_a_new_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ask", "Hello?", "--conversation", "typo-id"]) == 0
    assert "starting a new one" in capsys.readouterr().err

    main(["ask", "Hello again?", "--conversation", "typo-id"])
    assert "starting a new one" not in capsys.readouterr().err


def test_chat_streams_answers_and_understands_its_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = tmp_path / "lease.txt"
    lease.write_text("The monthly rent is 1,450 euros.\n\nThe notice period is 60 days.\n")
    script = (
        f"/attach {lease}\nWhat is the monthly rent?\n/context folder:missing\n/help\n/new\nAnd the notice?\n/quit\n"
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(script))

    assert main(["chat"]) == 0

    out, err = capsys.readouterr()
    assert "1,450 euros" in out
    assert "attached lease.txt" in err
    assert "error (context_not_found)" in err
    assert "commands: /attach" in err
    assert "new conversation" in err
    # The new conversation has no files: the follow-up is not answered from the lease.
    assert "60 days" not in out


def test_debug_logging_keeps_sql_and_http_client_loggers_at_info(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--log-level", "DEBUG", "docs", "list"])
    assert logging.getLogger("aiosqlite").getEffectiveLevel() == logging.INFO
    assert "INSERT" not in capsys.readouterr().err


def test_an_error_with_a_remote_model_hints_at_the_model_endpoint() -> None:
    err = io.StringIO()
    console = Console(out=io.StringIO(), err=err, model="openai:gpt-4o-mini")

    console.event({"type": "error", "code": "internal_error", "message": "the turn failed", "status": 500})

    assert "hint: check that the model endpoint of ORC_MODEL=openai:gpt-4o-mini is reachable" in err.getvalue()


def test_read_only_commands_on_a_fresh_home_say_what_to_do_and_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "not-yet"
    monkeypatch.setenv("ORC_HOME", str(home))

    for command in (["sessions", "list"], ["docs", "list"], ["contexts", "list"]):
        assert main(command) == 0

    out = capsys.readouterr().out
    assert "No conversations yet" in out and "orc docs add" in out and "orc contexts put" in out
    assert not home.exists()


def test_orc_home_defaults_to_the_platforms_user_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    from orc.settings import Settings

    monkeypatch.delenv("ORC_HOME", raising=False)

    assert Settings().home == Path(platformdirs.user_data_dir("orc", appauthor=False))


def test_listings_line_up_in_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a.txt", "a-much-longer-file-name.txt"):
        (tmp_path / name).write_text(f"{name} holds a sentence.\n")
        main(["docs", "add", str(tmp_path / name), "--session", "s1"])
    main(["ask", "What does a.txt hold?", "--conversation", "s1"])
    capsys.readouterr()

    main(["docs", "list", "--session", "s1"])
    main(["sessions", "list"])

    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    documents = [line for line in lines if line.startswith(("NAME", "a.txt", "a-much"))]
    assert len(documents) == 3
    assert len({line.index("ready") for line in documents[1:]}) == 1
    assert documents[0].index("STATUS") == documents[1].index("ready")
    sessions = lines[lines.index(next(line for line in lines if line.startswith("UPDATED"))) :]
    assert sessions[0].index("ID") == sessions[1].index("s1")


def test_a_pdf_export_without_output_goes_to_the_id_dot_pdf_as_help_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["ask", "Hello?", "--conversation", "c1"])
    monkeypatch.chdir(tmp_path)

    assert main(["sessions", "export", "c1", "--format", "pdf"]) == 0

    assert (tmp_path / "c1.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize(
    "arguments",
    [
        ["ask", "Anything?", "--file", "missing.pdf"],
        ["docs", "add", "missing.pdf", "--session", "s"],
        ["eval", "missing.jsonl", "--docs", "."],
        ["eval", "{questions}", "--docs", "missing-folder"],
        ["mcp", "--organization", "../acme", "--user", "ann"],
    ],
    ids=["ask --file", "docs add", "eval set", "eval --docs", "mcp principal"],
)
def test_every_refusal_of_a_command_line_carries_a_code(
    arguments: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    questions = tmp_path / "set.jsonl"
    questions.write_text('{"id": "a", "docs": ["x.md"], "target": null, "question": "q"}\n')

    assert main([argument.format(questions=questions) for argument in arguments]) != 0

    said = capsys.readouterr().err.strip().splitlines()
    assert said and re.match(r"error \([a-z_]+\): ", said[0]), said


def test_chat_attaches_the_files_a_pattern_names_and_says_a_folder_is_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "rent.md").write_text("The monthly rent is 1,450 euros.\n")
    (notes / "notice.md").write_text("The notice period is 60 days.\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"/attach {notes}\n/attach {notes}/*.md\n/quit\n"))

    assert main(["chat"]) == 0

    _, err = capsys.readouterr()
    assert f"error (not_a_file): {notes}: a folder, not a file; attach its files (for example /attach {notes}/*)" in err
    assert "attached notice.md" in err and "attached rent.md" in err


@pytest.mark.parametrize("command", [["ask", "Hello?"], ["serve", "--port", "0"], ["mcp"], ["docs", "list"]])
def test_a_setting_that_does_not_fit_is_named_in_words_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    not_a_folder = tmp_path / "orc-home.txt"
    not_a_folder.write_text("a file where a folder belongs\n")
    monkeypatch.setenv("ORC_HOME", str(not_a_folder))
    monkeypatch.setenv("ORC_MAX_UPLOAD_BYTES", "20MB")

    assert main(command) == 1

    first, second, *rest = capsys.readouterr().err.splitlines()
    # The value is shown cut (a setting may hold a key); the variable and the problem are whole.
    assert first.startswith("error (configuration_error): ORC_HOME: must be a folder, not a file (got '/"), first
    assert second == "  ORC_MAX_UPLOAD_BYTES: must be a whole number (got '20MB')"
    assert rest == []
