"""orc docs add|list and orc contexts put: many files with a progress bar, skipped bad files, clear errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orc.cli import main


def write_files(folder: Path, count: int) -> list[str]:
    folder.mkdir()
    paths = []
    for number in range(count):
        path = folder / f"note{number:02d}.txt"
        path.write_text(f"Note {number} says the locker number is {number * 3}.\n")
        paths.append(str(path))
    return paths


def listing(out: str) -> list[list[str]]:
    """The rows of ``orc docs list``'s aligned table (columns two or more spaces apart), without its header."""
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines and lines[0].split()[:2] == ["NAME", "STATUS"], out
    return [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]


def test_docs_add_uploads_many_files_with_a_progress_bar_and_docs_list_shows_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_files(tmp_path / "notes", 20)

    assert main(["contexts", "put", "folder", "legal", "--name", "Legal"]) == 0
    assert main(["docs", "add", *paths, "--context", "folder:legal"]) == 0
    _, err = capsys.readouterr()
    assert main(["docs", "list", "--context", "folder:legal"]) == 0
    out, _ = capsys.readouterr()

    bar_lines = [line for line in err.splitlines() if line.startswith("[")]
    assert len(bar_lines) == 20
    assert bar_lines[-1].startswith("[" + "#" * 30 + "] 20/20 ")
    assert "20 of 20 file(s) ready in folder legal" in err
    listed = listing(out)
    assert sorted(row[0] for row in listed) == [f"note{n:02d}.txt" for n in range(20)]
    assert {row[1] for row in listed} == {"ready"}


def test_docs_add_skips_unreadable_files_reports_them_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nReadable text.\n")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4 not really a pdf")

    status = main(["docs", "add", str(good), str(empty), str(binary), str(broken), "--session", "cli-session"])
    _, err = capsys.readouterr()
    main(["docs", "list", "--session", "cli-session"])
    out, _ = capsys.readouterr()

    assert status == 1
    assert "empty.txt: skipped (empty_file" in err
    assert "blob.bin: skipped (unsupported_media_type" in err
    assert "broken.pdf: failed (" in err
    assert "1 of 4 file(s) ready in session cli-session" in err
    statuses = {row[0]: row[1] for row in listing(out)}
    assert statuses["good.md"] == "ready"
    assert statuses["broken.pdf"].startswith("failed (") and "not a readable PDF" in statuses["broken.pdf"]
    assert set(statuses) == {"good.md", "broken.pdf"}


def test_docs_without_a_target_use_the_local_organization(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (path,) = write_files(tmp_path / "one", 1)

    assert main(["docs", "add", path]) == 0
    assert main(["docs", "list", "--context", "organization:default"]) == 0

    assert [row[:2] for row in listing(capsys.readouterr().out)] == [["note00.txt", "ready"]]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (["--context", "folder:nope"], "error (context_not_found)"),
        (["--context", "planet:x"], "error (unknown_context_type)"),
        (["--context", "folder"], "error (invalid_input): --context takes TYPE:ID"),
    ],
)
def test_docs_add_explains_a_bad_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: list[str], message: str
) -> None:
    (path,) = write_files(tmp_path / "one", 1)

    assert main(["docs", "add", path, *target]) == 1
    assert message in capsys.readouterr().err


def test_docs_add_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "add", str(tmp_path / "nope.pdf")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_file_of_a_type_orc_cannot_read_is_refused_in_a_line_not_a_list_of_every_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    photo = tmp_path / "holiday.heic"
    photo.write_bytes(b"\x00\x01" * 512)

    added = main(["docs", "add", str(photo), "--session", "cli-photo"])
    _, added_err = capsys.readouterr()
    asked = main(["ask", "What is in the photo?", "--file", str(photo)])
    _, asked_err = capsys.readouterr()

    assert added == 1 and asked == 1
    for said in (added_err, asked_err):
        assert "'holiday.heic' is not a supported document type; orc reads PDF, Word," in said
        assert ".zsh" not in said and ".pyi" not in said


def test_contexts_put_refusals_say_what_to_type_instead(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contexts", "put", "organization", "other"]) == 1
    _, other_organization = capsys.readouterr()
    assert main(["contexts", "put", "usecase", "onboarding"]) == 1
    _, no_parent = capsys.readouterr()

    assert "you can name only your own organization, 'default'" in other_organization
    # Not "create it first with: orc contexts put …", the command that was just refused.
    assert "hint" not in other_organization
    assert "hint: a folder's parent is the organization; a usecase's is a folder: " in no_parent
    assert "orc contexts put usecase ID --parent FOLDER" in no_parent


def test_a_folder_named_as_a_file_is_said_to_be_a_folder_with_the_pattern_to_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "manuals"
    write_files(folder, 2)

    added = main(["docs", "add", str(folder)])
    _, added_err = capsys.readouterr()
    asked = main(["ask", "What is the locker number?", "--file", str(folder)])
    _, asked_err = capsys.readouterr()

    assert added == 2 and asked == 2
    for said in (added_err, asked_err):
        assert said.startswith(f"error (not_a_file): {folder}: a folder, not a file; name its files"), said
        assert f"(for example {folder / '*'})" in said and "no such file" not in said
