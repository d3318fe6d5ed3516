"""``orc eval``: a question set run as real turns, scored by expected phrase, declines, citations and retrieval."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from orc.cli import main
from orc.contracts import Citation, SourceSpan
from orc.evaluation import EvalCase, is_decline, summarize, to_markdown
from orc.evaluation.scoring import failed, judge, normal
from orc.evaluation.sources import AnswerRequests, SentSources
from orc.models.answering import Source
from orc.models.prompting import format_sources
from orc.models.tokens import EstimatedTokens
from orc.output_policy import OutputPolicy

SAMPLES = Path(__file__).resolve().parent.parent / "orc" / "samples"
LEASE = "lease-agreement.md"
HANDBOOK = "employee-handbook.txt"


def write_set(path: Path, cases: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(case) + "\n" for case in cases), encoding="utf-8")
    return path


def test_eval_runs_each_case_as_a_real_turn_and_writes_json_and_markdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = write_set(
        tmp_path / "lease.jsonl",
        [
            {
                "id": "deposit",
                "docs": [LEASE, HANDBOOK],
                "target": LEASE,
                "question": "How much is the security deposit?",
                "expect": "security deposit of 2,900 euros",
            },
            {"id": "peru", "docs": [LEASE], "target": None, "question": "What is the capital of Peru?"},
            {
                "id": "rent-then-late",
                "docs": [LEASE],
                "target": LEASE,
                "turns": [
                    {"question": "What is the monthly rent?"},
                    {"question": "And what if I pay it late?", "expect": "late fee of 40 euros"},
                ],
            },
        ],
    )

    code = main(["eval", str(questions), "--docs", str(SAMPLES), "--out", str(tmp_path / "out" / "lease")])

    assert code == 0
    report = json.loads((tmp_path / "out" / "lease.json").read_text())
    outcomes = {outcome["id"]: outcome for outcome in report["outcomes"]}
    assert report["cases"] == 3 and report["errors"] == 0
    assert outcomes["deposit"]["passed"] and outcomes["deposit"]["retrieval_rank"] == 1
    assert outcomes["peru"]["passed"] and outcomes["peru"]["declined"] and outcomes["peru"]["quotes"] == []
    assert outcomes["rent-then-late"]["follow_up"]
    assert report["unanswerable_declined"] == {"passed": 1, "total": 1, "rate": 1.0}
    assert report["retrieval_recall"]["@5"]["total"] == 1
    assert report["model_calls"] >= 4  # every turn of every case was asked
    assert report["latency_ms"]["p95"] > 0
    # What the model was sent, recorded from its answer requests: a passage holding the phrase, and its cost.
    assert outcomes["deposit"]["source_hit"] is True and outcomes["rent-then-late"]["source_hit"] is True
    assert outcomes["peru"]["source_hit"] is None
    assert len(outcomes["rent-then-late"]["source_tokens"]) == 2 and all(outcomes["rent-then-late"]["source_tokens"])
    assert outcomes["deposit"]["sources_sent"] >= 1
    assert report["source_recall"] == {"passed": 2, "total": 2, "rate": 1.0}
    assert report["follow_up_source_recall"]["total"] == 1
    assert report["source_tokens"]["turns"] == 4 and report["source_tokens"]["p50"] > 0
    markdown = (tmp_path / "out" / "lease.md").read_text()
    assert "| deposit | pass |" in markdown and "| peru (unanswerable) | pass |" in markdown
    printed = capsys.readouterr().out
    assert "answer hits" in printed and "source recall" in printed


def test_source_recall_is_judged_on_the_sources_of_the_target_the_scored_request_carried() -> None:
    case = EvalCase(id="c", docs=[LEASE, HANDBOOK], target=LEASE, question="Deposit?", expect="2,900 euros")
    elsewhere = SentSources((Source(ref=f"{HANDBOOK}::S1", page=None, text="a deposit of 2,900 euros"),), 10)
    holding = SentSources((Source(ref=f"{LEASE}::S4", page=None, text="A deposit of 2,900\neuros is due."),), 12)
    timing = {"latency_ms": 1.0, "total_latency_ms": 1.0}

    assert judge(case, "x", [], sent=[holding], **timing).source_hit is True
    assert judge(case, "x", [], sent=[elsewhere], **timing).source_hit is False
    assert judge(case, "x", [], sent=[holding, None], **timing).source_hit is False  # the scored turn sent none
    assert judge(case, "x", [], **timing).source_hit is None  # not recorded
    assert judge(case, "x", [], sent=[holding, elsewhere], **timing).source_tokens == [12, 10]


def test_the_recorder_keeps_answer_requests_as_the_model_received_them_and_nothing_else() -> None:
    recorder = AnswerRequests()
    source = SourceSpan(
        ref=f"{LEASE}::S2", document=LEASE, span_id="S2", text="Pets <cats> & dogs are allowed.", section="Pets"
    )
    answer_request = [
        SystemMessage(f"Answer.\n<sources>\n{format_sources([source])}\n</sources>"),
        HumanMessage("Pets?"),
    ]
    planning_request = [SystemMessage("Plan the tools."), HumanMessage("Pets?")]

    recorder.on_chat_model_start({}, [planning_request, answer_request], run_id=uuid.uuid4())

    (recorded,) = recorder.take()
    assert [(s.ref, s.text) for s in recorded.sources] == [(source.ref, source.text)]
    assert recorded.tokens == EstimatedTokens().count(source.text)
    assert recorder.take() == []


def test_an_answer_that_declines_is_never_a_hit_even_when_it_quotes_the_phrase() -> None:
    case = EvalCase(id="c", docs=[LEASE], target=LEASE, question="Deposit?", expect="2,900 euros")
    citation = Citation(ref=f"{LEASE}::S3", document=LEASE, span_id="S3", quote="A deposit of 2,900 euros.")

    declined = judge(
        case, "I couldn't find an answer to that in the documents.", [citation], latency_ms=1, total_latency_ms=1
    )
    answered = judge(case, "It is 2,900 euros [lease-agreement.md::S3].", [citation], latency_ms=1, total_latency_ms=1)

    assert not declined.passed and declined.declined
    assert answered.passed and answered.citations_in_target == 1


def test_an_unanswerable_case_fails_when_the_answer_cites_anything() -> None:
    case = EvalCase(id="u", docs=[LEASE], target=None, question="Capital of Peru?")
    citation = Citation(ref=f"{LEASE}::S1", document=LEASE, span_id="S1", quote="This lease is made between…")

    outcome = judge(case, "The documents do not mention it.", [citation], latency_ms=1, total_latency_ms=1)

    assert outcome.declined and not outcome.passed


@pytest.mark.parametrize(
    "answer",
    [
        "I couldn't find an answer to that in the documents.",
        "The provided documents do not mention a password option.",
        "I could not find any information about Python bindings.",
        "The sources don't say which port is used.",
        "This is not specified in the documents.",
        "There is no information about S3 backups in the files.",
    ],
)
def test_the_ways_models_say_they_could_not_find_it_count_as_declines(answer: str) -> None:
    assert is_decline(answer)


def test_a_real_answer_is_not_taken_for_a_decline() -> None:
    assert not is_decline("The deposit is 2,900 euros, equal to two months' rent [lease-agreement.md::S3].")


def test_phrases_match_across_pdf_ligatures_line_breaks_and_typographic_quotes() -> None:
    assert normal("config files") in normal("Monitor which con\ufb01g\n\ufb01les are loaded")
    assert normal("don't delete") in normal("Keep (don\u2019t   delete) input files")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "lease.jsonl:2: not JSON"),
        ('{"id": "x", "docs": ["lease-agreement.md"], "target": null}', 'either "question" or "turns"'),
        (
            '{"id": "x", "docs": ["lease-agreement.md"], "target": "lease-agreement.md", "question": "q"}',
            'needs "expect"',
        ),
        ('{"id": "x", "docs": ["nowhere.pdf"], "target": null, "question": "q"}', "no such file"),
        ('{"id": "x", "docs": ["lease-agreement.md"], "target": "other.md", "question": "q", "expect": "e"}', "target"),
        ('{"id": "ok", "docs": ["lease-agreement.md"], "target": null, "question": "q", "extra": 1}', "extra"),
    ],
)
def test_a_bad_case_is_refused_with_its_line_before_any_turn_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    questions = tmp_path / "lease.jsonl"
    questions.write_text(
        '{"id": "ok", "docs": ["lease-agreement.md"], "target": null, "question": "q"}\n' + line + "\n"
    )

    code = main(["eval", str(questions), "--docs", str(SAMPLES), "--out", str(tmp_path / "never")])

    assert code == 2
    err = capsys.readouterr().err
    assert "invalid_eval_set" in err and "lease.jsonl:2" in err and message in err
    assert not (tmp_path / "never.json").exists()


def test_a_missing_set_or_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path / "none.jsonl"), "--docs", str(SAMPLES)]) == 2
    assert main(["eval", str(write_set(tmp_path / "s.jsonl", [])), "--docs", str(tmp_path / "nowhere")]) == 2
    assert "no such" in capsys.readouterr().err


def test_the_whole_set_is_checked_before_any_turn_and_every_problem_is_named_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lease.md").write_text("The rent is 1,450 euros.", encoding="utf-8")
    (docs / "empty.md").write_bytes(b"")
    (docs / "archive.zip").write_bytes(b"PK\x03\x04" + b"\0" * 64)
    good = {"id": "ok", "docs": ["lease.md"], "target": None, "question": "q"}
    questions = tmp_path / "set.jsonl"
    questions.write_text(
        "\n".join(
            [
                json.dumps(good),
                "{not json",
                json.dumps({**good, "id": "dots", "docs": ["../lease.md"]}),
                json.dumps({**good, "id": "gone", "docs": ["nowhere.md"]}),
                json.dumps({**good, "id": "empty", "docs": ["empty.md", "archive.zip"]}),
                json.dumps({**good, "id": "", "page": 0}),
                json.dumps(good),
            ]
        )
        + "\n"
    )

    code = main(["eval", str(questions), "--docs", str(docs), "--out", str(tmp_path / "never")])

    assert code == 2
    err = capsys.readouterr().err
    assert "set.jsonl: 8 problems, no case was run" in err
    assert "set.jsonl:2: not JSON" in err
    assert "set.jsonl:3: ../lease.md: blob name must not contain '.' or '..' segments" in err
    assert "set.jsonl:4: no such file" in err and "nowhere.md" in err
    assert "set.jsonl:5: 'empty.md' is empty" in err and "set.jsonl:5: 'archive.zip' is an archive" in err
    assert err.count("set.jsonl:6:") == 2  # both of the line's shape errors
    assert "set.jsonl:7: the id 'ok' is used twice (first on line 1)" in err
    assert not (tmp_path / "never.json").exists()


def test_a_symbolic_link_out_of_the_documents_folder_is_never_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    (docs / "inner").mkdir(parents=True)
    (tmp_path / "secret.md").write_text("The vault code is 4711.", encoding="utf-8")
    (docs / "inner" / "notes.md").write_text("The rent is 1,450 euros.", encoding="utf-8")
    (docs / "leak.md").symlink_to(tmp_path / "secret.md")
    (docs / "inner-link").symlink_to(tmp_path)
    (docs / "notes.md").symlink_to(docs / "inner" / "notes.md")  # a link that stays inside is a file of the folder
    cases = [
        {"id": "leak", "docs": ["leak.md"], "target": None, "question": "What is the vault code?"},
        {"id": "via-folder", "docs": ["inner-link/secret.md"], "target": None, "question": "What is the code?"},
        {"id": "inside", "docs": ["notes.md"], "target": None, "question": "What is the rent?"},
    ]

    code = main(["eval", str(write_set(tmp_path / "s.jsonl", cases)), "--docs", str(docs)])

    err = capsys.readouterr().err
    assert code == 2 and "s.jsonl: 2 problems" in err
    assert "s.jsonl:1: leak.md is a symbolic link out of" in err
    assert "s.jsonl:2: inner-link/secret.md is a symbolic link out of" in err
    assert "4711" not in err


def test_the_markdown_report_quotes_ids_questions_and_answers_as_text() -> None:
    hostile = EvalCase(
        id="b03\n| forged | pass |",
        docs=[LEASE],
        target=None,
        question="Is <script>alert(1)</script> allowed | or *not*?",
    )
    outcome = failed(hostile, "model_error: answered <img src=x onerror=alert(1)>")

    markdown = to_markdown(summarize("set`name", "offline", [outcome]))

    rows = [line for line in markdown.splitlines() if line.startswith("| b03")]
    assert rows == [
        "| b03 \\| forged \\| pass \\| (unanswerable) | error "
        "| Is &lt;script&gt;alert(1)&lt;/script&gt; allowed \\| or \\*not\\*? "
        "| model\\_error: answered &lt;img src=x onerror=alert(1)&gt; | – | – | 0 |"
    ]
    assert "<script>" not in markdown and "<img" not in markdown
    assert markdown.startswith("# orc eval: set\\`name\n")


def test_an_answer_quoting_markup_reads_in_the_report_as_the_document_wrote_it() -> None:
    case = EvalCase(id="w", docs=["fs.md"], target="fs.md", question="How do I stop watching?", expect="listener")
    # The turn's answer as the output policy sent it: the document's "<string>" escaped once.
    answer = OutputPolicy().text("filename <string> | <Buffer> listener <Function> [fs.md::S2]")
    outcome = judge(case, answer, [], latency_ms=1, total_latency_ms=1)

    markdown = to_markdown(summarize("api", "offline", [outcome]))

    row = next(line for line in markdown.splitlines() if line.startswith("| w "))
    # Escaped once for the Markdown page (which shows "<string>"), never twice ("&amp;lt;string&amp;gt;").
    assert "filename &lt;string&gt; \\| &lt;Buffer&gt; listener &lt;Function&gt;" in row
    assert "&amp;" not in row


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--model", "argument --model: 'gpt4' is not a model: use offline, openai:<model> or azure:<deployment>"),
        ("--embeddings", "argument --embeddings: 'gpt4' is not an embeddings model: use off, openai:<model> or"),
    ],
)
def test_a_model_option_that_is_no_spec_is_refused_as_the_option_typed_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, said: str
) -> None:
    cases = write_set(tmp_path / "s.jsonl", [{"id": "x", "docs": [LEASE], "target": None, "question": "q"}])

    with pytest.raises(SystemExit) as refused:
        main(["eval", str(cases), "--docs", str(SAMPLES), option, "gpt4"])

    err = capsys.readouterr().err
    assert refused.value.code == 2 and said in err, err
    assert "ORC_MODEL" not in err and "ORC_EMBEDDINGS" not in err and "cases from" not in err
