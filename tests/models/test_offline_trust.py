"""What keeps the offline answerer from citing a sentence that does not answer (issue 39): the question's release
number, a number for a limit, agreement with retrieval's ranking, a follow-up's document, a sentence's referent."""

from __future__ import annotations

from orc.models.answering import NOT_FOUND, Source, answer_question
from orc.models.rewriting import rewrite_follow_up


def source(ref: str, text: str) -> Source:
    return Source(ref=ref, page=None, text=text)


def test_a_question_about_one_release_is_not_answered_by_a_sentence_about_another() -> None:
    other_release = [source("news.txt::S1", "In OpenSSH 8.1 the default cipher became chacha20-poly1305.")]
    this_release = [source("news.txt::S1", "OpenSSH 9.2 makes chacha20-poly1305 the default cipher.")]

    assert answer_question("What is the default cipher in OpenSSH 9.2?", other_release) == NOT_FOUND
    assert answer_question("What is the default cipher in OpenSSH 9.2?", this_release).startswith("OpenSSH 9.2 makes")


def test_a_follow_up_stays_in_the_release_the_question_before_asked_about() -> None:
    follow_up = rewrite_follow_up(
        "And the default MAC?",
        [("user", "What is the default cipher in OpenSSH 9.2?"), ("assistant", "I couldn't find an answer to that.")],
    )
    other_release = [source("news.txt::S1", "In OpenSSH 8.1 the default MAC became umac-64-etm.")]
    this_release = [source("news.txt::S1", "OpenSSH 9.2 makes umac-128-etm the default MAC.")]

    assert follow_up.endswith("(context: cipher OpenSSH 9.2)")
    assert answer_question(follow_up, other_release) == NOT_FOUND
    assert answer_question(follow_up, this_release).startswith("OpenSSH 9.2 makes")


def test_a_question_about_a_limit_is_answered_only_by_a_sentence_with_a_number() -> None:
    question = "What's the cap on environment variables in an authorized_keys environment= option?"
    no_number = [source("news.txt::S1", "The environment= option in authorized_keys files caps the variables it sets.")]
    number = [source("news.txt::S1", "The environment= option in authorized_keys files is capped at 1024 variables.")]

    assert answer_question(question, no_number) == NOT_FOUND
    assert "1024" in answer_question(question, number)


def test_a_sentence_outside_the_best_ranked_span_answers_only_when_it_covers_the_whole_question() -> None:
    partial = source("less.txt::S2", "EDITOR The name of the editor (used for the v command).")
    unrelated = source("less.txt::S1", "The h command shows a summary of the commands.")

    assert answer_question("Which editor does the v command open?", [unrelated, partial]) == NOT_FOUND
    assert answer_question("Which editor does the v command open?", [partial, unrelated]).startswith("EDITOR")


def test_a_follow_up_about_one_document_is_not_answered_from_another() -> None:
    sources = [
        source("less-manual.txt::S1", 'Options are also taken from the environment variable "LESS".'),
        source("bc-manual.html::S1", "POSIXLY_CORRECT This is the same as the -s option."),
    ]

    answer = answer_question(
        "Is there an environment variable that does the same? (context: standard option bc)", sources
    )

    assert "less-manual.txt" not in answer


def test_a_sentence_that_leans_on_the_one_before_is_quoted_with_it() -> None:
    sources = [
        source(
            "ninja.html::S1",
            "Pools allow you to allocate a finite number of concurrent jobs to a rule. "
            "This keeps expensive link steps from running all at the same time.",
        )
    ]

    answer = answer_question(
        "How can I keep ninja from running too many expensive link steps at the same time?", sources
    )

    assert answer.startswith("Pools allow you to allocate a finite number of concurrent jobs")
    assert "This keeps expensive link steps" in answer


GUIDE = source(
    "guide.txt::S5",
    "Logs are written to /var/log/app.log once a day. Old logs are compressed after a week. The cache lives in "
    "/var/cache/app. Each user has a quota of ten projects. Backups run at midnight.",
)
PLAIN = source("guide.txt::S1", "The server listens on port 8080 for plain connections.")
ENCRYPTED = source("guide.txt::S9", "The server listens on port 8443 for encrypted connections.")


def test_a_partial_answer_with_a_rival_elsewhere_as_good_is_declined() -> None:
    question = "Which port does the server listen on by default?"

    assert answer_question(question, [PLAIN, GUIDE, ENCRYPTED]) == NOT_FOUND
    assert answer_question(question, [PLAIN, GUIDE]).startswith("The server listens on port 8080")


def test_a_question_that_asks_to_be_asked_is_answered_by_the_option_that_prompts() -> None:
    sources = [
        source(
            "xargs.txt::S8",
            "You cannot decrease it below 1. xargs never terminates its commands; when asked to decrease, it merely "
            "waits for more than one existing command to terminate before starting another.",
        ),
        source("xargs.txt::S12", "-p, --interactive Prompt the user about whether to run each command line."),
    ]

    answer = answer_question("Is there a way to have xargs ask me before running each command?", sources)

    assert answer.startswith("-p, --interactive Prompt the user")


RETRY_QUESTION = "How long is the wait before a failed upload is retried by default?"


def test_a_later_sentence_of_a_list_item_is_about_what_the_item_names() -> None:
    sources = [
        source(
            "settings.md::S3",
            "* `RETRY_DELAY` — the wait before a failed upload is retried by the client\n"
            "  and the server alike. Defaults to 30 seconds, accepts positive integers.\n"
            "* `LOG_LEVEL` — how much is logged.",
        )
    ]

    assert answer_question(RETRY_QUESTION, sources).startswith("Defaults to 30 seconds")


def test_a_sentence_after_another_item_or_a_blank_line_is_not_about_the_item_before() -> None:
    next_item = "* `RETRY_DELAY` — the wait before a failed upload is retried.\n* `LOG_LEVEL` — how much is logged. "
    next_paragraph = "* `RETRY_DELAY` — the wait before a failed upload is retried.\n\n"

    for text in (next_item, next_paragraph):
        sources = [source("settings.md::S3", text + "Defaults to 30 seconds, accepts positive integers.")]

        assert answer_question(RETRY_QUESTION, sources) == NOT_FOUND


def test_a_sentence_that_draws_the_consequence_of_the_answer_is_quoted_after_it() -> None:
    sources = [
        source(
            "bc.html::S22",
            'Most C programmers would assume a = 3 < 5 sets "a" to 1, because "3 < 5" is true. '
            'What this does in bc is assign the value 3 to the variable "a" and then compare 3 to 5. '
            "Parentheses avoid the surprise.",
        )
    ]

    answer = answer_question("Why does a = 3 < 5 set a to 3 instead of 1?", sources)

    assert answer.startswith("Most C programmers would assume")
    assert "What this does in bc is assign the value 3" in answer
    assert "Parentheses" not in answer


def test_a_question_about_a_default_is_not_answered_by_a_sentence_that_gives_none() -> None:
    question = "What is the default for FAIL_DELAY?"
    setting = "FAIL_DELAY (number) Delay in seconds before being allowed another attempt after a login failure."

    assert answer_question(question, [source("login.defs.txt::S1", setting)]) == NOT_FOUND
    assert "The default is 3 seconds." in answer_question(
        question, [source("login.defs.txt::S1", f"{setting} The default is 3 seconds.")]
    )


def test_a_question_about_how_things_are_now_is_not_answered_by_how_they_were() -> None:
    question = "If I set the same variable twice with SetEnv, which value wins now?"
    before = "Previously if a SetEnv variable was set twice the last value would have been used."
    now = "Since this release, if a SetEnv variable is set twice the first value is used."

    assert answer_question(question, [source("news.txt::S1", before)]) == NOT_FOUND
    assert answer_question(question, [source("news.txt::S1", now)]).startswith("Since this release")


def test_an_option_is_not_explained_by_the_item_of_a_sibling_option_that_mentions_it() -> None:
    item = source(
        "zstd.txt::S1",
        "○ --auto-threads={physical,logical} (default: physical): When using a default amount of threads via "
        "-T0, choose the default based on the number of detected physical or logical cores.",
    )

    assert answer_question("What does -T0 do?", [item]) == NOT_FOUND
    assert answer_question("What does --auto-threads do?", [item]).startswith("○ --auto-threads")


def test_a_manual_pages_section_number_is_no_amount() -> None:
    question = "How many workers can a build use?"
    reference = "The workers a build may use are described in build.conf(5)."
    amount = "A build can use up to 8 workers, as build.conf(5) describes."

    assert answer_question(question, [source("build.txt::S1", reference)]) == NOT_FOUND
    assert answer_question(question, [source("build.txt::S1", amount)]).startswith("A build can use up to 8")


def test_a_question_about_going_without_something_is_not_answered_by_what_happens_with_it() -> None:
    question = "What is DEB_GAIN_ROOT_CMD set to when dpkg-buildpackage runs without -r?"
    with_it = (
        'If dpkg-buildpackage is called with "-r/--root-command", then dpkg-buildpackage shall use that value '
        'as the value for "DEB_GAIN_ROOT_CMD".'
    )
    without_it = "When dpkg-buildpackage runs without -r, it sets DEB_GAIN_ROOT_CMD to fakeroot."

    assert answer_question(question, [source("rootless.txt::S1", with_it)]) == NOT_FOUND
    assert answer_question(question, [source("rootless.txt::S1", without_it)]).startswith("When dpkg-buildpackage")


def test_a_question_about_a_default_is_not_answered_by_the_default_of_something_else() -> None:
    question = "What compression level does xz use by default?"
    other = "The default block size increases when the compression level is increased."
    asked = "The default compression level is 6, a balance of speed and size."

    assert answer_question(question, [source("xz-faq.txt::S1", other)]) == NOT_FOUND
    assert answer_question(question, [source("xz-faq.txt::S1", asked)]).startswith("The default compression level")


def test_a_default_must_qualify_the_thing_the_question_names_not_only_share_a_word_with_it() -> None:
    question = "What is the default suppression file called?"
    other = "The default suppression set hides a lot of these, but you may come across more."
    asked = "The default suppression file is called default.supp and is read at startup."

    assert answer_question(question, [source("valgrind.html::S1", other)]) == NOT_FOUND
    assert answer_question(question, [source("valgrind.html::S1", asked)]).startswith("The default suppression file")


def test_a_name_holding_default_does_not_say_what_holds_by_default() -> None:
    question = "What is pip's default timeout?"
    example = "Setting `PIP_DEFAULT_TIMEOUT=60` is the same as passing `--default-timeout=60`."
    stated = "- The default timeout is 15 seconds; `PIP_DEFAULT_TIMEOUT` changes it.\n"

    assert answer_question(question, [source("pip-configuration.md::S1", example)]) == NOT_FOUND
    assert "The default timeout is 15 seconds" in answer_question(
        question, [source("pip-configuration.md::S1", stated)]
    )


def test_which_months_is_answered_by_the_sentence_that_names_them_not_one_about_a_month() -> None:
    cadence = source(
        "pip-release-process.rst::S1",
        "Our release months are January, April, July, October. The release date within that month will be up to "
        "the release manager for that release.",
    )
    vague = source(
        "pip-release-process.rst::S1", "The release date within that month will be up to the release manager."
    )

    assert answer_question("In which months do releases come out?", [cadence]).startswith("Our release months are")
    assert answer_question("In which months do releases come out?", [vague]) == NOT_FOUND


def test_a_sentence_that_restates_the_premise_does_not_answer_what_is_asked_about_it() -> None:
    question = "A stack trace in the report is huge and confusing. How should I read it?"
    premise = "Stack traces in a report can get huge and confusing, especially if you are using the C++ STL."
    advice = "A huge, confusing stack trace in a report is easiest to read from the bottom up."

    assert answer_question(question, [source("valgrind.html::S6", premise)]) == NOT_FOUND
    assert answer_question(question, [source("valgrind.html::S6", advice)]).startswith("A huge, confusing stack")


def test_a_question_about_downloading_is_answered_by_the_sentence_that_says_fetch() -> None:
    sources = [
        source(
            "sources.list.txt::S14",
            "PDiffs is a yes/no value which controls if APT should try to use PDiffs to update old indexes instead of "
            "downloading the new indexes entirely.",
        ),
        source("sources.list.txt::S7", "A deb-src line is required to fetch source indexes."),
    ]

    answer = answer_question("What do I need to download source indexes?", sources)

    assert answer == "A deb-src line is required to fetch source indexes. [sources.list.txt::S7]"
