"""What may be quoted as an answer: whole sentences, never a heading, an FAQ's Q:/A: label or a question, and never a
sentence from elsewhere appended to the one that answers."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from orc.contracts import SourceSpan
from orc.models.answering import NOT_FOUND
from orc.models.offline import OfflineExtractiveModel
from orc.models.passages import Source, passages
from orc.text import split_sentences
from tests.models.corpus import answer_prompt, cited_refs


def span(ref: str, text: str) -> SourceSpan:
    document, _, span_id = ref.partition("::")
    return SourceSpan(ref=ref, document=document, span_id=span_id, text=text)


def answer(question: str, *sources: SourceSpan) -> str:
    reply = OfflineExtractiveModel().respond([SystemMessage(answer_prompt(list(sources))), HumanMessage(question)])
    return reply.text


FAQ = span(
    "router-faq.md::S4",
    "## Resetting\n\nQ: How do I reset the router to its factory settings?\n"
    "A: Hold the reset button on the back for ten seconds until the lights blink.\n\n"
    "Q: Will a reset delete my Wi-Fi password?\nA: Yes, the reset restores the default password on the label.",
)


def test_an_faq_answer_is_quoted_without_its_label_and_the_question_is_never_the_answer() -> None:
    text = answer("What do I do to put the router back to factory settings?", FAQ)

    assert text.startswith("Hold the reset button on the back for ten seconds")
    assert "Q:" not in text and "A:" not in text and "?" not in text


def test_no_passage_of_an_faq_is_a_question_or_starts_with_a_label() -> None:
    found = passages(Source(ref=FAQ.ref, page=None, text=FAQ.text))

    assert [passage.text for passage in found] == [
        "Hold the reset button on the back for ten seconds until the lights blink.",
        "Yes, the reset restores the default password on the label.",
    ]
    assert all(passage.heading == "Resetting" for passage in found)


def test_the_first_line_of_a_wrapped_paragraph_is_not_taken_for_a_title() -> None:
    text = "www-data\n\nSome web servers run as www-data. Web content should\nnot be owned by this user.\n"

    assert split_sentences(text) == [
        "www-data",
        "Some web servers run as www-data.",
        "Web content should not be owned by this user.",
    ]


def test_a_wrapped_first_line_that_reads_like_a_title_still_joins_its_sentence() -> None:
    text = "\tThis option passes a value to the jq program as a predefined\n\tvariable. If you run jq it works."

    assert split_sentences(text)[0] == "This option passes a value to the jq program as a predefined variable."


def test_an_unrelated_sentence_of_another_passage_is_never_appended() -> None:
    notice = span(
        "lease.md::S5",
        "Either party may end the lease with 60 days' written notice. The landlord may inspect the flat yearly.",
    )
    damage = span("lease.md::S9", "The Tenant must report any damage to the flat within 60 days of noticing it.")

    text = answer("How much notice do I have to give to end the lease?", notice, damage)

    assert cited_refs(text) == ["lease.md::S5"]
    assert text == "Either party may end the lease with 60 days' written notice. [lease.md::S5]"


def test_the_next_sentence_joins_the_answer_when_it_answers_as_well_on_its_own() -> None:
    sync = span(
        "users.html::S7",
        "The shell of user sync is /bin/sync. Thus, if its password is set to something easy to guess, anyone can "
        "sync the system at the console even if they have no account on the system.",
    )

    text = answer("What is the sync account's shell for?", sync)

    assert text.count("[users.html::S7]") == 2
    assert "anyone can sync the system at the console" in text


def test_a_name_the_question_keeps_verbatim_must_be_in_the_answering_sentence_or_its_heading() -> None:
    settings = span(
        "backup-tool.md::S3",
        "* `BACKUP_RETRY_DELAY=SECS` — how long to wait before a failed upload is tried again. Without a unit, the "
        "value is read in minutes.\n\n* `BACKUP_QUIET=1` — prints nothing but errors. The delay of the scheduler "
        "is not affected.",
    )

    assert "read in minutes" in answer("Which unit is BACKUP_RETRY_DELAY read in when I give none?", settings)
    assert answer("Which unit is BACKUP_SCHEDULE_DELAY read in when I give none?", settings) == NOT_FOUND


def test_a_short_follow_up_that_names_its_topic_is_answered_on_its_own() -> None:
    lease = span(
        "lease.txt::S1",
        "Residential lease.\n\nThe tenant rents the flat at Rue Haute 12. The monthly rent is 1,450 euros. "
        "Pets are allowed with the landlord's written consent.",
    )
    history = [HumanMessage("Are pets allowed?"), AIMessage("Pets are allowed. [lease.txt::S1]")]
    messages = [SystemMessage(answer_prompt([lease])), *history, HumanMessage("Where is the flat?")]

    assert (
        OfflineExtractiveModel().respond(messages).text == "The tenant rents the flat at Rue Haute 12. [lease.txt::S1]"
    )


def test_a_follow_up_that_points_back_needs_a_passage_on_the_earlier_topic() -> None:
    groups = span(
        "groups.html::S4",
        "The daemon user runs daemons that need to write files. Thus, no files should be owned by nobody.\n\n"
        "The nobody account of the NFS server is for remote root access.",
    )
    history = [HumanMessage("What is the daemon user for?"), AIMessage("It runs daemons. [groups.html::S4]")]
    messages = [SystemMessage(answer_prompt([groups])), *history, HumanMessage("and nobody?")]

    assert "no files should be owned by nobody" in OfflineExtractiveModel().respond(messages).text


def test_what_a_group_lets_one_do_is_answered_by_what_its_members_can_do() -> None:
    adm = span(
        "groups.html::S14",
        "adm\n\nHistorically, /var/log was /usr/adm, thus the name of the group. Members of this group can read "
        "many log files in /var/log.",
    )

    text = answer("What does being in the adm group let someone do?", adm)

    assert text == "Members of this group can read many log files in /var/log. [groups.html::S14]"


BASE_FILES_FAQ = span(
    "base-files-FAQ.txt::S3",
    "Q. There is a new point release and I've just upgraded my system.\n"
    "The /etc/debian_version file now says 10.x but /etc/issue still says 10.\nIs this ok?\n\n"
    "A. Yes. The release managers asked me not to touch /etc/issue, as that's a file which is often\n"
    "customized by the user.\n",
)


def test_every_sentence_of_an_faq_question_asks_and_heads_its_answer_without_answering() -> None:
    quoted = [passage.text for passage in passages(Source(BASE_FILES_FAQ.ref, None, BASE_FILES_FAQ.text))]

    assert not any("point release" in text or "now says 10.x" in text for text in quoted)
    answering = passages(Source(BASE_FILES_FAQ.ref, None, BASE_FILES_FAQ.text))[0]
    assert {"point", "releas"} <= answering.context  # the question it answers scopes it
    text = answer("I upgraded to a point release and /etc/issue still shows 10: is that expected?", BASE_FILES_FAQ)
    assert "point release" not in text


def test_a_sentence_that_announces_a_list_is_never_the_answer() -> None:
    bc = span(
        "bc-manual.html::S53",
        "The following environment variables are processed by bc:\n\n"
        "POSIXLY_CORRECT This is the same as the -s option.",
    )

    text = answer("Which environment variables does bc process?", bc)

    assert "The following environment variables" not in text


def test_a_question_for_an_exit_code_is_not_answered_by_a_sentence_without_a_value() -> None:
    jq = span(
        "jq-manual.txt::S11",
        "Another way to set the exit status is with the halt_error builtin function.\n\n"
        "halt_error, halt_error(exit_code)\n\nStops the jq program with no further outputs.\n\n"
        "The given exit_code (defaulting to 5) will be jq's exit status.",
    )

    text = answer("What exit code does halt_error use if I don't give one?", jq)

    assert "defaulting to 5" in text and "Another way" not in text


def test_a_what_question_prefers_the_sentence_that_grants_over_the_one_that_denies() -> None:
    cc0 = span(
        "cc0-1.0.txt::S8",
        "No trademark or patent rights held by Affirmer are waived, abandoned, surrendered, licensed or otherwise "
        "affected by this document.\n\nAffirmer hereby waives, abandons, and surrenders all of Affirmer's Copyright "
        "and Related Rights.",
    )

    assert "hereby waives" in answer("What rights does the affirmer waive?", cc0)
    assert "No trademark" in answer("Which rights does the affirmer not waive?", cc0)


def test_and_x_after_a_definition_question_asks_for_the_definition_of_x() -> None:
    apache = span(
        "apache-2.0.txt::S6",
        '"Patent Claims" of a Contributor means any patent claim licensable by such Contributor.\n\n'
        '"Contributor" shall mean Licensor and any individual or Legal Entity on behalf of whom a Contribution has '
        "been received by Licensor.\n\nEach Contributor represents that its Contributions are its original creation.",
    )
    model = OfflineExtractiveModel()
    messages = [
        SystemMessage(answer_prompt([apache])),
        HumanMessage("What does Contribution mean in the Apache License?"),
        AIMessage("I couldn't find an answer to that in the documents."),
        HumanMessage("And Contributor?"),
    ]

    assert model.respond(messages).text.startswith('"Contributor" shall mean Licensor')


def test_an_underlined_title_heads_the_sentences_below_it_and_the_underline_is_never_quoted() -> None:
    source = Source(
        ref="rootless.txt::S1",
        page=None,
        text="Why builds need root\n====================\n\n"
        "Traditionally, Debian packages have required fakeroot for some targets.\n\n"
        "Implementation provided keywords\n--------------------------------\n\n"
        "Keywords provided by the implementations are listed here.",
    )

    found = passages(source)

    assert [(passage.text, passage.heading) for passage in found] == [
        ("Traditionally, Debian packages have required fakeroot for some targets.", "Why builds need root"),
        ("Keywords provided by the implementations are listed here.", "Implementation provided keywords"),
    ]


def test_a_lettered_item_whose_marker_ended_the_line_before_opens_an_item_of_its_own() -> None:
    found = passages(
        Source(
            ref="cc0.txt::S8",
            page=None,
            text="a. No patent rights held by Affirmer are waived by this document.\n b. Affirmer offers the Work "
            "as-is. Affirmer makes no warranties.",
        )
    )

    assert [passage.lead for passage in found] == ["", "", "Affirmer offers the Work as-is."]


NUMBERED_FAQ = span(
    "zlib-faq.txt::S23",
    "41. Where can I get help with the contributed code?\n\n    Ask the authors of the contribution.\n\n"
    "42. The match.asm code in contrib is under the GNU General Public License.\n"
    "    Since it's part of zlib, doesn't that mean that all of zlib falls under the GNU GPL?\n\n"
    "    No.  The files in contrib are not part of zlib.  They were contributed by other authors and are provided "
    "as a convenience.  Each item in contrib has its own license.\n\n"
    "43. Is zlib subject to export controls?\n\n    No.  zlib is not subject to export controls.",
)


def test_a_numbered_faq_entry_that_asks_scopes_its_answer_and_is_never_quoted() -> None:
    text = answer("The GPL applies to match.asm in contrib, so is all of zlib GPL now?", NUMBERED_FAQ)

    assert text.startswith("No. The files in contrib are not part of zlib.")
    assert "42." not in text and "?" not in text


def test_yes_or_no_opening_a_reply_is_neither_a_title_nor_a_list_marker() -> None:
    found = passages(
        Source(ref="zlib-faq.txt::S15", page=None, text="Yes.  inflate() and deflate() process any amount of data.")
    )

    assert [passage.text for passage in found] == ["Yes. inflate() and deflate() process any amount of data."]


def test_an_faq_answer_opening_a_span_answers_the_question_the_span_before_ended_with() -> None:
    question_span = span(
        "base-files-faq.txt::S1",
        "Q. I upgraded to unstable and /etc/issue now says trixie/sid instead of testing. Is this a bug?",
    )
    answer_span = span(
        "base-files-faq.txt::S2",
        "A. That would be nice, but it is not possible because of the way testing works. Packages "
        "uploaded for unstable reach testing after ten days.",
    )

    question = "Why does /etc/issue read trixie/sid rather than testing?"
    text = answer(question, answer_span, question_span)

    assert text.startswith("That would be nice, but it is not possible")
    assert answer(question, answer_span) == NOT_FOUND


def test_a_sentence_may_open_with_the_lower_case_name_its_document_is_named_after() -> None:
    text = (
        "Only the latest version is supported.\n\nPython 2 Support\n----------------\n\n"
        "pip 20.3 was the last version of pip that supported Python 2."
    )

    def quoted(ref: str) -> list[str]:
        return [passage.text for passage in passages(Source(ref, None, text))]

    assert "pip 20.3 was the last version of pip that supported Python 2." in quoted("pip-release-process.rst::S6")
    assert quoted("release-process.rst::S6") == ["Only the latest version is supported."]


def test_a_bulleted_item_without_a_full_stop_is_still_a_passage() -> None:
    text = (
        "Repeatable options can be given as the number of repetitions:\n\n"
        "- `PIP_VERBOSE=3` is the same as `pip install -vvv`\n\nNothing else is repeatable."
    )

    assert "`PIP_VERBOSE=3` is the same as `pip install -vvv`" in [
        passage.text for passage in passages(Source("pip-configuration.md::S12", None, text))
    ]
